"""Inputs run through a fuzz target once, without the fuzzer: to reproduce a finding, and
to measure one input's cost.

``python -m fuzz.replay TARGET FILE... [--measure]``

Each file is run through :func:`fuzz.targets.run`; a line per file says how it ended
(read, refused with the reader's message, or the traceback of a crash). ``--measure``
prints one JSON object per file instead: its CPU and wall seconds and how far it took
the process's peak RSS above where it stood after start-up (so measure one file per
process: a peak is not undone). Exit status 1 when a file crashed.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import sys
import time
import traceback

from fuzz import targets


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(target: str, data: bytes) -> dict[str, object]:
    """One run of ``target`` on ``data``, after a warm-up on an empty input."""
    targets.run(target, b"")
    before = _peak_rss_mb()
    cpu, wall = time.process_time(), time.perf_counter()
    outcome = "read"
    try:
        refused = targets.run(target, data)
        if refused is not None:
            outcome = f"refused: {type(refused).__name__}"
    except Exception as err:  # noqa: BLE001 - reported, not raised
        outcome = f"crash: {type(err).__name__}: {str(err)[:200]}"
    return {"target": target, "bytes": len(data), "outcome": outcome,
            "cpu_s": round(time.process_time() - cpu, 4),
            "wall_s": round(time.perf_counter() - wall, 4),
            "peak_rss_mb": round(_peak_rss_mb(), 1),
            "rss_above_start_mb": round(_peak_rss_mb() - before, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", choices=sorted(targets.TARGETS))
    parser.add_argument("files", nargs="+", type=pathlib.Path)
    parser.add_argument("--measure", action="store_true")
    args = parser.parse_args()
    crashed = False
    for path in args.files:
        data = path.read_bytes()
        if args.measure:
            print(json.dumps({"file": str(path), **measure(args.target, data)}))
            continue
        try:
            refused = targets.run(args.target, data)
        except Exception:  # noqa: BLE001
            crashed = True
            print(f"{path}: CRASH\n{traceback.format_exc()}")
            continue
        print(f"{path}: " + ("read" if refused is None else f"refused: {refused}"[:300]))
    sys.exit(1 if crashed else 0)


if __name__ == "__main__":
    main()
