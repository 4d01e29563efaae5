"""Sources found by their file names, and "et al." told from a single author (issue 40 item 7).

Writers name their PDFs as they file them ("Hammer_2010.pdf", Zotero's
"Hammer et al. - 2010 - Tool use.pdf"), often PDFs whose metadata holds no title or
authors; and an author-year list may hold the same first author twice in a year, once
alone and once with co-authors.
"""

from __future__ import annotations

from citerun.pipeline import citations
from citerun.pipeline.citations import model

TEXT = """1 Introduction

Crows make hooks from twigs (Hammer & Li, 2010). Ravens plan ahead (Novak, 2015).
Birds use tools in the wild (Eaton et al., 2006). Captive birds do not (Eaton, 2006).

References

Eaton, A. (2006). Captive crows and their cages. Journal of Birds, 1, 1-9.
Eaton, A., Brown, B., & Clark, C. (2006). Wild crows make tools. Journal of Birds, 2, 3-14.
Hammer, A., & Li, B. (2010). Hook making in New Caledonian crows. Animal Cognition, 3, 5-16.
Novak, C. (2015). Planning in ravens. Behaviour, 4, 7-18.
"""


def _source(document_id: str, filename: str, authors: tuple[str, ...] = (),
            year: int | None = None, title: str | None = None) -> model.SourceInfo:
    return model.SourceInfo(document_id=document_id, filename=filename, title=title,
                            authors=authors, year=year)


def _mapped(sources: list[model.SourceInfo]) -> dict[str, str | None]:
    extraction = citations.extract([(1, TEXT)])
    return {m.citation.marker: m.document_id
            for m in citations.map_citations(extraction, sources)}


def test_pdfs_without_metadata_are_found_by_their_file_names() -> None:
    sources = [_source("hammer", "Hammer_Li_2010.pdf"),
               _source("novak", "Novak - 2015 - Raven study.pdf")]
    mapped = _mapped(sources)
    assert mapped["(Hammer & Li, 2010)"] == "hammer"
    assert mapped["(Novak, 2015)"] == "novak"


def test_et_al_names_the_multi_author_entry_not_the_single_author_one() -> None:
    sources = [_source("single", "a.pdf", ("Eaton",), 2006, "Captive crows and their cages"),
               _source("three", "b.pdf", ("Eaton", "Brown", "Clark"), 2006,
                       "Wild crows make tools")]
    mapped = _mapped(sources)
    assert mapped["(Eaton et al., 2006)"] == "three"
    assert mapped["(Eaton, 2006)"] == "single"


def test_et_al_without_an_entry_goes_to_the_source_with_co_authors() -> None:
    text = "Birds use tools in the wild (Eaton et al., 2006). Captive birds do not (Eaton, 2006).\n"
    extraction = citations.extract([(1, text)])
    sources = [_source("single", "a.pdf", ("Eaton",), 2006, "Captive crows"),
               _source("three", "b.pdf", ("Eaton", "Brown", "Clark"), 2006, "Wild crows")]
    mapped = {m.citation.marker: (m.document_id, m.method)
              for m in citations.map_citations(extraction, sources)}
    assert mapped["(Eaton et al., 2006)"] == ("three", "marker")
    assert mapped["(Eaton, 2006)"] == ("single", "marker")
