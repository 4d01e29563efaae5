"""citerun's queue against pgqueuer and procrastinate, side by side, on one embedded Postgres.

Usage (from the repository root)::

    python -m bench.queue                 # full run (about 4 minutes)
    python -m bench.queue --quick         # smaller sizes, under 2 minutes
    python -m bench.queue --runs 3        # three runs in a row, one table each
    python -m bench.queue --write-docs    # also replace the section in docs/benchmarks.md

All three queues run as real worker processes (``python -m citerun worker``, pgqueuer's
supervisor, ``App.run_worker_async`` of procrastinate) with the same number of processes
and the same per-worker concurrency, each against its own database on the same server. Every phase uses fresh
databases, so no phase sees the rows of another. Three things are measured:

1. throughput: N no-op tasks are enqueued before any worker starts; the rate is N over
   the span from the first claim to the last completion, read from the queues' own
   timestamps (also reported: wall time from spawning the workers until a poll sees all
   done, which includes start-up);
2. enqueue-to-start latency with idle workers: single tasks enqueued one at a time at a
   fixed rate; a handler inserts ``clock_timestamp()`` next to the enqueue time the
   queue recorded, so both ends are database timestamps;
3. what one idle worker costs the database: transactions per second from
   ``pg_stat_database`` (read from the ``postgres`` database, so the reader is not
   counted) and statements per second from ``pg_stat_statements``, with both idle
   workers measured in the same window.

Everything started here (Postgres, workers) is stopped in ``finally``, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

import asyncpg

from bench.common import REPO, load_average, postgres
from bench import machine as bench_machine
from bench.queue.phases import Latency, Throughput, measure_idle, measure_latency, measure_throughput
from bench.queue.processes import Processes, admin
from bench.queue.report import OLD_SECTIONS, SECTION, Results, console, machine, markdown, print_report
from bench.queue.systems import SYSTEMS, System
from citerun.local import embedded


async def run(args: argparse.Namespace, server: embedded.EmbeddedPostgres,
              procs: Processes) -> Results:
    load_before = load_average()
    version = (await admin(server, "SHOW server_version"))[0][0]
    statements = await enable_pg_stat_statements(server, args)
    info = machine(version)
    systems: list[System] = [SYSTEMS[name](server, procs, args.concurrency)
                             for name in args.systems]
    console.print(f"load average before: {load_before}", highlight=False)

    throughput: dict[str, Throughput] = {}
    for s in systems:
        console.print(f"[bold]{s.name}[/]: throughput, {args.tasks:,} tasks ...")
        throughput[s.name] = await measure_throughput(s, args.tasks, args.workers)
        console.print(f"  {throughput[s.name].rate:,.0f} tasks/s")
    latency: dict[str, Latency] = {}
    for s in systems:
        console.print(f"[bold]{s.name}[/]: latency, {args.latency_tasks} tasks at "
                      f"{args.rate:g}/s ...")
        latency[s.name] = await measure_latency(s, args.latency_tasks, args.rate, args.workers)
        console.print(f"  p50 {latency[s.name].p50_ms:.1f} ms")
    console.print(f"[bold]idle[/]: one worker each, {args.idle_seconds:g} s ...")
    idle = await measure_idle(systems, args.idle_seconds, args.settle_seconds, statements)
    return Results(info, command(args), args, [s.config() for s in systems], throughput,
                   latency, idle, load_before, load_average())


async def enable_pg_stat_statements(server: embedded.EmbeddedPostgres,
                                    args: argparse.Namespace) -> bool:
    if args.no_statements:
        return False
    try:
        preloaded = (await admin(server, "SHOW shared_preload_libraries"))[0][0]
        if "pg_stat_statements" not in preloaded:
            await admin(server,
                        "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            await asyncio.to_thread(server.restart)
        await admin(server, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return True
    except (asyncpg.PostgresError, embedded.EmbeddedPostgresError) as err:
        console.print(f"[yellow]pg_stat_statements unavailable ({err}); counting "
                      "transactions only[/]")
        return False


def command(args: argparse.Namespace) -> str:
    return " ".join(["python -m bench.queue", *args.argv])


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="small sizes (5,000 tasks, 60 latency tasks, 30 s idle): about 1 min")
    p.add_argument("--workers", type=int, default=4, help="worker processes per system")
    p.add_argument("--concurrency", type=int, default=20, help="tasks per worker at once")
    p.add_argument("--tasks", type=int, help="no-op tasks for throughput (20,000)")
    p.add_argument("--latency-tasks", type=int, help="tasks enqueued one at a time (200)")
    p.add_argument("--rate", type=float, default=20.0, help="latency enqueue rate, per s")
    p.add_argument("--idle-seconds", type=float, help="idle measuring window (120 s)")
    p.add_argument("--settle-seconds", type=float, help="wait before the idle window (20 s)")
    p.add_argument("--runs", type=int, default=1, help="whole runs in a row (one table each)")
    p.add_argument("--systems", default="citerun,pgqueuer,procrastinate",
                   help="comma-separated: citerun (always first), pgqueuer, procrastinate")
    p.add_argument("--no-statements", action="store_true",
                   help="skip pg_stat_statements (saves a server restart)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--write-docs", action="store_true",
                   help=f"replace the '{SECTION[3:]}' section of docs/benchmarks.md")
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a not in ("--write-docs", "--keep")]
    args.systems = ["citerun"] + [n for n in args.systems.split(",")
                                  if n and n != "citerun"]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        p.error(f"unknown systems: {', '.join(sorted(unknown))}")
    quick = args.quick
    args.tasks = args.tasks or (5_000 if quick else 20_000)
    args.latency_tasks = args.latency_tasks or (60 if quick else 200)
    args.idle_seconds = args.idle_seconds or (30.0 if quick else 120.0)
    # Idle backends flush their statistics up to ~10 s late: settle longer than that, so
    # the start-up transactions are counted before the window, not in it.
    args.settle_seconds = args.settle_seconds or (12.0 if quick else 20.0)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)

    def on_term(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    # A shell starts background jobs with SIGINT ignored; Ctrl-C must still clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    results: list[Results] = []
    try:
        with postgres("citerun-bench-queue-", keep=args.keep, keep_on_error=True) as (tmp, server):
            (tmp / "logs").mkdir()
            procs = Processes(tmp / "logs")
            try:
                for k in range(args.runs):
                    console.print(f"[bold]run {k + 1} of {args.runs}[/]")
                    results.append(asyncio.run(run(args, server, procs)))
                    print_report(results[-1])
            except Exception:
                console.print(f"[red]failed; worker logs are in {tmp / 'logs'}[/]")
                raise
            finally:
                procs.stop_all(grace_s=10)
    except KeyboardInterrupt:
        console.print("[red]interrupted; cleaning up[/]")
        return 130
    if args.write_docs:
        for old in OLD_SECTIONS:
            bench_machine.remove_section(old)
        bench_machine.write_section(SECTION, markdown(results))
        console.print(f"wrote the '{SECTION[3:]}' section of "
                      f"{bench_machine.DOCS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
