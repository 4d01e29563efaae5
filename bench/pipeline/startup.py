"""Where ``citerun verify``'s seconds go on the demo (issue 47, item 6): start-up, work, end.

Usage::

    python -m bench.pipeline.startup [--runs 3] [--workers 2]

Runs the real CLI (``citerun verify examples/thesis.pdf --sources examples/sources``) in a
subprocess with a new data directory, then again with the same one (``warm``: the server
initialised, the documents parsed and kept), and splits each run's wall time by the
moments the run itself recorded (``runs.created_at``, the tasks' ``claimed_at`` and
``finished_at``, ``runs.finished_at``), read back from its database afterwards:

- ``to run``: the CLI's start to the run's row (Python and citerun imported, the thesis
  and sources read, the embedded Postgres started or initialised, the migrations checked,
  the documents staged);
- ``to 1st claim``: the run's row to its first task claimed (the local workers started:
  a Python process each, citerun imported, connected, polling);
- ``parse``: the first claim to the last parse task's end (each worker's first parse
  loads the embedder: one load per worker process);
- ``judge``: to the last task's end (extracting and judging; the first judgement in a
  worker loads the judge's model);
- ``to exit``: the run's end to the CLI's exit (its report written, the workers stopped,
  Postgres stopped).

Beside them, in processes of their own: ``import citerun.cli.main`` and ``citerun
--help`` (the CLI's own start), a worker's import of the task registry, and the first
load of the embedder and of the judge's reader (the seconds a worker's first tasks pay).
The machine's load average is printed: on a shared machine the same work takes longer.
``--with-layout`` runs it as before issue 47 (a sitecustomize imports pymupdf, and so its
layout analyser, in every process before citerun can keep it out). ``--layout-ab N``
measures only a worker's import with and without pymupdf's layout
analyser (which ``citerun.pipeline`` keeps out since issue 47), interleaved, CPU and wall.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import REPO
from bench.pipeline.verify import machine
from citerun.core import db
from citerun.core.settings import Settings
from citerun.local import localdb

THESIS = REPO / "examples" / "thesis.pdf"
SOURCES = REPO / "examples" / "sources"
PHASES = ("to run", "to 1st claim", "parse", "judge", "to exit")


async def _moments(url: str) -> dict[str, float]:
    conn = await db.connect(url)
    try:
        run = await conn.fetchrow("SELECT id, extract(epoch FROM created_at) AS created, "
                                  "extract(epoch FROM finished_at) AS finished "
                                  "FROM runs ORDER BY created_at DESC LIMIT 1")
        tasks = await conn.fetchrow(
            "SELECT extract(epoch FROM min(claimed_at)) AS first_claim, "
            "extract(epoch FROM max(finished_at) FILTER (WHERE kind = 'parse_document')) "
            "AS parsed, extract(epoch FROM max(finished_at)) AS last FROM tasks "
            "WHERE run_id = $1", run["id"])
    finally:
        await conn.close()
    return {"created": float(run["created"]), "finished": float(run["finished"]),
            "first_claim": float(tasks["first_claim"]),
            "parsed": float(tasks["parsed"] or tasks["first_claim"]), "last": float(tasks["last"])}


def verify_phases(data_dir: pathlib.Path, out: pathlib.Path, workers: int,
                  site: pathlib.Path | None = None) -> dict[str, float]:
    """One ``citerun verify`` split in phases; ``site``: a folder put first on every
    process's PYTHONPATH (the ``--with-layout`` sitecustomize)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")}
    env.update(CITERUN_DATA_DIR=str(data_dir), COLUMNS="200")
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    started = time.time()
    done = subprocess.run([sys.executable, "-m", "citerun", "verify", str(THESIS), "--sources",
                           str(SOURCES), "--out", str(out), "--workers", str(workers)],
                          env=env, capture_output=True, text=True, check=False, cwd=out.parent)
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"citerun verify failed ({done.returncode}):\n{done.stderr[-3000:]}")
    with localdb.database(Settings(data_dir=data_dir)) as url:
        m = asyncio.run(_moments(url))
    return {"to run": m["created"] - started, "to 1st claim": m["first_claim"] - m["created"],
            "parse": m["parsed"] - m["first_claim"], "judge": m["last"] - m["parsed"],
            "to exit": ended - m["last"], "wall": ended - started}


def seconds_of(code: str) -> float:
    """Wall seconds of ``python -c code`` in a fresh process, less an empty one's."""
    def once(source: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", source], check=True, capture_output=True)
        return time.perf_counter() - started
    return once(code) - once("pass")


PARTS = {
    "import citerun.cli.main": "import citerun.cli.main",
    "citerun --help": "import sys; sys.argv=['citerun','--help']\n"
                      "from citerun.cli.main import main\ntry: main()\nexcept SystemExit: pass",
    "worker: import the task registry": "import citerun.worker.tasks",
    "embedder: first load and embed": "from citerun.pipeline import embed\n"
                                      "embed.WordLlamaEmbedder().embed(['warm up'])",
    "judge: first load and judgement": "import asyncio\nfrom citerun.pipeline import embed, judge\n"
                                       "j = judge.TrainedJudge(embed.WordLlamaEmbedder())\n"
                                       "asyncio.run(j.judge('Heat rose at night.', "
                                       "[judge.Passage(1, 'Heat rose at night in the city.', 1, 1, 0.9)]))",
}


def cpu_and_wall(code: str) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of ``python -c code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def layout_ab(rounds: int) -> None:
    """A worker's import with pymupdf's layout analyser (imported first, as pymupdf 2 does
    unless citerun.pipeline keeps it out) and without, interleaved, ``rounds`` each."""
    cases = {"with pymupdf.layout (before)": "import pymupdf\nimport citerun.worker.tasks",
             "without (citerun.pipeline, after)": "import citerun.worker.tasks"}
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, code in cases.items():
            seen[name].append(cpu_and_wall(code))
    print(f"\nimport citerun.worker.tasks, {rounds} interleaved runs each (median):")
    for name, runs in seen.items():
        print(f"  {name:<36} CPU {statistics.median(c for c, _ in runs):5.2f} s, "
              f"wall {statistics.median(w for _, w in runs):5.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="warm runs after the cold one")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--layout-ab", type=int, default=0, metavar="N",
                        help="only the import with and without pymupdf's layout analyser, N each")
    parser.add_argument("--with-layout", action="store_true",
                        help="as before issue 47: every process imports pymupdf with its layout "
                             "analyser (a sitecustomize imports pymupdf before citerun)")
    args = parser.parse_args()
    if args.layout_ab:
        print(machine())
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        layout_ab(args.layout_ab)
        print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return
    print(machine())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="citerun-bench-") as tmp:
        pathlib.Path(tmp).chmod(0o711)  # passable by the embedded server's user as root
        data = pathlib.Path(tmp) / "data"
        site = None
        if args.with_layout:
            site = pathlib.Path(tmp) / "site"
            site.mkdir()
            (site / "sitecustomize.py").write_text("import pymupdf  # with pymupdf.layout\n")
            print("every process imports pymupdf with its layout analyser (--with-layout)")
        for n in range(args.runs + 1):
            rows.append(("cold" if n == 0 else f"warm {n}",
                         verify_phases(data, pathlib.Path(tmp) / "report.html", args.workers,
                                       site)))
    parts = {name: statistics.median(seconds_of(code) for _ in range(3))
             for name, code in PARTS.items()}
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print(f"{'run':<8}" + "".join(f"{p:>14}" for p in (*PHASES, "wall")))
    for name, phases in rows:
        print(f"{name:<8}" + "".join(f"{phases[p]:>14.1f}" for p in (*PHASES, "wall")))
    print("\nin a process of its own (median of 3, less an empty interpreter's start):")
    for name, seconds in parts.items():
        print(f"  {name:<36} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
