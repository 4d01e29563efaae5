"""Issue 48 (Low): reading a large report for a download ran CPU-bound on the web's event
loop: the stored JSON decoded, read back into the report's model and written as CSV
(about 3 s of CPU for 20,000 citations), in the handler, so 16 concurrent CSV downloads
held ``/healthz`` 3.8 s and every other user waited.

The real service on loopback, in this process and event loop (a handler that computes on
the loop delays every answer, the test's own clients' too), and the real Postgres: Alice's
run gets a report of 20,000 citations (23 MB of JSON) and she downloads its CSV four times
at once, its JSON and its HTML twice and opens its page, while ``/healthz`` is asked every
20 ms. Every download is whole; ``/healthz`` answers throughout."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time

import aiohttp
import asyncpg

from citerun.pipeline import judge
from tests.e2e.test_web_service import served, users
from tests.unit.test_report_meaning import EMBEDDED_CONTRADICTED, _build, _row

CITATIONS = 20_000
#: /healthz's slowest answer while the downloads go on (before: 6.9 s; after: 0.4 s here).
HEALTHZ_MAX_S = 1.0


async def test_healthz_answers_while_big_reports_are_downloaded(pool: asyncpg.Pool) -> None:
    built, _ = _build(*(_row(n, judge.Verdict.CONTRADICTED, EMBEDDED_CONTRADICTED,
                             claim=f"Exercise lowers anxiety in group {n} by a margin the "
                             "authors call large.")
                        for n in range(1, CITATIONS + 1)))
    stored = built.model_dump(mode="json")
    html = ("<!doctype html><html><head><style>p{margin:0}</style></head><body>"
            + "".join(f"<p>citation {n}: Exercise lowers anxiety.</p>"
                      for n in range(CITATIONS * 10)) + "</body></html>")
    async with served(pool) as base, users(base, "alice") as (alice,):
        status, body = await alice.upload()
        assert status == 202, body
        run_id = body["runId"]
        await pool.execute("INSERT INTO reports (run_id, json, html) VALUES ($1, $2, $3)",
                           run_id, stored, html)
        await pool.execute("UPDATE runs SET state = 'succeeded' WHERE id = $1", run_id)

        async def download(path: str) -> tuple[str, bytes]:
            async with alice.http.get(path) as response:
                assert response.status == 200, (path, await response.text())
                return path, await response.read()

        latencies: list[float] = []

        async def healthz(stop: asyncio.Event) -> None:
            async with aiohttp.ClientSession(base) as http:
                while not stop.is_set():
                    started = time.monotonic()
                    async with http.get("/healthz") as response:
                        assert response.status == 200
                        await response.read()
                    latencies.append(time.monotonic() - started)
                    await asyncio.sleep(0.02)

        api = f"/api/runs/{run_id}"
        stop = asyncio.Event()
        probe = asyncio.create_task(healthz(stop))
        await asyncio.sleep(0.3)
        started = time.monotonic()
        paths = [*[f"{api}/citations.csv"] * 4, *[f"{api}/report.json?download=1"] * 2,
                 *[f"{api}/report.html?download=1"] * 2, f"/runs/{run_id}"]
        got = await asyncio.gather(*(download(path) for path in paths))
        took = time.monotonic() - started
        stop.set()
        await probe

    for path, data in got:
        if path.endswith(".csv"):
            rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
            assert len(rows) == CITATIONS
        elif ".json" in path:
            assert len(json.loads(data)["citations"]) == CITATIONS
        elif ".html" in path:
            assert data.decode() == html
        else:
            assert b"citation 199999: Exercise lowers anxiety." in data
    latencies.sort()
    print(f"downloads {took:.1f} s; /healthz {len(latencies)} answers, "
          f"p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
          f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.0f} ms, "
          f"max {latencies[-1] * 1000:.0f} ms")
    assert len(latencies) >= 10
    assert latencies[-1] < HEALTHZ_MAX_S, latencies[-5:]
