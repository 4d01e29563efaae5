"""Wall time of ``citerun verify`` and the judge stage's rate, on the demo and a big thesis.

Usage::

    python -m bench.pipeline.large_thesis /tmp/large
    python -m bench.pipeline.verify --large /tmp/large

Each case runs the real CLI in a subprocess (embedded Postgres, ``--workers`` local
worker processes) twice with the same data directory: ``cold`` parses and embeds every
document, ``warm`` reuses them (documents are content-addressed) and only extracts and
judges. The stage rows come from the tasks table of the run: tasks, summed task time
(claim to finish) and the stage's span (first claim to last finish); citations/s is the
judge_citation count over that span. The machine and its load average are printed too,
since other processes share the cores; CPU s (user + system time of the CLI and the
processes it waited for: its workers, and Postgres where the CLI reaps it) is the work
the run did and depends little on the load; on a quiet machine the wall time is at
least CPU s / cores, plus the waits (start-up, the queue) that use no CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time
import typing

from bench import machine as bench_machine
from bench.common import REPO
from citerun.core import db
from citerun.local import localdb
from citerun.core.settings import Settings


def machine() -> str:
    m = bench_machine.basics()
    return f"{m['CPU']}, {m['Cores']} cores, {m['RAM']} RAM, Python {m['Python']}"


def run_verify(data_dir: pathlib.Path, thesis: pathlib.Path, sources: pathlib.Path,
               out: pathlib.Path, workers: int) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system of the CLI and every process it waited for)."""
    env = {k: v for k, v in os.environ.items() if k != "CITERUN_DATABASE_URL"}
    env.update(CITERUN_DATA_DIR=str(data_dir), COLUMNS="200")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "citerun", "verify", str(thesis), "--sources",
                           str(sources), "--out", str(out), "--workers", str(workers)],
                          env=env, capture_output=True, text=True, check=False, cwd=out.parent)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"citerun verify failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


async def _stages(url: str) -> list[tuple[str, int, float, float]]:
    conn = await db.connect(url)
    try:
        run_id = await conn.fetchval("SELECT id FROM runs ORDER BY created_at DESC LIMIT 1")
        rows = await conn.fetch(
            "SELECT kind, count(*) AS n, "
            "sum(extract(epoch FROM finished_at - claimed_at)) AS busy, "
            "extract(epoch FROM max(finished_at) - min(claimed_at)) AS span "
            "FROM tasks WHERE run_id = $1 GROUP BY kind ORDER BY min(claimed_at)", run_id)
    finally:
        await conn.close()
    return [(r["kind"], r["n"], float(r["busy"] or 0), float(r["span"] or 0)) for r in rows]


def stages(data_dir: pathlib.Path) -> list[tuple[str, int, float, float]]:
    with localdb.database(Settings(data_dir=data_dir)) as url:
        return asyncio.run(_stages(url))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", type=pathlib.Path, help="output of bench.pipeline.large_thesis")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    cases = [("demo thesis.pdf", REPO / "examples" / "thesis.pdf", REPO / "examples" / "sources"),
             ("demo thesis_numeric.pdf", REPO / "examples" / "thesis_numeric.pdf",
              REPO / "examples" / "sources")]
    if args.large:
        cases.append(("large (150 p., 80 cit., 30 src.)", args.large / "thesis.pdf",
                      args.large / "sources"))
    print(machine())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows: list[tuple[str, str, tuple[float, float], list[tuple[str, int, float, float]]]] = []
    for name, thesis, sources in cases:
        with tempfile.TemporaryDirectory(prefix="citerun-bench-") as tmp:
            # Passable by the embedded server's user when run as root (bench.common.workdir).
            pathlib.Path(tmp).chmod(0o711)
            data = pathlib.Path(tmp) / "data"
            for phase in ("cold", "warm"):
                seconds = run_verify(data, thesis, sources, pathlib.Path(tmp) / "report.html",
                                     args.workers)
                rows.append((name, phase, seconds, stages(data)))
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\n{'case':<34} {'run':<5} {'wall s':>7} {'CPU s':>7} {'parsed':>7} {'judged':>7} "
          f"{'judge span s':>12} {'citations/s':>11}")
    for name, phase, (seconds, cpu), stage_rows in rows:
        by_kind: dict[str, typing.Any] = {k: (n, busy, span) for k, n, busy, span in stage_rows}
        parsed = by_kind.get("parse_document", (0, 0.0, 0.0))[0]
        judged, _, span = by_kind.get("judge_citation", (0, 0.0, 0.0))
        rate = judged / span if span else float("nan")
        print(f"{name:<34} {phase:<5} {seconds:>7.1f} {cpu:>7.1f} {parsed:>7} {judged:>7} {span:>12.2f} "
              f"{rate:>11.1f}")


if __name__ == "__main__":
    main()
