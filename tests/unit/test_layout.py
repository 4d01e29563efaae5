"""Layout traits of real papers and theses, each in a small PDF built here.

Each test builds the trait that broke on real documents (two columns, a hanging
indent, a rotated arXiv stamp, bracketed author-year markers, a heading in another
language, an appendix after the references) and checks the pipeline reads it.
"""

from __future__ import annotations

import time

import pytest

from citerun.pipeline import citations, pdf
from citerun.pipeline.document import Document
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


def parse(data: bytes) -> Document:
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


# --- traits found by the hand-made truth (bench/realpdf_truth) -------------------------


def test_a_label_set_beside_a_taller_first_line_opens_its_entry() -> None:
    # cermine_test5, p. 7: the label "9." is a line of its own whose top lies 0.3 pt
    # below that of the entry's first line ("L’Abbe´ ...": the accent raises it). Sorted
    # by rounded middles the label came after the line, and entry 9 began inside entry 8.
    lines: list[pdf_fixtures.Placed] = []
    y = 100.0
    for n, first, rest in [
        (8, "Chey WD, Wong BC. Practice Parameters Committee of the", "College. Am J Gastroenterol 2007;102:1808-25."),
        (9, "L'Abbé KA, Detsky AS, O'Rourke K. Meta-analysis in clinical", "research. Ann Intern Med 1987;107:224-33."),
        (10, "Moher D, Cook DJ, Eastwood S, et al. Improving the quality", "of reports. Lancet 1999;354:1896-900."),
    ]:
        lines += [(45.5, y + 0.6, f"{n}."), (60.0, y, first), (60.0, y + 9, rest)]
        y += 22
    data = pdf_fixtures.placed_pdf([[(60, 80, "References"), *lines]], fontsize=7)
    text = parse(data).pages[0].text
    assert "9. L'Abbé KA" in text, text
    entries = citations.parse_reference_list(text.split("References", 1)[1])
    assert [(e.label, e.authors[0]) for e in entries] == [("8", "Chey"), ("9", "L'Abbé"), ("10", "Moher")]


def test_a_short_last_column_is_still_a_column() -> None:
    # beyond_summarization_shen2023, p. 4: the left column holds entries 15-32, the
    # right one only 33-35 (11 of 89 lines), under the share that made a page two
    # columns; the right column's lines were read into the left column's entries.
    left = [f"[{n}] Author{n} Person and Other Person. 2020. A title of the work number {n} that" if i == 0
            else "runs over a second line of the column. In Proceedings (2020)."
            for n in range(1, 21) for i in range(2)]
    right = ["[21] Kevin Yang, Nanyun Peng, Yuandong Tian, and Dan Klein. 2022.",
             "Re3: Generating longer stories with recursive reprompting.",
             "[22] Daniel M Ziegler, Nisan Stiennon, Jeffrey Wu, and Tom Brown.",
             "2019. Fine-tuning language models from human preferences.",
             "arXiv preprint arXiv:1909.08593 (2019)."]
    page = pdf_fixtures.column(54, 90, left, leading=8) + pdf_fixtures.column(318, 90, right, leading=8)
    text = parse(pdf_fixtures.placed_pdf([[(54, 80, "References"), *page]], fontsize=6.5)).pages[0].text
    assert text.index("Author20 Person") < text.index("[21] Kevin Yang")
    entries = citations.parse_reference_list(text.split("References", 1)[1])
    assert [(e.label, e.authors[0], e.year) for e in entries[-3:]] == [
        ("20", "Person", 2020), ("21", "Yang", 2022), ("22", "Ziegler", 2019)]


def _superscript_page() -> bytes:
    """Raised numbers as a BMJ-style article sets them (cermine_test5): authors at 13 pt
    with affiliation marks, citations with a range whose dash the font maps to "e", a
    squared symbol, and an initial before a citation in a table."""
    import pymupdf  # noqa: PLC0415

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)

    def put(x: float, y: float, text: str, size: float) -> float:
        page.insert_text((x, y), text, fontsize=size)
        return x + float(pymupdf.get_text_length(text, fontsize=size))

    def raised(x: float, y: float, digits: str, size: float) -> float:
        for piece in digits.split("|"):  # one span each, as the article's PDF has them
            x = put(x, y - size * 0.35, piece, size * 0.7)
        return x

    x = put(72, 80, "Xiaolu Huang,", 13)
    x = raised(x, 80, "1,2", 13)
    put(x + 4, 80, "Xinhua Qu", 13)
    x = put(72, 120, "Anaemia is common in Asia.", 9)
    x = raised(x, 120, "1|e|3", 9)
    put(x + 3, 120, "We present the I", 9)
    x = put(72, 132, "We present the I", 9)
    x = raised(x, 132, "2", 9)
    put(x + 2, 132, "value of the trials.", 9)
    x = put(72, 144, "Lin Y", 9)
    x = raised(x, 144, "2", 9)
    put(x + 4, 144, "2005 China 68", 9)
    put(72, 180, "References", 9)
    for n in range(1, 4):
        put(72, 180 + 12 * n, f"{n}. Author{n} AB. A title number {n}. Gut 2007;56:772e81.", 9)
    return doc.tobytes()


def test_raised_numbers_cite_but_affiliation_marks_and_squares_do_not() -> None:
    extraction = extract(_superscript_page())
    assert [(c.key, c.marker) for c in extraction.citations] == [
        ("1", "¹–³"), ("2", "¹–³"), ("3", "¹–³"), ("2", "²")]
    assert extraction.citations[-1].claim.startswith("Lin Y")


def _accented_pdf(lines: list[str]) -> bytes:
    """Lines whose "{a¨}"-style pieces set a spacing accent glyph over its letter, as TeX
    does: the accent is a character of its own, its box centred on the letter's ("!":
    the accent comes after its letter in the content stream)."""
    import re  # noqa: PLC0415

    import pymupdf  # noqa: PLC0415

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    font = pymupdf.Font("helv")  # the whole Latin glyph set, unlike the base-14 encoding
    size = 10.0
    writer = pymupdf.TextWriter(page.rect)
    for row, line in enumerate(lines):
        x, y = 72.0, 90.0 + 14 * row
        for piece in re.split(r"(\{[^}]+\})", line):
            if piece.startswith("{"):
                letter, accent, after = piece[1], piece[2], piece[3:4] == "!"
                width = float(font.text_length(letter, fontsize=size))
                shift = (width - float(font.text_length(accent, fontsize=size))) / 2
                pieces = [(x, letter), (x + shift, accent)]
                for at, glyph in pieces if after else pieces[::-1]:
                    writer.append((at, y), glyph, font=font, fontsize=size)
                x += width
            elif piece:
                writer.append((x, y), piece, font=font, fontsize=size)
                x += float(font.text_length(piece, fontsize=size))
    writer.write_text(page)
    return doc.tobytes()


def test_spacing_accents_are_joined_to_the_letter_under_them() -> None:
    # TeX-set PDFs (S2ORC's "Saier and F¨arber (2019)", "Dog˘an", LongEval's "Ondˇrej")
    # and BMJ's "L'Abbe´" print the accent as a glyph of its own over its letter; the
    # text alone cannot tell "Dog˘an" (ğ, the letter before) from "F¨arber" (the after).
    data = _accented_pdf([
        "Derived from arXiv, as Saier and F{a¨}rber (2019) and Do{g˘!}an et al. (2014) describe.",
        "",
        "References",
        "",
        "Rezarta Islamaj Do{g˘!}an and Robert Leaman. 2014. NCBI disease corpus. JBI.",
        "Tarek Saier and Michael F{a¨}rber. 2019. Bibliometric-enhanced arXiv. In BIR.",
        "Ond{rˇ}ej Bojar and Milo{sˇ} Stanojevi{c´}. 2016. Results of WMT16. In WMT.",
        "Kristan A. L'Abb{e´!} and Allan S. Detsky. 1987. Meta-analysis in clinical research. AIM.",
    ])
    text = parse(data).pages[0].text
    assert "F¨" not in text and "˘" not in text and "ˇ" not in text and "´" not in text, text
    extraction = extract(data)
    assert [(c.key, c.authors[0]) for c in extraction.citations] == [
        ("saier2019", "Saier"), ("dogan2014", "Doğan")]
    assert [e.authors[:2] for e in extraction.references] == [
        ("Doğan", "Leaman"), ("Saier", "Färber"), ("Bojar", "Stanojević"), ("L'Abbé", "Detsky")]
    assert "Ondřej Bojar" in extraction.references[2].text


def test_a_marker_across_a_page_break_under_a_wrapped_running_head() -> None:
    # paper_plain_august2022, p. 4-5: "[16," ends page 4; page 5 opens with a running
    # head wrapped onto a second line that also holds the page number ("Processing   5"),
    # below the top margin band: the number stayed and cut the marker in two.
    head = "Paper Plain: Making Medical Research Papers Approachable to Healthcare Consumers with Natural Language"
    pages = []
    for number in range(1, 4):
        lines: list[pdf_fixtures.Placed] = [(73, 74, head), (73, 85, "Processing"), (498, 85, str(number))]
        body = {1: ["Trustworthy information helps healthcare consumers and increases",
                    "adherence to medical recommendations [1,"],
                2: ["2, 3]. Tan and Goonawardene [3] reviewed the consumer health seeking.",
                    "They found that people did not feel like they could discuss",
                    "the information they found online with their clinicians."],
                3: ["References", "", "[1] Ann Author. 2019. One. J.", "[2] Bob Author. 2018. Two. J.",
                    "[3] Tan and Goonawardene. 2017. Three. J."]}[number]
        pages.append(lines + pdf_fixtures.column(110, 120, body))
    extraction = extract(pdf_fixtures.placed_pdf(pages))
    assert [(c.key, c.page, c.marker) for c in extraction.citations] == [
        ("1", 1, "[1, 2, 3]"), ("2", 1, "[1, 2, 3]"), ("3", 1, "[1, 2, 3]"), ("3", 2, "[3]")]


def test_misspelt_heading_and_a_year_beside_the_next_columns_label() -> None:
    # A journal layout (issue 10, held-out): the list stands under "REFFERENCES", in two
    # columns of "n. Surname, I., year." entries with justified words set apart; the
    # year closing a left-column line ("2013.") stands on the row of the right column's
    # label "6." and was glued to it as if it were that entry's label.
    body = [(72, 90, "Silk gland protein was measured as described by Singh and Agarwal"),
            (72, 102, "[1989]. Larvae were reared as before [1, 2] at 25 degrees.")]
    left = pdf_fixtures.column(72, 150, [
        "1. Upadhyay, V.B., K.P. Gaur and S.K. Gupta, 2004.",
        "\tEffect of ecological factors on the silk producing.",
        "2. Mishra, A.B. and V.B. Upadhyay, 1993. Nutritional",
        "\tefficiency of bivoltine Bombyx mori larvae.",
    ], indent=18)
    left += [(72, 198, "3. Pandey,"), (136, 198, "P. and V.B."), (218, 198, "Upadhyay,"), (272, 198, "2013."),
             (90, 210, "Phytoecdysteroid treatment on the larval performance.")]
    right = pdf_fixtures.column(315, 150, [
        "4. Filippovich, Yu. B., 1960. Changes in the amino",
        "\tacid composition of tissue proteins of larvae.",
        "5. Doira, B., 1968. Developmental and sexual",
        "\tdifferences of blood proteins in the silkworm.",
        "6. Singh, D.K. and R.A. Agarwal, 1989. Toxicity of",
        "\tpiperonyl butoxide carbaryl synergism on snails.",
    ], indent=18)
    data = pdf_fixtures.placed_pdf([body + [(149, 130, "REFFERENCES")] + left + right], fontsize=8)
    text = parse(data).pages[0].text
    assert "2013. 6." not in text, text
    extraction = extract(data)
    assert [(e.label, e.authors[0], e.year) for e in extraction.references] == [
        ("1", "Upadhyay", 2004), ("2", "Mishra", 1993), ("3", "Pandey", 2013),
        ("4", "Filippovich", 1960), ("5", "Doira", 1968), ("6", "Singh", 1989)]
    # The numbered paper's own "Author [year]" citation is kept, and is no entry 1989.
    assert [c.key for c in extraction.citations] == ["singh1989", "1", "2"]


@pytest.mark.parametrize("line", ["Preferences", "REFERENCES AND NOTES ON THE", "We list the refferences below."])
def test_a_near_miss_that_is_no_heading(line: str) -> None:
    entries = "\n".join(f"{n}. Smith, J., 20{n:02d}. Title number {n}. Journal." for n in range(1, 9))
    assert citations.extract([(1, f"Intro text.\n\n{line}\n\n{entries}")]).references == ()


def test_dotless_i_under_an_accent_is_the_accented_i() -> None:
    # TeX sets "í" as "ı" and a combining acute: "Ası́n Achá", "Melı́cio".
    from citerun.pipeline import layout  # noqa: PLC0415

    assert layout.normalize_spaces("Roberto Ası\u0301n Achá and Fernando Melı\u0301cio") == (
        "Roberto Asín Achá and Fernando Melício")
    assert layout.normalize_spaces("ıtem ı") == "ıtem ı"  # a plain dotless i stays
