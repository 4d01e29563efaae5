"""Issue 27, Done-when: the thesis with 3,000 references and 6,000 markers ends within
60 s with a clear result, the workers healthy throughout and another tenant's run
finishing meanwhile.

Before the matching was indexed and sandboxed, this run took both workers' CPU for ten
minutes, every attempt of ``extract_citations`` was lost to "stopped heartbeating" and the
run failed. Here two real ``citerun worker`` processes (concurrency 2, a 5 s lease renewed
every second, so a blocked event loop shows as an expired lease) run it against the real
Postgres, with 20 of its cited works as sources, while tenant ``other`` runs the demo.
"""

from __future__ import annotations

import asyncio
import pathlib
import time
import uuid
from typing import Any

import asyncpg
import pytest

from citerun.core import flow, runs
from citerun.core.settings import QueueSettings
from tests.support import hostile_theses

#: The queue settings the runs here are created with (the defaults).
QUEUE = QueueSettings()

pytestmark = pytest.mark.chaos

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
WORKER_LIMIT_MIB = 2048  # the chart's worker memory limit (values.yaml worker.resources)


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM) in MiB."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


async def start_run(pool: asyncpg.Pool, name: str, tenant: str, thesis: tuple[str, bytes],
                 sources: list[tuple[str, bytes]]) -> uuid.UUID:
    staged = await runs.stage_document(pool, thesis[1], thesis[0], tenant=tenant)
    staged_sources = [await runs.stage_document(pool, data, filename, tenant=tenant)
                      for filename, data in sources]
    run_id = uuid.uuid4()
    await flow.create(pool, runs.RunRequest(id=run_id, name=name, thesis=staged,
                                            sources=tuple(staged_sources), tenant=tenant),
                      settings=QUEUE)
    return run_id


async def test_the_3000_reference_thesis_ends_within_60_s_and_others_finish(
        pool: asyncpg.Pool, spawn_worker: Any) -> None:
    thesis = hostile_theses.big_bibliography()
    cited = [hostile_theses.cited_source(n) for n in hostile_theses.cited_numbers(20)]
    demo_sources = [(p.name, p.read_bytes()) for p in sorted((EXAMPLES / "sources").glob("*.pdf"))]
    env = {"CITERUN_WORKER__CONCURRENCY": "2", "CITERUN_QUEUE__LEASE_S": "5",
           "CITERUN_QUEUE__HEARTBEAT_S": "1"}
    workers = [spawn_worker(f"w-big-{i}", env=env, tasks="citerun.worker.tasks:registry")
               for i in range(2)]
    started = time.monotonic()
    big = await start_run(pool, "big", "department-a", ("hostile-thesis.pdf", thesis), cited)
    other = await start_run(pool, "demo", "department-b",
                         ("thesis.pdf", (EXAMPLES / "thesis.pdf").read_bytes()), demo_sources)
    ended: dict[uuid.UUID, float] = {}
    while len(ended) < 2 and time.monotonic() - started < 180:
        for run_id in (big, other):
            row = await runs.get(pool, run_id)
            if run_id not in ended and row["state"] not in ("pending", "running"):
                ended[run_id] = time.monotonic() - started
        for w in workers:
            assert w.proc.poll() is None, w.log()[-3000:]
        await asyncio.sleep(0.2)
    logs = "\n".join(w.log()[-2000:] for w in workers)
    assert len(ended) == 2, f"runs still open after 180 s: {ended}\n{logs}"
    rss = [peak_rss_mib(w.proc.pid) for w in workers]
    print({"big_s": round(ended[big], 1), "demo_s": round(ended[other], 1),
           "worker_peak_rss_mib": [round(r) for r in rss]})
    stages = await pool.fetch(
        "SELECT kind, count(*) AS n, round(extract(epoch FROM max(finished_at) - "
        "min(created_at))::numeric, 1) AS span_s FROM tasks GROUP BY kind ORDER BY kind")
    print({r["kind"]: (r["n"], float(r["span_s"] or 0)) for r in stages})

    row = await runs.get(pool, big)
    assert row["state"] == "succeeded", (dict(row), logs)
    assert ended[big] < 60, ended
    counts = {r["method"]: r["n"] for r in await pool.fetch(
        "SELECT coalesce(match_method, 'none') AS method, count(*) AS n FROM citations "
        "WHERE run_id = $1 GROUP BY 1", big)}
    assert sum(counts.values()) >= 5500, counts  # nearly every marker a citation
    judged = await pool.fetchval(
        "SELECT count(*) FROM citations c JOIN verdicts v ON v.citation_id = c.id "
        "WHERE c.run_id = $1 AND c.digest IS NOT NULL", big)
    assert judged >= 20, counts  # each of the 20 sources cited about twice, all judged
    demo = await runs.get(pool, other)
    assert demo["state"] == "succeeded", dict(demo)
    # Heartbeats kept throughout: no lease expired, no task bounced to a second attempt.
    retried = await pool.fetch("SELECT kind, attempt, last_error FROM tasks WHERE attempt <> 1")
    assert not retried, [dict(r) for r in retried]
    assert max(rss) < WORKER_LIMIT_MIB, rss
