"""The durable task queue: the only module that talks the queue's SQL.

Everything here is one statement (or one transaction) against Postgres, so any number of
processes can call it at once. The protocol (see docs/architecture.md, "The queue protocol"):

* enqueue inserts rows and NOTIFYs ``citerun_tasks`` in the same transaction;
* claim is one ``UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)`` statement;
* ``(id, attempt)`` plus the worker id fence every write of a task's outcome, so a worker
  whose lease was lost (swept, cancelled, re-claimed) cannot write;
* the sweeper requeues expired leases with backoff and dead-letters exhausted tasks;
* a release (drain) hands a task back without charging the attempt: ``attempt`` keeps
  growing so the fencing token is never reused, and ``releases`` is subtracted when the
  attempts are counted against ``max_attempts``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

import asyncpg

from citerun.core import errors, retry, sql
from citerun.core.settings import QueueSettings
from citerun.core.states import TaskState, WorkerState

# Where a statement may run: a connection (possibly inside the caller's transaction)
# or the pool.
Executor: TypeAlias = asyncpg.Connection | asyncpg.Pool

TASKS_CHANNEL = "citerun_tasks"
# Suffix of a TASKS_CHANNEL payload (the kind) whose tasks are not due yet (a delay, a
# retry's backoff): a worker woken by it probes for the next due time.
LATER = ":later"
RUNS_CHANNEL = "citerun_runs"

_Q = sql.load("citerun.core", "queue.sql")

# A task enqueued without max_attempts (the flow always sets it) gets the settings' default.
_DEFAULT_MAX_ATTEMPTS: int = QueueSettings.model_fields["max_attempts"].default


class QueueError(errors.CiterunError):
    """The queue could not do what was asked."""


class LeaseLost(QueueError):
    """This worker no longer holds the task: its lease expired or the task was cancelled."""


@dataclass(frozen=True)
class NewTask:
    """A task to enqueue."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    priority: int = 0
    delay_s: float = 0.0
    max_attempts: int | None = None
    dedupe_key: str | None = None
    run_id: uuid.UUID | None = None


@dataclass(frozen=True)
class ClaimedTask:
    """A task this worker holds; ``(id, attempt)`` is its fencing token."""

    id: int
    kind: str
    payload: dict[str, Any]
    attempt: int
    releases: int
    max_attempts: int
    run_id: uuid.UUID | None
    created_at: datetime
    run_after: datetime
    claimed_at: datetime
    tenant: str = "default"

    @property
    def wait_s(self) -> float:
        """Seconds from when the task became due to when it was claimed."""
        return (self.claimed_at - max(self.created_at, self.run_after)).total_seconds()

    @property
    def charged_attempts(self) -> int:
        """Attempts counted against ``max_attempts`` (releases are free)."""
        return self.attempt - self.releases

    @property
    def last_attempt(self) -> bool:
        return self.charged_attempts >= self.max_attempts


@dataclass(frozen=True)
class SweepResult:
    requeued: tuple[int, ...]
    dead: tuple[int, ...]
    dead_run_ids: tuple[uuid.UUID, ...]


async def enqueue(executor: Executor, tasks: Sequence[NewTask], *,
                  default_max_attempts: int | None = None) -> list[int]:
    """Insert ``tasks`` and notify the workers, atomically; return the new ids.

    One statement (insert and NOTIFY), so it runs in the caller's transaction when there
    is one (a stage records its results and enqueues the next stage at once), else on its
    own in one round trip. Tasks whose ``dedupe_key`` exists already are skipped and have
    no id in the result.
    """
    if not tasks:
        return []
    rows = await executor.fetch(
        _Q["task_enqueue_many"],
        [t.kind for t in tasks], [t.payload for t in tasks], [t.priority for t in tasks],
        [t.delay_s for t in tasks],
        [t.max_attempts or default_max_attempts or _DEFAULT_MAX_ATTEMPTS for t in tasks],
        [t.dedupe_key for t in tasks], [t.run_id for t in tasks])
    return [r["id"] for r in rows]


@contextlib.asynccontextmanager
async def _transaction(executor: Executor) -> AsyncIterator[asyncpg.Connection]:
    """The caller's transaction if it is in one, else a new one (on a pooled connection)."""
    if isinstance(executor, asyncpg.Pool):
        async with executor.acquire() as conn, conn.transaction():
            yield conn
    elif executor.is_in_transaction():
        yield executor
    else:
        async with executor.transaction():
            yield executor


@dataclass(frozen=True)
class TenantCaps:
    """At most ``caps[tenant]`` (else ``default``; None: no limit) tasks of a tenant running."""

    caps: Mapping[str, int] = field(default_factory=dict)
    default: int | None = None

    def __post_init__(self) -> None:
        if any(cap < 1 for cap in self.caps.values()) or (
                self.default is not None and self.default < 1):
            raise ValueError("a tenant cap must be at least 1")


NO_CAPS = TenantCaps()


async def claim(conn: Executor, *, worker_id: str, kinds: Iterable[str],
                limit: int, lease_s: float, run_id: uuid.UUID | None = None,
                caps: TenantCaps = NO_CAPS) -> list[ClaimedTask]:
    """Claim up to ``limit`` due tasks for ``worker_id`` in one statement.

    Order: priority, then fair share (a tenant with a smaller backlog first, runs taking
    turns within it), then age. ``run_id`` claims only that run's tasks (a local worker
    serving its own run); ``caps`` bounds each tenant's running tasks cluster-wide.
    """
    if limit <= 0:
        return []
    tenants = sorted(caps.caps)
    rows = await conn.fetch(_Q["task_claim_many"], worker_id, list(kinds), lease_s, limit,
                            run_id, tenants, [caps.caps[t] for t in tenants], caps.default)
    return [ClaimedTask(**dict(r)) for r in rows]


async def complete(conn: Executor, task: ClaimedTask, *, worker_id: str,
                   result: Any = None) -> None:
    """Mark ``task`` succeeded; raise :class:`LeaseLost` if this worker no longer holds it."""
    row = await conn.fetchrow(_Q["task_complete"], task.id, task.attempt, worker_id, result)
    if row is None:
        raise LeaseLost(f"task {task.id} attempt {task.attempt} is no longer held by {worker_id}")


async def complete_many(conn: Executor, tasks: Sequence[ClaimedTask], *,
                        worker_id: str) -> set[int]:
    """Mark a batch succeeded; return the ids that were still held (the others lost)."""
    if not tasks:
        return set()
    rows = await conn.fetch(_Q["task_complete_many"], [t.id for t in tasks],
                            [t.attempt for t in tasks], worker_id)
    return {r["id"] for r in rows}


@contextlib.asynccontextmanager
async def fenced(conn: asyncpg.Connection, task: ClaimedTask, *, worker_id: str,
                 result: Any = None) -> AsyncIterator[asyncpg.Connection]:
    """A transaction that completes ``task`` first, then lets the caller write its results.

    The fenced UPDATE comes first and locks the task row, so the sweeper cannot requeue it
    before the commit; if this worker lost the task, :class:`LeaseLost` is raised before
    anything is written, and everything written inside the block is rolled back with it.
    """
    async with conn.transaction():
        await complete(conn, task, worker_id=worker_id, result=result)
        yield conn


async def fail(executor: Executor, task: ClaimedTask, *, worker_id: str, error: str,
               delay_s: float, permanent: bool = False) -> str | None:
    """Record a failed attempt; return the new state (queued or failed).

    Returns None when the worker no longer held the task (nothing written).
    """
    async with _transaction(executor) as conn:
        state: str | None = await conn.fetchval(
            _Q["task_fail"], task.id, task.attempt, worker_id, error[:8000], delay_s, permanent)
        if state == TaskState.QUEUED:
            await conn.execute(_Q["task_notify"], task.kind + (LATER if delay_s > 0 else ""))
    return state


async def release_many(executor: Executor, tasks: Sequence[ClaimedTask], *,
                       worker_id: str) -> list[int]:
    """Hand held tasks back to the queue now, uncharged, and notify; return released ids."""
    if not tasks:
        return []
    async with _transaction(executor) as conn:
        rows = await conn.fetch(_Q["task_release_many"], [t.id for t in tasks],
                                [t.attempt for t in tasks], worker_id)
        for kind in sorted({r["kind"] for r in rows}):
            await conn.execute(_Q["task_notify"], kind)
    return [r["id"] for r in rows]


async def heartbeat(conn: Executor, tasks: Sequence[ClaimedTask], *,
                    worker_id: str, lease_s: float) -> set[int]:
    """Extend the leases of ``tasks`` and stamp the workers row; return the ids still held."""
    rows = await conn.fetch(_Q["task_heartbeat_many"], [t.id for t in tasks],
                            [t.attempt for t in tasks], worker_id, lease_s)
    return {r["id"] for r in rows}


async def sweep_stalled(executor: Executor, *, backoff: retry.RetryPolicy,
                        worker_id: str = "", requeue_only: bool = False) -> SweepResult:
    """Requeue tasks whose lease expired; dead-letter the ones out of attempts.

    One statement (requeue, notify and the sweeper's heartbeat stamp), so the periodic
    sweep of an idle worker costs one round trip. The requeued task waits as long as
    ``backoff.delay_s`` says after a failed attempt: the statement computes the same
    formula from the policy's base, cap and jitter (``tests/db/test_queue.py`` compares
    them). ``requeue_only`` leaves exhausted tasks alone (for a sweeper that cannot run
    the dead-letter hooks: the operator).
    """
    rows = [r for r in await executor.fetch(_Q["task_sweep_stalled"], backoff.base_s,
                                            backoff.cap_s, worker_id, requeue_only,
                                            backoff.jitter)
            if r["id"] is not None]
    return SweepResult(
        requeued=tuple(r["id"] for r in rows if r["state"] == TaskState.QUEUED),
        dead=tuple(r["id"] for r in rows if r["state"] == TaskState.FAILED),
        dead_run_ids=tuple({r["run_id"] for r in rows
                            if r["state"] == TaskState.FAILED and r["run_id"] is not None}),
    )


async def has_due(conn: Executor, kinds: Iterable[str], *,
                  run_id: uuid.UUID | None = None) -> bool:
    """Whether a task of ``kinds`` (of ``run_id`` when given) is waiting to be claimed."""
    return bool(await conn.fetchval(_Q["task_has_due"], list(kinds), run_id))


async def next_due_s(conn: Executor, kinds: Iterable[str], *,
                     run_id: uuid.UUID | None = None) -> float | None:
    """Seconds until the next queued task of ``kinds`` is due (<= 0: due now; None: none)."""
    value: float | None = await conn.fetchval(_Q["task_next_due"], list(kinds), run_id)
    return value


async def cancel_run(conn: Executor, run_id: uuid.UUID, reason: str) -> list[int]:
    """Cancel every unfinished task of a run."""
    rows = await conn.fetch(_Q["task_cancel_by_run"], run_id, reason)
    return [r["id"] for r in rows]


async def outstanding(conn: Executor) -> tuple[int, int]:
    """(due, running) task counts: the load the workers must carry now."""
    row = await conn.fetchrow(_Q["task_outstanding"])
    return int(row["due"]), int(row["running"])


async def busy_workers(conn: Executor, *, fresh_s: float) -> dict[str, int]:
    """Live workers (heartbeat within ``fresh_s``) and the tasks each holds right now."""
    rows = await conn.fetch(_Q["worker_busy_all"], fresh_s)
    return {r["id"]: int(r["busy"]) for r in rows}


async def depth(conn: Executor, kinds: Iterable[str]) -> dict[tuple[str, str], int]:
    """Open (queued, running) task counts of ``kinds`` by (kind, state)."""
    return {(r["kind"], r["state"]): r["n"]
            for r in await conn.fetch(_Q["task_depth"], list(kinds))}


async def get(conn: Executor, task_id: int) -> asyncpg.Record | None:
    return await conn.fetchrow(_Q["task_get"], task_id)


async def register_worker(conn: Executor, *, worker_id: str, version: str,
                          capabilities: dict[str, Any]) -> None:
    await conn.execute(_Q["worker_register"], worker_id, version, capabilities)


async def set_worker_state(conn: Executor, *, worker_id: str, state: WorkerState) -> None:
    await conn.execute(_Q["worker_set_state"], worker_id, state)
