"""``python -m bench.queue`` runs and prints its table: citerun, pgqueuer and procrastinate
side by side, each with a throughput and a latency greater than zero.

The bench is run as its README says (a module, from the repository root) with small
sizes, so the whole of it (an embedded Postgres, real worker processes of all three
queues, the three phases) is exercised in well under a minute on a quiet machine. It once
failed before its first phase: it appended ``?application_name=`` to an embedded
server's URL that already had a query (its socket directory and port).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys


from bench.queue import processes

ROOT = pathlib.Path(__file__).resolve().parents[2]
SYSTEMS = ("citerun", "pgqueuer", "procrastinate")
SMALL = ["--workers", "1", "--concurrency", "2", "--tasks", "200", "--latency-tasks", "5",
         "--rate", "20", "--idle-seconds", "2", "--settle-seconds", "1", "--no-statements"]


def test_the_application_name_joins_a_url_that_has_a_query_already() -> None:
    url = "postgresql://citerun:p%40ss@/bench?host=%2Ftmp%2Fpg+sock&port=46521"
    named = processes.with_application_name(url, "lat-citerun-0")
    assert named == ("postgresql://citerun:p%40ss@/bench?host=%2Ftmp%2Fpg+sock&port=46521"
                     "&application_name=bench-lat-citerun-0")
    # Named again (another phase's worker): replaced, not appended twice.
    assert processes.with_application_name(named, "tp-citerun-0").endswith(
        "port=46521&application_name=bench-tp-citerun-0")
    assert processes.with_application_name("postgresql://u@h/db", "x") == (
        "postgresql://u@h/db?application_name=bench-x")


def _cells(output: str, measure: str) -> list[str]:
    """The cells of the table row whose first cell starts with ``measure``."""
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0].startswith(measure):
            return cells
    raise AssertionError(f"no row {measure!r} in:\n{output}")


def test_the_queue_bench_prints_a_row_per_system() -> None:
    env = {**os.environ, "COLUMNS": "250", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-m", "bench.queue", *SMALL], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    header = _cells(output, "Measure")
    assert header[1:4] == list(SYSTEMS), output
    for measure in ("Throughput, first claim", "Enqueue -> handler start, p50"):
        values = _cells(output, measure)[1:4]
        assert all(float(v.replace(",", "")) > 0 for v in values), (measure, values)
