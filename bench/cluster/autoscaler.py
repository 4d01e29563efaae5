"""Autoscaling and rolling restarts: reaction times and what a restart costs a run.

Usage (from the repository root)::

    python -m bench.cluster.autoscaler                # full run (about 8 minutes)
    python -m bench.cluster.autoscaler --quick        # fewer trials (about 4 minutes)
    python -m bench.cluster.autoscaler --write-docs   # also replace the section in docs/benchmarks.md

Everything is real: an embedded Postgres, the test control plane (etcd + kube-apiserver,
built by tests/cluster/build.sh), the operator's :class:`Autoscaler` scaling a worker
Deployment, and ``citerun worker`` processes run by :mod:`tests.support.kubelet`.

1. Scale-up reaction, enqueue -> ``spec.replicas`` raised, as an observer polling the
   scale subresource every 10 ms sees it. citerun: the autoscaler as the operator runs it
   (LISTEN on ``citerun_tasks``, 5 s fallback interval). Baseline: the same
   :func:`decide` and the same API calls, driven by a 30 s poll loop and nothing else,
   the way KEDA's default ``pollingInterval`` drives activation; each trial restarts the
   poller and enqueues at a uniformly random moment of its cycle. (KEDA then hands 1 -> N
   to an HPA with its own 15 s sync, so this baseline flatters KEDA.)
2. A run of N tasks on 4 workers, from enqueue to the last success, without and with a
   ``kubectl rollout restart`` 2 s into the run (every worker replaced, maxSurge 1,
   maxUnavailable 0, drains with the default 20 s drain timeout).
3. Requeue latency. SIGTERM: a worker holding a long task drains and releases it; the
   latency is release -> claimed by an idle worker (both database timestamps: the
   release sets ``run_after = now()``). SIGKILL: kill -> claimed by the idle worker, which
   only happens once the lease expires and a sweep requeues it; with the test settings
   (lease 2 s, sweep 0.5 s) and the defaults (lease 30 s, idle sweep 60 s), with and
   without the operator leader's requeue-only sweep every 5 s.

Everything started here is stopped in ``finally``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime as dt
import random
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg

from kubernetes import client as k8s

from bench import machine as bench_machine
from bench.common import REPO, load_average, workdir
from citerun.core import db, queue, retry
from citerun.local import embedded
from citerun.operator import autoscaler, kube
from citerun.operator.settings import AutoscalerConfig, OperatorConfig
from tests.cluster import controlplane
from tests.conftest import FAST_QUEUE_ENV, WorkerProcess
from tests.support import kubelet as kubelet_mod
from tests.support import tasks as test_tasks

SECTION = "## Autoscaling and rolling restarts"
NAMESPACE = "bench"
DEPLOYMENT = "citerun-worker"
POLL_S = 30.0

# The worker defaults (src/citerun/core/settings.py), spelled out: WorkerProcess starts from the
# tests' fast settings, and the rolling restart should cost what it costs in production.
DEFAULT_WORKER_ENV = {
    "CITERUN_QUEUE__LEASE_S": "30", "CITERUN_QUEUE__HEARTBEAT_S": "10",
    "CITERUN_QUEUE__BACKOFF_BASE_S": "1", "CITERUN_QUEUE__BACKOFF_CAP_S": "300",
    "CITERUN_WORKER__SWEEP_S": "15", "CITERUN_WORKER__POLL_S": "60",
    "CITERUN_WORKER__DRAIN_TIMEOUT_S": "20",
    "CITERUN_WORKER__LISTEN_RECONNECT_S": "1",
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- 1. scale-up reaction -----------------------------------------------------------------

class Poller(autoscaler.Autoscaler):
    """The baseline: the same decide() and API calls, every POLL_S, no LISTEN."""

    async def run(self, url: str) -> None:
        while True:
            with contextlib.suppress(Exception):
                if await self.hold_lease():
                    await self.run_once()
            await asyncio.sleep(POLL_S)


def replicas(api: k8s.ApiClient) -> int:
    scale = k8s.AppsV1Api(api).read_namespaced_deployment_scale(DEPLOYMENT, NAMESPACE)
    return int(scale.spec.replicas or 0)


def set_replicas(api: k8s.ApiClient, n: int) -> None:
    k8s.AppsV1Api(api).patch_namespaced_deployment_scale(DEPLOYMENT, NAMESPACE,
                                                         {"spec": {"replicas": n}})


async def until_replicas(api: k8s.ApiClient, at_least: int, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await asyncio.to_thread(replicas, api) >= at_least:
            return time.monotonic()
        await asyncio.sleep(0.01)
    raise TimeoutError(f"replicas did not reach {at_least} in {timeout}s")


async def reset(pool: asyncpg.Pool, api: k8s.ApiClient) -> None:
    await pool.execute("DELETE FROM tasks")
    await asyncio.to_thread(set_replicas, api, 0)


async def reaction(pool: asyncpg.Pool, api: k8s.ApiClient, url: str, *, polled: bool,
                   trials: int, rng: random.Random) -> list[float]:
    config = AutoscalerConfig(lease_name="bench-poller" if polled else "bench-citerun")
    operator = OperatorConfig(namespace=NAMESPACE, worker_deployment=DEPLOYMENT)
    out = []
    scaler: autoscaler.Autoscaler | None = None
    task: asyncio.Task[None] | None = None
    try:
        for i in range(trials):
            await reset(pool, api)
            if polled or scaler is None:
                # A fresh poller per trial, so the enqueue lands at a random point of its
                # cycle; citerun's autoscaler just keeps running.
                if task is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                scaler = (Poller if polled else autoscaler.Autoscaler)(pool, operator, config)
                task = asyncio.create_task(scaler.run(url))
                await asyncio.sleep(1.0)  # the first round (at start) is over
            scaler.state = autoscaler.State()
            await asyncio.sleep(rng.uniform(0, POLL_S) if polled else rng.uniform(0.5, 2))
            await queue.enqueue(pool, [queue.NewTask("work")])
            enqueued = time.monotonic()
            out.append(await until_replicas(api, 1, POLL_S + 30) - enqueued)
            log(f"  {'poller' if polled else 'citerun'} trial {i + 1}/{trials}: "
                f"{out[-1]:.3f}s")
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await reset(pool, api)
    return out


# -- 2. a run across a rolling restart ----------------------------------------------------

async def run_tasks(pool: asyncpg.Pool, api: k8s.ApiClient, url: str, logs: Path, *,
                    tasks: int, seconds: float, restart: bool
                    ) -> tuple[float, int, int, float]:
    """Seconds from enqueue to the last success; pods started; releases; rollout seconds."""
    await pool.execute("DELETE FROM tasks; DELETE FROM workers; TRUNCATE test_done, test_starts")
    await asyncio.to_thread(set_replicas, api, 4)
    env = {**DEFAULT_WORKER_ENV, "CITERUN_WORKER__CONCURRENCY": "4"}
    async with kubelet_mod.Kubelet(api, NAMESPACE, DEPLOYMENT, url, logs, env=env) as kubelet:
        while not kubelet.rolled_out() or kubelet.desired != 4:
            await asyncio.sleep(0.1)
        before = len([a for a in kubelet.actions if a.what == "start"])
        await queue.enqueue(pool, [queue.NewTask("work", {"seconds": seconds})
                                   for _ in range(tasks)])
        began = time.monotonic()
        rollout_s = 0.0
        if restart:
            await asyncio.sleep(2)
            revision = kubelet.revision
            restarted = time.monotonic()
            await asyncio.to_thread(kubelet_mod.restart_deployment, api, NAMESPACE,
                                    DEPLOYMENT)
            while kubelet.revision == revision or not kubelet.rolled_out():
                await asyncio.sleep(0.1)
            rollout_s = time.monotonic() - restarted
        while await pool.fetchval("SELECT count(*) FROM tasks WHERE state = 'succeeded'") < tasks:
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - began
        started = len([a for a in kubelet.actions if a.what == "start"]) - before
        await asyncio.to_thread(set_replicas, api, 0)
        while kubelet.pods:
            await asyncio.sleep(0.1)
    done = await pool.fetchval("SELECT count(DISTINCT task_id) = count(*) FROM test_done")
    assert done and await pool.fetchval("SELECT count(*) FROM test_done") == tasks
    releases = int(await pool.fetchval("SELECT coalesce(sum(releases), 0) FROM tasks"))
    return elapsed, started, releases, rollout_s


# -- 3. requeue latency -------------------------------------------------------------------

async def requeue(pool: asyncpg.Pool, url: str, logs: Path, *, sig: signal.Signals,
                  env: dict[str, str], trials: int, rng: random.Random,
                  operator_sweep_s: float | None = None) -> tuple[list[float], list[float]]:
    """(release -> claim, signal -> claim) seconds; without a release both are the same.

    With ``operator_sweep_s``, a requeue-only sweep runs at that interval beside the
    workers, as the operator's autoscaler leader does on each evaluation.
    """
    out, total = [], []
    sweeper: asyncio.Task[None] | None = None
    if operator_sweep_s is not None:
        async def sweep_forever() -> None:
            while True:
                await asyncio.sleep(operator_sweep_s)
                await queue.sweep_stalled(pool, backoff=retry.RetryPolicy(base_s=1.0, cap_s=300.0),
                                          requeue_only=True)
        sweeper = asyncio.create_task(sweep_forever())
    try:
        return await _requeue_trials(pool, url, logs, sig=sig, env=env, trials=trials,
                                     rng=rng, out=out, total=total)
    finally:
        if sweeper is not None:
            sweeper.cancel()


async def _requeue_trials(pool: asyncpg.Pool, url: str, logs: Path, *, sig: signal.Signals,
                          env: dict[str, str], trials: int, rng: random.Random,
                          out: list[float], total: list[float]
                          ) -> tuple[list[float], list[float]]:
    for i in range(trials):
        await pool.execute("DELETE FROM tasks; DELETE FROM workers")
        holder = WorkerProcess(url, logs, f"holder-{sig.name}-{i}",
                               {**env, "CITERUN_WORKER__CONCURRENCY": "1"})
        spare = None
        try:
            [task_id] = await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 600})])
            while await pool.fetchval("SELECT worker_id FROM tasks WHERE id = $1 AND "
                                      "state = 'running'", task_id) != holder.name:
                await asyncio.sleep(0.05)
            spare = WorkerProcess(url, logs, f"spare-{sig.name}-{i}", env)
            while not await pool.fetchval("SELECT count(*) FROM workers WHERE id = $1",
                                          spare.name):
                await asyncio.sleep(0.05)
            # SIGKILL at a random point between two heartbeats of the holder.
            await asyncio.sleep(rng.uniform(1, 1 + float(env["CITERUN_QUEUE__HEARTBEAT_S"])))
            signalled = dt.datetime.now(dt.timezone.utc)
            holder.signal(sig)
            while (row := await pool.fetchrow(
                    "SELECT worker_id, claimed_at, run_after FROM tasks WHERE id = $1",
                    task_id))["worker_id"] != spare.name:
                await asyncio.sleep(0.02)
            start = row["run_after"] if sig == signal.SIGTERM else signalled
            out.append((row["claimed_at"] - start).total_seconds())
            total.append((row["claimed_at"] - signalled).total_seconds())
            log(f"  {sig.name} trial {i + 1}/{trials}: {out[-1]:.3f}s "
                f"(signal -> claim {total[-1]:.3f}s)")
        finally:
            for w in (holder, spare):
                if w is not None:
                    w.stop()
    return out, total


# -- report -------------------------------------------------------------------------------

@dataclasses.dataclass
class Results:
    info: dict[str, str]
    command: str
    citerun: list[float]
    poller: list[float]
    plain: tuple[float, int, int, float]
    rolled: tuple[float, int, int, float]
    tasks: int
    seconds: float
    term: list[float]
    term_total: list[float]
    kill_fast: list[float]
    kill_default: list[float]
    kill_operator: list[float]
    loads: list[str]


def summary(xs: list[float]) -> str:
    if not xs:
        return "-"
    return (f"{statistics.median(xs):.3f} (mean {statistics.fmean(xs):.3f}, "
            f"{min(xs):.3f}-{max(xs):.3f}, n={len(xs)})")


def rows(r: Results) -> list[tuple[str, str]]:
    return [
        ("Scale-up reaction, enqueue -> replicas raised (s): citerun (NOTIFY)",
         summary(r.citerun)),
        (f"Scale-up reaction (s): same decide(), {POLL_S:.0f} s poll loop (KEDA-style)",
         summary(r.poller)),
        (f"{r.tasks} tasks x {r.seconds} s on 4 workers x 4, no restart (s)",
         f"{r.plain[0]:.1f}"),
        ("same, with a rolling restart 2 s in (s)",
         f"{r.rolled[0]:.1f} (rollout took {r.rolled[3]:.1f} s; {r.rolled[1]} pods "
         f"started, {r.rolled[2]} tasks released)"),
        ("Requeue after SIGTERM, release -> claimed by another worker (s)", summary(r.term)),
        ("  SIGTERM -> claimed, with a 1 s drain timeout (s)", summary(r.term_total)),
        ("Requeue after SIGKILL, kill -> re-claimed (s); lease 2 s, sweep 0.5 s",
         summary(r.kill_fast)),
        ("Requeue after SIGKILL (s); defaults, workers only: lease 30 s, idle sweep 60 s",
         summary(r.kill_default)),
        ("  same, with the operator's leader sweeping each 5 s evaluation (s)",
         summary(r.kill_operator)),
    ]


def markdown(r: Results) -> str:
    lines = [SECTION, "", f"Measured {dt.date.today().isoformat()} with "
             "`bench.cluster.autoscaler`:", "", "```", r.command, "```", "",
             "| Machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in r.info.items()]
    lines += ["", "| Measure | Median (mean, range, n) |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in rows(r)]
    lines += ["", "Notes:", "",
              "- Load average (1/5/15 min) at the start of each phase: "
              + "; ".join(r.loads) + ". Other jobs shared the 2 cores, so absolute times "
              "carry their noise; the NOTIFY-vs-poll gap is far larger than it.",
              "- Reaction: one task enqueued into an idle queue with the Deployment at 0; "
              "an observer polls the scale subresource every 10 ms (so ~10 ms of each "
              "figure is the observer). citerun: `Autoscaler.run` with the default "
              "settings (interval 5 s, Lease renewed every 5 s). Poller: the same "
              "`Autoscaler.run_once` every 30 s and nothing else, restarted per trial, "
              "the enqueue at a uniformly random moment of its cycle (expected mean 15 s). "
              "KEDA then leaves 1 -> N to an HPA (15 s sync), not counted here.",
              "- Rolling restart: the test kubelet (`tests/support/kubelet.py`) replaces "
              "the 4 workers one at a time, maxSurge 1 / maxUnavailable 0: a new pod "
              "starts, and once its worker registered an old one is SIGTERMed and drains "
              "(in-flight tasks finish, default 20 s drain timeout). Nothing is lost in "
              "either run (every task's success recorded once, checked); the difference "
              "is the worker start-ups and the slots a draining worker no longer fills. With "
              "short tasks the surge pod covers the draining one, so the restart costs "
              "about nothing; the chaos test (tests/chaos/test_rolling_restart.py) covers "
              "long tasks released mid-drain.",
              "- SIGTERM: drain timeout 1 s so the long task is released quickly; the "
              "figure is the release's `now()` -> the other worker's `claimed_at`, "
              "pushed by the release's NOTIFY. SIGKILL: the holder is killed at a random "
              "moment after a heartbeat; the task comes back when its lease expires "
              "(lease - time since the last heartbeat) and an idle worker's sweep "
              "(every poll_s when idle, +-20 % jitter) requeues it with the first retry "
              "backoff (base, +-25 %); the sweep's NOTIFY then wakes a claimer. Bound: "
              "lease + sweep interval x 1.2 + backoff base x 1.25. On a cluster the "
              "operator's autoscaler leader also runs a requeue-only sweep on every "
              "evaluation (5 s by default), which the last row models: lease + ~5 s.",
              "- Command run from the repository root; needs the control-plane binaries "
              "(tests/cluster/build.sh)."]
    return "\n".join(lines) + "\n"


def machine(pg_version: str, k8s_version: str) -> dict[str, str]:
    return {**bench_machine.basics(), "PostgreSQL": pg_version, "kube-apiserver": k8s_version}


# -- main ---------------------------------------------------------------------------------

async def run(args: argparse.Namespace, url: str, plane: controlplane.ControlPlane,
              logs: Path) -> Results:
    rng = random.Random(args.seed)
    await db.migrate(url)
    pool = await db.create_pool(url, min_size=1, max_size=6)
    loads = []
    try:
        await pool.execute(test_tasks.SCHEMA)
        pg_version = await pool.fetchval("SHOW server_version")
        with plane.client() as api:
            k8s_version = k8s.VersionApi(api).get_code().git_version
            plane.create_namespace(NAMESPACE)
            k8s.AppsV1Api(api).create_namespaced_deployment(
                NAMESPACE, kubelet_mod.worker_deployment(DEPLOYMENT))
            loads.append(f"reaction {load_average()}")
            log(f"1. scale-up reaction (load {load_average()})")
            citerun_r = await reaction(pool, api, url, polled=False, trials=args.trials,
                                       rng=rng)
            poller_r = await reaction(pool, api, url, polled=True, trials=args.poll_trials,
                                      rng=rng)
            loads.append(f"rolling restart {load_average()}")
            log(f"2. {args.tasks} tasks, without and with a rolling restart (load {load_average()})")
            plain = await run_tasks(pool, api, url, logs, tasks=args.tasks,
                                    seconds=args.task_seconds, restart=False)
            log(f"  no restart: {plain}")
            rolled = await run_tasks(pool, api, url, logs, tasks=args.tasks,
                                     seconds=args.task_seconds, restart=True)
            log(f"  rolling restart: {rolled}")
        loads.append(f"requeue {load_average()}")
        log(f"3. requeue latency (load {load_average()})")
        fast = {**FAST_QUEUE_ENV, "CITERUN_WORKER__DRAIN_TIMEOUT_S": "1"}
        term, term_total = await requeue(pool, url, logs, sig=signal.SIGTERM, env=fast,
                             trials=args.requeue_trials, rng=rng)
        kill_fast, _ = await requeue(pool, url, logs, sig=signal.SIGKILL, env=fast,
                                  trials=args.requeue_trials, rng=rng)
        kill_default, _ = await requeue(pool, url, logs, sig=signal.SIGKILL,
                                     env=DEFAULT_WORKER_ENV, trials=args.default_trials,
                                     rng=rng)
        kill_operator, _ = await requeue(pool, url, logs, sig=signal.SIGKILL,
                                         env=DEFAULT_WORKER_ENV, trials=args.default_trials,
                                         rng=rng, operator_sweep_s=5.0)
        loads.append(f"end {load_average()}")
    finally:
        await pool.close()
    return Results(machine(pg_version, k8s_version), args.command, citerun_r, poller_r,
                   plain, rolled, args.tasks, args.task_seconds, term, term_total, kill_fast,
                   kill_default, kill_operator, loads)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer trials")
    ap.add_argument("--write-docs", action="store_true",
                    help=f"replace the '{SECTION[3:]}' section of docs/benchmarks.md")
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args(argv)
    args.trials = 10 if args.quick else 20
    args.poll_trials = 3 if args.quick else 6
    args.requeue_trials = 3 if args.quick else 5
    args.default_trials = 1 if args.quick else 3
    args.tasks, args.task_seconds = 800, 0.25
    args.command = "python -m bench.cluster.autoscaler" + "".join(
        f" {a}" for a in argv if a != "--write-docs")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    tmp = workdir("citerun-bench-autoscaler-")
    (tmp / "logs").mkdir()
    server = embedded.EmbeddedPostgres(tmp / "pg")
    plane = controlplane.ControlPlane(bin_dir=controlplane.build())

    def on_term(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ok = False
    try:
        server.start()
        plane.start()
        # The operator's module-wide client (the kubernetes package read KUBECONFIG at
        # import, before the control plane existed).
        kube._api_client = plane.api_client()
        results = asyncio.run(run(args, server.url(), plane, tmp / "logs"))
        ok = True
    except KeyboardInterrupt:
        print("interrupted; cleaning up")
        return 130
    finally:
        plane.stop()
        server.stop("fast")
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"logs kept in {tmp / 'logs'}")
    text = markdown(results)
    print(text)
    if args.write_docs:
        bench_machine.write_section(SECTION, text)
        print(f"wrote the '{SECTION[3:]}' section of {bench_machine.DOCS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
