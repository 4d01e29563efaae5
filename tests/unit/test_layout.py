"""Layout traits of real papers and theses, each in a small PDF built here.

Each test builds the trait that broke on real documents (two columns, a hanging
indent, a rotated arXiv stamp, bracketed author-year markers, a heading in another
language, an appendix after the references) and checks the pipeline reads it.
"""

from __future__ import annotations

import time

import pytest

from citerun.worker.pipeline import citations, pdf
from tests.unit import pdf_fixtures

LIMIT = 50 * 1024 * 1024

LEFT = [
    "Neural machine translation improved a lot in recent",
    "years, and subword units made open vocabularies",
    "possible [Sennrich et al., 2016b]. Alignment models",
    "were studied long before neural systems existed",
    "[Knight and Marcu, 2004]. Sentence compression",
    "follows the same noisy channel view of the task.",
    "",
    "References",
    "",
    "Jeffrey Dean and Sanjay Ghemawat. 2004. MapReduce:",
    "\tSimplified data processing on large clusters. In",
    "\tProceedings of OSDI, pages 137-150.",
    "Kevin Knight and Daniel Marcu. 2004. Summarization",
    "\tbeyond sentence extraction: A probabilistic",
]
RIGHT = [
    "\tapproach to sentence compression. Artificial",
    "\tIntelligence, 139(1):91-107.",
    "Rico Sennrich, Barry Haddow, and Alexandra Birch.",
    "\t2016a. Edinburgh neural machine translation",
    "\tsystems for WMT 16. In Proceedings of WMT.",
    "Rico Sennrich, Barry Haddow, and Alexandra Birch.",
    "\t2016b. Neural machine translation of rare words",
    "\twith subword units. In Proceedings of ACL,",
    "\tpages 1715-1725.",
    "Madeleine van Zuylen and Kyle Lo. 2020. Reading",
    "\tscientific papers with assistance. arXiv preprint",
    "\tarXiv:2009.01234.",
]


def two_column_paper() -> bytes:
    return pdf_fixtures.placed_pdf(
        [pdf_fixtures.column(72, 72, LEFT, indent=10) + pdf_fixtures.column(320, 72, RIGHT, indent=10)],
        bold_lines=("References",),
    )


def parse(data: bytes) -> pdf.ParsedDocument:
    return pdf.parse_pdf(data, max_bytes=LIMIT)


def extract(data: bytes) -> citations.Extraction:
    return citations.extract([(p.number, p.text) for p in parse(data).pages])


def test_two_columns_are_read_left_then_right() -> None:
    text = parse(two_column_paper()).pages[0].text
    assert text.index("noisy channel") < text.index("References") < text.index("Jeffrey Dean")
    assert text.index("beyond sentence extraction") < text.index("approach to sentence compression")
    assert text.index("Jeffrey Dean") < text.index("Madeleine van Zuylen")


def test_line_starts_and_geometry_are_kept() -> None:
    page = parse(two_column_paper()).pages[0]
    assert "\nReferences\n" in page.text
    heading = next(line for line in page.lines if line.text == "References")
    assert heading.bold and heading.paragraph_start
    x0, y0, x1, y1 = heading.bbox
    assert 70 <= x0 < 80 and x0 < x1 < 320 and 0 < y0 < y1 < page.height


def test_hanging_indent_entries_across_columns() -> None:
    extraction = extract(two_column_paper())
    entries = extraction.references
    assert [(e.authors[0], e.year, e.year_suffix) for e in entries] == [
        ("Dean", 2004, ""),
        ("Knight", 2004, ""),
        ("Sennrich", 2016, "a"),
        ("Sennrich", 2016, "b"),
        ("van Zuylen", 2020, ""),
    ]
    assert entries[1].title == "Summarization beyond sentence extraction: A probabilistic approach to sentence compression"
    assert entries[4].arxiv_id == "2009.01234"


def test_bracketed_author_year_markers_never_from_the_list() -> None:
    extraction = extract(two_column_paper())
    assert [(c.key, c.marker) for c in extraction.citations] == [
        ("sennrich2016b", "[Sennrich et al., 2016b]"),
        ("knight2004", "[Knight and Marcu, 2004]"),
    ]
    assert extraction.citations[0].claim.endswith("subword units made open vocabularies possible.")


def test_given_surname_entry_maps_marker_and_the_suffix_picks_the_entry() -> None:
    extraction = extract(two_column_paper())
    source = citations.SourceInfo(
        document_id="bpe", filename="paper.pdf",
        title="Neural Machine Translation of Rare Words with Subword Units",
        authors=("Rico Sennrich", "Barry Haddow", "Alexandra Birch"), year=2016,
    )
    mapped = citations.map_citations(extraction, [source])
    assert [(m.citation.key, m.document_id) for m in mapped] == [
        ("sennrich2016b", "bpe"), ("knight2004", None)]
    assert mapped[0].reference is not None and mapped[0].reference.year_suffix == "b"
    assert mapped[0].reason is not None and "first author" in mapped[0].reason
    assert mapped[1].reference is not None and mapped[1].reference.authors[0] == "Knight"


def test_rotated_arxiv_stamp_is_not_the_title() -> None:
    data = pdf_fixtures.placed_pdf(
        [[(100, 90, "Attention Is All You Need"), (100, 130, "Ashish Vaswani, Noam Shazeer"),
          (100, 160, "Abstract"), *pdf_fixtures.column(100, 180, ["The dominant sequence models."] * 8)]],
        big=("Attention Is All You Need",),
        stamp="arXiv:1706.03762v5 [cs.CL] 6 Dec 2017",
    )
    doc = parse(data)
    assert doc.title == "Attention Is All You Need"
    assert doc.authors == ("Ashish Vaswani", "Noam Shazeer")
    assert doc.arxiv_id == "1706.03762"
    assert "arXiv" not in doc.pages[0].text


def test_arxiv_id_in_the_entry_maps_outright() -> None:
    extraction = extract(two_column_paper())
    source = citations.SourceInfo(document_id="x", filename="x.pdf", title="Something else",
                                  authors=(), year=None, arxiv_id="2009.01234")
    entry = extraction.references[4]
    assert citations.match(entry, source, citations.MatchConfig()) == (100.0, "arxiv id equal")


@pytest.mark.parametrize(
    "heading",
    ["Referências", "Referências Bibliográficas", "Bibliografia", "Bibliografía", "Bibliographie",
     "Références", "Literatur", "Literaturverzeichnis", "Referencias", "Riferimenti bibliografici",
     "BIBLIOGRAPHY", "7 References"],
)
def test_reference_headings_in_six_languages(heading: str) -> None:
    body = ["Ein Satz mit Beleg (Müller, 2018).", "", heading, "",
            "Müller, H. (2018). Inflation und Löhne. Berlin: Springer.",
            "Schmidt, P. (2019). Geldpolitik heute. Wien: Manz."]
    extraction = extract(pdf_fixtures.text_pdf([body]))
    assert [e.author_year_key for e in extraction.references] == ["mueller2018", "schmidt2019"]
    assert [c.key for c in extraction.citations] == ["mueller2018"]


def test_appendix_after_the_references_is_not_read_as_references() -> None:
    pages = [
        ["A claim [1]. Another claim [2]."],
        ["References", "", "[1] Smith, J. (2020). Title one. Journal.",
         "[2] Lee, K. (2019). Title two. Journal."],
        ["Appendix A", "", "1. Collect the data.", "2. Clean the data.", "3. Fit the model.",
         "4. Report the result [1]."],
    ]
    extraction = extract(pdf_fixtures.text_pdf(pages))
    assert [(e.label, e.authors[0]) for e in extraction.references] == [("1", "Smith"), ("2", "Lee")]
    assert [(c.key, c.page) for c in extraction.citations] == [("1", 1), ("2", 1), ("1", 3)]


def test_a_running_head_bibliography_does_not_win_over_the_heading() -> None:
    pages = [
        pdf_fixtures.column(72, 90, ["Body text cites [1] and [2] and [3]."]),
        [(72, 160, "Bibliography"), *pdf_fixtures.column(72, 200, [
            "[1] Smith, J. (2020). Title one. Journal.", "[2] Lee, K. (2019). Title two. Journal."])],
        # A running head printed on this page only, in the top margin.
        [(250, 40, "BIBLIOGRAPHY"),
         *pdf_fixtures.column(72, 90, ["[3] Park, S. (2018). Title three. Journal."])],
    ]
    extraction = extract(pdf_fixtures.placed_pdf(pages, big=("Bibliography",)))
    assert [e.label for e in extraction.references] == ["1", "2", "3"]
    assert "BIBLIOGRAPHY" not in extraction.references[1].text


def test_alpha_labels_cite_their_entries() -> None:
    pages = [
        ["As shown before [AB12, Knu84], the bound holds."],
        ["References", "", "[AB12] Adams, J. and Brown, K. (2012). Bounds. Journal.",
         "[Knu84] Knuth, D. (1984). Literate programming. Computer Journal."],
    ]
    extraction = extract(pdf_fixtures.text_pdf(pages))
    assert [c.key for c in extraction.citations] == ["AB12", "Knu84"]
    assert [e.label for e in extraction.references] == ["AB12", "Knu84"]
    mapped = citations.map_citations(extraction, [citations.SourceInfo(
        document_id="k", filename="k.pdf", title="Literate Programming", authors=("Donald Knuth",),
        year=1984)])
    assert [m.document_id for m in mapped] == [None, "k"]


def test_equation_names_and_intervals_are_not_markers() -> None:
    body = ["The kernel of Dokshitzer(1977) is evaluated on [0, 1] as in Smith (2019).", "",
            "References", "", *[f"Author{n}, A. (20{10 + n}). Title {n}. Journal." for n in range(6)],
            "Smith, J. (2019). The kernel. Journal."]
    extraction = extract(pdf_fixtures.text_pdf([body]))
    assert [c.key for c in extraction.citations] == ["smith2019"]


def test_year_one_apart_maps_and_the_best_entry_of_one_author_wins() -> None:
    refs = (
        "Joseph Chee Chang, Saleema Amershi, and Ece Kamar. 2017. Revolt: Collaborative "
        "crowdsourcing for labeling machine learning datasets. In CHI.\n\n"
        "Joseph Chee Chang, Amy X. Zhang, Jonathan Bragg, and Daniel S. Weld. 2023. CiteSee: "
        "Augmenting citations in scientific papers with persistent and personalized historical "
        "context. In CHI.\n\n"
        "Tal August, Lucy Lu Wang, and Kyle Lo. 2023. Paper plain: Making medical research papers "
        "approachable to healthcare consumers. ACM TOCHI."
    )
    extraction = citations.extract([
        (1, "Highlighting helps (Chang et al., 2023). Summaries help (August et al., 2023)."),
        (2, "References\n\n" + refs),
    ])
    sources = [
        citations.SourceInfo(document_id="citesee", filename="a.pdf",
                             title="CiteSee: Augmenting Citations in Scientific Papers with "
                                   "Persistent and Personalized Historical Context",
                             authors=("Joseph Chee Chang", "Amy X. Zhang"), year=2023),
        citations.SourceInfo(document_id="plain", filename="b.pdf",
                             title="Paper Plain: Making Medical Research Papers Approachable to "
                                   "Healthcare Consumers with Natural Language Processing",
                             authors=("Tal August", "Lucy Lu Wang"), year=2022),
    ]
    mapped = citations.map_citations(extraction, sources)
    assert [(m.citation.key, m.document_id) for m in mapped] == [
        ("chang2023", "citesee"), ("august2023", "plain")]
    assert mapped[1].reason is not None and "year ±1" in mapped[1].reason


ADVERSARIAL = {
    "comma list": "Aa, " * 30_000,
    "and list": "Aa and " * 17_000,
    "open parenthesis": "(" + "Aa, " * 30_000,
    "open bracket": "[" + "1, " * 40_000,
    "years without a closing parenthesis": "Aa and Aa, (2020 " * 7_000,
    "one long word before a period": "x" * 119_000 + ". A",
    "periods": "A. " * 40_000,
    "brackets of names": "[Aa and Aa, " * 10_000,
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_extraction_is_linear_on_adversarial_text(text: str) -> None:
    # 120 KB of text that made the old patterns backtrack for many seconds (minutes for
    # the comma list); a linear pass takes a few hundredths of a second.
    text = text[:120_000]
    start = time.perf_counter()
    citations.extract([(1, text), (2, "References\n\n" + text)])
    assert time.perf_counter() - start < 1.0


def test_colon_style_entry_keeps_its_title() -> None:
    # BMC/Springer: "Authors: Title. Journal 2010, 158:515-9." (the title was "158:515-9").
    entry = citations.parse_entry(
        "Tully NE, Morgan KM, Burke HM: Patient experiences of structured heart failure "
        "programmes. Rehabil Res Pract 2010, 158:515-9.", 1, "4")
    assert (entry.authors, entry.year, entry.title) == (
        ("Tully", "Morgan", "Burke"), 2010,
        "Patient experiences of structured heart failure programmes")
