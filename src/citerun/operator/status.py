"""What a CitationRun's status says, computed from its run's row in Postgres.

The status is a pure function of the database (plus the time a condition changed), so
any operator replica computing it gets the same answer and a repeated write is harmless.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import asyncpg

from citerun.core import verdicts
from citerun.core.states import RunState

#: The phase of a CitationRun whose run is not admitted yet (it has no row).
PENDING = "Pending"
#: The CitationRun phase of each run state.
PHASES: dict[str, str] = {state.value: state.value.capitalize() for state in RunState}
#: Every phase a CitationRun can be in: the one list the CRD's ``status.phase`` enum is
#: generated from (scripts/gen_crd.py; tests/unit/test_facts_owned.py compares them).
ALL_PHASES: tuple[str, ...] = (PENDING, *PHASES.values())
#: The phases a run never leaves.
FINISHED_PHASES: frozenset[str] = frozenset(
    PHASES[s] for s in (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED))



def now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace(
        "+00:00", "Z")


def condition(type_: str, status: bool, reason: str, message: str, generation: int,
              previous: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A condition; its lastTransitionTime moves only when its status changes."""
    value = "True" if status else "False"
    old = next((c for c in previous or [] if c.get("type") == type_), None)
    since = old["lastTransitionTime"] if old and old.get("status") == value else now()
    return {"type": type_, "status": value, "reason": reason, "message": message[:30000],
            "lastTransitionTime": since, "observedGeneration": generation}


def merge_conditions(previous: list[dict[str, Any]],
                     updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_type = {c["type"]: c for c in previous}
    for c in updates:
        by_type[c["type"]] = c
    return [by_type[t] for t in sorted(by_type)]


def from_progress(row: asyncpg.Record, *, name: str, namespace: str, run_id: str,
                  generation: int, previous: dict[str, Any]) -> dict[str, Any]:
    """The status of a run that exists in the database."""
    counts = verdicts.status_counts(row["citations"], row["judged"], dict(row["verdicts"] or {}))
    phase = PHASES[row["state"]]
    prior = list(previous.get("conditions") or [])
    updates = [condition("Admitted", True, "Admitted", "the run was admitted and queued",
                         generation, prior)]
    if phase == "Succeeded":
        updates.append(condition("Ready", True, "ReportReady",
                                 f"{row['judged']} citation(s) judged; the report is stored",
                                 generation, prior))
        updates.append(condition("Failed", False, "Succeeded", "", generation, prior))
    elif phase in ("Failed", "Cancelled"):
        updates.append(condition("Ready", False, phase, row["error"] or phase.lower(),
                                 generation, prior))
        updates.append(condition("Failed", phase == "Failed",
                                 "RunFailed" if phase == "Failed" else "Cancelled",
                                 row["error"] or "", generation, prior))
    else:
        updates.append(condition("Ready", False, "InProgress",
                                 f"{row['judged']} of {row['citations']} citations judged",
                                 generation, prior))
    status: dict[str, Any] = {
        "phase": phase, "observedGeneration": generation, "runId": run_id,
        "progress": f"{row['judged']}/{row['citations']}", "counts": counts,
        "conditions": merge_conditions(prior, updates),
        "report": {"runId": run_id, "command": f"citerun report {name} -n {namespace}"},
        "judgeTokens": int(row.get("tokens_spent") or 0),
        "message": (row["error"] or f"{phase}: {row['judged']}/{row['citations']} citations "
                    f"judged, {row['documents_done']}/{row['documents']} documents read"),
    }
    status["startedAt"] = previous.get("startedAt") or now()
    if phase in FINISHED_PHASES:
        status["finishedAt"] = previous.get("finishedAt") or now()
    return status


def comparable(status: dict[str, Any]) -> dict[str, Any]:
    """The status without the fields that change on every computation."""
    return {k: v for k, v in status.items() if k not in ("startedAt", "finishedAt")}
