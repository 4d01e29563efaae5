"""The claim as the reader means it: the sentence the marker stands in, whole.

The PDFs are written here with pymupdf, set the way the real papers that showed each
fault were set: a heading in the body font right above the cited sentence, a sentence
that a figure caption at the top of the next column interrupts, the same marker twice in
one sentence, and one sentence citing two sources for two clauses.
"""

# pymupdf's annotations are partial; its untyped calls are fine in test helpers.
# mypy: disable-error-code="no-untyped-call,attr-defined"

from __future__ import annotations

import pymupdf

from citerun.pipeline import citations, pdf
from tests.unit import pdf_fixtures

_REFERENCES = [
    "References",
    "",
    "[1] A. Author. Deep bidirectional transformers. 2019.",
    "[2] B. Author. Parallel database systems. 1992.",
    "[3] C. Author. Main-memory databases. 2000.",
]


def _claims(data: bytes) -> list[tuple[str, str]]:
    doc = pdf.parse_pdf(data, max_bytes=10_000_000)
    extraction = citations.extract([(p.number, p.text) for p in doc.pages])
    return [(c.key, c.claim) for c in extraction.citations]


def _one_column(lines: list[str]) -> bytes:
    return pdf_fixtures.text_pdf([lines, _REFERENCES])


def test_a_heading_right_above_the_sentence_is_not_part_of_the_claim() -> None:
    data = _one_column([
        "The previous section ended with a complete sentence about the data.",
        "Model Architecture",
        "BERT's model architecture is a multi-layer bidirectional Transformer encoder [1].",
        "It is trained on large amounts of unlabelled text from books and the web.",
    ])
    assert _claims(data) == [
        ("1", "BERT's model architecture is a multi-layer bidirectional Transformer encoder."),
    ]


def _two_columns() -> bytes:
    """Left column ends mid-sentence; the right column opens with a figure caption,
    then the sentence goes on."""
    doc = pymupdf.open()
    page = doc.new_page(width=pdf_fixtures.A4_WIDTH, height=pdf_fixtures.A4_HEIGHT)
    left = [
        "Databases have been studied for a long time by",
        "many groups in industry and in academia alike.",
        "Early systems stored every table on one disk and",
        "served one query at a time for many users.",
        "Later systems spread the tables over many disks",
        "and many machines, which raised new questions.",
        "Parallel databases and main-memory databases have",
    ]
    right = [
        "been studied for decades by the systems community [2, 3],",
        "and their designs are well understood by now.",
        "Newer work turns to machines with many cores and",
        "large memories, where old trade-offs change again.",
        "Several groups have measured these trade-offs on",
        "current hardware and found them to differ widely.",
    ]
    y = 100.0
    for line in left:
        page.insert_text((50, y), line, fontsize=10)
        y += 13
    page.insert_text((330, 100), "Figure 1: Throughput of the three systems.", fontsize=10)
    y = 140.0
    for line in right:
        page.insert_text((330, y), line, fontsize=10)
        y += 13
    page = doc.new_page(width=pdf_fixtures.A4_WIDTH, height=pdf_fixtures.A4_HEIGHT)
    y = 100.0
    for line in _REFERENCES:
        if line:
            page.insert_text((60, y), line, fontsize=10)
        y += 13
    data: bytes = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return data


def test_a_sentence_broken_across_columns_by_a_caption_is_whole() -> None:
    claims = dict(_claims(_two_columns()))
    assert claims["2"] == claims["3"] == (
        "Parallel databases and main-memory databases have been studied for decades by the "
        "systems community, and their designs are well understood by now."
    )


def test_a_marker_twice_in_one_sentence_is_judged_once() -> None:
    data = _one_column([
        "Transformers [1] replaced recurrent networks, and transformers [1] now",
        "dominate language modelling.",
    ])
    assert [key for key, _ in _claims(data)] == ["1"]


def test_two_sources_for_two_clauses_give_one_claim_each() -> None:
    data = _one_column([
        "Parallel databases scale out over many machines [2] and the main-memory",
        "databases keep every table in memory [3].",
    ])
    assert _claims(data) == [
        ("2", "Parallel databases scale out over many machines."),
        ("3", "The main-memory databases keep every table in memory."),
    ]


def test_two_sources_without_a_clause_of_their_own_keep_the_whole_sentence() -> None:
    data = _one_column(["Our system builds on BERT [1] and uses a parallel database [2]."])
    whole = "Our system builds on BERT and uses a parallel database."
    assert _claims(data) == [("1", whole), ("2", whole)]


def test_a_raised_note_mark_after_the_period_ends_the_sentence() -> None:
    text = "Anaemia is common in Asia.¹–³ The number of people affected is one billion.⁴Many risk factors are known."
    assert pdf.sentences(text) == [
        "Anaemia is common in Asia.¹–³",
        "The number of people affected is one billion.⁴",
        "Many risk factors are known.",
    ]


def test_a_line_that_goes_on_after_a_blank_line_is_one_sentence() -> None:
    text = "Systems like CaseSummarizer, LetSum, and\n\nthe pipeline by Zhong are extractive."
    assert pdf.sentences(text) == ["Systems like CaseSummarizer, LetSum, and the pipeline by Zhong are extractive."]


def test_a_heading_that_closes_a_page_is_not_glued_to_the_next_pages_sentence() -> None:
    """The demo thesis's "4. Cool roofs" ended page 1, and its claim read "4. Cool roofs
    Reflective white roofs kept ..." (issue 23, item 6)."""
    pages = [(1, "Trees need water in dry summers [1].\n\n4. Cool roofs"),
             (2, "Reflective white roofs kept flats cooler [2].\n\n" + "\n".join(_REFERENCES))]
    claims = [c.claim for c in citations.extract(pages).citations]
    assert claims == ["Trees need water in dry summers.", "Reflective white roofs kept flats cooler."]
    # A sentence that runs on over the page break is still one sentence.
    pages = [(1, "Trees need water and, as shown by"), (2, "Smith, cool the air [1].\n\n"
                                                     + "\n".join(_REFERENCES))]
    assert [c.claim for c in citations.extract(pages).citations] == [
        "Trees need water and, as shown by Smith, cool the air."]
