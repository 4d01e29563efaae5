"""``citerun verify --fail-on``: whether a thesis passed, as an exit code (issue 39).

A thesis kept in a repository fails its build when a citation has a verdict it names
(the vocabulary is :class:`citerun.verdicts.Verdict`'s); the report is written either
way. Kept apart from :mod:`citerun.verify` so that the parser, which every command
builds, imports nothing heavy.
"""

from __future__ import annotations

import collections
from typing import Any

from citerun.verdicts import Verdict

#: Exit codes of ``citerun verify`` (README, "Exit codes"): the thesis passed (the run
#: completed and no citation has a ``--fail-on`` verdict); the command or the run failed;
#: bad arguments; the run completed but some citation has a ``--fail-on`` verdict.
EXIT_PASSED, EXIT_ERROR, EXIT_USAGE, EXIT_FAIL_ON = 0, 1, 2, 3

#: ``--fail-on`` with no value (the gate for a thesis kept in a repository): a citation
#: whose source says the opposite, or whose marker maps to no source.
CI_FAIL_ON: tuple[Verdict, ...] = (Verdict.CONTRADICTED, Verdict.UNRESOLVED_CITATION)

#: The citations ``--fail-on`` lists on stderr; the rest are counted.
FAIL_ON_LISTED = 20


def parse_fail_on(text: str) -> frozenset[Verdict]:
    """``--fail-on``'s value: verdict names (:class:`citerun.verdicts.Verdict`) joined by
    commas. Raises ValueError naming what is not a verdict."""
    names = [n.strip() for n in text.split(",")]
    known = {v.value: v for v in Verdict}
    unknown = [n for n in names if n not in known]
    if unknown or not text.strip():
        hint = ""
        if any("/" in n or "." in n for n in unknown):
            hint = " (--fail-on without a value goes after the thesis: it would take the next " \
                   "argument as its value)"
        given = ", ".join(repr(n) for n in unknown) or repr(text)
        raise ValueError(f"{given} is not a verdict; give one or more of "
                         f"{', '.join(known)}, joined by commas{hint}")
    return frozenset(known[n] for n in names)


def fail_on_citations(report_json: dict[str, Any], fail_on: frozenset[Verdict]
                      ) -> list[dict[str, Any]]:
    """The report's citations whose verdict is one of ``fail_on``, in reading order."""
    citations: list[dict[str, Any]] = report_json.get("citations") or []
    return [c for c in citations if c.get("verdict") in fail_on]


def fail_on_lines(report_json: dict[str, Any], fail_on: frozenset[Verdict]) -> list[str]:
    """stderr lines for the citations that fail ``--fail-on`` (none: the thesis passed)."""
    hits = fail_on_citations(report_json, fail_on)
    if not hits:
        return []
    total = len(report_json.get("citations") or [])
    counts = collections.Counter(str(c["verdict"]) for c in hits)
    wanted = ",".join(v.value for v in Verdict if v in fail_on)
    lines = [f"citerun verify: failed --fail-on {wanted}: {len(hits)} of {total} "
             f"citation(s): " + ", ".join(f"{n} {verdict}" for verdict, n in
                                          sorted(counts.items()))]
    for c in hits[:FAIL_ON_LISTED]:
        source = (c.get("source") or {}).get("filename") or "no source"
        claim = " ".join(str(c.get("claim") or "").split())
        if len(claim) > 100:
            claim = claim[:99] + "…"
        lines.append(f"  #{c.get('ordinal')} {c.get('verdict')}: {c.get('marker')} on page "
                     f"{c.get('page')} ({source}): {claim}")
    if len(hits) > FAIL_ON_LISTED:
        lines.append(f"  ... and {len(hits) - FAIL_ON_LISTED} more (see the report)")
    return lines
