"""Verdicts and the counts of a run: the one list every other copy derives from.

The names appear in Python (the judge, the report, the operator's status), in SQL (the
``verdicts.verdict`` CHECK) and in the CRD (``status.counts`` and its printer columns).
Python derives its copies from :class:`Verdict`; the SQL CHECK and the CRD cannot
import, so ``tests/unit/test_verdicts.py`` compares them with this module. See
``docs/architecture.md`` ("One owner per fact").
"""

from __future__ import annotations

import enum


class Verdict(enum.StrEnum):
    """What the report says about one citation."""

    SUPPORTED = "supported"
    PARTIALLY_SUPPORTED = "partially_supported"
    UNSUPPORTED = "unsupported"
    CONTRADICTED = "contradicted"
    SOURCE_UNAVAILABLE = "source_unavailable"
    UNRESOLVED_CITATION = "unresolved_citation"
    NOT_CHECKED = "not_checked"
    NOT_IN_ABSTRACT = "not_in_abstract"


#: Verdicts a judge may give after reading the source; two others are decided before any
#: judge runs (no source matched, the source could not be read), and ``not_checked`` when
#: the check of one citation failed on every attempt (the run still ends with its report);
#: ``not_in_abstract`` is what ``unsupported`` becomes when the judge read only an abstract a
#: service gave (issue 51: an abstract that does not state a claim is no evidence against it).
JUDGED: tuple[Verdict, ...] = (Verdict.SUPPORTED, Verdict.PARTIALLY_SUPPORTED,
                               Verdict.UNSUPPORTED, Verdict.CONTRADICTED)

#: Counts of a run besides the per-verdict ones, in the order the CRD lists them.
TOTALS: tuple[str, ...] = ("citations", "judged")


def camel(name: str) -> str:
    """``partially_supported`` -> ``partiallySupported`` (the CRD's spelling)."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def count_fields() -> dict[str, str]:
    """Verdict value -> the field of ``status.counts`` that holds its count."""
    return {v.value: camel(v.value) for v in Verdict}


def status_counts(citations: int, judged: int, per_verdict: dict[str, int]) -> dict[str, int]:
    """The CRD's ``status.counts``: totals, then every verdict (zeros included)."""
    counts = {"citations": int(citations), "judged": int(judged)}
    counts.update({field: int(per_verdict.get(value, 0))
                   for value, field in count_fields().items()})
    return counts


def sql_check() -> str:
    """The CHECK constraint body the ``verdicts.verdict`` column must carry."""
    return "verdict IN (" + ", ".join(f"'{v.value}'" for v in Verdict) + ")"
