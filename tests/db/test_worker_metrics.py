"""The worker's Prometheus endpoint reports what the issue names."""

from __future__ import annotations

import asyncio
import socket
import time

import asyncpg
import httpx

from citerun.core import queue
from citerun.core.settings import Settings
from citerun.pipeline.settings import PipelineSettings
from citerun.worker import runtime
from tests.support import tasks as test_tasks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _value(text: str, prefix: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(prefix))


async def test_metrics_endpoint_reports_depth_latency_and_pickups(
        pool: asyncpg.Pool, database_url: str) -> None:
    await pool.execute(test_tasks.SCHEMA)
    port = _free_port()
    settings = Settings(database_url=database_url, worker={
        "id": "metrics-worker", "metrics_port": port, "poll_s": 1})
    worker = runtime.Worker(database_url, test_tasks.registry, settings, PipelineSettings(), {})
    running = asyncio.create_task(worker.run(install_signal_handlers=False))
    try:
        for _ in range(100):
            if await pool.fetchval("SELECT count(*) FROM workers WHERE id = 'metrics-worker'"):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # let the listener subscribe
        await queue.enqueue(pool, [queue.NewTask("work") for _ in range(5)])
        await queue.enqueue(pool, [queue.NewTask("boom", max_attempts=1)])
        await queue.enqueue(pool, [queue.NewTask("work", delay_s=3600)])
        for _ in range(100):
            if await pool.fetchval("SELECT count(*) FROM test_done") == 5:
                break
            await asyncio.sleep(0.05)
        async with httpx.AsyncClient() as client:
            text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    finally:
        worker.stop()
        await asyncio.wait_for(running, 30)
    # Depth counts open tasks only (finished rows are never read): the delayed one.
    assert 'citerun_queue_depth{kind="work",state="queued"} 1.0' in text
    assert 'citerun_queue_depth{kind="work",state="running"} 0.0' in text
    assert 'state="succeeded"' not in text
    assert _value(text, 'citerun_claim_latency_seconds_count{kind="work"}') == 5
    assert _value(text, 'citerun_pickups_total{source="notify"}') >= 1
    assert _value(text, 'citerun_task_duration_seconds_count{kind="boom",outcome="failed"}') == 1
    assert "citerun_lease_losses_total" in text and "citerun_requeues_total" in text
    assert await pool.fetchval("SELECT state FROM workers WHERE id = 'metrics-worker'") == "stopped"


async def test_workers_row_shows_busy_while_holding_and_idle_right_after(
        pool: asyncpg.Pool, database_url: str) -> None:
    await pool.execute(test_tasks.SCHEMA)
    settings = Settings(database_url=database_url, worker={"id": "busy-worker"},
                        queue={"heartbeat_s": 0.2, "lease_s": 5})
    worker = runtime.Worker(database_url, test_tasks.registry, settings, PipelineSettings(), {})
    running = asyncio.create_task(worker.run(install_signal_handlers=False))
    busy_seen: list[int] = []
    try:
        await asyncio.sleep(0.5)
        await queue.enqueue(pool, [queue.NewTask("work", {"seconds": 1.5})])
        for _ in range(100):
            busy_seen.append(await pool.fetchval(
                "SELECT busy FROM workers WHERE id = 'busy-worker'"))
            if await pool.fetchval("SELECT count(*) FROM test_done") == 1:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        # No sweep or poll happens within this second (poll_s is 60): the transition
        # to idle itself wrote busy = 0.
        assert await pool.fetchval("SELECT busy FROM workers WHERE id = 'busy-worker'") == 0
    finally:
        worker.stop()
        await asyncio.wait_for(running, 30)
    assert 1 in busy_seen


def test_json_logs_carry_the_structured_fields() -> None:
    """``--log-format json`` (CITERUN_LOG_FORMAT=json on a cluster): one object per line,
    with the ``extra`` fields a log pipeline filters on."""
    import json
    import subprocess
    import sys

    code = ("import logging; from citerun.cli import main as cli; cli.configure_logging('INFO', 'json'); "
            "logging.getLogger('citerun.worker.runtime').info('claimed', "
            "extra={'action': 'claim', 'task_id': 7})")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         timeout=60)
    record = json.loads(out.stderr.strip().splitlines()[-1])
    assert record["message"] == "claimed" and record["action"] == "claim"
    assert record["task_id"] == 7 and record["level"] == "INFO"
    assert record["logger"] == "citerun.worker.runtime" and "time" in record


async def test_healthz_never_reads_the_database_and_depth_is_read_once_per_interval(
        pool: asyncpg.Pool, database_url: str) -> None:
    port = _free_port()
    settings = Settings(database_url=database_url, worker={
        "id": "probe-worker", "metrics_port": port, "depth_interval_s": 60},
        queue={"lease_s": 2, "heartbeat_s": 0.5})
    worker = runtime.Worker(database_url, test_tasks.registry, settings, PipelineSettings(), {})
    reads: list[float] = []
    read_depth = worker._read_depth

    async def counted() -> dict[tuple[str, str], int]:
        reads.append(asyncio.get_running_loop().time())
        return await read_depth()

    worker._read_depth = counted  # type: ignore[method-assign]
    running = asyncio.create_task(worker.run(install_signal_handlers=False))
    try:
        for _ in range(100):
            if await pool.fetchval("SELECT count(*) FROM workers WHERE id = 'probe-worker'"):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        async with httpx.AsyncClient() as client:
            for _ in range(10):
                r = await client.get(f"http://127.0.0.1:{port}/healthz")
                assert (r.status_code, r.text) == (200, "ok\n")
            assert reads == []
            for _ in range(3):
                assert "citerun_queue_depth" in (
                    await client.get(f"http://127.0.0.1:{port}/metrics")).text
            assert len(reads) == 1
        # An event loop stuck longer than a lease fails the probe (served from a thread).
        loop = asyncio.get_running_loop()
        loop.call_soon(time.sleep, 5)
        statuses = await asyncio.to_thread(_poll, f"http://127.0.0.1:{port}/healthz", 4.5)
        assert 503 in statuses, statuses
        async with httpx.AsyncClient() as client:
            for _ in range(30):
                if (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("/healthz did not recover after the stall")
    finally:
        worker.stop()
        await asyncio.wait_for(running, 30)


def _poll(url: str, for_s: float) -> list[int]:
    """Status codes of /healthz every 0.2 s for ``for_s`` seconds (from a thread)."""
    end = time.monotonic() + for_s
    statuses = []
    while time.monotonic() < end:
        statuses.append(httpx.get(url, timeout=5).status_code)
        time.sleep(0.2)
    return statuses
