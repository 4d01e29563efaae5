"""Issue 48, finding 2 (Medium): uploads were held about four times in memory, with no
bound across users. Six users uploading 110 MB at once took ``citerun serve`` from 177 to
1,206 MiB, past the chart's 1 GiB limit for the web pod: in a deadline rush the replica
is OOM-killed for everyone.

A real ``citerun serve`` on loopback (the real Postgres, the local backend, its default
settings), six users behind the trusted proxy's header each uploading a thesis and a
110 MB source at once, while a loop polls ``/healthz``. The server's peak RSS (VmHWM from
/proc) must stay within its RSS before the uploads plus the service-wide budget for
uploads in memory (``web.upload_memory_bytes``) and a fixed allowance for the requests
being read (their chunks, their spool buffers, aiohttp's); every upload is taken (202):
over the budget an upload waits for its turn, it is not refused.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import time
from pathlib import Path

import aiohttp
import asyncpg

from citerun.web.settings import WebSettings
from tests.conftest import citerun_command
from tests.e2e.test_web_service import users
from tests.support import serve_process
from tests.support.web_user import THESIS

MiB = 1024 * 1024
SOURCE_BYTES = 110_000_000
USERS = 6
#: What the six requests being read may hold besides the budget: per request its read
#: chunk, its spool's buffer and aiohttp's stream buffers, and the interpreter's slack.
ALLOWANCE = 96 * MiB


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _source(path: Path, seed: int) -> Path:
    """A 110 MB "PDF" that does not compress (its type is checked by its first bytes)."""
    with open(path, "wb") as out:
        out.write(b"%PDF-1.7\n%" + seed.to_bytes(4, "big") + b"\n")
        block = os.urandom(4 * MiB)
        left = SOURCE_BYTES - out.tell()
        while left > 0:
            out.write(block[:left])
            left -= len(block[:left])
    return path


async def _upload(user: object, source: Path) -> tuple[int, str]:
    http: aiohttp.ClientSession = user.http  # type: ignore[attr-defined]
    form = aiohttp.FormData()
    form.add_field("thesis", THESIS.read_bytes(), filename=THESIS.name,
                   content_type="application/pdf")
    with open(source, "rb") as stream:
        form.add_field("sources", stream, filename="big.pdf", content_type="application/pdf")
        async with http.post("/api/runs", data=form, headers=user.post_headers(),  # type: ignore[attr-defined]
                             timeout=aiohttp.ClientTimeout(total=600)) as response:
            return response.status, await response.text()


async def _poll(base: str, stop: asyncio.Event, latencies: list[float]) -> None:
    async with aiohttp.ClientSession(base) as http:
        while not stop.is_set():
            started = time.perf_counter()
            async with http.get("/healthz") as response:
                assert response.status == 200
                await response.read()
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.02)


async def test_six_concurrent_110_mb_uploads_stay_within_the_upload_memory_budget(
        database_url: str, tmp_path: Path) -> None:
    sources = [_source(tmp_path / f"big{i}.pdf", i) for i in range(USERS)]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")}
    budget = WebSettings().upload_memory_bytes
    base = f"http://127.0.0.1:{port}"
    with serve_process.running(citerun_command(), port, database_url, env,
                               tmp_path / "serve.log") as proc:
        async with users(base, *(f"student{i}" for i in range(USERS + 1))) as (warm, *six):
            status, body = await warm.upload(THESIS, [THESIS])  # every route and pool warm
            assert status == 202, body
            before = _kib(proc.pid, "VmRSS")
            stop = asyncio.Event()
            latencies: list[float] = []
            poller = asyncio.create_task(_poll(base, stop, latencies))
            started = time.monotonic()
            answers = await asyncio.gather(*(_upload(u, s) for u, s in zip(six, sources)))
            elapsed = time.monotonic() - started
            stop.set()
            await poller
            peak = _kib(proc.pid, "VmHWM")
    pool = await asyncpg.connect(database_url)
    try:
        stored = await pool.fetchval("SELECT count(*) FROM documents WHERE size_bytes = $1",
                                     SOURCE_BYTES)
    finally:
        await pool.close()
    p99 = statistics.quantiles(latencies, n=100, method="inclusive")[98]
    bound = before + budget + ALLOWANCE
    print({"rss_before_mib": before // MiB, "peak_rss_mib": peak // MiB,
           "bound_mib": bound // MiB, "budget_mib": budget // MiB,
           "seconds": round(elapsed, 1), "statuses": sorted(s for s, _ in answers),
           "healthz_answers": len(latencies), "healthz_p99_ms": round(p99, 1),
           "healthz_max_ms": round(max(latencies), 1)})
    assert all(s == 202 for s, _ in answers), answers
    assert stored == USERS
    assert peak <= bound, (peak // MiB, bound // MiB)
    assert peak < 1024 * MiB  # the chart's limit for the web pod
