"""The recipe (issue 42): one thesis, PDF or writer's file, read into one Document once and
taken through every stage in memory, without Postgres: the demo thesis and its sources
from examples/, a Word thesis with Zotero fields, a LaTeX bundle with its .bib."""

from __future__ import annotations

import ast
import json
import pathlib

import pytest

from citerun.pipeline import document, recipe
from citerun.pipeline.report.model import Report
from citerun.pipeline.settings import PipelineSettings
from citerun.pipeline.writer import archive, formats
from tests.support import writer_theses

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
EXPECTED = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
SOURCES = {p.name: p.read_bytes() for p in sorted((EXAMPLES / "sources").glob("*.pdf"))}
COLUMNS = ("number", "text", "width", "height", "lines", "image", "label")

BIB = b"""@article{alvarez2019, title={Nocturnal Heat in Dense Urban Cores: A Two-Year Sensor
  Study in Seville}, author={Alvarez, Maria and Becker, Thomas}, year={2019}}
@article{okafor2020, title={Roofs}, author={Okafor, Chidi}, year={2020}, file={okafor2020.pdf}}
@article{keller2017, title={Compact street grids and urban ventilation}, author={Keller, Eva},
  year={2017}}
"""
TEX = b"""\\documentclass{article}
\\begin{document}
In dense city centres the heat island is most pronounced after sunset \\parencite[3]{alvarez2019}.
Reflective white roofs kept top-floor flats about 1.8 degrees cooler \\cite{okafor2020}.
Compact street grids also block the wind \\cite{keller2017}.
\\bibliography{refs}
\\end{document}
"""


def latex_bundle() -> bytes:
    return formats.bundle({"main.tex": TEX, "refs.bib": BIB, formats.MAIN_MEMBER: b"main.tex"})


def verdicts(report: Report) -> list[tuple[str, str | None, str]]:
    return [(c.key, c.source.filename if c.source else None, str(c.verdict))
            for c in report.citations]


async def test_the_demo_thesis_pdf_gets_the_verdicts_it_expects() -> None:
    report = await recipe.verify("thesis.pdf", (EXAMPLES / "thesis.pdf").read_bytes(), SOURCES,
                                 PipelineSettings())
    expected = EXPECTED["documents"]["thesis.pdf"]["claims"]
    assert report.summary.total == len(expected) == 11
    assert report.summary.by_verdict.unresolved_citation == 1
    assert report.thesis.format == "pdf" and report.thesis.pages > 0
    for want in expected:
        [found] = [c for c in report.citations if want["claim"] in " ".join(c.claim.split())
                   and (c.source.filename if c.source else None)
                   == (want["source"].removeprefix("sources/") if want["source"] else None)]
        assert str(found.verdict) in want["accept"], (want, found.verdict)
    supported = [c for c in report.citations if str(c.verdict) == "supported"]
    assert all(c.evidence and c.evidence[0].boxes for c in supported)  # boxes from the lines
    assert {s.filename: s.cited_by for s in report.sources} == {
        "alvarez2019.pdf": 2, "lindqvist2021.pdf": 2, "okafor2020.pdf": 3, "wei2018.pdf": 3}


async def test_a_word_thesis_states_its_citations_and_meets_the_pdfs_at_mapping() -> None:
    report = await recipe.verify("thesis.docx", writer_theses.docx_thesis(), SOURCES,
                                 PipelineSettings())
    assert report.thesis.format == "docx"
    assert verdicts(report) == [("ALV19", "alvarez2019.pdf", "supported"),
                                ("WEI18", "wei2018.pdf", "supported"),
                                ("LIN21", "lindqvist2021.pdf", "supported"),
                                ("KEL17", None, "unresolved_citation")]
    assert [c.location for c in report.citations] == ["paragraph 2"] * 2 + ["paragraph 3"] * 2
    assert report.citations[0].locator == "3"


async def test_a_latex_bundle_maps_by_its_library_and_its_file_fields() -> None:
    report = await recipe.verify("thesis.tex", latex_bundle(), SOURCES, PipelineSettings())
    assert report.thesis.format == "latex"
    assert verdicts(report) == [("alvarez2019", "alvarez2019.pdf", "supported"),
                                ("okafor2020", "okafor2020.pdf", "supported"),
                                ("keller2017", None, "unresolved_citation")]
    # The library's file field names the PDF: the item's key is the source's.
    assert report.citations[1].match.method == "explicit"
    assert [c.location for c in report.citations] == ["main.tex:3", "main.tex:4", "main.tex:5"]


async def test_an_unreadable_source_is_unavailable_not_an_error() -> None:
    sources = {**SOURCES, "okafor2020.pdf": b"%PDF-1.4 broken"}
    report = await recipe.verify("thesis.tex", latex_bundle(), sources, PipelineSettings())
    assert verdicts(report)[1] == ("okafor2020", "okafor2020.pdf", "source_unavailable")
    assert [s.status for s in report.sources if s.filename == "okafor2020.pdf"] == ["failed"]


@pytest.mark.parametrize("thesis", ["docx", "latex"])
def test_a_writer_file_is_unzipped_once(thesis: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the parse job read the bundle, then the writer's reader read it again (and
    the Word reader a third time)."""
    data = writer_theses.docx_thesis() if thesis == "docx" else latex_bundle()
    calls: list[int] = []
    real = archive.read_bundle

    def counting(data: bytes, limits: archive.BundleLimits = archive.BundleLimits()
                 ) -> dict[str, bytes]:
        calls.append(len(data))
        return real(data, limits)

    monkeypatch.setattr(archive, "read_bundle", counting)
    settings = PipelineSettings()
    read = recipe.read(data, settings.limits, settings.documents.max_bytes)
    assert read.written is not None and read.written.citations
    assert calls == [len(data)]


def test_a_document_reads_back_from_its_rows_as_it_was_read() -> None:
    settings = PipelineSettings()
    for data in ((EXAMPLES / "thesis.pdf").read_bytes(), latex_bundle()):
        read = recipe.read(data, settings.limits, settings.documents.max_bytes)
        rows = [dict(zip(COLUMNS, document.page_row(p))) for p in read.pages]
        row = {"title": read.title, "authors": list(read.authors), "year": read.year,
               "doi": read.doi, "arxiv_id": read.arxiv_id,
               "written": json.loads(json.dumps(document.written_json(read)))}
        stored = document.Document.from_rows(row, json.loads(json.dumps(
            rows, default=lambda b: None)))  # the JSON the lines column holds
        assert stored.written == read.written and stored.title == read.title
        assert [(p.number, p.text, p.label, p.width) for p in stored.pages] == [
            (p.number, p.text, p.label, p.width) for p in read.pages]
        for back, line in zip((q for p in stored.pages for q in p.lines),
                              (q for p in read.pages for q in p.lines), strict=True):
            assert (back.text, back.bold, back.paragraph_start) == (
                line.text, line.bold, line.paragraph_start)
            assert abs(back.size - line.size) <= 0.05 and abs(back.bbox[0] - line.bbox[0]) <= 0.05


def test_the_recipe_imports_neither_postgres_nor_the_sandbox() -> None:
    tree = ast.parse(pathlib.Path(recipe.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {f"{node.module}.{alias.name}" for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert not [name for name in imported if "asyncpg" in name or "worker" in name
                or name.startswith("citerun.core.") and "states" not in name]
