"""A writer's file whose citations are typed, not fields (issue 40 items 1, 10).

Most students write in Word and type their citations, or use a tool whose fields are
not read (Word's own "Sources", RefWorks): such a thesis is read as text with its
paragraphs, by the rules of the page. It must never be refused for its length while it
is within the document's limits; its typed citations and typed reference list are read
as for a PDF.
"""

from __future__ import annotations

from citerun.pipeline import citations, document, recipe
from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.pipeline.writer import formats
from citerun.worker import steps
from tests.support import docx_fixtures as fx

AUTHORS = ["Hammer", "Eaton", "Novak", "Lindgren", "Okafor", "Petrov", "Quist", "Rahman"]
FILLER = ("The measurements were repeated in every season and the differences between "
          "the sites stayed within the error of the instruments used for them. ")


def typed_thesis(paragraphs: int = 80) -> bytes:
    """A German-style Word thesis with APA citations typed by hand and a typed
    reference list: about 900 characters a paragraph, 75,000 in all."""
    body = [fx.paragraph(fx.run("1 Einleitung"), style="berschrift1")]
    for n in range(paragraphs):
        author = AUTHORS[n % len(AUTHORS)]
        year = 2000 + n % len(AUTHORS)
        body.append(fx.paragraph(fx.run(
            FILLER * 6 + f"Cities warm faster than their surroundings in case {n} "
            f"({author}, {year}).")))
    body.append(fx.paragraph(fx.run("Literaturverzeichnis"), style="berschrift1"))
    for n, author in enumerate(AUTHORS):
        body.append(fx.paragraph(fx.run(
            f"{author}, A. ({2000 + n}). Heat in the streets of {author}town. "
            f"Journal of Urban Climate, {n + 1}(2), 10-20.")))
    return fx.docx("".join(body))


def test_a_long_word_thesis_without_fields_is_read_not_refused() -> None:
    data = typed_thesis()
    limits = LimitSettings()
    outcome = steps.parse(data, limits, DocumentSettings(max_bytes=50 * 2**20, chunk_chars=1200,
                                                         overlap_chars=200))
    assert isinstance(outcome, steps.Parsed), outcome
    pages = outcome.document.numbered()
    assert sum(len(t) for _, t in pages) > limits.max_page_chars
    assert document.check_text(pages, limits) is None  # nothing over the per-page cap
    extraction = citations.extract(pages)
    assert len(extraction.citations) == 80
    assert len(extraction.references) == len(AUTHORS)
    assert {c.authors[:1] for c in extraction.citations} == {(a,) for a in AUTHORS}
    # Every typed citation names its typed reference entry.
    mapped = citations.map_citations(extraction, [])
    assert all(m.reference is not None and m.reference.authors[0] == m.citation.authors[0]
               for m in mapped)


def test_units_are_whole_paragraphs_in_reading_order() -> None:
    text = "\n\n".join(f"Paragraph {n} " + "x" * 300 for n in range(100))
    units = formats.in_units([(1, text)], size=1000)
    assert [n for n, _ in units] == list(range(1, len(units) + 1))
    assert all(len(t) <= 1000 for _, t in units)
    assert "\n\n".join(t for _, t in units) == text
    long = "word " * 1000  # one paragraph over the size: cut at a space
    assert all(len(t) <= 1000 for _, t in formats.in_units([(1, long)], size=1000))


def test_typed_citations_beside_zotero_fields_are_listed_not_dropped() -> None:
    from citerun.pipeline.writer import docx_citations

    smith = fx.csl_item("smith", "Urban heat islands at night", [("Smith", "Anna")], 2020)
    body = "".join([
        fx.paragraph(fx.run("Heat islands raise night temperatures "),
                     fx.field(fx.zotero_code([{"key": "smith", "data": smith}], "(Smith, 2020)"),
                              "(Smith, 2020)"),
                     fx.run(". Trees cool the streets below them (Meyer, 2015, S. 3)."),
                     fx.footnote_reference(1)),
        fx.paragraph(fx.run("Novak (2018) measured the same in Prague.")),
        fx.paragraph(fx.run("References"), style="berschrift1"),
        fx.paragraph(fx.run("Meyer, A. (2015). Trees in streets. Urban Forestry, 3, 1-9.")),
    ])
    notes = fx.footnote(1, fx.run("Similar: Keller et al. (2019), p. 4."))
    thesis = formats.read_thesis(fx.docx(body, notes))
    assert [c.keys for c in thesis.citations] == [("smith",)]
    typed = [(s.where, s.text) for s in thesis.skipped if s.reason == docx_citations.TYPED_REASON]
    assert typed == [("paragraph 1", "(Meyer, 2015, S. 3)"), ("paragraph 2", "Novak (2018)"),
                     ("footnote 1", "Keller et al. (2019)")]


COLUMNS = ("number", "text", "width", "height", "lines", "image", "label")


def test_typed_citations_of_a_word_thesis_are_located_by_paragraph_and_footnote() -> None:
    body = "".join([
        fx.paragraph(fx.run("1 Einleitung"), style="berschrift1"),
        fx.paragraph(fx.run("Cities warm faster than their surroundings (Hammer, 2000).")),
        fx.paragraph(fx.run("Trees cool the streets (Eaton, 2001)."), fx.footnote_reference(1)),
        fx.paragraph(fx.run("Literaturverzeichnis"), style="berschrift1"),
        fx.paragraph(fx.run("Eaton, A. (2001). Trees in streets. Urban Forestry, 3, 1-9.")),
        fx.paragraph(fx.run("Hammer, A. (2000). Warm cities. Urban Climate, 1, 2-8.")),
        fx.paragraph(fx.run("Novak, A. (2002). Parks. Urban Climate, 2, 3-9.")),
    ])
    notes = fx.footnote(1, fx.run("Parks do the same, see Novak (2002)."))
    read = recipe.read(fx.docx(body, notes), LimitSettings(), 1 << 30)
    assert read.written is not None and read.written.citations == ()  # no fields: the rules
    # of the page read it, located in the document as the parse stage stores it
    stored = document.Document.from_rows({"written": document.written_json(read)},
                                         [dict(zip(COLUMNS, document.page_row(p)))
                                          for p in read.pages])
    assert stored == read
    extraction = formats.locate(citations.extract(stored.numbered()), stored)
    assert [(c.marker, c.location) for c in extraction.citations] == [
        ("(Hammer, 2000)", "paragraph 2"), ("(Eaton, 2001)", "paragraph 3"),
        ("Novak (2002)", "footnote 1")]
