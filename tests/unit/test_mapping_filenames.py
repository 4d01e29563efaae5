"""Sources told apart by what their file names say (issue 46, item 6).

Three faults of real thesis folders, each in a small document of the same shape:

* "(Eaton et al., 2006)" went to a single-author Eaton PDF filed as of 2005 (its first
  page parsed as of 2006) while the et-al paper of 2006 lay beside it: the citation's
  author count and the year the file name gives decide together.
* "(Hammer et al., 2010)" x5 stayed unresolved beside
  ``Hammer_LithoprobeCrossSections2010.pdf``, whose first page gave neither title nor
  authors: a file name that carries the first author's surname and the year matches.
* A PDF whose parsed title is "1 Introduction" was not matched to its entry by its file
  name ("METRICS FOR MULTI-CLASS CLASSIFICATION.pdf"): a title that names no work (a
  heading, a journal's name) is not trusted; the file name's words are compared.
"""

from __future__ import annotations

import pytest

from citerun.pipeline import citations
from citerun.pipeline.citations import mapping_score, model


def _source(document_id: str, filename: str, authors: tuple[str, ...] = (),
            year: int | None = None, title: str | None = None) -> model.SourceInfo:
    return model.SourceInfo(document_id=document_id, filename=filename, title=title,
                            authors=authors, year=year)


def _mapped(text: str, sources: list[model.SourceInfo]) -> dict[str, list[str | None]]:
    extraction = citations.extract([(1, text)])
    found: dict[str, list[str | None]] = {}
    for m in citations.map_citations(extraction, sources):
        found.setdefault(m.citation.marker, []).append(m.document_id)
    return found


# -- "et al." and the file name's year, together ---------------------------------------

# A typed author-year thesis whose reference list was not read: markers alone.
TYPED = ("Crows use tools in the wild (Eaton et al., 2006). Captive crows do not "
         "(Eaton, 2005).\n")


@pytest.mark.parametrize("et_al", [
    # The et-al paper's first page gave nothing; its file name says who and when.
    _source("three", "Eaton et al. - 2006 - Wild crows make tools.pdf"),
    # Its first page gave the first author only, and the file's creation year.
    _source("three", "Eaton et al 2006 Wild crows.pdf", ("Anna Eaton",), 2011),
    # Its first page gave all three; the single-author paper's page said 2006 too.
    _source("three", "wild-crows.pdf", ("Anna Eaton", "Ben Brown", "Carl Clark"), 2006),
])
def test_et_al_and_the_file_names_year_pick_the_et_al_paper(et_al: model.SourceInfo) -> None:
    # The single-author paper of 2005, whose first page carries a 2006 copyright line.
    single = _source("single", "Eaton_2005.pdf", ("Anna Eaton",), 2006, "Captive crows")
    mapped = _mapped(TYPED, [single, et_al])
    assert mapped["(Eaton et al., 2006)"] == ["three"]
    assert mapped["(Eaton, 2005)"] == ["single"]


def test_with_a_reference_list_the_file_name_with_the_year_glued_counts() -> None:
    text = TYPED + (
        "\nReferences\n\n"
        "Eaton, A. (2005). Captive crows and their cages. Journal of Birds, 1, 1-9.\n"
        "Eaton, A., Brown, B., & Clark, C. (2006). Wild crows make tools. Journal of "
        "Birds, 2, 3-14.\n")
    single = _source("single", "Eaton_2005.pdf", ("Anna Eaton",), 2006, "Crows")
    et_al = _source("three", "Eaton_WildCrowsMakeTools2006.pdf", (), None, "1 Introduction")
    mapped = _mapped(text, [single, et_al])
    assert mapped["(Eaton et al., 2006)"] == ["three"]
    assert mapped["(Eaton, 2005)"] == ["single"]


def test_a_file_named_for_two_authors_is_the_two_author_paper() -> None:
    # Zotero's and Mendeley's names: "A - 2010 - Title", "A and B - 2010 - Title",
    # "A et al. - 2010 - Title"; both first pages gave Hammer alone.
    text = "Crows make hooks (Hammer and Li, 2010). Ravens do not (Hammer, 2010).\n"
    sources = [_source("single", "Hammer - 2010 - Ravens and hooks.pdf", ("A. Hammer",), 2010),
               _source("two", "Hammer and Li - 2010 - Hook making.pdf", ("A. Hammer",), 2010)]
    mapped = _mapped(text, sources)
    assert mapped["(Hammer and Li, 2010)"] == ["two"]
    assert mapped["(Hammer, 2010)"] == ["single"]


# -- the first author's surname and the year in a file name ------------------------------

HAMMER = " ".join(f"The crust thins to the west, profile {n} (Hammer et al., 2010)."
                  for n in range(1, 6)) + "\n"


@pytest.mark.parametrize("filename", [
    "Hammer_LithoprobeCrossSections2010.pdf",
    "hammer2010.pdf",
    "Hammer2010lithoprobe.pdf",
    "Hammer et al 2010 - Lithoprobe cross sections.pdf",
])
def test_a_file_name_with_the_surname_and_the_year_matches(filename: str) -> None:
    # The first page gave no title or authors worth the name (a survey's cover).
    sources = [_source("hammer", filename, (), 2012, "Geological Survey of Canada"),
               _source("other", "Cook_Vasudevan_2006.pdf", ("Fred Cook",), 2006)]
    assert _mapped(HAMMER, sources)["(Hammer et al., 2010)"] == ["hammer"] * 5


def test_with_an_entry_the_file_name_matches_where_title_and_authors_do_not() -> None:
    text = HAMMER + (
        "\nReferences\n\n"
        "Hammer, P. T. C., Clowes, R. M., Cook, F. A., van der Velden, A. J., & "
        "Vasudevan, K. (2010). The Lithoprobe trans-continental lithospheric cross "
        "sections. Canadian Journal of Earth Sciences, 47, 821-857.\n")
    sources = [_source("hammer", "Hammer_LithoprobeCrossSections2010.pdf", ("NRC Research",),
                       2012, "Canadian Journal of Earth Sciences")]
    assert _mapped(text, sources)["(Hammer et al., 2010)"] == ["hammer"] * 5


# -- a title that names no work ------------------------------------------------------------

METRICS = (
    "Accuracy hides the minority class (Grandini et al., 2020).\n\n"
    "References\n\n"
    "Grandini, M., Bagli, E., & Visani, G. (2020). Metrics for multi-class "
    "classification: An overview. arXiv preprint arXiv:2008.05756.\n"
    "Opitz, J., & Burst, S. (2019). Macro F1 and macro F1. arXiv preprint "
    "arXiv:1911.03347.\n")


@pytest.mark.parametrize("title", ["1 Introduction", "Abstract", "Contents", "1.1 Introduction",
                                   "Journal of Machine Learning Research"])
def test_a_generic_title_gives_way_to_the_file_name(title: str) -> None:
    # The first page's parser took a heading for the title, and a wrong first author.
    source = _source("metrics", "METRICS FOR MULTI-CLASS CLASSIFICATION.pdf",
                     ("Crif Spa",), 2020, title)
    assert _mapped(METRICS, [source])["(Grandini et al., 2020)"] == ["metrics"]


def test_generic_titles_are_told_from_titles() -> None:
    for title in ("1 Introduction", "Abstract", "Contents", "Table of Contents", "2.3 Methods",
                  "Chapter 1 Introduction", "Research Article", "Journal of Geophysical Research",
                  "Proceedings of the IEEE", "Geophysical Research Letters", "Einleitung"):
        assert mapping_score.generic_title(title), title
    titles: tuple[str | None, ...] = (
        "Metrics for multi-class classification", "Wild crows make tools",
        "An introduction to statistical learning", "Letters from the field",
        "Attention is all you need", None, "")
    for maybe in titles:
        assert not mapping_score.generic_title(maybe), maybe
