"""The pipeline on real published papers (``$CITERUN_EVALDATA/realpdf``, see its README).

No PDF is copied into the repository: the files are read from ``CITERUN_EVALDATA``
(default ``<repo>/../shared/evaldata``). Without them the tests skip with the reason,
except under ``CI=true``, where missing evaluation data is a failure. What is true comes
from the hand-made truth in ``bench/realpdf_truth/`` and is measured by the bench's own
functions (``bench.quality.realpdf``), so the tests and ``docs/benchmarks.md`` cannot
disagree on what a number means.
"""

from __future__ import annotations

import functools
import os
import pathlib
import typing

import pytest

from citerun.pipeline import citations, pdf
from citerun.pipeline.document import Document
from bench.quality import realpdf, truth

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("CITERUN_EVALDATA", ROOT.parent / "shared" / "evaldata")) / "realpdf"


def _need_data() -> pathlib.Path:
    if not (DATA / "PAIRS.tsv").exists():
        message = f"real evaluation PDFs not found at {DATA} (set CITERUN_EVALDATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return DATA


@functools.cache
def _document(name: str) -> tuple[Document, citations.Extraction]:
    doc = pdf.parse_pdf((DATA / "pdfs" / name).read_bytes(), max_bytes=200 * 1024 * 1024)
    return doc, citations.extract([(p.number, p.text) for p in doc.pages])


def _pairs() -> list[dict[str, str]]:
    if not (DATA / "PAIRS.tsv").exists():
        return []
    lines = (DATA / "PAIRS.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]


DOCUMENTS = sorted(truth.true_entries())


@functools.cache
def _evaluated(name: str) -> typing.Any:
    result, _ = realpdf.evaluate_document(DATA / "pdfs" / name, DATA / "gold")
    return result


@pytest.mark.parametrize("pair", _pairs() or [None], ids=lambda p: f"{p['citing']}->{p['cited']}" if p else "none")
def test_every_pair_maps_its_marker_to_the_cited_pdf(pair: dict[str, str] | None) -> None:
    data = _need_data()
    assert pair is not None
    _, extraction = _document(pair["citing"])
    cited, _ = _document(pair["cited"])
    source = citations.SourceInfo(
        document_id=pair["cited"], filename=pair["cited"], title=cited.title,
        authors=cited.authors, year=cited.year, doi=cited.doi, arxiv_id=cited.arxiv_id,
    )
    mapped = citations.map_citations(extraction, [source])
    marker = " ".join(pair["marker"].split())
    at_marker = [m for m in mapped if " ".join(m.citation.marker.split()) == marker]
    assert at_marker, f"marker {marker} not found in {pair['citing']} ({data})"
    hits = [m for m in at_marker if m.document_id == pair["cited"]]
    assert len(hits) == 1, [(m.citation.key, m.document_id, m.reason) for m in at_marker]
    assert hits[0].reason


def test_every_document_has_its_truth() -> None:
    """The truth covers every real PDF (a new PDF without truth would go unmeasured)."""
    data = _need_data()
    assert sorted(p.name for p in (data / "pdfs").glob("*.pdf")) == DOCUMENTS


@pytest.mark.parametrize("name", DOCUMENTS)
def test_reference_entries_found_and_parsed(name: str) -> None:
    """Entries found within 5 % of the true count; first surname + year right on at least
    90 % of the true entries (``bench/realpdf_truth/<stem>.refs.tsv``)."""
    _need_data()
    result = _evaluated(name)
    assert abs(result.entries - result.true_entries) <= 0.05 * result.true_entries, (
        result.entries, result.true_entries)
    assert result.right >= 0.9 * result.true_entries, result.wrong_entries


@pytest.mark.parametrize("name", DOCUMENTS)
def test_markers_found_against_the_truth(name: str) -> None:
    """At least 95 % of the true marker groups found (same page, a shared key), none read
    out of the reference list, and at least 90 % of the found ones true."""
    _need_data()
    result = _evaluated(name)
    assert result.markers_matched >= 0.95 * result.true_markers, result.missed
    assert result.from_list == 0
    assert result.found_matched >= 0.9 * result.found_markers, result.spurious


@pytest.mark.parametrize("name", DOCUMENTS)
def test_no_marker_comes_from_the_reference_list(name: str) -> None:
    _need_data()
    doc, extraction = _document(name)
    assert extraction.citations, "no markers found"
    assert extraction.reference_page is not None
    # Every citation's claim is body text: no claim is (part of) a reference entry.
    entries = {" ".join(e.text.split()) for e in extraction.references}
    for citation in extraction.citations:
        assert not any(citation.claim and citation.claim in entry for entry in entries), citation
    del doc


def test_first_page_identity_of_real_papers() -> None:
    _need_data()
    citesee, _ = _document("citesee_chang2023.pdf")
    assert citesee.title and citesee.title.startswith("CiteSee: Augmenting Citations")
    assert citesee.authors[0] == "Joseph Chee Chang" and citesee.year == 2023
    assert citesee.doi == "10.1145/3544548.3580847"
    plain, _ = _document("paper_plain_august2022.pdf")
    assert plain.authors[0] == "Tal August" and plain.arxiv_id == "2203.00130"
    lexsum, _ = _document("multilexsum_shen2022.pdf")
    assert lexsum.title and lexsum.title.startswith("Multi-LexSum")
    assert lexsum.arxiv_id == "2206.10883" and lexsum.year == 2022
