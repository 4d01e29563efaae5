"""What a judge task that died on every attempt says (issue 46): which error codes stop the
whole run, and the words of a ``not_checked`` citation's reason. The worker's
:func:`citerun.worker.tasks.on_dead` records them."""

from __future__ import annotations

#: Dead judge tasks with these codes stop the whole run (a budget is the run's or its
#: namespace's, not one citation's); any other dead judge task costs only its citation.
RUN_WIDE_CODES: frozenset[str] = frozenset({"judge_spend_exhausted", "run_budget_exhausted"})


#: What a dead judge task's error code means, in the writer's words (issue 46); any other
#: code is named as it is. Never the stored error itself: it may hold a traceback.
_NOT_CHECKED_WORDS: dict[str, str] = {
    "model_mismatch": "its passages were embedded by another model than the workers' "
                      "(run `citerun reembed`)",
    "judge_unavailable": "the judge could not be reached",
    "judge_request_error": "the judge refused the request",
    "lost_lease": "the worker checking it stopped every time",
    "timeout_error": "the check ran out of time",
    "memory_error": "the check ran out of memory",
}


def not_checked_reason(filename: str | None, code: str) -> str:
    """The rationale of a citation whose check failed on every attempt: what, against
    which file, and why in words (with the stable code)."""
    why = _NOT_CHECKED_WORDS.get(code, "an error in citerun")
    against = f"against {filename}" if filename else "against its source"
    return (f"This citation could not be checked {against}: {why} ({code}), on every "
            "attempt. The rest of the report is complete; check this citation yourself.")
