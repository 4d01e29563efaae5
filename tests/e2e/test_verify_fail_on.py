"""``citerun verify --fail-on`` (issue 39): an exit code that says whether the thesis passed.

The real CLI in a subprocess, with the embedded Postgres and two local workers, on the
demo thesis (which has a citation of a work with no source PDF, ``unresolved_citation``,
and one its source contradicts) and on the demo's clean subset: the same thesis with every
sentence dropped whose claim ``examples/expected.json`` allows to be ``contradicted`` or
``unresolved_citation``, and the reference entry of the missing source, written with the
demo's own page layout (``examples/pdfwriter.py``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import subprocess
from collections.abc import Callable

import pytest

from citerun.cli import gate
from examples import make_examples, pdfwriter
from tests.conftest import citerun_command

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXPECTED = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
GATE = ("contradicted", "unresolved_citation")


@dataclasses.dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    def report(self) -> dict[str, object]:
        match = re.search(r"^json:\s+(\S+)$", self.stdout, re.MULTILINE)
        assert match, self.stdout
        data: dict[str, object] = json.loads(pathlib.Path(match.group(1)).read_text())
        return data


def verify(data_dir: pathlib.Path, *args: str, cwd: pathlib.Path) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "CITERUN_DATABASE_URL"}
    env.update(CITERUN_DATA_DIR=str(data_dir), COLUMNS="250")
    done = subprocess.run([*citerun_command(), "verify", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def clean_thesis(path: pathlib.Path, *, edit: Callable[[str], str] = str) -> list[str]:
    """Write the demo thesis without the claims expected.json lets fail the gate (each
    kept paragraph passed through ``edit``); return the claims dropped."""
    claims = EXPECTED["documents"]["thesis.pdf"]["claims"]
    dropped = [c["claim"] for c in claims if set(c["accept"]) & set(GATE)]
    missing = {c["citation"].split(",")[0] for c in claims if c["source"] is None}
    blocks = []
    for block in make_examples.THESIS.blocks:
        if block.kind == "paragraph":
            sentences = re.split(r"(?<=\.)\s+(?=[A-Z])", " ".join(block.text.split()))
            kept = [s for s in sentences if not any(claim in s for claim in dropped)]
            if kept:
                blocks.append(pdfwriter.Block("paragraph", edit(" ".join(kept))))
        elif block.kind == "reference" and any(block.text.startswith(m) for m in missing):
            continue
        else:
            blocks.append(block)
    text = " ".join(b.text for b in blocks)
    assert dropped and not any(claim in text for claim in dropped)
    pdfwriter.write_pdf(dataclasses.replace(make_examples.THESIS, filename="clean.pdf",
                                            blocks=tuple(blocks)), path)
    return dropped


@pytest.fixture(scope="module")
def workspace(server_tmp: Callable[[str], pathlib.Path]) -> pathlib.Path:
    return server_tmp("fail-on")


def test_the_ci_gate_is_contradicted_and_unresolved() -> None:
    assert tuple(gate.CI_FAIL_ON) == GATE  # the README and examples/ci say so


def test_a_thesis_with_an_unresolved_citation_fails_the_gate(workspace: pathlib.Path) -> None:
    run = verify(workspace / "data", str(EXAMPLES / "thesis.pdf"), "--sources",
                 str(EXAMPLES / "sources"), "--fail-on", ",".join(GATE),
                 "--out", str(workspace / "thesis.html"), cwd=workspace)
    assert run.returncode == gate.EXIT_FAIL_ON == 3, run.stderr
    citations = run.report()["citations"]
    assert isinstance(citations, list)
    failing = [c for c in citations if c["verdict"] in GATE]
    unresolved = [c for c in failing if c["verdict"] == "unresolved_citation"]
    assert unresolved, [c["verdict"] for c in citations]
    assert (workspace / "thesis.html").is_file()  # the report is written all the same
    summary = f"failed --fail-on {','.join(GATE)}: {len(failing)} of {len(citations)} " \
              "citation(s)"
    assert summary in run.stderr, run.stderr
    for c in failing:  # each named with its verdict, marker and page
        assert f"#{c['ordinal']} {c['verdict']}: {c['marker']} on page {c['page']}" \
            in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_the_demos_clean_subset_passes_the_default_gate(workspace: pathlib.Path) -> None:
    thesis = workspace / "clean.pdf"
    clean_thesis(thesis)
    # A bare --fail-on (after the thesis) is the CI default: contradicted,unresolved_citation.
    run = verify(workspace / "data", str(thesis), "--sources", str(EXAMPLES / "sources"),
                 "--out", str(workspace / "clean.html"), "--fail-on", cwd=workspace)
    assert run.returncode == gate.EXIT_PASSED == 0, run.stderr
    citations = run.report()["citations"]
    assert isinstance(citations, list) and len(citations) >= 5
    assert not [c for c in citations if c["verdict"] in GATE]
    assert "--fail-on" not in run.stderr
    # The same clean thesis fails a stricter gate, so the gate reads the verdicts.
    strict = verify(workspace / "data", str(thesis), "--sources", str(EXAMPLES / "sources"),
                    "--out", str(workspace / "strict.html"), "--fail-on",
                    "supported,partially_supported", cwd=workspace)
    assert strict.returncode == 3, strict.stderr
    assert "failed --fail-on supported,partially_supported" in strict.stderr


def test_a_wrong_cited_page_fails_a_gate_that_names_it(workspace: pathlib.Path) -> None:
    """A check beyond the verdict: the clean subset with one locator that names a page the
    passage is not on (the one-page source's page 9)."""
    roofs = f"{make_examples.C_ROOFS} during heat waves than dark roofs did (Okafor, 2020)"
    thesis = workspace / "wrong-page.pdf"
    clean_thesis(thesis, edit=lambda text: text.replace(
        roofs, roofs.replace("(Okafor, 2020)", "(Okafor, 2020, p. 9)")))
    run = verify(workspace / "data", str(thesis), "--sources", str(EXAMPLES / "sources"),
                 "--out", str(workspace / "wrong-page.html"), "--fail-on", "wrong_page",
                 cwd=workspace)
    assert run.returncode == 3, run.stderr
    citations = run.report()["citations"]
    assert isinstance(citations, list)
    wrong = [c for c in citations if (c.get("page_check") or {}).get("status") == "mismatch"]
    assert len(wrong) == 1 and make_examples.C_ROOFS in wrong[0]["claim"], citations
    assert f"failed --fail-on wrong_page: 1 of {len(citations)} citation(s): 1 wrong_page" \
        in run.stderr, run.stderr
    assert f"#{wrong[0]['ordinal']} wrong_page: {wrong[0]['marker']}" in run.stderr


@pytest.mark.parametrize(("value", "needle"), [
    ("bogus", "'bogus' is not a verdict or check"),
    ("contradicted,", "'' is not a verdict"),
])
def test_a_bad_fail_on_is_a_usage_error(tmp_path: pathlib.Path, value: str, needle: str) -> None:
    run = verify(tmp_path / "data", str(EXAMPLES / "thesis.pdf"), "--sources",
                 str(EXAMPLES / "sources"), f"--fail-on={value}", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert needle in run.stderr and "unresolved_citation" in run.stderr, run.stderr
    assert "wrong_page" in run.stderr  # the checks are named beside the verdicts
    assert not (tmp_path / "data" / "postgres").exists()  # refused before any work


def test_a_bare_fail_on_before_the_thesis_is_explained(tmp_path: pathlib.Path) -> None:
    run = verify(tmp_path / "data", "--fail-on", str(EXAMPLES / "thesis.pdf"), "--sources",
                 str(EXAMPLES / "sources"), cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "goes after the thesis" in run.stderr, run.stderr
