"""Parsing, cleaning, sentence splitting and chunking of PDFs (no database)."""

from __future__ import annotations

import json
import pathlib

import pytest

from citerun.pipeline import pdf
from citerun.pipeline.document import Document
from tests.unit import pdf_fixtures

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
LIMIT = 10_000_000

BODIES = [
    ["Cities store heat in stone and asphalt.", "The night stays warm.", "Wind helps a little."],
    ["Trees shade the street.", "Leaves transpire water.", "Canopy matters most in dry cities."],
    ["Roofs can reflect sunlight.", "White paint is cheap.", "Dust reduces reflectance."],
    ["Older adults suffer most.", "Admissions rise in the heat.", "Green space softens the effect."],
    ["Planners need cheap measures.", "Trees take years to grow.", "Roofs are quick to change."],
]


def parse(data: bytes) -> Document:
    return pdf.parse_pdf(data, max_bytes=LIMIT)


def flat(text: str) -> str:
    """Page text with its line starts joined, paragraphs kept apart."""
    return "\n\n".join(p.replace("\n", " ") for p in text.split("\n\n"))


# --- pages and metadata ----------------------------------------------------------------


def test_pages_are_numbered_from_one_in_order() -> None:
    data = pdf_fixtures.text_pdf([[f"Marker sentence for sheet {n}."] for n in "ABCD"])
    doc = parse(data)
    assert doc.page_count == 4
    assert [page.number for page in doc.pages] == [1, 2, 3, 4]
    assert [page.text for page in doc.pages] == [
        f"Marker sentence for sheet {n}." for n in "ABCD"
    ]


def test_metadata_gives_title_authors_and_year() -> None:
    data = pdf_fixtures.text_pdf(
        [["Heat and Health", "Li Wei and Sarah Mitchell", "Body text."]],
        metadata={
            "title": "  Heat and   Health ",
            "author": "Li Wei; Sarah Mitchell",
            "creationDate": "D:20180312101010+01'00'",
        },
    )
    doc = parse(data)
    assert doc.title == "Heat and Health"
    assert doc.authors == ("Li Wei", "Sarah Mitchell")
    assert doc.year == 2018


def test_metadata_the_page_does_not_show_is_ignored() -> None:
    # The info fields of a journal reprint: the journal's name and the typesetter.
    data = pdf_fixtures.text_pdf(
        [["Body text of the article."]],
        title_line="Street Trees and Surface Temperature",
        metadata={"title": "AI Magazine", "author": "Typesetter Office"},
    )
    doc = parse(data)
    assert doc.title == "Street Trees and Surface Temperature"
    assert doc.authors == ()


@pytest.mark.parametrize(
    ("field", "authors"),
    [
        ("Smith, John", ("Smith, John",)),
        ("John Smith, Jane Doe", ("John Smith", "Jane Doe")),
        ("John Smith and Jane Doe", ("John Smith", "Jane Doe")),
        ("Smith, J.; Doe, J.", ("Smith, J.", "Doe, J.")),
        ("", ()),
    ],
)
def test_author_field_is_split_into_people(field: str, authors: tuple[str, ...]) -> None:
    doc = parse(pdf_fixtures.text_pdf([[f"Body text. {field}"]], metadata={"author": field}))
    assert doc.authors == authors


def test_title_falls_back_to_biggest_font_line_on_first_page() -> None:
    data = pdf_fixtures.text_pdf(
        [["First body line of the paper.", "Second body line."], ["Later page."]],
        title_line="Street Trees and Surface Temperature",
        metadata={"title": "", "author": ""},
    )
    assert parse(data).title == "Street Trees and Surface Temperature"


def test_junk_metadata_title_is_ignored_for_the_first_page_title() -> None:
    data = pdf_fixtures.text_pdf(
        [BODIES[0]],
        title_line="Real Title Here",
        metadata={"title": "Microsoft Word - draft7.docx"},
    )
    assert parse(data).title == "Real Title Here"


def test_no_title_when_no_line_stands_out() -> None:
    data = pdf_fixtures.text_pdf([["Just body text.", "More body text."]], metadata={})
    doc = parse(data)
    assert doc.title is None
    assert doc.year is None


# --- cleaning --------------------------------------------------------------------------


def test_line_end_hyphenation_is_removed() -> None:
    data = pdf_fixtures.text_pdf([["The exam-", "ple shows a well-known effect of tem-", "perature."]])
    assert flat(parse(data).pages[0].text) == "The example shows a well-known effect of temperature."


def test_hyphen_before_capital_or_digit_is_kept() -> None:
    data = pdf_fixtures.text_pdf([["the Covid-", "19 wave and the post-", "Soviet city, Über-", "übung"]])
    assert flat(parse(data).pages[0].text) == "the Covid-19 wave and the post-Soviet city, Überübung"


def test_whitespace_is_normalized_and_blank_lines_separate_paragraphs() -> None:
    data = pdf_fixtures.text_pdf([["One\u00a0line   with  gaps", "goes on.", "", "", "Next paragraph."]])
    assert flat(parse(data).pages[0].text) == "One line with gaps goes on.\n\nNext paragraph."


def test_running_headers_and_page_numbers_are_removed() -> None:
    data = pdf_fixtures.text_pdf(BODIES, header="Journal of Urban Tests 12 (2020)", page_numbers=True)
    assert [" ".join(page.text.split()) for page in parse(data).pages] == [" ".join(body) for body in BODIES]


def test_running_header_with_changing_number_is_removed() -> None:
    pages = [[f"Chapter 3 - page {n}", "", *body] for n, body in enumerate(BODIES, start=1)]
    doc = parse(pdf_fixtures.text_pdf(pages))
    assert [" ".join(page.text.split()) for page in doc.pages] == [" ".join(body) for body in BODIES]


def test_page_numbers_alone_are_removed_even_on_one_page() -> None:
    data = pdf_fixtures.text_pdf([BODIES[0]], page_numbers=True)
    assert flat(parse(data).pages[0].text) == " ".join(BODIES[0])


def test_edge_line_on_only_one_page_is_kept() -> None:
    pages = [["Introduction", "", "Body one."], ["Body two."], ["Body three."]]
    doc = parse(pdf_fixtures.text_pdf(pages, header="Running Head"))
    assert doc.pages[0].text == "Introduction\n\nBody one."


def test_hanging_indent_continuation_joins_its_entry() -> None:
    # Entries set apart by space, as MuPDF groups unspaced ones into mixed blocks.
    lines = [
        "References",
        "",
        "Okafor, J. (2020). Cool roofs and indoor heat exposure in social housing. Energy",
        "\tand Buildings Review, 9(1), 1-14.",
        "",
        "Wei, L., & Mitchell, S. (2018). Heat waves and emergency hospital admissions among",
        "\tolder adults. Public Health and Climate, 3(3), 210-222.",
        "",
        "Zed, A. (2001). One line entry.",
        "\tIndented line after a full stop.",
    ]
    assert flat(parse(pdf_fixtures.text_pdf([lines])).pages[0].text).split("\n\n") == [
        "References",
        "Okafor, J. (2020). Cool roofs and indoor heat exposure in social housing. Energy"
        " and Buildings Review, 9(1), 1-14.",
        "Wei, L., & Mitchell, S. (2018). Heat waves and emergency hospital admissions among"
        " older adults. Public Health and Climate, 3(3), 210-222.",
        "Zed, A. (2001). One line entry.",
        "Indented line after a full stop.",
    ]


# --- bad documents ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reason", "words"),
    [
        (pdf_fixtures.not_pdf(), "not_pdf", "not a PDF"),
        (pdf_fixtures.corrupt_pdf(), "corrupt", "damaged"),
        (pdf_fixtures.truncated_pdf(), "corrupt", "damaged"),
        (pdf_fixtures.encrypted_pdf(), "encrypted", "password"),
        (pdf_fixtures.zero_page_pdf(), "empty", "no pages"),
        (pdf_fixtures.scanned_pdf(), "no_text", "has a text layer"),
    ],
    ids=["not_pdf", "corrupt", "truncated", "encrypted", "empty", "no_text"],
)
def test_bad_documents_raise_with_reason(data: bytes, reason: str, words: str) -> None:
    with pytest.raises(pdf.DocumentError) as caught:
        parse(data)
    assert caught.value.reason == reason
    assert words in str(caught.value)


def test_too_large_is_checked_before_anything_else() -> None:
    data = pdf_fixtures.oversized_pdf(50_000)
    with pytest.raises(pdf.DocumentError) as caught:
        pdf.parse_pdf(data, max_bytes=50_000)
    assert caught.value.reason == "too_large"
    assert f"{len(data):,} bytes" in str(caught.value)
    assert "50,000" in str(caught.value)
    # Garbage is too large before it is "not a PDF".
    with pytest.raises(pdf.DocumentError) as caught:
        pdf.parse_pdf(b"x" * 101, max_bytes=100)
    assert caught.value.reason == "too_large"
    assert parse(data).pages[0].text == "A perfectly fine page."


def test_pdf_header_after_leading_junk_is_accepted() -> None:
    data = b"\r\n\x00junk" + pdf_fixtures.text_pdf([["Fine."]])
    assert parse(data).pages[0].text == "Fine."


def test_one_magic_check_for_parser_operator_and_worker() -> None:
    from citerun.core import pdfmagic

    assert pdfmagic.is_pdf(b"%PDF-1.7\n")
    assert pdfmagic.is_pdf(b"x" * 1019 + b"%PDF-")  # the header ends at byte 1024
    assert not pdfmagic.is_pdf(b"x" * 1020 + b"%PDF-")
    assert not pdfmagic.is_pdf(pdf_fixtures.not_pdf())
    with pytest.raises(pdf.DocumentError) as caught:
        parse(b"x" * 1020 + b"%PDF-")
    assert caught.value.reason == "not_pdf"


def test_document_error_is_a_citerun_error_with_default_message() -> None:
    from citerun.core import errors

    err = pdf.DocumentError("encrypted")
    assert isinstance(err, errors.CiterunError)
    assert str(err) == "the PDF is protected by a password"


def test_scan_with_one_text_page_is_not_an_error() -> None:
    parsed = parse(pdf_fixtures.scanned_pdf(pages=2, text_on_last="A typed appendix."))
    assert [page.text for page in parsed.pages] == ["", "A typed appendix."]


# --- sentences -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Heat rises at night (Smith et al., 2020). Trees cool streets.",
            ["Heat rises at night (Smith et al., 2020).", "Trees cool streets."],
        ),
        (
            "As Smith et al. Showed, this holds. E.g. Berlin is one case.",
            ["As Smith et al. Showed, this holds.", "E.g. Berlin is one case."],
        ),
        ("See Fig. 3 for details. Done!", ["See Fig. 3 for details.", "Done!"]),
        (
            "Das zeigt die Studie (vgl. Müller 2019, S. 12). Danach z.B. Berlin.",
            ["Das zeigt die Studie (vgl. Müller 2019, S. 12).", "Danach z.B. Berlin."],
        ),
        ("J. R. Smith agreed. Is it so? Yes.", ["J. R. Smith agreed.", "Is it so?", "Yes."]),
        ("It rose by 3.5 degrees. Then it fell.", ["It rose by 3.5 degrees.", "Then it fell."]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("2. Methods\n\nWe measured it.", ["2. Methods", "We measured it."]),
        ("2.1. Sensors were used. They worked.", ["2.1. Sensors were used.", "They worked."]),
        ("Results\nwere   good. more text follows.", ["Results were good. more text follows."]),
        ("", []),
    ],
)
def test_sentences(text: str, expected: list[str]) -> None:
    assert pdf.sentences(text) == expected


def test_sentence_spans_point_into_the_text() -> None:
    text = "  First one.  Second one (Lee et al., 2021).\n\nThird "
    spans = pdf.sentence_spans(text)
    assert [text[s:e] for s, e in spans] == [
        "First one.",
        "Second one (Lee et al., 2021).",
        "Third",
    ]


# --- chunks ----------------------------------------------------------------------------


def _numbered_pages(pages: int, sentences_per_page: int) -> list[pdf.Page]:
    return [
        pdf.Page(
            number=p,
            text=" ".join(
                f"Sentence {p}-{s} talks about urban heat and trees in some detail."
                for s in range(sentences_per_page)
            ),
        )
        for p in range(1, pages + 1)
    ]


def test_chunks_are_whole_sentences_with_the_right_page_ranges() -> None:
    pages = _numbered_pages(pages=4, sentences_per_page=7)
    chunks = pdf.chunk_pages(pages, target_chars=300, overlap_chars=80)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert len(chunk.text) <= 300
        found = pdf.sentences(chunk.text)
        assert all(s.startswith("Sentence ") and s.endswith("detail.") for s in found)
        pages_in_text = {int(s.split()[1].split("-")[0]) for s in found}
        assert (chunk.page_start, chunk.page_end) == (min(pages_in_text), max(pages_in_text))
    assert any(c.page_start != c.page_end for c in chunks)
    covered = {s for c in chunks for s in pdf.sentences(c.text)}
    assert covered == {s for p in pages for s in pdf.sentences(p.text)}


def test_chunks_overlap_by_trailing_sentences() -> None:
    chunks = pdf.chunk_pages(_numbered_pages(2, 8), target_chars=300, overlap_chars=80)
    for before, after in zip(chunks, chunks[1:]):
        last = pdf.sentences(before.text)[-1]
        assert pdf.sentences(after.text)[0] == last
    no_overlap = pdf.chunk_pages(_numbered_pages(2, 8), target_chars=300, overlap_chars=0)
    seen = [s for c in no_overlap for s in pdf.sentences(c.text)]
    assert len(seen) == len(set(seen)) == 16


def test_sentence_across_a_page_break_carries_both_pages() -> None:
    pages = [
        pdf.Page(1, "Short opener. The heat island is strongest"),
        pdf.Page(2, "two hours after sunset. Unrelated closing words."),
        pdf.Page(3, "Page three stands alone."),
    ]
    chunks = pdf.chunk_pages(pages, target_chars=60, overlap_chars=0)
    assert [(c.text, c.page_start, c.page_end) for c in chunks] == [
        ("Short opener.", 1, 1),
        ("The heat island is strongest two hours after sunset.", 1, 2),
        ("Unrelated closing words. Page three stands alone.", 2, 3),
    ]


def test_word_hyphenated_across_a_page_break_is_joined() -> None:
    pages = [pdf.Page(1, "The tempera-"), pdf.Page(2, "ture rose.")]
    assert [c.text for c in pdf.chunk_pages(pages)] == ["The temperature rose."]


def test_joined_pages_know_the_page_of_each_offset() -> None:
    pages = [(3, "  The tempera-\n"), (4, "   "), (5, "ture rose."), (6, "Next page.")]
    plain = pdf.join_pages(pages)
    assert plain.text == "The tempera- ture rose. Next page."
    assert [plain.page_at(plain.text.index(w)) for w in ("The", "ture", "Next")] == [3, 5, 6]
    mended = pdf.join_pages(pages, mend_hyphens=True)
    assert mended.text == "The temperature rose. Next page."
    assert mended.page_at(mended.text.index("ture")) == 5
    assert mended.page_at(mended.text.index("tempera")) == 3
    assert pdf.join_pages([(1, " ")]).text == ""


def test_overlong_sentence_is_cut_between_words() -> None:
    words = [f"word{i:03d}" for i in range(200)]
    chunks = pdf.chunk_pages([pdf.Page(1, " ".join(words) + ".")], target_chars=100, overlap_chars=0)
    assert len(chunks) > 1
    assert all(len(c.text) <= 100 for c in chunks)
    assert " ".join(c.text for c in chunks).rstrip(".").split() == words


def test_empty_pages_give_no_chunks_and_bad_sizes_are_rejected() -> None:
    assert pdf.chunk_pages([pdf.Page(1, ""), pdf.Page(2, "  ")]) == ()
    with pytest.raises(ValueError):
        pdf.chunk_pages([], target_chars=100, overlap_chars=100)
    with pytest.raises(ValueError):
        pdf.chunk_pages([], target_chars=0)


# --- the demo data ---------------------------------------------------------------------


def test_demo_sources_parse_with_their_metadata() -> None:
    expected = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
    for filename, meta in expected["sources"].items():
        doc = parse((EXAMPLES / filename).read_bytes())
        assert (doc.title, list(doc.authors), doc.year) == (
            meta["title"],
            meta["authors"],
            meta["year"],
        )
        assert 1 <= doc.page_count <= 3


def test_every_demo_claim_is_inside_one_sentence_of_its_thesis() -> None:
    expected = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
    for filename, thesis in expected["documents"].items():
        doc = parse((EXAMPLES / filename).read_bytes())
        found = [s for p in doc.pages for s in pdf.sentences(p.text)]
        assert all("Cooling the Compact City" not in s for s in found[1:])  # header gone
        for claim in thesis["claims"]:
            holders = [s for s in found if claim["claim"] in s]
            assert len(holders) == 1, claim
            assert claim["citation"].strip("[]").split(",")[0].split("-")[0] in holders[0]
