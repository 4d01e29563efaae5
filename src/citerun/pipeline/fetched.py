"""Sources the writer does not have (issue 51), the pipeline's side: which cited works a
run looks for, how what was found is named, and the modesty of a verdict read off an
abstract alone. No Postgres and no network here: the worker's ``find_source`` task
(:mod:`citerun.worker.finding`) asks :func:`citerun.pipeline.openaccess.find_source` and
stores what it got; see docs/architecture.md ("Sources the writer does not have").

A citation is looked for when no source given matches it (it would be
``unresolved_citation``) and its reference entry, or the writer's library item the entry
stands for, names something to look up (a DOI, an arXiv id, a PubMed id, a title). Its
verdict then waits for its work's find: judged on the PDF found, on the abstract found
(:func:`modest`: ``unsupported`` becomes ``not_in_abstract``, "not found in the abstract:
add the full text"), or ``unresolved_citation`` with the identifiers tried.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from citerun.pipeline import citations, judge
from citerun.pipeline import openaccess
from citerun.pipeline.writer.model import LibraryItem, Written

__all__ = ["ABSTRACT_ONLY", "NOT_IN_ABSTRACT", "Status", "Wanted", "ids_from_json",
           "ids_to_json", "modest", "not_found_reason", "source_name", "wanted"]

#: What a run's look-up of one work ended with: a PDF read, an abstract only, nothing
#: found, or the task failed on every attempt (``run_fetches.status``).
Status = typing.Literal["pending", "pdf", "abstract", "none", "failed"]

#: The words a verdict judged on an abstract alone carries (its reason, its badge).
ABSTRACT_ONLY = "abstract only"
#: The reason of ``not_in_abstract``, as the issue words it.
NOT_IN_ABSTRACT = "not found in the abstract \u2014 add the full text"


@dataclasses.dataclass(frozen=True)
class Wanted:
    """A cited work to look for: its storage key, the label the thesis gives it (the
    citation key, the entry's number), its reference as written, and its identifiers."""

    work_key: str
    label: str
    reference: str
    ids: openaccess.WorkIds


def _library(written: Written | None) -> dict[str, LibraryItem]:
    return {item.key: item for item in written.library} if written is not None else {}


def wanted(mapped: Sequence[citations.MappedCitation],
           settled: Sequence[judge.Judgement | bool],
           written: Written | None) -> dict[int, Wanted]:
    """The citations (by their position in ``mapped``) whose work is to be looked for:
    those settled as ``unresolved_citation`` whose reference entry, or the library item it
    stands for (a writer's thesis: the entry's label is the item's key), names something
    to look up. Citations of one work share its :class:`Wanted`."""
    library = _library(written)
    found: dict[int, Wanted] = {}
    by_entry: dict[int, Wanted | None] = {}
    for position, (m, verdict) in enumerate(zip(mapped, settled, strict=True)):
        if (not isinstance(verdict, judge.Judgement) or m.reference is None
                or verdict.verdict is not judge.Verdict.UNRESOLVED_CITATION):
            continue
        entry = m.reference
        if entry.index not in by_entry:
            item = library.get(entry.label or "") if entry.label else None
            ids = (openaccess.WorkIds.from_library_item(item) if item is not None
                   else openaccess.WorkIds.from_entry(entry))
            by_entry[entry.index] = (None if ids.is_empty() else Wanted(
                ids.key()[:1000], entry.label or m.citation.key, entry.text[:2000], ids))
        if (want := by_entry[entry.index]) is not None:
            found[position] = want
    return found


def ids_to_json(ids: openaccess.WorkIds) -> dict[str, Any]:
    """The identifiers as ``run_fetches.ids`` stores them."""
    return dataclasses.asdict(ids)


def ids_from_json(data: Mapping[str, Any]) -> openaccess.WorkIds:
    """:func:`ids_to_json` read back (fields it does not know are left out)."""
    names = {f.name for f in dataclasses.fields(openaccess.WorkIds)}
    return openaccess.WorkIds(**{k: v for k, v in data.items() if k in names})


def modest(verdict: judge.Judgement, status: str | None) -> judge.Judgement:
    """A verdict with the modesty its source calls for: judged on an abstract alone
    (``status`` "abstract"), ``unsupported`` (the abstract does not say it) becomes
    ``not_in_abstract``, whose reason says so: an abstract that does not state a claim is no
    evidence against it. Any other verdict stays as the judge gave it (its reason is the
    judge's, which the report parses); the report labels it "abstract only" from its
    source (``CitationSource.fetched``)."""
    if status != "abstract":
        return verdict
    if verdict.verdict is judge.Verdict.UNSUPPORTED:
        return dataclasses.replace(
            verdict, verdict=judge.Verdict.NOT_IN_ABSTRACT,
            rationale=f"{NOT_IN_ABSTRACT[:1].upper()}{NOT_IN_ABSTRACT[1:]} (only the "
                      f"abstract was found; the judge read: {verdict.rationale})")
    return verdict


_SAFE = re.compile(r"[^\w.-]+")


def source_name(label: str, status: str) -> str:
    """The name a fetched source goes by in its run's report: the citation's label and
    what it is ("smith2020 (open access).pdf", "smith2020 (abstract)")."""
    stem = _SAFE.sub("_", label).strip("_")[:80] or "work"
    return f"{stem} (open access).pdf" if status == "pdf" else f"{stem} (abstract)"


def not_found_reason(marker: str, reference: str, tried: Sequence[str],
                     failure: str | None = None) -> str:
    """The reason of an ``unresolved_citation`` whose work was looked for and not found
    (or whose look-up failed on every attempt: ``failure``), with the identifiers tried."""
    how = f"the search failed on every attempt ({failure})" if failure else \
        "no open-access copy or abstract was found"
    ids = "; ".join(tried) or "nothing to look up"
    return (f"no source document matches the citation '{marker}' (reference: "
            f"{reference[:200]}); {how} (tried: {ids})")
