"""Evidence is never a line of the source's own reference list (issue 40 item 11).

A source paper ends with its references; a claim about tool use in crows is close in
words to "Hammer, A. (2010). Tool use in crows." of that list, and the retriever took
such lines as the supporting passage. A source's passages are its text without the list.
"""

from __future__ import annotations

from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.worker import steps
from tests.unit import pdf_fixtures


def source_pdf() -> bytes:
    body = ["Tool use in New Caledonian crows", "",
            "Crows bend twigs into hooks to reach larvae in dead wood.",
            "The hooks are made the same way in every population we observed.", "",
            "Appendix A", "", "The field sites lay on Grande Terre."]
    references = ["References", "",
                  "Hammer, A. (2010). Tool use in crows. Animal Cognition, 13, 1-9.",
                  "Hunt, G. R. (1996). Manufacture and use of hook-tools by New Caledonian",
                  "\tcrows. Nature, 379, 249-251.",
                  "Weir, A. A. S., Chappell, J., & Kacelnik, A. (2002). Shaping of hooks in",
                  "\tNew Caledonian crows. Science, 297, 981.",
                  "Rutz, C. (2016). Discovery of species-wide tool use. Nature, 537, 403-407."]
    return pdf_fixtures.text_pdf([body[:5], references, body[5:]])


def test_chunks_of_a_source_hold_its_text_not_its_reference_list() -> None:
    outcome = steps.parse(source_pdf(), LimitSettings(),
                          DocumentSettings(max_bytes=50 * 2**20, chunk_chars=300, overlap_chars=50))
    assert isinstance(outcome, steps.Parsed), outcome
    text = " ".join(chunk.text for chunk in outcome.chunks)
    assert "bend twigs into hooks" in text
    assert "Grande Terre" in text  # the appendix after the list is text again
    assert "Animal Cognition" not in text and "Nature, 379" not in text
    # The page keeps the list: what the report shows of the page is unchanged.
    assert "Animal Cognition" in outcome.document.pages[1].text
