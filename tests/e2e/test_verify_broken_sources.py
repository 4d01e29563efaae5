"""A thesis folder whose sources include a scan, a PDF whose text layer is not text, and
one with nothing readable at all still ends with rc 0 and a report (issue 46). Before: a
source whose text layer held no word stayed `parsed`, the judge's BM25 index over it
raised "max() arg is an empty sequence", the task died five times and the run failed
with no report; and a scan's citations ended `source_unavailable` ("run OCR on it
first"). Now the scan and the garbled layer are read by OCR (the report says so) and
judged, and the unreadable one's citations say why, naming the file.

Run as the README says (`citerun verify THESIS --sources DIR`): the real CLI, the
embedded Postgres, local workers, the parse children under their limits.
"""

from __future__ import annotations

import pathlib
import shutil

from tests.e2e.test_verify_demo import EXAMPLES, EXPECTED, verify
from tests.unit import pdf_fixtures

SCANNED = "alvarez2019.pdf"      # a scanner's image, no text layer
GARBLED = "wei2018.pdf"          # glyph codes as its text layer; the page shows the words
UNREADABLE = "lindqvist2021.pdf"  # glyph codes, drawn invisibly: nothing to read at all
GOOD = "okafor2020.pdf"


def test_a_folder_with_a_scan_a_garbled_layer_and_an_unreadable_source_ends_with_a_report(
        tmp_path: pathlib.Path) -> None:
    sources = tmp_path / "refs"
    shutil.copytree(EXAMPLES / "sources", sources)
    (sources / SCANNED).write_bytes(pdf_fixtures.scan_of((sources / SCANNED).read_bytes(), dpi=300))
    (sources / GARBLED).write_bytes(pdf_fixtures.garble((sources / GARBLED).read_bytes()))
    (sources / UNREADABLE).write_bytes(
        pdf_fixtures.garble((sources / UNREADABLE).read_bytes(), visible=False))

    out = tmp_path / "report.html"
    run = verify(tmp_path / "data", str(EXAMPLES / "thesis.pdf"), "--sources", str(sources),
                 "--out", str(out), cwd=tmp_path)
    assert run.returncode == 0, (run.stdout, run.stderr)
    built = run.report()
    listed = {s["filename"]: s for s in built["sources"]}
    for name in (SCANNED, GARBLED):
        assert listed[name]["status"] == "parsed" and listed[name]["ocr_pages"] >= 1, listed[name]
    assert listed[GOOD]["status"] == "parsed" and listed[GOOD]["ocr_pages"] == 0
    assert listed[UNREADABLE]["status"] == "failed"
    assert "is not text" in listed[UNREADABLE]["error"], listed[UNREADABLE]

    expected = {(c["claim"], pathlib.Path(c["source"] or "").name): c["accept"]
                for c in EXPECTED["documents"]["thesis.pdf"]["claims"]}
    by_source: dict[str, list[dict[str, object]]] = {}
    for citation in built["citations"]:
        source = citation["source"]
        by_source.setdefault(source["filename"] if source else "", []).append(citation)
    # The unreadable source's citations say why, naming the file.
    assert by_source[UNREADABLE], built["citations"]
    for citation in by_source[UNREADABLE]:
        assert citation["verdict"] == "source_unavailable"
        assert UNREADABLE in str(citation["rationale"]) and "not text" in str(citation["rationale"])
    # The scan and the garbled layer are judged as their born-digital originals are.
    for name in (SCANNED, GARBLED):
        assert by_source[name], built["citations"]
        for citation in by_source[name]:
            accept = next((a for (claim, source), a in expected.items()
                           if source == name and claim in str(citation["claim"])), None)
            assert citation["verdict"] in (accept or ["supported", "partially_supported",
                                                      "unsupported", "contradicted"]), citation
    page = out.read_text(encoding="utf-8")
    assert "read by OCR" in page and UNREADABLE in page
