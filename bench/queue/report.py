"""The comparison's results: the machine, one table per run (printed and as markdown for
docs/benchmarks.md), the idle workers' statements, and the notes that say how."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
from typing import Any

import asyncpg
from rich.console import Console
from rich.table import Table

from bench import machine as bench_machine
from bench.common import was_busy
from bench.queue.phases import Idle, Latency, Throughput

console = Console()

SECTION = "## Queue: citerun vs pgqueuer vs procrastinate"
OLD_SECTIONS = ("## Queue: citerun vs pgqueuer",)


def machine(server_version: str) -> dict[str, str]:
    import pgqueuer
    try:
        import uvloop
        uv = uvloop.__version__
    except ImportError:
        uv = "not installed"
    import procrastinate
    return {**bench_machine.basics(), "PostgreSQL": server_version,
            "pgqueuer": pgqueuer.__version__, "procrastinate": procrastinate.__version__,
            "asyncpg": asyncpg.__version__, "uvloop": uv}


@dataclasses.dataclass
class Results:
    info: dict[str, str]
    command: str
    args: argparse.Namespace
    configs: list[str]
    throughput: dict[str, Throughput]
    latency: dict[str, Latency]
    idle: dict[str, Idle]
    load_before: str
    load_after: str


def rows(r: Results) -> tuple[list[str], list[list[str]]]:
    names = list(r.throughput)
    peers = [n for n in names if n != "citerun"]
    header = ["Measure", *names, "Target (citerun)", "Met"]
    ct, cl, ci = r.throughput["citerun"], r.latency["citerun"], r.idle["citerun"]

    def per(fn: Any) -> list[str]:
        return [fn(n) for n in names]

    def best(values: list[float]) -> float:
        return min(values) if values else float("inf")

    def idle_cost(n: str) -> float:
        i = r.idle[n]
        return i.statements_per_s if i.statements_per_s is not None else i.xacts_per_s

    out = [
        ["Throughput, first claim -> last completion (tasks/s)",
         *per(lambda n: f"{r.throughput[n].rate:,.0f}"), ">= every peer",
         _met(ct.rate >= max([r.throughput[p].rate for p in peers], default=0))],
        ["  DB span for all tasks (s)", *per(lambda n: f"{r.throughput[n].db_s:.2f}"), "", ""],
        ["  Wall time incl. worker start-up (s)",
         *per(lambda n: f"{r.throughput[n].wall_s:.2f}"), "", ""],
        ["  Throughput incl. start-up (tasks/s)",
         *per(lambda n: f"{r.throughput[n].tasks / r.throughput[n].wall_s:,.0f}"), "", ""],
        ["Enqueue -> handler start, p50 (ms)", *per(lambda n: f"{r.latency[n].p50_ms:.1f}"),
         "<= 10 ms", _met(cl.p50_ms <= 10)],
        ["  p90 (ms)", *per(lambda n: f"{r.latency[n].p90_ms:.1f}"), "", ""],
        ["  p99 (ms)", *per(lambda n: f"{r.latency[n].p99_ms:.1f}"), "<= every peer",
         _met(cl.p99_ms <= best([r.latency[p].p99_ms for p in peers]))],
        ["  max (ms)", *per(lambda n: f"{r.latency[n].max_ms:.1f}"), "<= 2 x best peer",
         _met(cl.max_ms <= 2 * best([r.latency[p].max_ms for p in peers]))],
        ["Idle worker: transactions/s (pg_stat_database)",
         *per(lambda n: f"{r.idle[n].xacts_per_s:.3f}"), "", ""],
    ]
    if ci.statements_per_s is not None:
        out.append(["Idle worker: statements/s (pg_stat_statements)",
                    *per(lambda n: f"{r.idle[n].statements_per_s:.3f}"),
                    "<= 0.05 and <= every peer",
                    _met(idle_cost("citerun") <= min(0.05, best([idle_cost(p) for p in peers])))])
    else:
        out[-1][-2:] = ["<= every peer",
                        _met(idle_cost("citerun") <= best([idle_cost(p) for p in peers]))]
    return header, out


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


def notes(r: Results) -> list[str]:
    a = r.args
    out = [
        f"{a.workers} worker processes per system, per-worker concurrency {a.concurrency}; "
        "one Postgres server, a fresh database per system and phase.",
        f"Throughput: {a.tasks:,} no-op tasks enqueued (batch insert) and ANALYZEd before "
        "the workers start. Rate = tasks / (last completion - first claim) from the "
        "queues' own timestamps (citerun `claimed_at`/`finished_at`, pgqueuer's "
        "`pgqueuer_log` 'picked'/'successful' rows, procrastinate's `procrastinate_events` "
        "'started'/'succeeded'); wall time runs from spawning the workers until a 0.1 s "
        "poll sees nothing outstanding.",
        f"Latency: {a.latency_tasks} `stamp` tasks enqueued one at a time at {a.rate:g}/s "
        "into idle workers; latency = the handler's `clock_timestamp()` - the enqueue "
        "transaction's `now()` as the queue stored it (citerun `tasks.created_at`, "
        "pgqueuer `created`, procrastinate's 'deferred' event). citerun's enqueue is one "
        "statement (INSERT with pg_notify in a CTE), pgqueuer's one INSERT whose trigger "
        "notifies, procrastinate's `procrastinate_defer_jobs_v1` function whose trigger "
        "notifies.",
        f"Idle: one worker per system, both in the same {a.idle_seconds:g} s window after "
        f"{a.settle_seconds:g} s of settling; the reader connects to `postgres`. "
        "An idle backend flushes pg_stat_database up to ~10 s late, so that count may be "
        "off by a transaction or two at either edge; pg_stat_statements is exact and counts "
        "every statement (utility ones such as BEGIN/COMMIT and asyncpg's pool reset too).",
        *[f"Inside the {name} workers during the latency phase (their /metrics, whole "
          "process life): " + ", ".join(f"{k} {v:.1f}" for k, v in lat.inside.items())
          for name, lat in r.latency.items() if lat.inside],
        *r.configs,
        f"Load average (1/5/15 min) before: {r.load_before}; after: {r.load_after}.",
    ]
    if was_busy(r.load_before, r.load_after):
        out.append("The machine was busy with other work during this run: the numbers, "
                   "latency tails most of all, are noisy; rerun on a quiet machine.")
    return out


def print_report(r: Results) -> None:
    t = Table(title="Machine", show_header=False)
    for k, v in r.info.items():
        t.add_row(k, v)
    console.print(t)
    header, body = rows(r)
    t = Table(title="Queue: " + " vs ".join(r.throughput))
    for h in header:
        t.add_column(h, justify="left" if h in ("Measure", "Target (citerun)") else "right")
    for row in body:
        t.add_row(*row)
    console.print(t)
    for name, idle in r.idle.items():
        if idle.top:
            t = Table(title=f"Statements of the idle {name} worker in {idle.seconds:.0f} s")
            t.add_column("calls", justify="right")
            t.add_column("statement")
            for q, c in idle.top:
                t.add_row(str(c), " ".join(q.split())[:110])
            console.print(t)
    for n in notes(r):
        console.print(f"- {n}", highlight=False)


def markdown(results: list[Results]) -> str:
    first = results[0]
    lines = [SECTION, "",
             f"Measured {dt.date.today().isoformat()} with `python -m bench.queue` "
             f"({len(results)} run{'s' if len(results) > 1 else ''} in a row):", "",
             "```", first.command, "```", "",
             "| Machine | |", "|---|---|",
             *[f"| {k} | {v} |" for k, v in first.info.items()], ""]
    for k, r in enumerate(results, 1):
        header, body = rows(r)
        if len(results) > 1:
            lines += [f"Run {k} of {len(results)} (load average before: {r.load_before}):", ""]
        lines += ["| " + " | ".join(header) + " |",
                  "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
                  *["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                    for row in body], ""]
    for name, idle in results[-1].idle.items():
        if idle.top:
            lines += [f"Statements of the idle {name} worker in {idle.seconds:.0f} s "
                      "(pg_stat_statements, last run):", "", "| calls | statement |",
                      "|---:|---|"]
            lines += [f"| {c} | `{' '.join(q.split())[:110]}` |" for q, c in idle.top]
            lines.append("")
    lines += ["Notes:", ""] + [f"- {n}" for n in notes(results[-1])] + [""]
    return "\n".join(lines)
