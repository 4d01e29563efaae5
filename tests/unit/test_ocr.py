"""Sources without a usable text layer (issue 46): a text layer that is not text counts as
none, and such pages are read by OCR (Tesseract, Debian's package, which scripts/test
installs) with a character error rate of at most 5% on a scanned page of known text."""

from __future__ import annotations

import re
import time

import pytest
from rapidfuzz.distance import Levenshtein

from citerun.pipeline import recipe
from citerun.pipeline.pdf import DocumentError, ocr, parse_pdf
from citerun.pipeline.settings import LimitSettings
from tests.unit import pdf_fixtures

MAX_BYTES = 50 * 1024 * 1024

#: A page of known text, one column, 11 pt, as a thesis's older sources print it.
KNOWN = [
    "Continental crust records the growth of old terranes along their sutures.",
    "Seismic reflection profiles across the margin show that faults reactivate",
    "where earlier collisions left the crust weak, and that the lower crust is",
    "layered beneath the basin. The data were collected in 1999 and processed",
    "with migration at 6.0 km/s; 34 of the 41 profiles were interpreted.",
    "",
    "These results suggest that inherited structures control later deformation,",
    "although the timing of the reactivation remains uncertain.",
]


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_a_layer_of_replacement_characters_is_not_text() -> None:
    assert ocr.text_layer(["\ufffd" * 40, "\ufffd\ufffd \ufffd"]) == "not_text"
    assert ocr.text_layer(["\ue041\ue06e\ue06f\ue074"]) == "not_text"  # glyph codes
    assert ocr.text_layer([]) == "none" and ocr.text_layer(["   "]) == "none"
    assert ocr.text_layer(["The faults reactivate along old sutures."]) == "text"
    assert ocr.text_layer(["x = 1 + 2 (3)", "p < 0.05"]) == "text"  # formulas are text


def test_glyph_soup_is_not_text_and_prose_in_any_latin_language_is() -> None:
    prose = " ".join(KNOWN) * 2
    soup = "".join(chr(ord(c) + 1) if c.isalpha() else c for c in prose)  # "Ifmmp xpsme"
    assert ocr.text_layer([soup]) == "not_text"
    assert ocr.text_layer([prose]) == "text"
    german = ("Die Ergebnisse zeigen, dass die Reaktivierung der alten Strukturen die spätere "
              "Verformung der Kruste bestimmt, obwohl der Zeitpunkt noch unsicher bleibt. ") * 3
    french = ("Les résultats montrent que les structures héritées contrôlent la déformation "
              "ultérieure de la croûte, bien que le moment reste incertain. ") * 3
    assert ocr.text_layer([german]) == "text" and ocr.text_layer([french]) == "text"
    assert ocr.text_layer(["Тектоника плит и деформация коры " * 20]) == "text"  # other scripts
    assert ocr.text_layer(["BRCA1 TP53 KRAS EGFR"]) == "text"  # too few pairs to judge


def test_a_garbled_text_layer_is_refused_without_ocr_and_read_with_it() -> None:
    data = pdf_fixtures.garbled_layer_pdf([KNOWN])
    with pytest.raises(DocumentError, match="is not text") as refused:
        parse_pdf(data, max_bytes=MAX_BYTES)
    assert refused.value.reason == "no_text"
    document = parse_pdf(data, max_bytes=MAX_BYTES, ocr=ocr.OcrSettings())
    [page] = document.pages
    assert page.ocr
    assert Levenshtein.normalized_distance(_words(" ".join(KNOWN)), _words(page.text)) <= 0.05


def test_a_scanned_page_of_known_text_is_read_with_a_character_error_rate_of_5_percent() -> None:
    scan = pdf_fixtures.scan_of(pdf_fixtures.text_pdf([KNOWN]), dpi=300)
    started = time.process_time()
    document = parse_pdf(scan, max_bytes=MAX_BYTES, ocr=ocr.OcrSettings())
    seconds = time.process_time() - started
    [page] = document.pages
    truth, read = _words(" ".join(KNOWN)), _words(page.text)
    cer = Levenshtein.distance(truth, read) / len(truth)
    print(f"OCR of one scanned page: CER {cer:.3f}, {seconds:.1f} s of CPU")
    assert page.ocr and cer <= 0.05, (cer, read)
    assert page.lines and all(line.bbox[2] > line.bbox[0] for line in page.lines)  # boxes for evidence


def test_a_page_with_nothing_to_read_says_so() -> None:
    data = pdf_fixtures.garbled_layer_pdf([KNOWN], visible=False)
    with pytest.raises(DocumentError, match="not text .*OCR found no words"):
        parse_pdf(data, max_bytes=MAX_BYTES, ocr=ocr.OcrSettings())


def test_ocr_reads_at_most_its_page_cap() -> None:
    scan = pdf_fixtures.scan_of(pdf_fixtures.text_pdf([KNOWN[:2]] * 3), dpi=100)
    with pytest.raises(DocumentError, match="more than 2 pages to read by OCR") as refused:
        parse_pdf(scan, max_bytes=MAX_BYTES, ocr=ocr.OcrSettings(max_pages=2, dpi=100))
    assert refused.value.reason == "document_too_complex"


def test_the_recipe_reads_a_scan_by_ocr_unless_it_is_off() -> None:
    scan = pdf_fixtures.scan_of(pdf_fixtures.text_pdf([KNOWN]), dpi=200)
    read = recipe.read(scan, LimitSettings(), MAX_BYTES)
    assert read.pages[0].ocr and "sutures" in read.pages[0].text
    off = LimitSettings(ocr=ocr.OcrSettings(enabled=False))
    with pytest.raises(DocumentError, match="probably a scan"):
        recipe.read(scan, off, MAX_BYTES)


def test_the_ocr_child_budget_grows_with_the_pages_up_to_the_cap() -> None:
    limits = LimitSettings()
    settings = ocr.OcrSettings(cpu_s_per_page=10, max_pages=5)
    assert settings.task_limits(limits.parse, 2).cpu_s == limits.parse.cpu_s + 20
    assert settings.task_limits(limits.parse, 500).cpu_s == limits.parse.cpu_s + 50
    assert settings.task_limits(limits.parse, 2).address_space_mb >= 2048


def test_the_ocr_bench_prints_its_table_on_the_known_page() -> None:
    from bench.quality import ocr as bench_ocr

    rows = bench_ocr.run([150], 0, 200)
    assert [r.page for r in rows] == ["known page (unit test)"]
    assert rows[0].cer <= 0.05 and rows[0].cpu_s > 0
    table = bench_ocr.table(rows)
    assert "| known page (unit test) | 150 |" in table and "**mean of 1**" in table


def test_a_hostile_page_over_the_page_cap_is_too_complex_not_a_scan() -> None:
    """120 KB of "Aa, " on one page reads as glyph soup, but the page cap refuses it
    before anything is taken for a scan (issue 12's attack, tests/chaos): never OCR'd."""
    from citerun.pipeline.document import TooComplex
    from tests.support import hostile_pdfs

    with pytest.raises(TooComplex, match="characters per page"):
        recipe.read(hostile_pdfs.regex_bomb(), LimitSettings(), MAX_BYTES)
