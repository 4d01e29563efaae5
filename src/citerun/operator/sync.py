"""Keeping each CitationRun's status in line with its run in Postgres.

Driven by ``citerun_runs`` notifications (fast path, rate-limited per run so a busy
run writes its status at most every ``status_min_interval_s``; the last change is never
dropped, only delayed) and by kopf's periodic resync timer (slow path). Every write is
conditional on the resourceVersion just read, so two replicas or a kopf patch racing
this one cannot clobber each other; the loser re-reads and recomputes.

It also sweeps orphans: active runs whose CitationRun no longer exists (deleted while
the database was down) are cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import asyncpg

from citerun.core import listener, queue, runs
from citerun.kube import client as kube
from citerun.operator import status
from citerun.operator.settings import OperatorConfig
from citerun.core.states import RunState

logger = logging.getLogger(__name__)

# The event type posted when a run reaches a finished phase.
_TERMINAL = {phase: "Warning" if phase == status.PHASES[RunState.FAILED] else "Normal"
             for phase in status.FINISHED_PHASES}


class StatusSyncer:
    def __init__(self, pool: asyncpg.Pool, config: OperatorConfig) -> None:
        self.pool = pool
        self.config = config
        self._last_write: dict[uuid.UUID, float] = {}
        self._scheduled: dict[uuid.UUID, asyncio.Task[None]] = {}
        self.writes = 0

    async def run(self, url: str) -> None:
        """Follow ``citerun_runs`` and sweep orphans until cancelled."""
        follow = listener.Listener(url, self._on_notify, channel=queue.RUNS_CHANNEL)
        task = asyncio.create_task(follow.run())
        try:
            while True:
                await asyncio.sleep(max(self.config.resync_s, 5.0) * 4)
                follow.check()
                try:
                    await self.sweep_orphans()
                    dropped = await runs.drop_expired_bytes(self.pool,
                                                            self.config.staged_bytes_ttl_s)
                    if dropped:
                        logger.info("dropped the staged bytes of %d expired document(s)",
                                    dropped)
                except Exception as err:  # noqa: BLE001 - retried next round
                    logger.warning("orphan sweep failed: %s", err)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _on_notify(self, source: str, payload: str | None) -> None:
        if source != "notify" or not payload:
            return
        try:
            run_id = uuid.UUID(payload)
        except ValueError:
            return
        self.request(run_id)

    def request(self, run_id: uuid.UUID) -> None:
        """Sync ``run_id`` soon: now, or when its rate limit allows (once)."""
        if run_id in self._scheduled and not self._scheduled[run_id].done():
            return
        wait = self._last_write.get(run_id, 0.0) + self.config.status_min_interval_s - time.monotonic()
        self._scheduled[run_id] = asyncio.create_task(self._delayed(run_id, max(wait, 0.0)))

    async def _delayed(self, run_id: uuid.UUID, wait: float) -> None:
        if wait:
            await asyncio.sleep(wait)
        self._scheduled.pop(run_id, None)
        try:
            await self.sync_run(run_id)
        except Exception as err:  # noqa: BLE001 - the periodic resync repairs it
            logger.warning("status sync of run %s failed: %s", run_id, err)

    async def sync_run(self, run_id: uuid.UUID) -> None:
        """Write the status of the run's CitationRun if it differs from the database."""
        run = await runs.get(self.pool, run_id)
        if run is None or run["namespace"] is None or run["resource_uid"] is None:
            return
        for _ in range(5):
            obj = await kube.get_run(run["namespace"], run["name"])
            if obj is None or obj["metadata"]["uid"] != str(run["resource_uid"]):
                return
            if int(obj["metadata"].get("generation", 1)) != run["generation"]:
                return  # an older generation's run: its status no longer matters
            progress = await runs.progress(self.pool, run_id)
            if progress is None:
                return
            previous = dict(obj.get("status") or {})
            new = status.from_progress(progress, name=run["name"], namespace=run["namespace"],
                                       run_id=str(run_id), generation=run["generation"],
                                       previous=previous)
            if status.comparable(new) == status.comparable(
                    {k: previous.get(k) for k in new}):
                return
            patched = await kube.patch_status(run["namespace"], run["name"], new,
                                              resource_version=obj["metadata"]["resourceVersion"])
            if patched is None:
                continue  # changed under us: re-read and recompute
            self._last_write[run_id] = time.monotonic()
            self.writes += 1
            if previous.get("phase") != new["phase"] and new["phase"] in _TERMINAL:
                await kube.post_event(obj, type_=_TERMINAL[new["phase"]],
                                      reason=new["phase"], message=new["message"])
            return

    async def sweep_orphans(self) -> list[uuid.UUID]:
        """Cancel active runs whose CitationRun is gone; return their ids."""
        rows = await runs.active_with_resource(self.pool)
        cancelled = []
        for row in rows:
            obj = await kube.get_run(row["namespace"], row["name"])
            if obj is None or obj["metadata"]["uid"] != str(row["resource_uid"]):
                await runs.cancel(self.pool, row["id"], "its CitationRun no longer exists")
                cancelled.append(row["id"])
        if cancelled:
            logger.info("cancelled %d orphaned run(s)", len(cancelled))
        return cancelled

