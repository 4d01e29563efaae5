"""The verdicts no judge is needed for: no source matches the citation
(``unresolved_citation``), the source could not be read (``source_unavailable``), or the
citation names a work and the source is that work (:func:`~.naming.judge_named`); and of
the citations left, which is the first of its (claim, source) pair, judged once for all
of them (issue 41)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from citerun.pipeline import citations
from citerun.pipeline.document import Source
from citerun.pipeline.judging.naming import judge_named
from citerun.pipeline.judging.types import Judgement, Verdict


def settle(mapped: Sequence[citations.MappedCitation],
           by_id: Mapping[str, Source]) -> list[Judgement | bool]:
    """Per citation: the verdict no judge is needed for (no source, an unreadable one, a
    named work that is the source), True for the first citation of a (claim, source) pair
    to judge, False for the others, which take its verdict (issue 41)."""
    leaders: set[tuple[str, str]] = set()
    settled: list[Judgement | bool] = []
    for m in mapped:
        c, source = m.citation, by_id.get(m.document_id or "")
        named = (judge_named(c.names_work, source.document.title, source.document.authors,
                             next((p.text for p in source.document.pages if p.number == 1), ""))
                 if source is not None and source.read and c.names_work else None)
        if source is None:
            settled.append(_fixed(Verdict.UNRESOLVED_CITATION,
                                  f"no source document matches the citation '{c.marker}'"
                                  + (f" (reference: {m.reference.text[:200]})" if m.reference
                                     else " and the reference list has no entry for it")))
        elif not source.read:
            settled.append(_fixed(Verdict.SOURCE_UNAVAILABLE,
                                  f"the source {source.filename} could not be read: {source.error}"))
        elif named is not None:  # "a lock service called Chubby [8]" and the source is Chubby
            settled.append(named)
        else:
            settled.append((c.claim, source.id) not in leaders)
            leaders.add((c.claim, source.id))
    return settled


def _fixed(verdict: Verdict, rationale: str) -> Judgement:
    return Judgement(verdict=verdict, confidence=1.0, evidence=(), rationale=rationale)
