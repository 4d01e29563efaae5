"""The readers fuzzed for a set time each (issue 48, item 4): executions, coverage, the
slowest input's time and memory, and what was found.

``python -m bench.fuzz --seconds N [--target T ...] [--findings DIR] [--keep-corpus]``
``python -m bench.fuzz --merge DIR [--target T ...]``

Each target of :mod:`fuzz.targets` runs under atheris (libFuzzer, coverage-guided;
:mod:`fuzz.harness`) for ``--seconds``, from its corpus in ``fuzz/corpus/<target>/`` (the
inputs it finds go to a scratch folder, or with ``--keep-corpus`` into that corpus). An
input past libFuzzer's ``-timeout`` (a hang) or ``-rss_limit_mb`` ends the run; it is
counted and the target restarted for the time left. Then the slowest input is replayed
alone in a fresh process (:mod:`fuzz.replay`) for its CPU time and the RSS it added.

The table, one row a target: wall seconds fuzzed (the CPU seconds the fuzzing process
got: on a shared machine the fairer measure), executions, executions per second (per CPU
second), coverage (libFuzzer's ``cov``: instrumented edges reached in citerun,
bibtexparser, pylatexenc and defusedxml; ``ft``: its features), the corpus at the end,
the slowest input (CPU seconds while fuzzed, instrumented, and alone, and its bytes), the
RSS it added on its own, the fuzzing process's peak RSS, and the findings: crashes (an
exception other than the reader's refusals), slow inputs (over ``--slow-cpu`` CPU seconds,
measured again alone: the instrumentation is several times slower), memory (over
``--memory-mb`` above start-up), hangs and OOMs; each kept under
``--findings``. Exit status 1 when anything was found. The load average is printed
before and after (figures taken on a busy machine say so).

``--merge DIR`` adds to ``fuzz/corpus/<target>/`` the inputs of ``DIR/<target>/`` (a long
run's grown corpus) that reach coverage the corpus does not (libFuzzer's ``-merge=1``: the
corpus's own inputs are kept, the fewest new ones that add features are copied in), and
prints a row a target: inputs before, offered, added.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from bench.common import load_average, was_busy

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"
DICTS = ROOT / "fuzz" / "dicts"
TARGETS = ("bib", "csl", "latex", "docx", "references", "zip")
#: Bytes of one input at most (the seeds are at most half of it).
MAX_LEN = 32 * 1024
#: Runs of one target restarted after a hang or an OOM, at most.
MAX_RESTARTS = 5

_COV = re.compile(r"\bcov: (\d+) ft: (\d+) corp: (\d+)/")
_STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.MULTILINE)


@dataclasses.dataclass
class Row:
    target: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    execs: int = 0
    cov: int = 0
    ft: int = 0
    corpus: int = 0
    slowest_cpu_s: float = 0.0
    slowest_alone_cpu_s: float = 0.0
    slowest_bytes: int = 0
    slowest_rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    findings: list[dict[str, object]] = dataclasses.field(default_factory=list)
    restarts: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.execs / self.seconds if self.seconds else 0.0

    @property
    def per_cpu_second(self) -> float:
        return self.execs / self.cpu_seconds if self.cpu_seconds else 0.0


def _harness(target: str, seconds: int, work: pathlib.Path, findings: pathlib.Path,
             corpus: pathlib.Path, args: argparse.Namespace, run: int) -> tuple[int, str, dict]:
    stats = work / f"stats-{run}.json"
    log = work / f"libfuzzer-{run}.log"
    command = [sys.executable, "-m", "fuzz.harness", target, "--stats", str(stats),
               "--findings", str(findings), "--slow-cpu", str(args.slow_cpu),
               "--memory-mb", str(args.memory_mb),
               f"-max_total_time={seconds}", f"-timeout={args.timeout}",
               f"-rss_limit_mb={args.rss_limit_mb}", f"-max_len={MAX_LEN}",
               "-print_final_stats=1", f"-artifact_prefix={findings}/",
               "-report_slow_units=1000000",  # wall time: the harness's CPU bound says
               f"-seed={args.seed + run}"]
    if (DICTS / f"{target}.dict").is_file():
        command.append(f"-dict={DICTS / f'{target}.dict'}")
    command.append(str(corpus))
    if not args.max_seeds:
        command.append(str(CORPUS / target))
    with log.open("w") as out:
        # The harness's own start (imports, instrumentation) is outside libFuzzer's time.
        done = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                              timeout=seconds + args.timeout + 600)
    text = log.read_text(errors="replace")
    found = json.loads(stats.read_text()) if stats.is_file() else {}
    return done.returncode, text, found


def merge(target: str, offered: pathlib.Path, corpus: pathlib.Path,
          args: argparse.Namespace) -> tuple[int, int, int]:
    """Add to ``corpus`` the inputs of ``offered`` that add coverage (libFuzzer ``-merge=1``);
    (inputs before, offered, added)."""
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"citerun-fuzz-merge-{target}-"))
    # libFuzzer runs its own program again for the merge's inner pass (argv[0]): this one.
    program = work / "harness"
    program.write_text("#!/bin/sh\n" + shlex.join([
        sys.executable, "-m", "fuzz.harness", target, "--exec-as", str(program),
        "--stats", str(work / "stats.json"), "--findings", str(work / "findings")]) + ' "$@"\n')
    program.chmod(0o755)
    (work / "findings").mkdir()
    before = sum(1 for p in corpus.iterdir() if p.is_file())
    given = sum(1 for p in offered.iterdir() if p.is_file())
    log = work / "merge.log"
    with log.open("w") as out:
        done = subprocess.run([str(program), "-merge=1", f"-timeout={args.timeout}",
                               f"-rss_limit_mb={args.rss_limit_mb}", f"-max_len={MAX_LEN}",
                               str(corpus), str(offered)],
                              cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"bench.fuzz: merging {offered} into {corpus} exited "
                         f"{done.returncode}; its log: {log}")
    after = sum(1 for p in corpus.iterdir() if p.is_file())
    shutil.rmtree(work)
    return before, given, after - before


def measure(target: str, path: pathlib.Path, args: argparse.Namespace) -> dict | None:
    """:func:`fuzz.replay.measure` of one input in a fresh process, uninstrumented."""
    done = subprocess.run([sys.executable, "-m", "fuzz.replay", target, str(path), "--measure"],
                          cwd=ROOT, capture_output=True, text=True, timeout=args.timeout + 300)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def fuzz_one(target: str, args: argparse.Namespace, findings_root: pathlib.Path) -> Row:
    row = Row(target)
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"citerun-fuzz-{target}-"))
    findings = findings_root / target
    findings.mkdir(parents=True, exist_ok=True)
    corpus = CORPUS / target if args.keep_corpus else work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    if args.max_seeds:  # the smallest seeds only: a smoke run skips the slow ones
        for path in sorted((p for p in (CORPUS / target).iterdir() if p.is_file()),
                           key=lambda p: (p.stat().st_size, p.name))[:args.max_seeds]:
            shutil.copy(path, corpus / path.name)
    started = time.monotonic()
    slowest_file = None
    by_name: dict[str, dict[str, object]] = {}
    for run in range(MAX_RESTARTS + 1):
        left = int(args.seconds - (time.monotonic() - started))
        if run and left < 5:
            break
        before = {p.name for p in findings.iterdir()}
        t0 = time.monotonic()
        code, log, stats = _harness(target, max(left, 1), work, findings, corpus, args, run)
        covs = _COV.findall(log)
        if covs:
            cov, ft, corp = (int(x) for x in covs[-1])
            row.cov, row.ft, row.corpus = max(row.cov, cov), max(row.ft, ft), corp
        final = dict(_STAT.findall(log))
        row.execs += int(final.get("number_of_executed_units", stats.get("execs", 0)))
        row.seconds += float(stats.get("seconds", time.monotonic() - t0))
        row.cpu_seconds += float(stats.get("cpu_seconds", 0.0))
        row.peak_rss_mb = max(row.peak_rss_mb, float(final.get("peak_rss_mb", 0)),
                              float(stats.get("peak_rss_mb", 0)))
        if stats.get("slowest_cpu_s", 0) > row.slowest_cpu_s:
            row.slowest_cpu_s = float(stats["slowest_cpu_s"])
            slowest_file = work / f"slowest-{run}.bin"
            shutil.copy(stats["slowest_file"], slowest_file)
        for found in stats.get("findings", []):
            by_name[str(found["name"])] = found
        # libFuzzer's own findings end the run: timeout-*, oom-*, crash-* (a crash the
        # harness did not catch: an error out of Python itself).
        new = sorted(p for p in findings.iterdir() if p.name not in before
                     and p.name.split("-")[0] in ("timeout", "oom", "crash", "leak"))
        for path in new:
            kind = path.name.split("-")[0]
            kind = {"timeout": "hang", "crash": "crash (libFuzzer)"}.get(kind, kind)
            by_name[path.name] = {"kind": kind, "name": f"{kind}: {path.name}",
                                  "file": str(path), "bytes": path.stat().st_size, "count": 1}
        if code == 0 or not new:
            if code != 0:
                by_name[f"exit {code}"] = {"kind": "exit", "name": f"the harness exited {code}",
                                           "file": str(work / f"libfuzzer-{run}.log"),
                                           "bytes": 0, "count": 1}
            break
        row.restarts += 1
    # A slow input is one the reader is slow on, not the instrumentation (several times
    # slower): measured again alone, it is a finding only if it is still over the bound.
    for name, found in list(by_name.items()):
        if found["kind"] == "slow":
            alone = measure(target, pathlib.Path(str(found["file"])), args)
            if alone and float(alone["cpu_s"]) <= args.slow_cpu:
                row.notes.append(f"{found['file']}: {alone['cpu_s']} CPU s alone, under "
                                 f"{args.slow_cpu:g} (slow only instrumented)")
                del by_name[name]
    row.findings = list(by_name.values())
    if slowest_file is not None:
        row.slowest_bytes = slowest_file.stat().st_size
        measured = measure(target, slowest_file, args)
        if measured:
            row.slowest_rss_mb = float(measured["rss_above_start_mb"])
            row.slowest_alone_cpu_s = float(measured["cpu_s"])
        keep = findings / "slowest.bin"
        shutil.copy(slowest_file, keep)
    if not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return row


def table(rows: list[Row]) -> str:
    head = ("| target | seconds (CPU) | executions | execs/s (per CPU s) | coverage (cov / ft) "
            "| corpus | slowest input (CPU s fuzzed / alone, bytes) | its RSS added (MiB) "
            "| peak RSS (MiB) "
            "| findings |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        kinds: dict[str, int] = {}
        for f in r.findings:
            kinds[str(f["kind"])] = kinds.get(str(f["kind"]), 0) + 1
        said = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
        lines.append(f"| {r.target} | {r.seconds:.0f} ({r.cpu_seconds:.0f}) | {r.execs:,} | "
                     f"{r.per_second:,.0f} ({r.per_cpu_second:,.0f}) | "
                     f"{r.cov:,} / {r.ft:,} | {r.corpus:,} | {r.slowest_cpu_s:.3f} / "
                     f"{r.slowest_alone_cpu_s:.3f}, "
                     f"{r.slowest_bytes:,} | {r.slowest_rss_mb:.1f} | {r.peak_rss_mb:.0f} | "
                     f"{said} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, help="fuzzing time per target")
    parser.add_argument("--merge", type=pathlib.Path, metavar="DIR",
                        help="add DIR/<target>/'s inputs that add coverage to the corpus "
                        "(no fuzzing)")
    parser.add_argument("--corpus", type=pathlib.Path, default=CORPUS,
                        help="the corpus folder (of a folder per target) --merge adds to")
    parser.add_argument("--target", action="append", choices=TARGETS,
                        help="a target (again for more); default: all")
    parser.add_argument("--findings", type=pathlib.Path,
                        help="where findings are kept (default: a new temporary folder)")
    parser.add_argument("--keep-corpus", action="store_true",
                        help="add the inputs found to fuzz/corpus/<target>/")
    parser.add_argument("--keep-work", action="store_true", help="keep the logs and scratch")
    parser.add_argument("--slow-cpu", type=float, default=5.0,
                        help="CPU seconds of one input beyond which it is a finding")
    parser.add_argument("--memory-mb", type=float, default=512,
                        help="MiB of peak RSS above start-up beyond which an input is a finding")
    parser.add_argument("--timeout", type=int, default=300,
                        help="wall seconds of one input beyond which it is a hang (libFuzzer; "
                        "wall time, so generous: on a loaded machine a 455-byte macro bomb "
                        "took 61 s, 8.5 s of CPU)")
    parser.add_argument("--max-seeds", type=int, default=0,
                        help="start from the N smallest inputs of the corpus only (a smoke "
                        "run: libFuzzer first runs every seed, whatever --seconds says)")
    parser.add_argument("--rss-limit-mb", type=int, default=2048,
                        help="libFuzzer's RSS limit: past it the run ends with an OOM")
    parser.add_argument("--seed", type=int, default=48, help="libFuzzer's -seed")
    args = parser.parse_args(argv)
    if args.merge is not None:
        print("| target | corpus before | offered | added |\n|---|---:|---:|---:|")
        for target in args.target or TARGETS:
            if (args.merge / target).is_dir():
                before, given, added = merge(target, args.merge / target,
                                            args.corpus / target, args)
                print(f"| {target} | {before:,} | {given:,} | {added:,} |", flush=True)
        return 0
    if args.seconds is None:
        parser.error("--seconds is required (or --merge)")
    findings_root = args.findings or pathlib.Path(tempfile.mkdtemp(prefix="citerun-fuzz-findings-"))
    loads = [load_average()]
    print(f"bench.fuzz: {args.seconds} s per target on {os.cpu_count()} cores, load "
          f"{loads[0]}; findings under {findings_root}", flush=True)
    rows = []
    for target in args.target or TARGETS:
        rows.append(fuzz_one(target, args, findings_root))
        r = rows[-1]
        print(f"  {target}: {r.execs:,} executions in {r.seconds:.0f} s, cov {r.cov}, "
              f"{len(r.findings)} finding(s)", flush=True)
    loads.append(load_average())
    print()
    print(table(rows))
    print(f"\nload average (1/5/15 min) before {loads[0]}, after {loads[1]}"
          + ("; the machine was busy" if was_busy(*loads) else ""))
    found = [f for r in rows for f in r.findings]
    for r in rows:
        for note in r.notes:
            print(f"  {r.target}: {note}")
    for r in rows:
        for f in r.findings:
            print(f"  {r.target}: {f['kind']}: {f['name']} ({f['bytes']} bytes, seen "
                  f"{f['count']} time(s)): {f['file']}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
