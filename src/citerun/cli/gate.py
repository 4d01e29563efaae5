"""``citerun verify --fail-on``: whether a thesis passed, as an exit code (issue 39).

A thesis kept in a repository fails its build when a citation has a verdict it names
(:class:`citerun.core.verdicts.Verdict`'s names) or a problem the checks beyond the verdict
found (:class:`citerun.pipeline.report.model.Problem`'s: a wrong cited page, a changed or
missing quotation); the report is written either way. Kept apart from :mod:`citerun.cli.verify` so that the parser, which every command
builds, imports nothing heavy.
"""

from __future__ import annotations

import collections
from typing import Any

from citerun.core.verdicts import Verdict

#: Exit codes of ``citerun verify`` (README, "Exit codes"): the thesis passed (the run
#: completed and no citation has a ``--fail-on`` verdict); the command or the run failed;
#: bad arguments; the run completed but some citation has a ``--fail-on`` verdict.
EXIT_PASSED, EXIT_ERROR, EXIT_USAGE, EXIT_FAIL_ON = 0, 1, 2, 3

#: ``--fail-on`` with no value (the gate for a thesis kept in a repository): a citation
#: whose source says the opposite, or whose marker maps to no source.
CI_FAIL_ON: tuple[Verdict, ...] = (Verdict.CONTRADICTED, Verdict.UNRESOLVED_CITATION)

#: The citations ``--fail-on`` lists on stderr; the rest are counted.
FAIL_ON_LISTED = 20


def where(citation: dict[str, Any]) -> str:
    """Where a citation stands in the thesis, as the report says it: a writer's file by
    its location ("chapters/health.tex:4", "paragraph 34"), a PDF by its page (issue 46:
    the terminal said "page 1" for every LaTeX and Word citation)."""
    location = citation.get("location")
    return str(location) if location else f"page {citation.get('page')}"


def names() -> list[str]:
    """What ``--fail-on`` takes: the verdicts, then the checks beyond the verdict
    (:class:`citerun.pipeline.report.model.Problem`: ``wrong_page``, ``altered_quotation``,
    ``quotation_not_found``), in their owners' order."""
    from citerun.pipeline.report.model import Problem  # the report model: seconds to import

    return [*(v.value for v in Verdict), *(p.value for p in Problem)]


def parse_fail_on(text: str) -> frozenset[str]:
    """``--fail-on``'s value: verdict or check names (:func:`names`) joined by commas.
    Raises ValueError naming what is neither."""
    given = [n.strip() for n in text.split(",")]
    known = names()
    unknown = [n for n in given if n not in known]
    if unknown or not text.strip():
        hint = ""
        if any("/" in n or "." in n for n in unknown):
            hint = " (--fail-on without a value goes after the thesis: it would take the next " \
                   "argument as its value)"
        shown = ", ".join(repr(n) for n in unknown) or repr(text)
        raise ValueError(f"{shown} is not a verdict or check; give one or more of "
                         f"{', '.join(known)}, joined by commas{hint}")
    return frozenset(given)


def reasons(citation: dict[str, Any], fail_on: frozenset[str]) -> list[str]:
    """Why ``citation`` (one of the report JSON's) fails ``fail_on``: its verdict and its
    problems that ``fail_on`` names, in :func:`names` order (none: it passes)."""
    found = [str(citation.get("verdict"))] if citation.get("verdict") in fail_on else []
    if fail_on - {v.value for v in Verdict}:  # a check is named: ask the report's model
        from citerun.pipeline.report.model import CitationEntry

        entry = CitationEntry.model_validate(citation)
        found += [p.value for p in entry.problems() if p.value in fail_on]
    return found


def fail_on_lines(report_json: dict[str, Any], fail_on: frozenset[str]) -> list[str]:
    """stderr lines for the citations that fail ``--fail-on`` (none: the thesis passed)."""
    citations: list[dict[str, Any]] = report_json.get("citations") or []
    hits = [(c, why) for c in citations if (why := reasons(c, fail_on))]
    if not hits:
        return []
    counts = collections.Counter(reason for _, why in hits for reason in why)
    order = names()
    wanted = ",".join(n for n in order if n in fail_on)
    lines = [f"citerun verify: failed --fail-on {wanted}: {len(hits)} of {len(citations)} "
             f"citation(s): " + ", ".join(f"{counts[n]} {n}" for n in order if counts[n])]
    for c, why in hits[:FAIL_ON_LISTED]:
        source = (c.get("source") or {}).get("filename") or "no source"
        claim = " ".join(str(c.get("claim") or "").split())
        if len(claim) > 100:
            claim = claim[:99] + "…"
        lines.append(f"  #{c.get('ordinal')} {', '.join(why)}: {c.get('marker')} "
                     f"{'at' if c.get('location') else 'on'} {where(c)} ({source}): {claim}")
    if len(hits) > FAIL_ON_LISTED:
        lines.append(f"  ... and {len(hits) - FAIL_ON_LISTED} more (see the report)")
    return lines
