"""The worker runtime: claim loop, execution, completion, heartbeat, sweep and drain.

One asyncio process runs up to ``concurrency`` tasks at once. Work is found three ways:
a NOTIFY on the LISTEN connection (fast path), a rescan after every (re)connect of that
connection, and a periodic poll (slow path); a claim that filled every free slot is
followed by another as soon as a slot frees. Completions of handlers that did not write
their own results are batched into one fenced UPDATE. On SIGTERM the worker drains: it
stops claiming, lets in-flight tasks finish within ``drain_timeout_s``, cancels and
releases the rest (uncharged) with a NOTIFY, and returns so the process exits 0.

Every database call is retried with backoff when the database is away: the worker never
exits because Postgres restarted, and a task it could not report is re-run by whoever
claims it after its lease expires (fencing drops this worker's late write).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg
import pydantic

import citerun
from citerun.core import db, listener, queue, retry, runspec
from citerun.core.settings import Settings
from citerun.pipeline.settings import PipelineSettings
from citerun.core.states import TaskState, WorkerState
from citerun.worker import metrics, registry

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Errors that mean "the database is unreachable or went away", retried with backoff.
DB_ERRORS = db.UNAVAILABLE

_TICK_S = 1.0  # liveness stamp period of the event loop
# Re-claim delay when due work exists that this worker's claim could not take (held by a
# racing claim, capped tenant): doubles from MIN to MAX until a claim finds work.
_HELD_BACK_MIN_S = 0.02
_HELD_BACK_MAX_S = 2.0


@dataclass
class _Running:
    task: queue.ClaimedTask
    future: asyncio.Task[None]
    ctx: registry.TaskContext | None = None
    completing: bool = False


class Worker:
    """A queue worker. ``await Worker(...).run()`` returns after a drain."""

    def __init__(self, url: str, tasks: registry.Registry, settings: Settings,
                 pipeline: PipelineSettings,
                 judge_profiles: Mapping[str, runspec.JudgeProfile]) -> None:
        self.url = url
        self.registry = tasks
        self.settings = settings
        # Read once, by the process's entry: every task of this worker gets the same
        # (TaskContext.pipeline, TaskContext.judge_profiles).
        self.pipeline = pipeline
        self.judge_profiles = dict(judge_profiles)
        self.id = settings.worker.id
        self.metrics = metrics.WorkerMetrics(
            depth_interval_s=settings.worker.depth_interval_s,
            # A loop stalled for a whole lease has lost its tasks: that pod is not healthy.
            stall_s=settings.queue.lease_s)
        self.kinds = settings.worker.kinds or None
        self._caps = queue.TenantCaps(settings.queue.tenant_caps,
                                      settings.queue.tenant_cap_default)
        self._on_dead = tasks.on_dead
        self._pool: asyncpg.Pool | None = None
        self._held: dict[int, _Running] = {}
        self._wake = asyncio.Event()
        self._wake_source = "rescan"
        self._wake_probe = True
        self._held_back = False  # the last claim left due work it could not take
        self._slot_freed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._completions: asyncio.Queue[tuple[queue.ClaimedTask, asyncio.Future[bool]]] = (
            asyncio.Queue())
        self._listener = listener.Listener(url, self.wake,
                                           reconnect_s=settings.worker.listen_reconnect_s)
        self.last_work = float("-inf")  # no work yet: maintenance starts at the idle pace
        self._stamp_idle: asyncio.Task[None] | None = None
        # Heartbeats and the idle stamp both write workers.busy; serialised, so an older
        # heartbeat (busy=1) can never commit after the stamp that says busy=0.
        self._stamp_lock = asyncio.Lock()

    # -- public -------------------------------------------------------------------------

    @property
    def pool(self) -> asyncpg.Pool:
        assert self._pool is not None, "the worker is not running"
        return self._pool

    def wake(self, source: str, payload: str | None = None) -> None:
        """Tell the claim loop that work may be waiting (called by the listener)."""
        self._wake_source = source
        if source != "notify" or payload is None or payload.endswith(queue.LATER):
            self._wake_probe = True  # work that may not be due yet: find out when
        self._wake.set()

    def stop(self, cause: str = "request") -> None:
        """Begin the drain (what SIGTERM does); ``cause`` names it in the log (the signal's
        name when a signal began it), so an operator reading a pod's log sees why."""
        if not self._stopping.is_set():
            logger.info("worker %s draining on %s", self.id, cause,
                        extra={"action": "drain", "cause": cause})
        self._stopping.set()

    async def run(self, *, install_signal_handlers: bool = True) -> None:
        """Migrate, register, work until :meth:`stop` or SIGTERM, then drain and return."""
        loop = asyncio.get_running_loop()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop, sig.name)
        await self._retry("migrate", lambda: db.migrate(self.url))
        self._pool = await self._retry("connect", lambda: db.create_pool(
            self.url, min_size=1, max_size=self.settings.worker.concurrency + 3))
        await self._retry("register", self._register)
        self.metrics.watch_queue_depth(loop, self._read_depth)
        self.metrics.watch_gc()
        http = None
        if self.settings.worker.metrics_port is not None:
            http = self.metrics.serve(self.settings.worker.metrics_port)
        services = [asyncio.create_task(coro, name=name) for name, coro in (
            ("listener", self._listener.run()),
            ("heartbeat", self._heartbeat_loop()),
            ("sweeper", self._sweep_loop()),
            ("completer", self._complete_loop()),
            ("ticker", self._tick_loop()),
        )]
        logger.info("worker %s started (kinds: %s, concurrency %d)", self.id,
                    ", ".join(self._claim_kinds()), self.settings.worker.concurrency,
                    extra={"action": "start", "worker_id": self.id})
        try:
            await self._claim_loop()
            await self._drain()
        finally:
            for service in services:
                service.cancel()
            await asyncio.gather(*services, return_exceptions=True)
            with contextlib.suppress(*DB_ERRORS):
                await asyncio.wait_for(queue.set_worker_state(
                    self.pool, worker_id=self.id, state=WorkerState.STOPPED), 5)
            await self.pool.close()
            self.metrics.unwatch_gc()
            if http is not None:
                await asyncio.to_thread(http.shutdown)
                http.server_close()
        logger.info("worker %s stopped", self.id, extra={"action": "stop"})

    # -- claiming -----------------------------------------------------------------------

    def _claim_kinds(self) -> list[str]:
        if self.kinds is not None:
            return list(self.kinds)
        return list(self.registry.kinds)

    async def _claim_loop(self) -> None:
        source = "rescan"
        concurrency = self.settings.worker.concurrency
        failures = 0
        held_back = _HELD_BACK_MIN_S
        while not self._stopping.is_set():
            free = concurrency - len(self._held)
            if free <= 0:
                await self._wait(self._slot_freed, None)
                self._slot_freed.clear()
                continue
            try:
                claimed = await queue.claim(
                    self.pool, worker_id=self.id, kinds=self._claim_kinds(), limit=free,
                    lease_s=self.settings.queue.lease_s, run_id=self.settings.worker.run_id,
                    caps=self._caps)
            except DB_ERRORS as err:
                logger.warning("claim failed: %s", err, extra={"action": "claim"})
                failures += 1
                await self._wait(self._stopping, db.RECONNECT.delay_s(failures))
                continue
            failures = 0
            for task in claimed:
                self._start(task, source)
            self._held_back = False
            if claimed:
                self.last_work = time.monotonic()
                held_back = _HELD_BACK_MIN_S
            if len(claimed) == free:
                source = "continuation"
                continue
            timeout = self.settings.worker.poll_s
            probe, self._wake_probe = self._wake_probe, False
            # After a NOTIFY for work due now, an empty or short claim means other workers
            # took the rest: no probe (saves a statement per idle worker per enqueue).
            if source != "poll" and (source != "notify" or probe):
                # Woken for work that is not due yet (a retry's backoff, a delayed task):
                # wake again when it is, not only at the next poll.
                with contextlib.suppress(*DB_ERRORS):
                    due = await queue.next_due_s(self.pool, self._claim_kinds(),
                                                 run_id=self.settings.worker.run_id)
                    if due is not None and due > 0:
                        timeout = min(timeout, due + 0.005)
                    elif due is not None:
                        # Due now, yet this claim did not get it: another worker holds
                        # it (a racing claim), or its tenant is at its cap. Look again
                        # when one of this worker's tasks ends, or after a backed-off
                        # delay, instead of spinning on it.
                        timeout = min(timeout, held_back)
                        held_back = min(held_back * 2, _HELD_BACK_MAX_S)
                        self._held_back = True
            woke = await self._wait(self._wake, timeout)
            if woke:
                source = self._wake_source
            else:
                source = "timer" if timeout < self.settings.worker.poll_s else "poll"
            self._wake.clear()

    async def _wait(self, event: asyncio.Event, timeout: float | None) -> bool:
        """Wait for ``event`` or the drain; return whether ``event`` fired."""
        waiters = {asyncio.create_task(event.wait()), asyncio.create_task(self._stopping.wait())}
        try:
            done, _ = await asyncio.wait(waiters, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
        return event.is_set()

    def _start(self, task: queue.ClaimedTask, source: str) -> None:
        self.metrics.pickups.labels(source).inc()
        self.metrics.claim_latency.labels(task.kind).observe(max(task.wait_s, 0.0))
        future = asyncio.create_task(self._execute(task), name=f"task-{task.id}")
        self._held[task.id] = _Running(task, future)
        self.metrics.in_flight.set(len(self._held))
        logger.debug("claimed task %d (%s) attempt %d", task.id, task.kind, task.attempt,
                     extra={"action": "claim", "task_id": task.id, "kind": task.kind})

    # -- execution ----------------------------------------------------------------------

    async def _execute(self, task: queue.ClaimedTask) -> None:
        started = time.monotonic()
        outcome = "succeeded"
        try:
            spec = self.registry.get(task.kind)
            if spec is None:
                outcome = "failed"
                await self._fail(task, f"unknown task kind {task.kind!r}: this worker handles "
                                 f"{', '.join(self.registry.kinds) or 'no kinds'}")
                return
            try:
                payload = spec.payload_model.model_validate(task.payload)
            except pydantic.ValidationError as err:
                outcome = "failed"
                await self._fail(task, f"invalid payload for {task.kind}: {err}", permanent=True)
                return
            ctx = registry.TaskContext(task=task, worker_id=self.id, pool=self.pool,
                                       settings=self.settings, pipeline=self.pipeline,
                                       judge_profiles=self.judge_profiles)
            self._held[task.id].ctx = ctx
            try:
                await spec.handler(ctx, payload)
            except queue.LeaseLost:
                raise
            except registry.PermanentError as err:
                outcome = "failed"
                await self._fail(task, f"{type(err).__name__}: {err}", permanent=True)
                return
            except Exception as err:  # noqa: BLE001 - any handler error is a failed attempt
                outcome = "failed"
                await self._fail(task, _describe(err))
                return
            if not ctx.completed:
                self._held[task.id].completing = True
                done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
                await self._completions.put((task, done))
                if not await done:
                    raise queue.LeaseLost(f"task {task.id} was lost before it completed")
        except queue.LeaseLost as err:
            outcome = "lease_lost"
            self.metrics.lease_losses.labels(task.kind).inc()
            logger.warning("%s", err, extra={"action": "lease_lost", "task_id": task.id})
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            self.metrics.task_duration.labels(task.kind, outcome).observe(
                time.monotonic() - started)
            self._held.pop(task.id, None)
            self.metrics.in_flight.set(len(self._held))
            self._slot_freed.set()
            if self._held_back:
                # Due work was held back (a tenant at its cap): a finished task may have
                # made room, so claim now rather than at the held-back timer.
                self.wake("slot")
            if not self._held and not self._stopping.is_set():
                # Busy -> idle: say so at once (one statement per transition), so the
                # autoscaler does not spare this pod as busy until the next sweep.
                self._stamp_idle = asyncio.create_task(self._stamp(), name="stamp-idle")

    async def _fail(self, task: queue.ClaimedTask, error: str, *, permanent: bool = False) -> None:
        q = self.settings.queue
        delay = q.retry_policy().delay_s(task.charged_attempts)
        state = await self._retry("fail", lambda: queue.fail(
            self.pool, task, worker_id=self.id, error=error, delay_s=delay,
            permanent=permanent), give_up_after=q.lease_s)
        if state == TaskState.QUEUED:
            self.metrics.requeues.labels("retry").inc()
        logger.warning("task %d (%s) attempt %d failed -> %s: %s", task.id, task.kind,
                       task.attempt, state, error.splitlines()[0] if error else "",
                       extra={"action": "fail", "task_id": task.id, "state": state})
        if state == TaskState.FAILED and task.run_id is not None and self._on_dead is not None:
            await self._retry("on_dead", lambda: self._on_dead(self.pool, [task.id], self.settings),  # type: ignore[misc]
                              give_up_after=q.lease_s)

    async def _complete_loop(self) -> None:
        """Write batched completions: one fenced UPDATE for everything finished meanwhile."""
        while True:
            batch = [await self._completions.get()]
            while not self._completions.empty():
                batch.append(self._completions.get_nowait())
            tasks = [t for t, _ in batch]
            try:
                held = await self._retry("complete", lambda: queue.complete_many(
                    self.pool, tasks, worker_id=self.id),
                    give_up_after=self.settings.queue.lease_s)
            except DB_ERRORS:
                held = set()
            for task, done in batch:
                if not done.done():
                    done.set_result(task.id in held)

    # -- maintenance --------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        """Extend leases of held tasks in one UPDATE per interval; cancel the lost ones.

        An idle worker sends no heartbeat of its own: its periodic sweep stamps its
        workers row in the same statement.
        """
        s = self.settings
        while True:
            await asyncio.sleep(s.queue.heartbeat_s * random.uniform(0.9, 1.1))
            async with self._stamp_lock:
                running = list(self._held.values())
                if not running:
                    continue
                tasks = [r.task for r in running]
                try:
                    kept = await queue.heartbeat(self.pool, tasks, worker_id=self.id,
                                                 lease_s=s.queue.lease_s)
                except DB_ERRORS as err:
                    logger.warning("heartbeat failed: %s", err,
                                   extra={"action": "heartbeat"})
                    continue
            for entry in running:
                current = self._held.get(entry.task.id)
                if entry.task.id in kept or current is not entry or entry.completing:
                    continue
                if entry.ctx is not None and entry.ctx.completed:
                    continue
                logger.warning("lost the lease of task %d; cancelling it", entry.task.id,
                               extra={"action": "lease_lost", "task_id": entry.task.id})
                self.metrics.lease_losses.labels(entry.task.kind).inc()
                entry.future.cancel()

    async def _tick_loop(self) -> None:
        """Stamp the loop's liveness for /healthz and measure how late the loop wakes."""
        while True:
            before = time.monotonic()
            await asyncio.sleep(_TICK_S)
            now = time.monotonic()
            self.metrics.loop_tick = now
            self.metrics.observe_loop_lag(max(0.0, now - before - _TICK_S))

    async def _stamp(self) -> None:
        async with self._stamp_lock:
            if self._held:
                return  # busy again: the next heartbeat says so
            with contextlib.suppress(*DB_ERRORS):
                await queue.heartbeat(self.pool, [], worker_id=self.id,
                                      lease_s=self.settings.queue.lease_s)

    async def _sweep_loop(self) -> None:
        s = self.settings
        while True:
            busy = self._held or time.monotonic() - self.last_work < s.worker.poll_s
            interval = s.worker.sweep_s if busy else s.worker.poll_s
            await asyncio.sleep(interval * random.uniform(0.8, 1.2))
            self._listener.check()
            try:
                await self.sweep_once()
            except DB_ERRORS as err:
                logger.warning("sweep failed: %s", err, extra={"action": "sweep"})

    async def sweep_once(self) -> queue.SweepResult:
        """Requeue expired leases and dead-letter exhausted tasks; return what was done."""
        result = await queue.sweep_stalled(
            self.pool, backoff=self.settings.queue.retry_policy(), worker_id=self.id)
        if result.requeued or result.dead:
            self.metrics.requeues.labels("sweep").inc(len(result.requeued))
            logger.info("swept %d stalled tasks (%d requeued, %d dead)",
                        len(result.requeued) + len(result.dead), len(result.requeued),
                        len(result.dead), extra={"action": "sweep"})
        if result.dead and self._on_dead is not None:
            await self._on_dead(self.pool, list(result.dead), self.settings)
        return result

    # -- drain --------------------------------------------------------------------------

    async def _drain(self) -> None:
        with contextlib.suppress(*DB_ERRORS):
            await asyncio.wait_for(queue.set_worker_state(
                self.pool, worker_id=self.id, state=WorkerState.DRAINING), 5)
        futures = [r.future for r in self._held.values()]
        if futures:
            await asyncio.wait(futures, timeout=self.settings.worker.drain_timeout_s)
        leftover = [r for r in self._held.values() if not r.completing]
        for entry in leftover:
            entry.future.cancel()
        if leftover:
            await asyncio.wait([e.future for e in leftover], timeout=5)
            try:
                released = await self._retry("release", lambda: queue.release_many(
                    self.pool, [e.task for e in leftover], worker_id=self.id),
                    give_up_after=10)
            except DB_ERRORS:
                released = []
            self.metrics.requeues.labels("release").inc(len(released))
            logger.info("released %d tasks on drain", len(released),
                        extra={"action": "release", "task_ids": released})
        remaining = [r.future for r in self._held.values()]
        if remaining:
            await asyncio.wait(remaining, timeout=10)

    # -- helpers ------------------------------------------------------------------------

    async def _register(self) -> None:
        await queue.register_worker(self.pool, worker_id=self.id, version=citerun.__version__,
                                    capabilities={"kinds": self._claim_kinds(),
                                                  "concurrency": self.settings.worker.concurrency})

    async def _read_depth(self) -> dict[tuple[str, str], int]:
        return await queue.depth(self.pool, self._claim_kinds())

    async def _retry(self, what: str, call: Callable[[], Awaitable[T]], *,
                     give_up_after: float | None = None) -> T:
        """Run ``call`` until it stops failing with a database error."""
        return await retry.retrying(db.RECONNECT, what, call, errors=DB_ERRORS,
                                    give_up_after_s=give_up_after)


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on uvloop (a dependency on Linux), else asyncio's loop.

    uvloop does the loop's own work (polling sockets, scheduling callbacks) in C: a NOTIFY
    reaches the claim a little sooner, and on a CPU-starved node the wake-up needs less
    CPU, which is where the latency tail came from (docs/benchmarks.md).
    """
    try:
        import uvloop
    except ImportError:  # not on this platform
        return asyncio.run(main)
    return uvloop.run(main)


def _describe(err: BaseException) -> str:
    """The stored error text: the exception and the innermost frames of its traceback."""
    frames = traceback.format_exception(type(err), err, err.__traceback__, limit=-3)
    return "".join(frames).strip()[-4000:]
