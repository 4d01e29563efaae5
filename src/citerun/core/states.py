"""The states of runs, tasks, documents and workers: the one list every copy derives from.

Python compares and writes these members (a ``StrEnum`` is its value, so a row's
``state`` compares equal and asyncpg sends the text). The migrations cannot import:
their CHECK constraints on ``runs.state``, ``tasks.state``, ``documents.state`` and
``workers.state``, and the state literals of the queries, are compared with this module
by ``tests/db/test_states_schema.py``. See ``docs/architecture.md`` ("One owner per fact").
"""

from __future__ import annotations

import enum


class RunState(enum.StrEnum):
    """A run is created running and finishes once (``runs.finish``)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TaskState(enum.StrEnum):
    """A task is queued, claimed (running), and then requeued or finished."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # dead-lettered: out of attempts, or a permanent error
    CANCELLED = "cancelled"


class DocumentState(enum.StrEnum):
    """A staged PDF is parsed (pages and chunks stored) or failed, once."""

    STAGED = "staged"
    PARSED = "parsed"
    FAILED = "failed"


class WorkerState(enum.StrEnum):
    """A worker's row: serving, draining after SIGTERM, or gone."""

    ACTIVE = "active"
    DRAINING = "draining"
    STOPPED = "stopped"


#: Task states a task never leaves.
FINISHED_TASK: frozenset[TaskState] = frozenset(
    {TaskState.SUCCEEDED, TaskState.FAILED, TaskState.CANCELLED})

#: Document states a document never leaves (its staged bytes may go).
FINISHED_DOCUMENT: frozenset[DocumentState] = frozenset(
    {DocumentState.PARSED, DocumentState.FAILED})

#: The table whose ``state`` column each enum describes.
TABLES: dict[str, type[enum.StrEnum]] = {
    "runs": RunState, "tasks": TaskState, "documents": DocumentState, "workers": WorkerState}
