"""citerun on a real single-node cluster: the image, ``helm install``, real pods.

In order (one release for the module, like a user's trial):

1. the image built from the repository's Dockerfile runs in a pod: non-root, no
   compiler, ``citerun --help``, the wordllama model loads with no network;
2. the README's Kubernetes commands verbatim (plus the local image values): ``helm
   install`` with the bundled Postgres, ``citerun submit`` of the demo thesis, the
   CitationRun Succeeded with the verdicts examples/expected.json accepts, real worker
   pods scaled from 0 and back to 0 by the operator, ``kubectl get crun`` columns;
3. rolling deploys under load on real pods (see test_rolling_deploys_under_load).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

import node as node_mod
import operator_support
import support
from support import NAMESPACE, RELEASE

pytestmark = [pytest.mark.node, pytest.mark.cluster]

EXPECTED = json.loads((support.EXAMPLES / "expected.json").read_text())
WORKER = f"{RELEASE}-worker"
OPERATOR = f"{RELEASE}-operator"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def _cli_env(node: node_mod.Node, database_url: str) -> dict[str, str]:
    env = dict(node.plane.tool_env(), CITERUN_DATABASE_URL=database_url, COLUMNS="200")
    env.pop("CITERUN_DATA_DIR", None)
    return env


def _citerun(node: node_mod.Node, database_url: str, *args: str,
             timeout: float = 300) -> str:
    """The citerun CLI of this checkout, as a user runs it against the cluster."""
    proc = subprocess.run([sys.executable, "-P", "-m", "citerun", *args], cwd=support.REPO,
                          env=_cli_env(node, database_url), capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, f"citerun {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def test_image_runs_non_root_without_compilers_with_the_models(node: node_mod.Node) -> None:
    script = (
        "set -e; id -u; citerun --help | head -n 1; "
        "for c in gcc cc c++ g++ clang; do command -v $c && exit 3 || true; done; "
        "echo no-compiler; "
        "python -c 'from citerun.pipeline.embed import _wordllama_model as m; "
        "print(\"wordllama\", m().embed([\"urban heat\"]).shape)'; "
        "python -c 'from citerun.pipeline.judging import german; "
        "print(\"german\", len(german.ding()) > 100000, "
        "german.to_english(\"Die Thrombosen wurden nicht behandelt.\"))'"
    )
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "image-check", "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "check", "image": node_mod.APP_IMAGE, "imagePullPolicy": "Never",
                "command": ["sh", "-c", script],
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            }],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }
    path = node.workdir / "image-check.json"
    path.write_text(json.dumps(pod))
    node.kubectl("delete", "pod", "-n", "default", "image-check", "--ignore-not-found")
    began = time.monotonic()
    node.kubectl("apply", "-f", str(path))
    phase = support.eventually(
        lambda: (p := node.kubectl("get", "pod", "-n", "default", "image-check", "-o",
                                   "jsonpath={.status.phase}").strip()) in
        ("Succeeded", "Failed") and p, 300, "the image-check pod to finish",
        lambda: node.kubectl("describe", "pod", "-n", "default", "image-check",
                             check=False) + node.log_tail(20, ("kubelet", "containerd")))
    logs = node.kubectl("logs", "-n", "default", "image-check")
    assert phase == "Succeeded", logs
    lines = logs.splitlines()
    assert lines[0] == "10001", logs              # the image's USER, not root
    assert lines[1].startswith("usage: citerun"), logs
    assert "no-compiler" in lines, logs
    assert any(line.startswith("wordllama (1, ") for line in lines), logs
    # Ding's dictionary (Debian's trans-de-en) is in the image: German claims are glossed
    # with it, not with the small built-in glossary alone.
    assert "german True the thromboses were not treated." in lines, logs
    support.figure("image check pod: apply -> Succeeded", time.monotonic() - began, "s",
                   "a pod of the app image: citerun --help + loading the wordllama model")
    node.kubectl("delete", "pod", "-n", "default", "image-check", "--wait=false")


@pytest.fixture(scope="module")
def release(node: node_mod.Node) -> Iterator[dict[str, float]]:
    """The README's bundled-Postgres ``helm install`` on the node; timings of it."""
    support.make_postgres_volume(node)
    argv = support.readme_command("helm install", "postgresql.enabled=true")
    values: dict[str, object] = dict(support.LOCAL_VALUES)
    values.update({"autoscaling.cooldownSeconds": 20, "autoscaling.stabilizationSeconds": 5,
                   "workers.drainTimeoutSeconds": 5})
    timings: dict[str, float] = {}
    began = time.monotonic()
    support.run_tool(node, argv + support.set_args(values))
    timings["helm install"] = time.monotonic() - began
    node.kubectl("rollout", "status", "-n", NAMESPACE, f"statefulset/{RELEASE}-postgresql",
                 "--timeout=300s", timeout=320)
    timings["postgres Ready"] = time.monotonic() - began
    node.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{OPERATOR}",
                 "--timeout=300s", timeout=320)
    timings["operator Ready"] = time.monotonic() - began
    support.figure("helm install -> bundled Postgres Ready", timings["postgres Ready"], "s",
                   "README's helm install; hostPath PV; the postgres image built here")
    support.figure("helm install -> operator Ready", timings["operator Ready"], "s",
                   "README's helm install (first start: migrations)")
    try:
        yield timings
    finally:
        if os.environ.get("CITERUN_KEEP_CONTROL_PLANE"):
            return
        node.helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout=120s",
                  check=False)


def _worker_replicas(node: node_mod.Node) -> int:
    return int(support.deployment(node, WORKER)["spec"].get("replicas") or 0)


def _claims(report: dict[str, Any], thesis: str) -> list[str]:
    wrong = []
    for claim in EXPECTED["documents"][thesis]["claims"]:
        source = pathlib.Path(claim["source"]).name if claim["source"] else None
        hits = [c for c in report["citations"]
                if claim["claim"] in " ".join(c["claim"].split())
                and ((c["source"] or {}).get("filename") if source else c["source"]) == source]
        assert len(hits) == 1, (claim, [c["claim"] for c in report["citations"]])
        if hits[0]["verdict"] not in claim["accept"]:
            wrong.append(f"{claim['claim']!r} vs {claim['source']}: {hits[0]['verdict']} "
                         f"(expected {claim['accept']})")
    return wrong


def test_readme_install_submit_succeeds_and_scales_workers_0_up_0(
        node: node_mod.Node, release: dict[str, float], tmp_path: pathlib.Path) -> None:
    url = support.database_url(node)
    thesis = "thesis.pdf"
    follower = support.LogFollower(node, "worker", tmp_path / "logs")

    def logs() -> str:
        return (follower.text()[-6000:] + node.kubectl(
            "logs", "-n", NAMESPACE, f"deploy/{OPERATOR}", "--tail=60", check=False))

    with follower:
        # The chart leaves the replicas to the operator (the Deployment starts at the API
        # default, 1): with no work it scales to minWorkers 0 after the idle cooldown.
        support.eventually(lambda: _worker_replicas(node) == 0 and
                           not support.pods(node, "worker"), 240,
                           "the operator to scale the idle workers to 0", logs)
        submitted = time.monotonic()
        out = _citerun(node, url, "submit", str(support.EXAMPLES / thesis), "--sources",
                       str(support.EXAMPLES / "sources"), "-n", NAMESPACE)
        name = node.kubectl("get", "crun", "-n", NAMESPACE, "-o",
                            "jsonpath={.items[0].metadata.name}").strip()
        assert name and name in out, out
        support.eventually(lambda: _worker_replicas(node) > 0, 120,
                           "the operator to scale the workers up", logs, interval=0.2)
        scaled = time.monotonic()
        support.eventually(lambda: any(support.ready(p) for p in support.pods(node, "worker")),
                           300, "a worker pod Ready", logs, interval=0.3)
        first_ready = time.monotonic()
        support.eventually(
            lambda: node.kubectl("get", "crun", "-n", NAMESPACE, name, "-o",
                                 "jsonpath={.status.phase}").strip() == "Succeeded",
            600, f"{name} to succeed", logs)
        succeeded = time.monotonic()
        table = node.kubectl("get", "crun", "-n", NAMESPACE)
        header = table.splitlines()[0].split()
        assert header[:5] == ["NAME", "PHASE", "PROGRESS", "SUPPORTED", "UNSUPPORTED"], table
        assert "Succeeded" in table.splitlines()[1], table
        report_path = tmp_path / "report.json"
        _citerun(node, url, "report", name, "-n", NAMESPACE, "--out", str(report_path))
        report = json.loads(report_path.read_text())
        wrong = _claims(report, thesis)
        assert not wrong, "\n".join(wrong)
        # Back to zero after the idle cooldown (20 s) + stabilization (5 s).
        support.eventually(lambda: _worker_replicas(node) == 0 and
                           not support.pods(node, "worker"), 240,
                           "the workers scaled back to 0 and gone", logs)
        zero = time.monotonic()
    assert follower.lines(r"worker .* started"), follower.text()[-3000:]
    support.figure("submit -> workers scaled up (replicas > 0)", scaled - submitted, "s",
                   "citerun submit (upload + CitationRun) until the operator set replicas")
    support.figure("submit -> first worker pod Ready", first_ready - submitted, "s",
                   "from 0 workers; includes scheduling, container start, worker start")
    support.figure("submit -> CitationRun Succeeded", succeeded - submitted, "s",
                   "demo thesis, 4 sources, embedded judge")
    support.figure("Succeeded -> workers back to 0", zero - succeeded, "s",
                   "cooldownSeconds 20, stabilizationSeconds 5, pods terminated")


# --- rolling deploys under load ---------------------------------------------------------

TASKS = 520
LONG_EVERY = 20          # every 20th task outlives the drain timeout (5 s): released on drain
LONG_S = 12.0
ROLLOUT_LONG = 8         # before each rollout: one task per slot (4 workers x 2) ...
ROLLOUT_LONG_S = 30.0    # ... long enough to be held when the rollout reaches its pod
SHORT_S = 1.5
# Before each disturbance the queue is topped up to this many outstanding tasks (same
# mix), so that on a slow machine, where the rollouts take longer, each one still
# happens mid-run with every worker busy; the totals count what was enqueued.
MIN_OUTSTANDING = 150
IDLE_LONG_S = 60.0       # the idle-first phase: 2 long tasks keep 2 workers busy...
IDLE_SHORT = 78          # ...while these finish and leave the other workers idle
TASKS_MODULE = """\
from citerun.worker.registry import Registry
from citerun.worker.tasks import registry as _citerun
import citerun_test_tasks as _test

registry = Registry()
registry.include(_citerun)
registry.include(_test.registry)
registry.on_dead = _citerun.on_dead
"""


async def _pool(url: str) -> asyncpg.Pool:
    from citerun.core import db
    pool = await db.create_pool(url, min_size=1, max_size=4)
    assert pool is not None
    return pool


def _serve_test_tasks(node: node_mod.Node, tmp_path: pathlib.Path) -> None:
    """The test handlers (tests/support/tasks.py) served next to citerun's own, from a
    ConfigMap, through the chart's workers.extraArgs/extraVolumes/extraVolumeMounts
    (idempotent: a second call changes nothing)."""
    from tests.support import tasks as test_tasks

    cm = tmp_path / "tasks"
    cm.mkdir(exist_ok=True)
    (cm / "citerun_test_tasks.py").write_text(pathlib.Path(test_tasks.__file__).read_text())
    (cm / "citerun_node_tasks.py").write_text(TASKS_MODULE)
    manifest = node.kubectl("create", "configmap", "-n", NAMESPACE, "node-test-tasks",
                            f"--from-file={cm}", "--dry-run=client", "-o", "yaml")
    path = tmp_path / "node-test-tasks.yaml"
    path.write_text(manifest)
    node.kubectl("apply", "-f", str(path))
    load_values: dict[str, object] = {
        "workers.extraArgs": ["--tasks", "citerun_node_tasks:registry"],
        "workers.extraVolumes": [{"name": "test-tasks",
                                  "configMap": {"name": "node-test-tasks"}}],
        "workers.extraVolumeMounts": [{"name": "test-tasks", "mountPath": "/opt/test-tasks",
                                       "readOnly": True}],
        "workers.extraEnv": [{"name": "PYTHONPATH", "value": "/opt/test-tasks"}],
        "workers.concurrency": 2,
        "autoscaling.maxWorkers": 4,
        "autoscaling.tasksPerWorker": 20,
    }
    node.helm("upgrade", RELEASE, str(support.REPO / "charts" / "citerun"), "-n", NAMESPACE,
              "--reuse-values", *support.set_args(load_values))
    node.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{OPERATOR}",
                 "--timeout=180s", timeout=200)


def test_rolling_deploys_under_load_lose_and_duplicate_nothing(
        node: node_mod.Node, release: dict[str, float], tmp_path: pathlib.Path) -> None:
    asyncio.run(_rolling(node, tmp_path))


async def _rolling(node: node_mod.Node, tmp_path: pathlib.Path) -> None:
    from citerun.core import queue
    from tests.support import tasks as test_tasks

    url = support.database_url(node)
    _serve_test_tasks(node, tmp_path)
    pool = await _pool(url)
    follower = support.LogFollower(node, "worker", tmp_path / "logs")
    op_follower = support.LogFollower(node, "operator", tmp_path / "operator-logs")

    def logs() -> str:
        return follower.text()[-8000:] + op_follower.text()[-4000:]

    async def outstanding() -> int:
        return int(await pool.fetchval(
            "SELECT count(*) FROM tasks WHERE state IN ('queued', 'running')"))

    loads: list[float] = []   # the machine's 1-min load average, sampled as the test waits

    async def until(check: Any, timeout: float, what: str) -> None:
        loads.append(os.getloadavg()[0])
        await operator_support.wait_for(check, timeout, what, logs)

    def ready_workers() -> list[str]:
        return [p["metadata"]["name"] for p in support.pods(node, "worker")
                if support.ready(p) and not p["metadata"].get("deletionTimestamp")]

    enqueued_work = 0

    async def enqueue_work(n: int) -> None:
        nonlocal enqueued_work
        await queue.enqueue(pool, [
            queue.NewTask("work", {"seconds": LONG_S if (enqueued_work + i) % LONG_EVERY == 0
                                   else SHORT_S}) for i in range(n)])
        enqueued_work += n

    async def top_up() -> int:
        """Outstanding tasks, after topping the queue up to MIN_OUTSTANDING."""
        left = await outstanding()
        if left < MIN_OUTSTANDING:
            await enqueue_work(MIN_OUTSTANDING - left)
            left = await outstanding()
        return left

    async def hold_long_tasks() -> None:
        """Before a rollout: a long task for every slot, claimed first, so that the pods
        it terminates hold tasks that outlive the drain (at random moments a pod held
        none about one time in fifteen, and the drain went unseen)."""
        nonlocal enqueued_work
        await queue.enqueue(pool, [queue.NewTask("work", {"seconds": ROLLOUT_LONG_S},
                                                 priority=-1) for _ in range(ROLLOUT_LONG)])
        enqueued_work += ROLLOUT_LONG

    cost_watch = support.AnnotationWatch(node, "worker", DELETION_COST, tmp_path / "costs")
    try:
        with follower, op_follower, contextlib.ExitStack() as stack:
            stack.callback(cost_watch.__exit__)
            await pool.execute(test_tasks.SCHEMA)
            # From no workers at all (the load values' upgrade restarted the idle ones).
            await until(lambda: _worker_replicas(node) == 0 and
                        not support.pods(node, "worker"), 240, "no workers before the load")
            enqueued = time.monotonic()
            await enqueue_work(TASKS)
            await until(lambda: _worker_replicas(node) > 0, 60, "scale-up")
            scale_reaction = time.monotonic() - enqueued
            await until(ready_workers, 300, "a first ready worker")
            first_ready = time.monotonic() - enqueued
            await until(lambda: len(ready_workers()) >= 3, 300, "3 ready workers")
            in_flight_at_start = await outstanding()
            # A real CitationRun rides through every disturbance too.
            await asyncio.to_thread(
                _citerun, node, url, "submit", str(support.EXAMPLES / "thesis_numeric.pdf"),
                "--sources", str(support.EXAMPLES / "sources"), "-n", NAMESPACE,
                "--name", "under-load")

            # 1. helm upgrade to the second tag of the same image: a rollout of the workers.
            left_at_upgrade = await top_up()
            await hold_long_tasks()
            node.helm("upgrade", RELEASE, str(support.REPO / "charts" / "citerun"), "-n",
                      NAMESPACE, "--reuse-values", "--set-string",
                      f"image.tag={node_mod.APP_IMAGE_ROLLOUT.rsplit(':', 1)[1]}")
            node.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{WORKER}",
                         "--timeout=300s", timeout=320)
            # 2. rollout restart of the operator and of the workers.
            left_at_restart = await top_up()
            await hold_long_tasks()
            node.kubectl("rollout", "restart", "-n", NAMESPACE, f"deployment/{OPERATOR}",
                         f"deployment/{WORKER}")
            node.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{WORKER}",
                         "--timeout=300s", timeout=320)
            node.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{OPERATOR}",
                         "--timeout=300s", timeout=320)
            # 3. force-delete two busy workers (SIGKILL, no drain): their tasks come back
            #    through the lease expiry / the operator's sweep.
            left_at_kill = await top_up()
            victims: list[asyncpg.Record] = []

            async def two_busy_workers() -> bool:
                # Workers of the new ReplicaSet that hold tasks (a pod just Ready may not
                # have claimed yet).
                nonlocal victims
                busy = await pool.fetch(
                    "SELECT worker_id, array_agg(id) AS ids FROM tasks WHERE state = "
                    "'running' GROUP BY worker_id ORDER BY count(*) DESC")
                ready = ready_workers()
                victims = [r for r in busy if r["worker_id"] in ready][:2]
                return len(victims) == 2

            await until(two_busy_workers, 120, "two ready workers holding tasks")
            killed_at = time.monotonic()
            node.kubectl("delete", "pod", "-n", NAMESPACE, "--grace-period=0", "--force",
                         *[r["worker_id"] for r in victims])
            orphaned = [i for r in victims for i in r["ids"]]

            async def requeued() -> bool:
                return bool(await pool.fetchval(
                    "SELECT count(*) = $2 FROM tasks WHERE id = ANY($1::bigint[]) "
                    "AND (state <> 'running' OR worker_id <> ALL($3::text[]))",
                    orphaned, len(orphaned), [r["worker_id"] for r in victims]))

            await until(requeued, 180, "the killed workers' tasks to be taken again")
            requeue_s = time.monotonic() - killed_at
            await until(lambda: pool.fetchval(
                "SELECT count(*) = $1 FROM tasks WHERE kind = 'work' AND state = 'succeeded'",
                enqueued_work), 900, "every task to succeed")
            done_s = time.monotonic() - enqueued
            await until(lambda: node.kubectl(
                "get", "crun", "-n", NAMESPACE, "under-load", "-o",
                "jsonpath={.status.phase}").strip() == "Succeeded", 300,
                "the CitationRun submitted under load to succeed")

            await until(lambda: _worker_replicas(node) == 0 and not support.pods(node, "worker"),
                        240, "scale to zero after the load")
            cost_watch.__enter__()

            # 4. idle pods first: 4 workers for 2 long + 78 short tasks; once the short
            #    ones are done, 2 workers are busy and 2 idle, and the scale-down to the 2
            #    busy ones must delete the idle pods (pod-deletion-cost, set by the
            #    operator, honoured by the ReplicaSet controller).
            long_ids = await queue.enqueue(pool, [
                queue.NewTask("work", {"seconds": IDLE_LONG_S}, priority=-1)
                for _ in range(2)])
            await queue.enqueue(pool, [queue.NewTask("work", {"seconds": SHORT_S})
                                       for _ in range(IDLE_SHORT)])

            async def long_running() -> list[str]:
                rows = await pool.fetch("SELECT worker_id FROM tasks WHERE id = ANY($1) "
                                        "AND state = 'running'", long_ids)
                return [r["worker_id"] for r in rows] if len(rows) == 2 else []

            await until(lambda: len(ready_workers()) >= 3, 240, "3+ ready workers")
            await until(long_running, 120, "the two long tasks to run")
            busy_pods = set(await long_running())
            workers_before = set(ready_workers())
            # (both long tasks may run on one worker: concurrency 2)
            await until(lambda: len(support.pods(node, "worker")) == len(busy_pods), 180,
                        f"the scale-down to the {len(busy_pods)} busy worker(s)")
            costs = cost_watch.last()   # the deletion cost each pod carried last
            survivors = {p["metadata"]["name"] for p in support.pods(node, "worker")}
            await until(lambda: pool.fetchval(
                "SELECT count(*) = 2 FROM tasks WHERE id = ANY($1) AND state = 'succeeded'",
                long_ids), IDLE_LONG_S + 60, "the long tasks to finish")
            long_rows = await pool.fetch("SELECT worker_id, attempt, releases FROM tasks "
                                         "WHERE id = ANY($1)", long_ids)
            long_starts = [tuple(r) for r in await pool.fetch(
                "SELECT task_id, attempt, worker_id, at FROM test_starts "
                "WHERE task_id = ANY($1) ORDER BY at", long_ids)]
            await until(lambda: _worker_replicas(node) == 0 and not support.pods(node, "worker"),
                        240, "scale to zero")
    finally:
        leftovers = await pool.fetch("SELECT state, count(*) FROM tasks WHERE kind = 'work' "
                                     "GROUP BY state")
        await pool.close()

    total = enqueued_work + 2 + IDLE_SHORT
    states = {r["state"]: r["count"] for r in leftovers}
    assert states == {"succeeded": total}, states
    pool = await _pool(url)
    try:
        done = await pool.fetchval("SELECT count(*) FROM test_done")
        distinct = await pool.fetchval("SELECT count(DISTINCT task_id) FROM test_done")
        assert done == distinct == total, (done, distinct)   # every task done exactly once
        fenced = await pool.fetchval(
            "SELECT count(*) FROM test_done d JOIN tasks t ON t.id = d.task_id "
            "AND t.attempt = d.attempt AND t.worker_id = d.worker_id")
        assert fenced == total
        released = await pool.fetchval("SELECT coalesce(sum(releases), 0) FROM tasks")
        pods_seen = await pool.fetchval("SELECT count(DISTINCT worker_id) FROM test_starts")
        stuck = await pool.fetchval(
            "SELECT count(*) FROM runs WHERE state IN ('pending', 'running')")
    finally:
        await pool.close()
    assert stuck == 0
    # The disturbances happened mid-run.
    assert min(in_flight_at_start, left_at_upgrade, left_at_restart, left_at_kill) > 0, (
        in_flight_at_start, left_at_upgrade, left_at_restart, left_at_kill)
    # The drain is in the logs: SIGTERM -> draining -> long tasks handed back, in that
    # order in the log of each pod that handed tasks back; and the database agrees.
    handed_back = {pod for pod, line in follower.lines(r"released [1-9]\d* tasks on drain")}
    assert handed_back and released > 0, (released, follower.text()[-3000:])
    for pod in handed_back:
        log = follower.text(pod)
        assert 0 <= log.find("draining on SIGTERM") < log.find(" tasks on drain"), log[-3000:]
    # Idle pods went first: the two busy pods survived the scale-down, and their long
    # tasks finished on the first attempt, never released.
    assert len(workers_before) >= 3 and busy_pods == survivors, (
        busy_pods, survivors, workers_before, costs, long_starts)
    # ...because the operator marked them so (busy: positive cost, idle: negative) and the
    # ReplicaSet controller followed the marks.
    gone = workers_before - survivors
    assert all(int(costs.get(p, "0")) > 0 for p in survivors), costs
    assert all(int(costs.get(p, "0")) < 0 for p in gone), (gone, costs)
    assert all(r["attempt"] == 1 and r["releases"] == 0 for r in long_rows), long_rows
    support.figure("rollout load: enqueue -> workers scaled up", scale_reaction, "s",
                   f"{TASKS} tasks enqueued at once into 0 workers (replicas set)")
    support.figure("rollout load: enqueue -> first worker Ready", first_ready, "s",
                   "from 0 workers: scale-up, scheduling, container start, readiness")
    support.figure("rollout load: forced delete -> tasks taken again", requeue_s, "s",
                   "2 busy workers, kubectl delete --grace-period=0 --force")
    support.figure("rollout load: all tasks done", done_s, "s",
                   f"{enqueued_work} tasks ({SHORT_S} s; every {LONG_EVERY}th {LONG_S:.0f} s) "
                   "through helm upgrade, rollout restart x2, 2 forced deletes")
    support.figure("rollout load: releases on drain", float(released), "tasks",
                   f"{pods_seen} worker pods ran tasks")
    support.figure("rollout load: machine load average (1 min)", sum(loads) / len(loads), "",
                   f"mean of {len(loads)} samples during the test, max {max(loads):.1f}, "
                   f"on {os.cpu_count()} cores")


WEB = f"{RELEASE}-web"


class _PortForward:
    """``kubectl port-forward`` to one pod of the web Deployment: the browser talks to
    127.0.0.1 on this host, and the service sees the connection from 127.0.0.1 in its
    pod (a trusted proxy by the chart's default), as from an authenticating sidecar."""

    def __init__(self, node: node_mod.Node, pod: str) -> None:
        self.proc = subprocess.Popen(
            [str(node.plane.bin_dir / "kubectl"), "port-forward", "-n", NAMESPACE,
             f"pod/{pod}", ":8080"], env=node.plane.tool_env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "Forwarding from 127.0.0.1:" in line, line
        self.base = "http://127.0.0.1:" + line.split("127.0.0.1:", 1)[1].split(" ", 1)[0]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _ready_web_pod(node: node_mod.Node) -> str | None:
    ready = [p["metadata"]["name"] for p in support.pods(node, "web")
             if support.ready(p) and not p["metadata"].get("deletionTimestamp")]
    return ready[0] if ready else None


def test_the_web_page_on_the_cluster_survives_a_rollout_restart(
        node: node_mod.Node, release: dict[str, float]) -> None:
    """Issue 26: with the chart's web service enabled, a writer uploads the demo thesis
    and its sources through the page (headless Chromium), the upload becomes a
    CitationRun in the namespace, a ``kubectl rollout restart`` of the service during the
    run loses nothing (the run, the list entry, the report), and the run Succeeds."""
    playwright_api = pytest.importorskip("playwright.async_api")
    chromium = pathlib.Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    node.helm("upgrade", RELEASE, str(support.REPO / "charts" / "citerun"), "-n", NAMESPACE,
              "--reuse-values", *support.set_args({"web.enabled": True, "web.replicas": 1}))
    node.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{WEB}",
                 "--timeout=300s", timeout=320)
    asyncio.run(_web(node, playwright_api, chromium))


async def _web(node: node_mod.Node, playwright_api: Any, chromium: pathlib.Path) -> None:
    import httpx

    headers = {"X-Forwarded-User": "alice"}
    pod = support.eventually(lambda: _ready_web_pod(node), 120, "a ready web pod")
    forward = _PortForward(node, pod)
    try:
        async with playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=str(chromium), args=["--headless", "--no-sandbox",
                                                     "--disable-gpu", "--no-first-run"])
            try:
                context = await browser.new_context(extra_http_headers=headers)
                tab = await context.new_page()
                began = time.monotonic()
                await tab.goto(f"{forward.base}/")
                await tab.set_input_files("#thesis", str(support.EXAMPLES / "thesis.pdf"))
                await tab.set_input_files("#sources", [
                    str(p) for p in sorted((support.EXAMPLES / "sources").glob("*.pdf"))])
                await tab.click("button[type=submit]")
                await tab.wait_for_url(f"{forward.base}/runs/*", timeout=60_000)
                run_id = tab.url.rsplit("/", 1)[1]
                upload_s = time.monotonic() - began
            finally:
                await browser.close()
        crs = json.loads(node.kubectl("get", "crun", "-n", NAMESPACE, "-o", "json"))["items"]
        [cr] = [c for c in crs if c["metadata"]["uid"] == run_id]
        # The service is restarted while the run is running (admitted by the operator,
        # its workers scaled up from none).
        support.eventually(lambda: node.kubectl(
            "get", "crun", "-n", NAMESPACE, cr["metadata"]["name"], "-o",
            "jsonpath={.status.phase}").strip() == "Running", 180, "the CitationRun running")
        forward.close()
        node.kubectl("rollout", "restart", "-n", NAMESPACE, f"deployment/{WEB}")
        node.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{WEB}",
                     "--timeout=300s", timeout=320)
        phase_at_restart = node.kubectl("get", "crun", "-n", NAMESPACE, cr["metadata"]["name"],
                                        "-o", "jsonpath={.status.phase}").strip()
        pod = support.eventually(lambda: _ready_web_pod(node) if _ready_web_pod(node) != pod
                                 else None, 120, "the restarted web pod")
        forward = _PortForward(node, pod)
        async with httpx.AsyncClient(base_url=forward.base, headers=headers) as http:
            listed = (await http.get("/api/runs")).json()
            assert run_id in json.dumps(listed), listed
            deadline = time.monotonic() + 420
            while True:
                status = (await http.get(f"/api/runs/{run_id}")).json()
                if status.get("state") in ("succeeded", "failed", "cancelled"):
                    break
                assert time.monotonic() < deadline, status
                await asyncio.sleep(1.5)
            assert status["state"] == "succeeded", status
            report = (await http.get(f"/api/runs/{run_id}/report.json")).json()
            html = await http.get(f"/api/runs/{run_id}/report.html")
            other = await http.get(f"/api/runs/{run_id}", headers={"X-Forwarded-User": "bob"})
        done_s = time.monotonic() - began
    finally:
        forward.close()
    assert html.status_code == 200 and "Citation report" in html.text
    assert other.status_code == 404
    assert not _claims(report, "thesis.pdf")  # the verdicts examples/expected.json accepts
    assert node.kubectl("get", "crun", "-n", NAMESPACE, cr["metadata"]["name"], "-o",
                        "jsonpath={.status.phase}").strip() == "Succeeded"
    support.figure("web: page upload -> run page", upload_s, "s",
                   "headless Chromium through kubectl port-forward, demo thesis + 5 sources")
    support.figure("web: upload -> report, rollout restart of the service between", done_s,
                   "s", f"the CitationRun was {phase_at_restart} when the restart had rolled out")


SWITCH_TASKS = 300


def test_a_postgres_switchover_mid_run_loses_and_duplicates_nothing(
        node: node_mod.Node, release: dict[str, float], tmp_path: pathlib.Path) -> None:
    """Issue 27: a streaming standby of the bundled Postgres (a base backup through the
    Service, a pod of the same image) is promoted while workers run tasks and a
    CitationRun: the primary stops (StatefulSet scaled to 0: SIGINT, a fast shutdown that
    sends every committed transaction to the standby), the standby is promoted and the
    Service moved to it (the workers' and operator's URL now leads there). Every task is
    done exactly once and the CitationRun succeeds."""
    asyncio.run(_switchover(node, tmp_path))


def _standby_manifest(node: node_mod.Node, primary_ip: str) -> dict[str, Any]:
    sts = json.loads(node.kubectl("get", "statefulset", "-n", NAMESPACE,
                                  f"{RELEASE}-postgresql", "-o", "json"))
    container = sts["spec"]["template"]["spec"]["containers"][0]
    labels = {k: v for k, v in sts["spec"]["template"]["metadata"]["labels"].items()
              if k != "app.kubernetes.io/component"}
    env = [e for e in container["env"] if e["name"] in ("POSTGRES_USER", "POSTGRES_PASSWORD")]
    script = ('PGPASSWORD="$POSTGRES_PASSWORD" pg_basebackup -h ' + primary_ip +
              ' -U "$POSTGRES_USER" -D "$PGDATA" -R -X stream -c fast '
              '&& exec postgres -D "$PGDATA" -c listen_addresses="*"')
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{RELEASE}-postgresql-standby", "namespace": NAMESPACE,
                     "labels": {**labels, "app.kubernetes.io/component": "postgresql-standby"}},
        "spec": {
            "securityContext": sts["spec"]["template"]["spec"]["securityContext"],
            "containers": [{
                "name": "postgresql", "image": container["image"],
                "imagePullPolicy": container.get("imagePullPolicy", "IfNotPresent"),
                "command": ["sh", "-c", script], "env": env,
                "ports": [{"name": "postgresql", "containerPort": 5432}],
                "readinessProbe": {"exec": {"command": ["pg_isready", "-h", "127.0.0.1"]},
                                   "periodSeconds": 2},
                "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql"},
                                 {"name": "run", "mountPath": "/var/run/postgresql"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "run", "emptyDir": {}}]}}


async def _switchover(node: node_mod.Node, tmp_path: pathlib.Path) -> None:
    from citerun.core import queue
    from tests.support import tasks as test_tasks

    _serve_test_tasks(node, tmp_path)
    url = support.database_url(node)
    primary = f"{RELEASE}-postgresql-0"
    service = f"{RELEASE}-postgresql"
    follower = support.LogFollower(node, "worker", tmp_path / "switch-logs")

    def logs() -> str:
        return follower.text()[-8000:]

    # Replication connections need their own pg_hba line on the primary.
    node.kubectl("exec", "-n", NAMESPACE, primary, "--", "sh", "-c",
                 'echo "host replication all all scram-sha-256" >> "$PGDATA/pg_hba.conf" '
                 '&& pg_ctl -D "$PGDATA" reload')
    primary_ip = json.loads(node.kubectl("get", "pod", "-n", NAMESPACE, primary, "-o", "json")
                            )["status"]["podIP"]
    manifest = tmp_path / "standby.json"
    manifest.write_text(json.dumps(_standby_manifest(node, primary_ip)))
    node.kubectl("apply", "-f", str(manifest))
    standby = f"{RELEASE}-postgresql-standby"
    node.kubectl("wait", "-n", NAMESPACE, "--for=condition=Ready", f"pod/{standby}",
                 "--timeout=240s", timeout=260)
    in_recovery = node.kubectl("exec", "-n", NAMESPACE, standby, "--", "sh", "-c",
                               'psql -U "$POSTGRES_USER" -d postgres -tAc '
                               '"SELECT pg_is_in_recovery()"').strip()
    assert in_recovery == "t", in_recovery

    pool = await _pool(url)
    with follower, contextlib.ExitStack() as stack:
        stack.callback(node.kubectl, "delete", "pod", "-n", NAMESPACE, standby,
                       "--ignore-not-found", "--wait=false", check=False)
        try:
            await pool.execute(test_tasks.SCHEMA)
            ids = await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 1.0})
                                             for _ in range(SWITCH_TASKS)])
            await asyncio.to_thread(
                _citerun, node, url, "submit", str(support.EXAMPLES / "thesis.pdf"),
                "--sources", str(support.EXAMPLES / "sources"), "-n", NAMESPACE,
                "--name", "switchover")
            await operator_support.wait_for(
                lambda: pool.fetchval("SELECT count(*) >= $1 FROM test_done",
                                      SWITCH_TASKS // 4), 300, "a quarter done", logs)
        finally:
            await pool.close()
        before = time.monotonic()
        # The switchover: stop the primary, promote the standby, move the Service.
        node.kubectl("scale", "-n", NAMESPACE, f"statefulset/{RELEASE}-postgresql",
                     "--replicas=0")
        node.kubectl("wait", "-n", NAMESPACE, "--for=delete", f"pod/{primary}",
                     "--timeout=120s", timeout=140)
        node.kubectl("exec", "-n", NAMESPACE, standby, "--", "sh", "-c",
                     'pg_ctl -D "$PGDATA" -w promote')
        node.kubectl("label", "-n", NAMESPACE, f"pod/{standby}", "citerun.dev/switchover=primary")
        node.kubectl("patch", "-n", NAMESPACE, f"service/{service}", "--type=json", "-p",
                     json.dumps([{"op": "replace", "path": "/spec/selector",
                                  "value": {"citerun.dev/switchover": "primary"}}]))
        switched_s = time.monotonic() - before

        pool = await operator_support.wait_for(_try_pool(url), 120, "the promoted standby",
                                               logs)
        try:
            assert await pool.fetchval("SELECT pg_is_in_recovery()") is False
            await operator_support.wait_for(
                lambda: pool.fetchval("SELECT count(*) = $2 FROM tasks WHERE id = ANY($1) "
                                      "AND state = 'succeeded'", ids, SWITCH_TASKS),
                600, "every task after the switchover", logs)
            done_s = time.monotonic() - before
            await operator_support.wait_for(lambda: node.kubectl(
                "get", "crun", "-n", NAMESPACE, "switchover", "-o",
                "jsonpath={.status.phase}").strip() == "Succeeded", 300,
                "the CitationRun across the switchover", logs)
            done = await pool.fetchval("SELECT count(*) FROM test_done WHERE task_id = ANY($1)",
                                       ids)
            distinct = await pool.fetchval(
                "SELECT count(DISTINCT task_id) FROM test_done WHERE task_id = ANY($1)", ids)
            stale = await pool.fetchval(
                "SELECT count(*) FROM test_done d JOIN tasks t ON t.id = d.task_id "
                "WHERE t.id = ANY($1) AND d.attempt <> t.attempt", ids)
            rerun = await pool.fetchval(
                "SELECT count(*) FROM tasks WHERE id = ANY($1) AND attempt > 1", ids)
        finally:
            await pool.close()
    assert done == distinct == SWITCH_TASKS, (done, distinct)  # nothing lost, none twice
    assert stale == 0
    support.figure("switchover: primary stopped -> standby promoted, Service moved",
                   switched_s, "s", "StatefulSet scaled to 0, pg_ctl promote, selector patched")
    support.figure("switchover: all tasks done after it", done_s, "s",
                   f"{SWITCH_TASKS} tasks of 1 s, {rerun} run again after the switch")


def _try_pool(url: str) -> Any:
    """A check for operator_support.wait_for: a pool once the database answers."""
    from citerun.core import db

    async def attempt() -> asyncpg.Pool | None:
        try:
            return await _pool(url)
        except db.UNAVAILABLE:  # the Service has no ready endpoint yet: again
            return None
    return attempt
