"""Deadline week: one department submits 40 large theses at once, another department one.

Usage (from the repository root)::

    python -m bench.queue.deadline_week                # 40 + 1 runs, 4 workers x 16
    python -m bench.queue.deadline_week --write-docs   # also replace its docs/benchmarks.md section

Every run has the shape of ``bench.pipeline.large_thesis``'s thesis as the pipeline
schedules it (``bench.queue.deadline_tasks``: 31 parse tasks, extract, 80 judges, finalize;
113 tasks), served by real ``citerun worker`` processes on one embedded Postgres, a fresh
database per scenario:

* ``alone``: the lone thesis of tenant ``lone`` on the idle workers;
* ``fifo``: tenant ``dept``'s 40 runs submitted first, then ``lone``'s, claimed in
  priority-then-id order (the claim before fair share: a trigger zeroes every task's
  fair-share key, so the claim's order is exactly the old one);
* ``fair``: the same submission with the fair-share claim;
* ``fair+cap``: the same with a cap on ``dept`` of 3/4 of all worker slots;
* ``alone again``: ``alone`` once more at the end; the faster of the two is the yardstick.

Reported: the lone thesis's time (submission to its finalize), the makespan of all 41,
tasks/s over the makespan, and the statements the database ran per task
(pg_stat_statements of the scenario's database, minus the bench's own polling).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import sys
import time
import uuid

import asyncpg
from rich.console import Console
from rich.table import Table

from bench import machine as bench_machine
from bench.common import load_average, postgres, was_busy
from bench.queue import deadline_tasks
from bench.queue.processes import Processes, admin, stop_workers
from citerun.core import db, queue
from citerun.local import embedded

console = Console()
SECTION = "## Deadline week: fair share across runs and tenants"

# The claim order before fair share, for the fifo scenario only.
FIFO_TRIGGER = """
CREATE FUNCTION bench_fifo() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.fair_key := 0; RETURN NEW; END $$;
CREATE TRIGGER bench_fifo BEFORE INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION bench_fifo();
"""


@dataclasses.dataclass
class Scenario:
    name: str
    busy_runs: int
    fifo: bool = False
    cap: int | None = None


@dataclasses.dataclass
class Outcome:
    name: str
    lone_s: float
    makespan_s: float
    tasks: int
    statements: int

    @property
    def rate(self) -> float:
        return self.tasks / self.makespan_s

    @property
    def per_task(self) -> float:
        return self.statements / self.tasks


async def _submit(conn: asyncpg.Connection, tenant: str, args: argparse.Namespace) -> uuid.UUID:
    run_id = uuid.uuid4()
    await conn.execute("INSERT INTO runs (id, name, tenant, spec) VALUES ($1, 'r', $2, '{}')",
                       run_id, tenant)
    await conn.execute(
        "INSERT INTO bench_runs (run_id, documents, citations, judge_s, extract_s, finalize_s)"
        " VALUES ($1, $2, $3, $4, $5, $6)", run_id, args.sources + 1, args.citations,
        args.judge_s, args.extract_s, args.finalize_s)
    seconds = [args.thesis_parse_s] + [args.source_parse_s] * args.sources
    await queue.enqueue(conn, [queue.NewTask("parse", {"run_id": str(run_id), "seconds": s},
                                             run_id=run_id) for s in seconds])
    return run_id


async def scenario(server: embedded.EmbeddedPostgres, procs: Processes, sc: Scenario,
                   args: argparse.Namespace) -> Outcome:
    name = "dw_" + sc.name.replace("+", "_").replace(" ", "_")
    await admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    await admin(server, f"CREATE DATABASE {name}")
    url = server.url(name)
    await db.migrate(url)
    conn = await db.connect(url)
    try:
        await conn.execute(deadline_tasks.SCHEMA)
        if sc.fifo:
            await conn.execute(FIFO_TRIGGER)
        env = {"CITERUN_WORKER__CONCURRENCY": str(args.concurrency)}
        if sc.cap is not None:
            env["CITERUN_QUEUE__TENANT_CAPS"] = json.dumps({"dept": sc.cap})
        for i in range(args.workers):
            wid = f"{sc.name.replace(' ', '-')}-{i}"
            procs.spawn(wid, [sys.executable, "-m", "citerun", "--log-level", "WARNING",
                              "worker", "--tasks", "bench.queue.deadline_tasks:registry"],
                        {**env, "CITERUN_DATABASE_URL": url, "CITERUN_WORKER__ID": wid})
        deadline = time.monotonic() + 120
        while await conn.fetchval("SELECT count(*) FROM workers") < args.workers:
            procs.check()
            if time.monotonic() > deadline:
                raise TimeoutError("workers did not register")
            await asyncio.sleep(0.2)
        await asyncio.sleep(2)  # LISTEN subscribed, start-up statements done
        await admin(server, "SELECT pg_stat_statements_reset()")  # from `postgres`
        own = 0
        for _ in range(sc.busy_runs):
            await _submit(conn, "dept", args)
        lone = await _submit(conn, "lone", args)
        own += 3 * (sc.busy_runs + 1)
        total = sc.busy_runs + 1
        deadline = time.monotonic() + args.timeout
        while True:
            own += 1
            if await conn.fetchval(
                    "SELECT count(*) FROM bench_runs WHERE finished_at IS NOT NULL") == total:
                break
            procs.check()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{sc.name}: not finished after {args.timeout} s")
            await asyncio.sleep(0.1)
        statements = int((await admin(
            server, "SELECT sum(calls) FROM pg_stat_statements s "
            f"JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '{name}'"))[0][0]) - own
        row = await conn.fetchrow(
            "SELECT extract(epoch FROM max(finished_at) - min(submitted_at)) AS makespan, "
            "extract(epoch FROM max(finished_at) FILTER (WHERE run_id = $1) "
            "  - min(submitted_at) FILTER (WHERE run_id = $1)) AS lone FROM bench_runs", lone)
        tasks = int(await conn.fetchval("SELECT count(*) FROM tasks"))
        failed = int(await conn.fetchval("SELECT count(*) FROM tasks WHERE state <> 'succeeded'"))
        if failed:
            raise RuntimeError(f"{sc.name}: {failed} tasks did not succeed")
    finally:
        await conn.close()
        await stop_workers(procs)
    return Outcome(sc.name, float(row["lone"]), float(row["makespan"]), tasks, statements)


def report(outcomes: dict[str, Outcome], args: argparse.Namespace, info: dict[str, str],
           load_before: str, load_after: str) -> str:
    # The lone thesis alone, run first and last: the faster of the two is the yardstick.
    alone = min(outcomes["alone"], outcomes["alone again"], key=lambda o: o.lone_s)
    fifo = outcomes["fifo"]
    head = ["Scenario", "lone thesis (s)", "vs alone", "makespan (s)", "vs FIFO", "tasks",
            "tasks/s", "statements/task"]
    body = []
    for o in outcomes.values():
        body.append([o.name, f"{o.lone_s:.2f}", f"{o.lone_s / alone.lone_s:.2f}x",
                     f"{o.makespan_s:.2f}" if o.name in ("fifo", "fair", "fair+cap") else "-",
                     f"{o.makespan_s / fifo.makespan_s:.2f}x"
                     if o.name in ("fifo", "fair", "fair+cap") else "-",
                     str(o.tasks), f"{o.rate:.0f}", f"{o.per_task:.1f}"])
    t = Table(title="Deadline week")
    for h in head:
        t.add_column(h)
    for row in body:
        t.add_row(*row)
    console.print(t)
    fair = outcomes["fair"]
    checks = [
        ("lone thesis within 1.5x of alone (fair)", fair.lone_s <= 1.5 * alone.lone_s),
        ("makespan within 1.1x of FIFO (fair)", fair.makespan_s <= 1.1 * fifo.makespan_s),
    ]
    for text, ok in checks:
        console.print(f"{text}: {'yes' if ok else 'NO'}")
    command = " ".join(["python -m bench.queue.deadline_week",
                        *[a for a in sys.argv[1:] if a != "--write-docs"]])
    slots = args.workers * args.concurrency
    lines = [SECTION, "", f"Measured {dt.date.today().isoformat()} with "
             "`python -m bench.queue.deadline_week`:", "", "```", command, "```", "",
             "| Machine | |", "|---|---|", *[f"| {k} | {v} |" for k, v in info.items()], "",
             "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1),
             *["| " + " | ".join(r) + " |" for r in body], "",
             "| Target (issue 15) | Met |", "|---|---|",
             *[f"| {text} | {'yes' if ok else 'NO'} |" for text, ok in checks], "",
             "Notes:", "",
             f"- {args.workers} `citerun worker` processes x concurrency {args.concurrency} "
             f"= {slots} slots. A run: {args.sources + 1} parse tasks (thesis "
             f"{args.thesis_parse_s:g} s, each source {args.source_parse_s:g} s), extract "
             f"{args.extract_s:g} s, {args.citations} judges of {args.judge_s:g} s, finalize "
             f"{args.finalize_s:g} s: the stage graph of the pipeline (src/citerun/worker/tasks.py) with "
             "sleeps for the work, so the comparison is of the queue's scheduling alone.",
             "- Submission: tenant `dept`'s 40 runs one after another, then tenant `lone`'s "
             "run (its worst place under FIFO). `fifo` zeroes the fair-share key by a "
             "trigger, which leaves the claim ordering by priority and id (the claim of "
             f"migration 0001). `fair+cap`: `dept` capped at {args.workers * args.concurrency * 3 // 4} "
             "running tasks (CITERUN_QUEUE__TENANT_CAPS).",
             "- `fair+cap` costs makespan beyond the cap's own share (at most 64/48 of "
             "FIFO's once `lone` is done): with a cap, claims take turns on one advisory "
             "lock, and each claim is a plpgsql call of a few statements, so on this loaded "
             "machine the claims, not the slots, become the bottleneck. Set caps where a "
             "tenant must be bounded; fair share alone already serves the lone thesis.",
             "- statements/task: every statement the scenario's database ran from the "
             "submission to the end (pg_stat_statements, utility statements included), "
             "minus the bench's own, divided by the tasks.",
             f"- Load average (1/5/15 min) before: {load_before}; after: {load_after}.",
             ]
    if was_busy(load_before, load_after):
        lines.append("- The machine was busy with other work during this run: absolute times "
                     "are noisy; the ratios within one run are the numbers to compare.")
    return "\n".join(lines) + "\n"


async def main_async(args: argparse.Namespace, server: embedded.EmbeddedPostgres,
                     procs: Processes) -> str:
    await admin(server, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    await asyncio.to_thread(server.restart)
    await admin(server, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    load_before = load_average()
    slots = args.workers * args.concurrency
    outcomes: dict[str, Outcome] = {}
    for sc in (Scenario("alone", 0), Scenario("fifo", args.busy, fifo=True),
               Scenario("fair", args.busy), Scenario("fair+cap", args.busy, cap=slots * 3 // 4),
               Scenario("alone again", 0)):
        console.print(f"[bold]{sc.name}[/] ...")
        outcomes[sc.name] = await scenario(server, procs, sc, args)
        o = outcomes[sc.name]
        console.print(f"  lone {o.lone_s:.2f} s, makespan {o.makespan_s:.2f} s, "
                      f"{o.per_task:.1f} statements/task")
    version = (await admin(server, "SHOW server_version"))[0][0]
    info = {**bench_machine.basics(), "PostgreSQL": version}
    load_after = load_average()
    return report(outcomes, args, info, load_before, load_after)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--busy", type=int, default=40, help="runs of the busy tenant")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--sources", type=int, default=30)
    p.add_argument("--citations", type=int, default=80)
    p.add_argument("--thesis-parse-s", type=float, default=1.0)
    p.add_argument("--source-parse-s", type=float, default=0.15)
    p.add_argument("--extract-s", type=float, default=0.3)
    p.add_argument("--judge-s", type=float, default=0.2)
    p.add_argument("--finalize-s", type=float, default=0.2)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args()
    with postgres("citerun-bench-deadline-", keep_on_error=True) as (tmp, server):
        (tmp / "logs").mkdir()
        procs = Processes(tmp / "logs")
        try:
            text = asyncio.run(main_async(args, server, procs))
        except Exception:
            console.print(f"[red]failed; worker logs are in {tmp / 'logs'}[/]")
            raise
        finally:
            procs.stop_all(grace_s=10)
    bench_machine.write_section_if(args.write_docs, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
