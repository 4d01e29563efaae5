"""The worker's Prometheus endpoint reports what the issue names."""

from __future__ import annotations

import asyncio
import socket

import asyncpg
import httpx

from citerun import queue
from citerun.settings import Settings
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
    worker = runtime.Worker(database_url, test_tasks.registry, settings)
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
    assert 'citerun_queue_depth{kind="work",state="succeeded"} 5.0' in text
    assert 'citerun_queue_depth{kind="work",state="queued"} 1.0' in text
    assert 'citerun_queue_depth{kind="boom",state="failed"} 1.0' in text
    assert _value(text, 'citerun_claim_latency_seconds_count{kind="work"}') == 5
    assert _value(text, 'citerun_pickups_total{source="notify"}') >= 1
    assert _value(text, 'citerun_task_duration_seconds_count{kind="boom",outcome="failed"}') == 1
    assert "citerun_lease_losses_total" in text and "citerun_requeues_total" in text
    assert await pool.fetchval("SELECT state FROM workers WHERE id = 'metrics-worker'") == "stopped"
