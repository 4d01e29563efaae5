"""The cleaner: a maintenance service of the operator leader that deletes old rows.

River's cleaner, in citerun's terms: a small frozen config, :meth:`Cleaner.run_once`
that deletes one round of batches and returns what it did (tests call it directly), and
:meth:`Cleaner.run`, a loop with jitter that runs a round only while this replica leads
(the autoscaler's Lease). Every statement deletes at most ``batch_size`` rows and skips
locked ones (see :mod:`citerun.core.retention`), so claims never wait on it.

What goes: finished tasks of finished runs, finished runs (with their citations,
verdicts and report) older than ``max_age_s`` -- except a run whose CitationRun still
exists and is not superseded: its report stays as long as the resource -- the staged
bytes of documents only finished runs use, workers rows silent for ``max_age_s``, and the
open-access copies of cited works fetched over ``max_age_s`` ago with the bytes no other
work names (issue 51). See ``docs/architecture.md`` ("Retention").
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg
import pydantic

from citerun.core import db, retention

logger = logging.getLogger(__name__)

#: Whether the CitationRun ``namespace/name`` with this uid exists and still points at
#: this run (its report must stay).
ResourceCheck = Callable[[str, str, uuid.UUID, uuid.UUID], Awaitable[bool]]


class CleanerConfig(pydantic.BaseModel):
    """Retention (``CITERUN_RETENTION__*``)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    enabled: bool = pydantic.Field(True, description="Delete old rows at all.")
    max_age_s: float = pydantic.Field(
        14 * 24 * 3600.0, gt=0, description="Seconds a finished task or run is kept: two "
        "weeks, long enough to debug a run from its tasks and to fetch a local run's "
        "report, short enough that the tables stay small.")
    bytes_grace_s: float = pydantic.Field(
        3600.0, ge=0, description="Seconds after its last run finished before a document's "
        "staged bytes go (runs drop most bytes when they finish; this is the safety net).")
    interval_s: float = pydantic.Field(
        300.0, gt=0, description="Seconds between rounds (±20 % jitter). Deleting is not "
        "urgent; a round that hit a full batch runs again at once.")
    batch_size: int = pydantic.Field(
        1000, ge=1, le=100_000, description="Rows one statement deletes: small enough that "
        "a batch holds its locks for milliseconds.")
    max_batches: int = pydantic.Field(
        100, ge=1, description="Batches of one kind per round, so a huge backlog is worked "
        "off over several rounds.")


@dataclass(frozen=True)
class CleanResult:
    """What one round deleted."""

    tasks: int = 0
    runs: int = 0
    documents_bytes: int = 0
    workers: int = 0
    kept_runs: int = 0  # old runs kept because their CitationRun still exists
    fetched: int = 0  # open-access works and their bytes (issue 51)

    @property
    def total(self) -> int:
        return self.tasks + self.runs + self.documents_bytes + self.workers + self.fetched


class Cleaner:
    """Deletes what retention allows; see the module docstring."""

    def __init__(self, pool: asyncpg.Pool, config: CleanerConfig, *,
                 resource_exists: ResourceCheck | None = None,
                 is_leader: Callable[[], bool] | None = None) -> None:
        self.pool = pool
        self.config = config
        self.resource_exists = resource_exists
        self.is_leader = is_leader
        self._kept: set[uuid.UUID] = set()

    async def run_once(self) -> CleanResult:
        """Delete one round of batches; return the counts."""
        c = self.config
        tasks = await self._drain(lambda: retention.delete_finished_tasks(
            self.pool, older_than_s=c.max_age_s, limit=c.batch_size))
        runs, kept = 0, 0
        for _ in range(c.max_batches):
            batch = [r for r in await retention.finished_runs(
                self.pool, older_than_s=c.max_age_s, limit=c.batch_size + len(self._kept))
                if r["id"] not in self._kept][: c.batch_size]
            if not batch:
                break
            doomed = []
            for row in batch:
                if await self._keep(row):
                    self._kept.add(row["id"])
                    kept += 1
                else:
                    doomed.append(row["id"])
            runs += await retention.delete_runs(self.pool, doomed)
            if len(batch) < c.batch_size:
                break
        documents = await self._drain(lambda: retention.drop_bytes_of_finished(
            self.pool, finished_before_s=c.bytes_grace_s, limit=c.batch_size))
        workers = await self._drain(lambda: retention.delete_gone_workers(
            self.pool, older_than_s=c.max_age_s, limit=c.batch_size))
        fetched = await self._drain(lambda: retention.delete_old_fetched_works(
            self.pool, older_than_s=c.max_age_s, limit=c.batch_size))
        fetched += await self._drain(lambda: retention.delete_unused_fetched_contents(
            self.pool, limit=c.batch_size))
        result = CleanResult(tasks, runs, documents, workers, kept, fetched)
        if result.total:
            logger.info("cleaner deleted %d task(s), %d run(s), the bytes of %d document(s), "
                        "%d worker row(s)", tasks, runs, documents, workers,
                        extra={"action": "clean", "tasks": tasks, "runs": runs,
                               "documents": documents, "workers": workers})
        return result

    async def run(self) -> None:
        """Run a round every ``interval_s`` (jittered) while leading, until cancelled."""
        while True:
            delay = self.config.interval_s * random.uniform(0.8, 1.2)
            if self.config.enabled and (self.is_leader is None or self.is_leader()):
                try:
                    await self.run_once()
                    self._kept.clear()  # a resource deleted since is seen next round
                except db.UNAVAILABLE as err:
                    logger.warning("cleaner round failed: %s", err, extra={"action": "clean"})
            await asyncio.sleep(delay)

    async def _drain(self, batch: Callable[[], Awaitable[int]]) -> int:
        done = 0
        for _ in range(self.config.max_batches):
            n = await batch()
            done += n
            if n < self.config.batch_size:
                break
        return done

    async def _keep(self, row: asyncpg.Record) -> bool:
        """Whether an old finished run must stay because its CitationRun still shows it."""
        if row["resource_uid"] is None or self.resource_exists is None:
            return False
        return await self.resource_exists(row["namespace"] or "", row["name"],
                                          row["resource_uid"], row["id"])


async def citation_run_shows(namespace: str, name: str, uid: uuid.UUID,
                             run_id: uuid.UUID) -> bool:
    """The operator's :data:`ResourceCheck`: the CitationRun exists (same uid) and its
    status still names this run (a superseded generation's run may go)."""
    from citerun.kube import client as kube

    obj = await kube.get_run(namespace, name)
    if obj is None or (obj.get("metadata") or {}).get("uid") != str(uid):
        return False
    return bool((obj.get("status") or {}).get("runId") == str(run_id))
