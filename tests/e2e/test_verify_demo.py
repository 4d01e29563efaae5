"""``citerun verify`` end to end: the real CLI in a subprocess, on the demo theses.

Each run starts the embedded Postgres under a temporary data directory (no
``CITERUN_DATABASE_URL``) and two local worker processes, exactly as a user's laptop
run does. The verdicts must be among those ``examples/expected.json`` accepts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import pathlib
import re
import shutil
import subprocess
import typing

import pytest

from citerun.core import db
from citerun.local import localdb
from citerun.core.settings import Settings
from tests.unit import pdf_fixtures
from tests.conftest import citerun_command

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXPECTED = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
THESES = sorted(EXPECTED["documents"])


@dataclasses.dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    def report(self) -> dict[str, typing.Any]:
        match = re.search(r"^json:\s+(\S+)$", self.stdout, re.MULTILINE)
        assert match, self.stdout
        data: dict[str, typing.Any] = json.loads(pathlib.Path(match.group(1)).read_text())
        return data


def verify(data_dir: pathlib.Path, *args: str, cwd: pathlib.Path,
           env_extra: dict[str, str] | None = None) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "CITERUN_DATABASE_URL"}
    env.update(CITERUN_DATA_DIR=str(data_dir), COLUMNS="250", **(env_extra or {}))
    done = subprocess.run([*citerun_command(), "verify", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def parse_task_count(data_dir: pathlib.Path) -> int:
    async def count(url: str) -> int:
        conn = await db.connect(url)
        try:
            return int(await conn.fetchval(
                "SELECT count(*) FROM tasks WHERE kind = 'parse_document'"))
        finally:
            await conn.close()

    with localdb.database(Settings(data_dir=data_dir)) as url:
        return asyncio.run(count(url))


@pytest.fixture(scope="module")
def workspace(server_tmp: typing.Callable[[str], pathlib.Path]) -> pathlib.Path:
    return server_tmp("verify")


@pytest.fixture(scope="module")
def first_runs(workspace: pathlib.Path) -> dict[str, Run]:
    return {thesis: verify(workspace / "data", str(EXAMPLES / thesis), "--sources",
                           str(EXAMPLES / "sources"), "--out",
                           str(workspace / f"{pathlib.Path(thesis).stem}.html"), cwd=workspace)
            for thesis in THESES}


def _find(report: dict[str, typing.Any], claim: dict[str, typing.Any]) -> dict[str, typing.Any]:
    source = pathlib.Path(claim["source"]).name if claim["source"] else None
    hits = [c for c in report["citations"]
            if claim["claim"] in " ".join(c["claim"].split())
            and ((c["source"] or {}).get("filename") if source else c["source"]) == source]
    assert len(hits) == 1, (claim, [c["claim"] for c in report["citations"]])
    return hits[0]


@pytest.mark.parametrize("thesis", THESES)
def test_every_verdict_is_accepted(first_runs: dict[str, Run], workspace: pathlib.Path,
                                   thesis: str) -> None:
    run = first_runs[thesis]
    assert run.returncode == 0, run.stderr
    stem = pathlib.Path(thesis).stem
    assert f"report: {workspace / stem}.html" in run.stdout
    assert f"json:   {workspace / stem}.json" in run.stdout
    report = run.report()
    wrong = []
    for claim in EXPECTED["documents"][thesis]["claims"]:
        found = _find(report, claim)
        if found["verdict"] not in claim["accept"]:
            wrong.append(f"{claim['claim']!r} vs {claim['source']}: {found['verdict']} "
                         f"(expected {claim['accept']}): {found['rationale']}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("thesis", THESES)
def test_evidence_is_located_and_shown_on_its_page(first_runs: dict[str, Run],
                                                   workspace: pathlib.Path, thesis: str) -> None:
    run = first_runs[thesis]
    assert run.returncode == 0, run.stderr
    report = run.report()
    mapped = [c for c in report["citations"] if c["source"] is not None]
    assert mapped and all(c["match"]["method"] and c["match"]["reason"] for c in mapped)
    assert all(c["reference"] for c in report["citations"])  # every marker has its entry
    located = [e for c in mapped for e in c["evidence"] if e["boxes"]]
    assert located, "no evidence quote was found on its page"
    for evidence in located:
        assert evidence["page_start"] <= evidence["page"] <= evidence["page_end"]
        for box in evidence["boxes"]:
            assert 0 <= box["x0"] < box["x1"] <= evidence["page_width"]
            assert 0 <= box["y0"] < box["y1"] <= evidence["page_height"]
    page = (workspace / f"{pathlib.Path(thesis).stem}.html").read_text(encoding="utf-8")
    assert page.count('<figure class="evidence-page"') == len(located)
    pages = {(c["source"]["document_id"], e["page"]) for c in mapped for e in c["evidence"] if e["boxes"]}
    assert page.count("data:image/jpeg;base64,") == len(pages)


@pytest.mark.parametrize("thesis", THESES)
def test_the_report_says_why_in_plain_words(first_runs: dict[str, Run], workspace: pathlib.Path,
                                            thesis: str) -> None:
    """Issue 39: every citation's "Why" is in words (the model's numbers only behind "The
    numbers behind this"), and each verdict a judge gave shows its confidence."""
    page = (workspace / f"{pathlib.Path(thesis).stem}.html").read_text(encoding="utf-8")
    articles = re.findall(r'<article class="citation".*?</article>', page, re.DOTALL)
    assert len(articles) == len(first_runs[thesis].report()["citations"])
    for article in articles:
        visible = re.sub(r"<details.*?</details>", "", article, flags=re.DOTALL)
        why = re.search(r'<p class="rationale">(.*?)</p>', visible, re.DOTALL)
        assert why, article[:300]
        assert "similarity" not in why.group(1) and "P(" not in why.group(1), why.group(1)
        assert "P(support)" not in visible and "(match 0." not in visible


def test_second_run_reuses_parsed_documents(first_runs: dict[str, Run],
                                            workspace: pathlib.Path) -> None:
    assert all(r.returncode == 0 for r in first_runs.values())
    before = parse_task_count(workspace / "data")
    assert before == len(THESES) + len(list((EXAMPLES / "sources").glob("*.pdf")))
    again = verify(workspace / "data", str(EXAMPLES / THESES[0]), "--sources",
                   str(EXAMPLES / "sources"), "--out", str(workspace / "again.html"),
                   cwd=workspace)
    assert again.returncode == 0, again.stderr
    assert parse_task_count(workspace / "data") == before  # no document parsed twice
    verdicts = [c["verdict"] for c in again.report()["citations"]]
    assert verdicts == [c["verdict"] for c in first_runs[THESES[0]].report()["citations"]]


BAD_SOURCES: dict[str, typing.Callable[[], bytes]] = {
    "corrupt": pdf_fixtures.corrupt_pdf,
    "not_pdf": pdf_fixtures.not_pdf,
    "encrypted": pdf_fixtures.encrypted_pdf,
    "empty": pdf_fixtures.zero_page_pdf,
    "no_text": pdf_fixtures.scanned_pdf,
    "too_large": lambda: pdf_fixtures.oversized_pdf(300_000),
}


@pytest.mark.parametrize("reason", sorted(BAD_SOURCES))
def test_a_bad_source_does_not_stop_the_run(tmp_path: pathlib.Path, reason: str) -> None:
    sources = tmp_path / "sources"
    shutil.copytree(EXAMPLES / "sources", sources)
    (sources / "wei2018.pdf").write_bytes(BAD_SOURCES[reason]())
    run = verify(tmp_path / "data", str(EXAMPLES / "thesis_numeric.pdf"), "--sources",
                 str(sources), "--out", str(tmp_path / "report.html"), cwd=tmp_path,
                 env_extra={"CITERUN_DOCUMENTS__MAX_BYTES": "200000"})
    assert run.returncode == 0, run.stderr
    report = run.report()
    wei = [c for c in report["citations"] if c["marker"] == "[4]"]
    assert wei and {c["verdict"] for c in wei} == {"source_unavailable"}, wei
    assert all("wei2018.pdf" in c["rationale"] for c in wei), wei
    failed = [s for s in report["sources"] if s["filename"] == "wei2018.pdf"]
    assert failed and failed[0]["status"] == "failed" and failed[0]["error"]
    others = [c for c in report["citations"] if c["marker"] == "[1]"]
    assert others and others[0]["verdict"] == "supported"


def test_an_unreadable_thesis_fails_the_run_with_a_clear_message(tmp_path: pathlib.Path) -> None:
    thesis = tmp_path / "thesis.pdf"
    thesis.write_bytes(pdf_fixtures.scanned_pdf())
    run = verify(tmp_path / "data", str(thesis), "--sources", str(EXAMPLES / "sources"),
                 cwd=tmp_path)
    assert run.returncode == 1
    assert "thesis.pdf could not be read" in run.stderr and "text" in run.stderr.lower()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.pdf", "--sources", str(EXAMPLES / "sources")], "is neither a file nor a directory"),
        ([str(EXAMPLES / "thesis.pdf"), "--sources", "EMPTY"], "no PDF sources found"),
        ([str(EXAMPLES / "thesis.pdf"), "--sources", str(EXAMPLES / "sources"), "--workers", "0"],
         "--workers: must be between 1 and 64, got 0"),
    ],
)
def test_bad_arguments_fail_with_a_clear_message(tmp_path: pathlib.Path, args: list[str],
                                                 message: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a pdf")
    args = [str(empty) if a == "EMPTY" else a for a in args]
    run = verify(tmp_path / "data", *args, cwd=tmp_path)
    assert run.returncode != 0
    assert message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
