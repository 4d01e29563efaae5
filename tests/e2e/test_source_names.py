"""A report names each source as its own run was given it.

Documents are content-addressed and reused across runs, so the same PDF can reach two
runs under two file names; each run's report (JSON and HTML) must use the name that run
was given, in its source list and in every citation, never the name an earlier run saw.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil

from tests.e2e.test_verify_demo import EXAMPLES, verify

THESIS = EXAMPLES / "thesis_numeric.pdf"  # numeric markers: mapped by the reference entry
RENAMED = "okafor2020.pdf"


def _articles(page: str) -> list[str]:
    """The HTML page's citation articles, one string each."""
    return [part.split("</article>", 1)[0] for part in page.split('<article class="citation"')[1:]]


def test_each_report_names_a_shared_source_as_its_own_run_was_given_it(
        tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    digest = hashlib.sha256((EXAMPLES / "sources" / RENAMED).read_bytes()).hexdigest()
    names = {"first": RENAMED, "second": "cool_roofs_social_housing.pdf"}
    for run_name, filename in names.items():
        sources = tmp_path / f"{run_name}_sources"
        shutil.copytree(EXAMPLES / "sources", sources)
        (sources / RENAMED).rename(sources / filename)
        out = tmp_path / f"{run_name}.html"
        run = verify(data, str(THESIS), "--sources", str(sources), "--out", str(out),
                     cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        built = run.report()
        other = next(n for n in names.values() if n != filename)

        listed = [s["filename"] for s in built["sources"] if s["document_id"] == digest]
        assert listed == [filename]
        cited = [c for c in built["citations"]
                 if c["source"] is not None and c["source"]["document_id"] == digest]
        assert len(cited) >= 2, [c["claim"] for c in built["citations"]]
        assert [c["source"]["filename"] for c in cited] == [filename] * len(cited)
        assert other not in json.dumps(built)

        page = out.read_text(encoding="utf-8")
        shown = [a for a in _articles(page) if f"({filename})" in a]
        assert len(shown) == len(cited), "a citation of the shared source lacks its name"
        assert other not in page
