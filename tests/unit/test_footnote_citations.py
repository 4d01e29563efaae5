"""Footnote citations (issue 24, item 6): a German thesis citing in footnotes, set with
pymupdf as LaTeX and Word set it (``tests/support/footnote_thesis.py``), is parsed,
extracted and mapped to its sources; and the note parser on strings."""

from __future__ import annotations

import functools
import time

from citerun.pipeline import citations, pdf
from citerun.pipeline.citations import entries, footnotes
from tests.support import footnote_thesis

MAX_BYTES = 50_000_000


@functools.cache
def _run() -> tuple[footnote_thesis.Thesis, citations.Extraction, tuple[citations.MappedCitation, ...]]:
    thesis = footnote_thesis.thesis()
    parsed = pdf.parse_pdf(thesis.pdf, max_bytes=MAX_BYTES)
    extraction = citations.extract([(p.number, p.text) for p in parsed.pages])
    sources = []
    for number, (key, data) in enumerate(sorted(thesis.sources.items()), 1):
        source = pdf.parse_pdf(data, max_bytes=MAX_BYTES)
        # Neutral file names: the mapping must go by title, authors and year.
        sources.append(citations.SourceInfo(key, f"quelle{number:02}.pdf", source.title,
                                            source.authors, source.year))
    return thesis, extraction, citations.map_citations(extraction, sources)


def _matching(truth: footnote_thesis.NoteCitation,
              mapped: tuple[citations.MappedCitation, ...]) -> list[citations.MappedCitation]:
    return [m for m in mapped if truth.sentence in m.citation.claim]


def test_the_generated_thesis_is_as_the_brief_asks() -> None:
    thesis, extraction, _ = _run()
    assert thesis.pages >= 12
    assert len(thesis.citations) >= 40
    assert len({c.work for c in thesis.citations}) == len(thesis.works) == 10
    assert {"full", "short", "ebd", "aao", "ders", "title"} <= {c.form for c in thesis.citations}
    assert any(c.locator and c.locator.endswith(" f.") for c in thesis.citations)
    assert any(c.locator and c.locator.endswith("ff.") for c in thesis.citations)
    # The Literaturverzeichnis is found and lists every work.
    assert len(extraction.references) == len(thesis.works)
    assert {e.author_year_key for e in extraction.references} == {w.key for w in thesis.works}


def test_footnote_citations_are_found_mapped_and_located() -> None:
    thesis, _, mapped = _run()
    found = mapped_right = located = 0
    for truth in thesis.citations:
        candidates = _matching(truth, mapped)
        keyed = [m for m in candidates if m.citation.key == truth.work]
        found += bool(keyed)
        right = [m for m in keyed if m.document_id == truth.work]
        mapped_right += bool(right)
        located += any(m.citation.locator == truth.locator and m.citation.page == truth.page
                       for m in right)
    total = len(thesis.citations)
    assert found / total >= 0.95, (found, total)
    assert mapped_right / total >= 0.95, (mapped_right, total)
    assert located / total >= 0.95, (located, total)
    # Nothing is cited that the thesis does not cite: one citation per (sentence, work, locator).
    assert len(mapped) == total


def test_ebd_aao_and_ders_resolve_to_the_work_before() -> None:
    thesis, _, mapped = _run()
    resolved = [t for t in thesis.citations if t.form in ("ebd", "aao", "ders", "title")]
    assert len(resolved) >= 15
    for truth in resolved:
        hits = [m for m in _matching(truth, mapped) if m.citation.locator == truth.locator]
        assert [m.citation.key for m in hits] == [truth.work], truth
        assert hits[0].document_id == truth.work, truth
        assert hits[0].reference is not None and hits[0].reference.author_year_key == truth.work


def test_the_notes_are_not_claims_and_remarks_cite_nothing() -> None:
    thesis, extraction, _ = _run()
    claims = [c.claim for c in extraction.citations]
    for claim in claims:
        assert not any(word in claim for word in ("Vgl.", "Ebd.", "a.a.O.", "Dies.", "Ders.", " S. ")), claim
    texts = {note for _, note, _ in footnote_thesis.NOTES}
    assert not any(note in claim or claim in note for claim in claims for note in texts)
    # The two remarks' marks are reported as footnote marks, not judged.
    skipped = {s.text for s in extraction.skipped}
    assert {"⁴", "⁴²"} <= skipped
    assert len(thesis.remarks) == 2
    # Each citation's marker names its note as written.
    first = extraction.citations[0]
    assert first.marker.startswith("¹ Vgl. Müller, Jana: Gründächer in der Stadt")


# --- the note parser on strings -----------------------------------------------------


def _scan(*pages: str, listed: tuple[citations.ReferenceEntry, ...] = ()) -> footnotes.Scan:
    return footnotes.scan([(n, text) for n, text in enumerate(pages, 1)], listed)


def _cited(scan: footnotes.Scan) -> list[list[tuple[str, str | None, str]]]:
    return [[(c.ref.key, c.locator, c.form) for c in note.cited] for note in scan.notes]


def test_a_page_s_notes_are_cut_out_and_read() -> None:
    scan = _scan(
        "Gründächer kühlen die Stadt.¹ Sie halten Wasser zurück.²\n"
        "Ein dritter Satz steht hier.³\n\n"
        "1 Vgl. Müller, Jana: Gründächer in der Stadt, Berlin 2019, S. 45.\n"
        "2 Ebd., S. 46 f.\n"
        "3 Vgl. Schmidt (2018), S. 12 ff.; Weber/Fischer 2020, Rn. 3.")
    assert scan.pages == ((1, "Gründächer kühlen die Stadt.¹ Sie halten Wasser zurück.²\n"
                               "Ein dritter Satz steht hier.³"),)
    assert [(n.number, n.page) for n in scan.notes] == [(1, 1), (2, 1), (3, 1)]
    assert _cited(scan) == [[("mueller2019", "45", "full")], [("mueller2019", "46 f.", "ebd")],
                            [("schmidt2018", "12 ff.", "short"), ("weber2020", "Rn. 3", "short")]]
    assert scan.notes[2].cited[1].ref.authors == ("Weber", "Fischer")


def test_same_author_op_cit_and_short_titles() -> None:
    listed = tuple(entries.parse_entry(text, i) for i, text in enumerate((
        "Koch, Sabine: Wasserhaushalt urbaner Böden, Bonn 2022.",
        "Müller, Jana: Dachbegrünung. Technik und Recht, Hamburg 2017.",
        "Müller, Jana: Gründächer in der Stadt, Berlin 2019.")))
    scan = _scan(
        "Eins.¹ Zwei.² Drei.³ Vier.⁴ Fünf.⁵ Sechs.⁶\n\n"
        "1 Koch, a.a.O., S. 3.\n"
        "2 Dies., Wasserhaushalt urbaner Böden, S. 4.\n"
        "3 Müller, Gründächer in der Stadt, S. 7.\n"
        "4 Dies., Dachbegrünung, 2017, S. 9.\n"
        "5 Müller, a.a.O., S. 10.\n"
        "6 Vgl. Müller 2019, S. 45-47.", listed=listed)
    assert _cited(scan) == [[("koch2022", "3", "aao")], [("koch2022", "4", "ders")],
                            [("mueller2019", "7", "title")], [("mueller2017", "9", "ders")],
                            [("mueller2017", "10", "aao")], [("mueller2019", "45-47", "short")]]


def test_what_cannot_be_told_is_kept_as_unresolved() -> None:
    scan = _scan("Eins.¹ Zwei.² Drei.³\n\n1 Ebd., S. 4.\n2 Der Begriff wird weit verstanden.\n"
                 "3 Schulz, a.a.O., S. 9.")
    assert _cited(scan) == [[], [], []]
    assert [n.unresolved for n in scan.notes] == [("Ebd., S. 4.",), (), ("Schulz, a.a.O., S. 9.",)]


def test_numbered_lines_without_marks_are_body() -> None:
    # A numbered heading or list closing a page is no footnote without its mark.
    text = "Der Text endet hier.\n\n1 Einleitung und Müller 2019, S. 3.\n2 Methoden"
    scan = _scan(text)
    assert scan.notes == () and scan.pages == ((1, text),)
    # A mark on the page before points at a note carried over to this page.
    carried = _scan("Ein Satz.¹", "Weiter im Text.\n\n1 Vgl. Koch 2022, S. 8.")
    assert [(n.number, n.page) for n in carried.notes] == [(1, 2)]
    assert footnotes.pair(carried.notes, [(1, 1)]) == {0: carried.notes[0]}
    assert footnotes.pair(carried.notes, [(1, 3)]) == {}


def test_an_english_paper_s_remark_footnote_keeps_its_own_claim() -> None:
    # The body cites in parentheses; its one footnote citation is a remark of its own.
    pages = [(1, "Models grow fast (Smith, 2020). Data grows too (Jones, 2019).\n"
                 "The method is simple.¹\n\n1 See Lee (2018) for a survey of such methods.")]
    extraction = citations.extract(pages)
    lee = [c for c in extraction.citations if c.key == "lee2018"]
    assert len(lee) == 1 and lee[0].claim.endswith("See Lee for a survey of such methods.")
    assert not any(c.claim == "The method is simple." for c in extraction.citations)


def test_hostile_notes_are_read_in_bounded_time() -> None:
    long_note = "Vgl. " + "Müller, Jana, " * 20_000 + "2019."
    many = "\n".join(f"{n} Vgl. Koch 2022, S. {n}." for n in range(1, 80))
    marks = "".join(f"Satz{str(n).translate(str.maketrans('0123456789', '⁰¹²³⁴⁵⁶⁷⁸⁹'))} "
                    for n in range(1, 80))
    pages = [f"Ein Satz.¹\n\n1 {long_note}"] + [f"{marks}\n\n{many}"] * 100
    start = time.monotonic()
    scan = _scan(*pages)
    assert time.monotonic() - start < 10
    assert len(scan.notes) == 1 + 79 * 100
    assert len(scan.notes[0].text) > footnotes.MAX_NOTE_CHARS


def test_the_comma_full_form_and_a_citation_inside_a_remark() -> None:
    scan = _scan("Eins.¹ Zwei.² Drei.³\n\n"
                 "1 Vgl. Müller, Jana, Gründächer in der Stadt, Berlin 2019, S. 4.\n"
                 "2 Anders die ältere Literatur, etwa Schulz 2014, S. 3.\n"
                 "3 Müller, Gründächer, S. 9.")
    # The place before the year ("Berlin 2019") is not an author.
    assert _cited(scan) == [[("mueller2019", "4", "full")], [("schulz2014", "3", "short")],
                            [("mueller2019", "9", "title")]]
