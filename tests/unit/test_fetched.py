"""Which cited works a run looks for, and the modesty of a verdict on an abstract alone
(issue 51, citerun.pipeline.fetched and the worker's works_wanted)."""

from __future__ import annotations

from citerun.pipeline import citations, fetched, judge
from citerun.pipeline.judging.settling import settle
from citerun.pipeline.writer.model import LibraryItem, Written, entry_for
from citerun.worker import fetching


def _mapped(key: str, entry: citations.ReferenceEntry | None, claim: str = "A claim."
            ) -> citations.MappedCitation:
    cited = citations.ExtractedCitation(ordinal=1, key=key, claim=claim, page=1,
                                        marker=f"\\cite{{{key}}}", locator=None)
    return citations.MappedCitation(cited, entry, None, None, None, "no source matches")


def test_the_library_item_names_the_work_else_the_reference_entry() -> None:
    item = LibraryItem(key="smith2021", title="A study", authors=("Smith",), year=2021,
                       doi="https://doi.org/10.5555/ABC", arxiv="arXiv:2101.01234v2")
    bare = LibraryItem(key="nothing", authors=(), title=None)
    written = Written("latex", library=(item, bare))
    numbered = citations.ReferenceEntry(index=7, text="[8] Lee, K. (2019). Roofs. PMID: 31415",
                                        label="8", authors=("Lee",), year=2019,
                                        year_suffix="", title="Roofs")
    mapped = [_mapped("smith2021", entry_for(0, item)), _mapped("smith2021", entry_for(0, item),
                                                                "Another claim."),
              _mapped("nothing", entry_for(1, bare)), _mapped("8", numbered),
              _mapped("nokey", None)]
    wanted = fetched.wanted(mapped, settle(mapped, {}), written)
    assert sorted(wanted) == [0, 1, 3]  # no identifier, no entry: nothing to look up
    assert wanted[0] is wanted[1] and wanted[0].work_key == "doi:10.5555/abc"
    assert wanted[0].ids.arxiv == "2101.01234" and wanted[0].label == "smith2021"
    assert wanted[3].ids.pmid == "31415" and wanted[3].label == "8"


def test_a_run_that_asks_on_workers_that_do_not_fetch_says_so() -> None:
    item = LibraryItem(key="smith2021", title="A study", authors=("Smith",), year=2021,
                       doi="10.5555/abc")
    mapped = [_mapped("smith2021", entry_for(0, item))]
    settled = settle(mapped, {})
    written = Written("latex", library=(item,))
    assert fetching.works_wanted(True, {"thesis": "t.tex"}, mapped, settled, written) == ({}, [])
    found, note = fetching.works_wanted(True, {"fetchSources": True}, mapped, settled, written)
    assert list(found) == [0] and note == []
    found, note = fetching.works_wanted(False, {"fetchSources": True}, mapped, settled, written)
    assert found == {} and "openaccess.enabled is off" in note[0]["reason"]


def test_an_abstract_never_makes_a_claim_unsupported() -> None:
    said = judge.Judgement(verdict=judge.Verdict.UNSUPPORTED, confidence=0.8, evidence=(),
                           rationale="the closest passage does not state the claim")
    modest = fetched.modest(said, "abstract")
    assert modest.verdict is judge.Verdict.NOT_IN_ABSTRACT
    assert modest.rationale.startswith("Not found in the abstract \u2014 add the full text")
    assert fetched.modest(said, "pdf") is said and fetched.modest(said, None) is said
    supported = judge.Judgement(verdict=judge.Verdict.SUPPORTED, confidence=0.9, evidence=(),
                                rationale="states the claim")
    assert fetched.modest(supported, "abstract") is supported  # labelled by its source
