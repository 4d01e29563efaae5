"""The four real theses of ``$CITERUN_EVALDATA/theses`` run as their writers would.

Usage::

    python -m bench.pipeline.theses [--src /tmp/before/src] [--only humanimal,...] [--json OUT]

Each thesis is verified by the real CLI in a subprocess, a fresh ``CITERUN_DATA_DIR``
each: ``citerun verify MAIN --bib LIBRARY --sources examples/sources/alvarez2019.pdf``
(LaTeX), ``citerun verify thesis.docx --sources examples/sources/wei2018.pdf`` (Word). The
source PDF is unrelated (the theses' sources are not at hand), so every verdict is
``unresolved_citation``; what is measured is what the writer's files gave. ``--src``
runs another checkout's code (``git worktree add /tmp/before HEAD``: its ``src`` first on
``PYTHONPATH``), for a before and after on the same machine.

Columns, from the JSON report: citations found; with a library entry (a reference that is
more than the key); located (a ``file.tex:line`` or ``paragraph N``, not "page 1"); not
taken (the thesis's skipped list); claims with a doubled author name ("Alt et al. Alt
et al.", "Meier Meier", "Docker, Inc.."); claims with a layout argument (a length, a
float's placement, ``width=``: "research.[-2.7cm] It"); the CLI's wall time; the
reader's CPU seconds alone (``formats.read_thesis`` on the bundle the CLI stages, best
of three, in a child running the same code).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import typing

from bench.common import load_average, workdir
from evalsets import REPO, evaldata

# (name, main file, library or None, source PDF)
THESES = (
    ("humanimal", "humanimal_bachelor_de/thesis.tex", "humanimal_bachelor_de/literatur.bib",
     "alvarez2019.pdf"),
    ("fabiank", "fabiank_bachelor_de/bachelorarbeit.tex", "fabiank_bachelor_de/literatur.bib",
     "alvarez2019.pdf"),
    ("cdeckert", "cdeckert_masterarbeit_de/latex/main.tex",
     "cdeckert_masterarbeit_de/latex/literatur.bib", "alvarez2019.pdf"),
    ("steffen", "steffen_bachelor_docx_de/thesis.docx", None, "wei2018.pdf"),
)

_NAME = r"[A-ZÄÖÜ][\w'’-]+"
# The same names twice in a row: "Alt et al. Alt et al.", "Smith and Jones Smith and
# Jones", "Meier Meier"; or a name's own full stop doubled ("Docker, Inc..").
DOUBLED_NAMES = re.compile(
    rf"\b({_NAME}(?:,? (?:et al\.|(?:and|und|&) {_NAME}))?) \1(?![\w])|[A-Za-z]\.\.(?!\.)")
_UNIT = r"(?:cm|mm|pt|em|ex|in|bp|pc)"
# A layout argument in the text: "[-2.7cm]", "[htbp]", "[width=...]", "0.5\textwidth".
LAYOUT = re.compile(
    rf"\[\s*[-+]?\d*[.,]?\d+\s*{_UNIT}\s*\]|\[\s*[htbpH!]{{1,5}}\s*\]|\[\s*\]"
    rf"|\b(?:width|height|scale|angle|trim|keepaspectratio)\s*=|\\(?:text|line)width"
    rf"|(?<![\w.,])[-+]?\d*[.,]?\d+{_UNIT}\b(?!\w)")


def measure(report: dict[str, typing.Any]) -> dict[str, int]:
    citations = report["citations"]
    with_entry = sum(1 for c in citations if c.get("reference")
                     and c["reference"].rstrip(". ") != c.get("key"))
    located = sum(1 for c in citations if c.get("location")
                  and not str(c["location"]).startswith("page "))
    return {
        "found": len(citations), "with_entry": with_entry, "located": located,
        "not_taken": len(report["thesis"].get("skipped") or []),
        "doubled": sum(1 for c in citations if DOUBLED_NAMES.search(c.get("claim") or "")),
        "layout": sum(1 for c in citations if LAYOUT.search(c.get("claim") or "")),
    }


# The reader alone, in a child with the same code: CPU seconds of reading the bundle as
# the CLI stages it (best of three), which depend little on what else shares the cores.
_READER = """
import pathlib, sys, time
from citerun.cli import verify
from citerun.pipeline.writer import formats
thesis = pathlib.Path(sys.argv[1]); bibs = [pathlib.Path(b) for b in sys.argv[2:]]
data = verify.load_thesis(thesis, bibs).data
best = None
for _ in range(3):
    started = time.process_time(); formats.read_thesis(data)
    spent = time.process_time() - started; best = spent if best is None else min(best, spent)
print(f"{best:.3f}")
"""


def reader_cpu(main: str, library: str | None, env: dict[str, str]) -> float | None:
    root = evaldata() / "theses"
    args = [str(root / main)] + ([str(root / library)] if library else [])
    done = subprocess.run([sys.executable, "-c", _READER, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    try:
        return float(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def run(name: str, main: str, library: str | None, source: str, src: str | None,
        tmp: pathlib.Path) -> dict[str, object]:
    root = evaldata() / "theses"
    out = tmp / f"{name}.json"
    command = [sys.executable, "-m", "citerun", "verify", str(root / main),
               "--sources", str(REPO / "examples" / "sources" / source), "--out", str(out)]
    if library:
        command[5:5] = ["--bib", str(root / library)]
    env = {**os.environ, "CITERUN_DATA_DIR": str(tmp / f"data-{name}")}
    if src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (src, env.get("PYTHONPATH"))))
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=1200, check=False)
    seconds = time.monotonic() - started
    row: dict[str, object] = {"thesis": name, "rc": done.returncode, "seconds": round(seconds, 1),
                              "reader_cpu_s": reader_cpu(main, library, env)}
    if out.exists():
        report = json.loads(out.read_text())
        row.update(measure(report))
        row["claims"] = [[c.get("location"), c.get("marker"), c.get("claim")]
                         for c in report["citations"]]
        row["skipped"] = [[s.get("where"), s.get("text"), s.get("reason")]
                          for s in report["thesis"].get("skipped") or []]
        row["examples"] = {
            "doubled": [c["claim"] for c in report["citations"]
                        if DOUBLED_NAMES.search(c.get("claim") or "")][:3],
            "layout": [c["claim"] for c in report["citations"]
                       if LAYOUT.search(c.get("claim") or "")][:3]}
    else:
        row["error"] = (done.stderr or done.stdout)[-2000:]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", help="a checkout's src directory to run instead of this one")
    parser.add_argument("--only", help="comma-separated thesis names")
    parser.add_argument("--json", type=pathlib.Path, help="write the rows here too")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    rows = []
    print(f"load before: {load_average()}")
    tmp = workdir("theses-")  # passable: the embedded server's user reaches its data dir
    try:
        for name, main_file, library, source in THESES:
            if only and name not in only:
                continue
            row = run(name, main_file, library, source, args.src, tmp)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in ("claims", "skipped")},
                             ensure_ascii=False), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load after: {load_average()}")
    print("| thesis | rc | found | with entry | located | not taken | doubled names | "
          "layout args | time | reader CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['thesis']} | {row['rc']} | {row.get('found', '–')} | "
              f"{row.get('with_entry', '–')} | {row.get('located', '–')} | "
              f"{row.get('not_taken', '–')} | {row.get('doubled', '–')} | "
              f"{row.get('layout', '–')} | {row['seconds']} s | {row['reader_cpu_s']} s |")
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
