"""Two revisions side by side in one run: the demo, the real-PDF bench and the queue bench.

Usage (from the repository root)::

    python -m bench.revisions --before 820800d                 # all three
    python -m bench.revisions --before 820800d --only demo,realpdf
    python -m bench.revisions --before HEAD --only demo         # the smoke run of the tests

A change that should not change what citerun finds (a restructuring: issue 42) is held to
the same figures as the revision before it. ``--before REV`` is checked out into a
temporary git worktree; each bench then runs as a separate process in that tree and in
this one, one after the other on the same machine (before first), with ``PYTHONPATH``
naming the tree's ``src`` and root, so each side imports its own code:

* **demo**: the README's first command, ``citerun verify examples/thesis.pdf --sources
  examples/sources``, with a fresh data dir each; compared citation by citation (marker,
  page, source, verdict, confidence to two places) and by the report's summary.
* **realpdf**: ``python -m bench.quality.realpdf`` (needs ``$CITERUN_EVALDATA/realpdf``);
  its printed tables compared line by line, the columns that time things left out.
* **queue**: ``python -m bench.queue --quick --systems citerun``; throughput and latency
  are timings, so the two tables are printed one after the other, not compared for equality.

The tables are Markdown, for docs/benchmarks.md. Exit status 0 when the demo and realpdf
figures are equal, 1 when they differ.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

from bench.common import REPO

BENCHES = ("demo", "realpdf", "queue")
#: A column that times something (by its header): left out of the comparison.
_TIMED_HEADER = re.compile(r"s/page|\btime\b|\bseconds\b|\bms\b|\(s\)|/ ?s\b|per s", re.I)
#: A cell that is a time or a size of memory, in any column.
_TIMED = re.compile(r"\b\d+(\.\d+)?\s*(s|ms|MiB)\b")


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[pathlib.Path]:
    """A detached checkout of ``rev`` in a temporary folder, removed afterwards."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="citerun-rev-"))
    tree = base / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), rev], cwd=REPO,
                   check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO,
                       check=False)
        shutil.rmtree(base, ignore_errors=True)


def run_in(tree: pathlib.Path, argv: list[str], env: dict[str, str] | None = None,
           timeout: float = 1800) -> tuple[str, float]:
    """Run ``argv`` with ``tree``'s code; its stdout and wall seconds."""
    environ = {**os.environ, **(env or {}),
               "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(tree)])}
    environ.setdefault("CITERUN_EVALDATA", str(REPO.parent / "shared" / "evaldata"))
    start = time.monotonic()
    result = subprocess.run(argv, cwd=tree, env=environ, capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode not in (0, 3):  # verify --fail-on is not used: 0 is success
        raise RuntimeError(f"{' '.join(argv)} in {tree} exited {result.returncode}:\n"
                           f"{result.stderr[-3000:]}")
    return result.stdout, time.monotonic() - start


def demo_figures(tree: pathlib.Path) -> tuple[dict[str, object], float]:
    """The demo's report, reduced to what it finds: citations and summary."""
    with tempfile.TemporaryDirectory(prefix="citerun-demo-") as tmp:
        out = pathlib.Path(tmp) / "report.html"
        os.chmod(tmp, 0o755)  # the embedded Postgres may run as another user under root
        _, seconds = run_in(tree, [sys.executable, "-m", "citerun", "verify",
                                   "examples/thesis.pdf", "--sources", "examples/sources",
                                   "--out", str(out)],
                            env={"CITERUN_DATA_DIR": str(pathlib.Path(tmp) / "data")})
        report = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    citations = [
        (c["marker"], c["page"], (c.get("source") or {}).get("filename"), c["verdict"],
         None if c.get("confidence") is None else round(c["confidence"], 2))
        for c in report["citations"]]
    return {"citations": citations, "summary": report["summary"]}, seconds


def compare_demo(before: dict[str, object], after: dict[str, object]) -> tuple[bool, str]:
    b_cites, a_cites = before["citations"], after["citations"]
    assert isinstance(b_cites, list) and isinstance(a_cites, list)
    rows = ["| figure | before | after |", "|---|---:|---:|",
            f"| citations | {len(b_cites)} | {len(a_cites)} |"]
    b_sum, a_sum = before["summary"], after["summary"]
    assert isinstance(b_sum, dict) and isinstance(a_sum, dict)
    for verdict in sorted(set(b_sum["by_verdict"]) | set(a_sum["by_verdict"])):
        rows.append(f"| {verdict} | {b_sum['by_verdict'].get(verdict, 0)} | "
                    f"{a_sum['by_verdict'].get(verdict, 0)} |")
    differ = [f"| citation {i + 1} | {b} | {a} |"
              for i, (b, a) in enumerate(zip(b_cites, a_cites)) if b != a]
    same = b_cites == a_cites and b_sum == a_sum
    rows.append(f"| citations equal (marker, page, source, verdict, confidence) | | "
                f"{'all' if same else f'{len(differ)} differ'} |")
    return same, "\n".join(rows + differ)


def table_lines(stdout: str) -> list[str]:
    """The lines of the printed tables, with the cells that time things blanked: the
    columns whose header names a time, and any cell that is a time or a size."""
    lines: list[str] = []
    timed: set[int] = set()
    first = True
    for line in stdout.splitlines():
        if not line.startswith("|"):
            first = True  # a table ended: the next one has its own header
            continue
        cells = line.rstrip().split("|")
        if first:
            timed = {i for i, c in enumerate(cells) if _TIMED_HEADER.search(c)}
            first = False
        elif not set(line) <= set("|-: "):
            cells = [" (time) " if i in timed else _TIMED.sub(" (time) ", c)
                     for i, c in enumerate(cells)]
        lines.append("|".join(cells))
    return lines


def queue_table(stdout: str) -> str:
    """The queue bench's printed results (a terminal table): what follows its progress."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(("┏", "┌", "╭"))),
                 0)
    return "\n".join(line.rstrip() for line in lines[start:])


def compare_lines(before: str, after: str) -> tuple[bool, str]:
    b, a = table_lines(before), table_lines(after)
    differ = [(x, y) for x, y in zip(b, a) if x != y]
    same = b == a
    head = (f"{len(b)} table lines before, {len(a)} after; "
            f"{'identical' if same else f'{len(differ) + abs(len(a) - len(b))} differ'}")
    body = [f"- before: `{x}`\n  after:  `{y}`" for x, y in differ[:40]]
    return same, "\n".join([head, *body])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the revision to compare with")
    parser.add_argument("--only", default=",".join(BENCHES),
                        help=f"comma-separated, of {', '.join(BENCHES)}")
    args = parser.parse_args(argv)
    chosen = [b.strip() for b in args.only.split(",") if b.strip()]
    unknown = set(chosen) - set(BENCHES)
    if unknown:
        parser.error(f"unknown bench(es): {', '.join(sorted(unknown))}")
    here = REPO
    equal = True
    with worktree(args.before) as there:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=there,
                             capture_output=True, text=True, check=True).stdout.strip()
        print(f"# before: {args.before} ({rev}); after: the working tree of {here}\n")
        if "demo" in chosen:
            (b, tb), (a, ta) = demo_figures(there), demo_figures(here)
            same, table = compare_demo(b, a)
            equal &= same
            print(f"## demo ({tb:.0f} s before, {ta:.0f} s after)\n\n{table}\n")
        if "realpdf" in chosen:
            argv_ = [sys.executable, "-m", "bench.quality.realpdf"]
            (b_out, tb), (a_out, ta) = run_in(there, argv_), run_in(here, argv_)
            same, text = compare_lines(b_out, a_out)
            equal &= same
            print(f"## realpdf ({tb:.0f} s before, {ta:.0f} s after)\n\n{text}\n")
            print("### after\n\n" + "\n".join(table_lines(a_out)) + "\n")
        if "queue" in chosen:
            argv_ = [sys.executable, "-m", "bench.queue", "--quick", "--systems", "citerun"]
            for side, tree in (("before", there), ("after", here)):
                out, _ = run_in(tree, argv_)
                print(f"## queue (--quick, citerun alone): {side}\n\n```\n"
                      f"{queue_table(out)}\n```\n")
    print("figures equal" if equal else "figures DIFFER")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
