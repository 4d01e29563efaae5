"""One fuzz target under atheris (libFuzzer), as :mod:`bench.fuzz` starts it.

``python -m fuzz.harness TARGET --stats FILE --findings DIR [libFuzzer flags] CORPUS...``

citerun and the parsers it reads with (bibtexparser, pylatexenc, defusedxml) are
instrumented as they are imported, so libFuzzer's coverage (``cov:``, edges) guides the
mutations into the readers' branches. Each input runs :func:`fuzz.targets.run`; a
documented refusal is fine. A finding is kept in ``--findings`` (the smallest input of
each kind, with its traceback) and the fuzzing goes on:

- ``crash``: any other exception, by its type and the innermost citerun line it came
  from;
- ``slow``: an input that took more than ``--slow-cpu`` CPU seconds (CPU, not wall time:
  the machine may be shared);
- ``memory``: an input after which the process's peak RSS stood more than
  ``--memory-mb`` above where it stood after start-up.

An input that runs past libFuzzer's ``-timeout`` (a hang) or takes the process past
``-rss_limit_mb`` ends the process; libFuzzer writes it as ``timeout-*`` / ``oom-*``
under ``-artifact_prefix`` and the bench counts it. ``--stats`` is rewritten about once a
second: executions, wall and CPU seconds, the slowest input (CPU seconds, its file), peak
RSS, findings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import resource
import sys
import time
import traceback

import atheris

#: The packages whose code guides the fuzzer (the readers and the parsers they call).
INSTRUMENTED = ["citerun", "bibtexparser", "pylatexenc", "defusedxml"]
SLOW_CPU_S = 5.0
MEMORY_MB = 512


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def signature(err: BaseException) -> str:
    """A crash's kind: its type and the innermost frame in citerun (else the innermost)."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/citerun/" in f.filename] or frames
    where = f"{pathlib.Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(err).__name__} at {where}"


class Recorder:
    def __init__(self, target: str, stats: pathlib.Path, findings: pathlib.Path,
                 slow_cpu_s: float, memory_mb: float) -> None:
        self.target, self.stats_path, self.findings_dir = target, stats, findings
        self.slow_cpu_s, self.memory_mb = slow_cpu_s, memory_mb
        findings.mkdir(parents=True, exist_ok=True)
        self.execs = 0
        self.slowest = 0.0
        self.slowest_file = findings / "slowest.bin"
        self.findings: dict[str, dict[str, object]] = {}
        self.baseline_mb = _peak_rss_mb()
        self.started = time.monotonic()
        self.cpu_started = time.process_time()
        self.written = 0.0

    def _keep(self, kind: str, name: str, data: bytes, detail: str) -> None:
        found = self.findings.get(name)
        if found is not None:
            found["count"] = int(found["count"]) + 1  # type: ignore[call-overload]
            if len(data) >= int(found["bytes"]):  # type: ignore[call-overload]
                return
        digest = hashlib.sha1(name.encode()).hexdigest()[:12]
        path = self.findings_dir / f"py-{kind}-{digest}.bin"
        path.write_bytes(data)
        path.with_suffix(".txt").write_text(f"{name}\n\n{detail}\n")
        self.findings[name] = {"kind": kind, "name": name, "file": str(path),
                               "bytes": len(data),
                               "count": 1 if found is None else found["count"]}
        self.write(force=True)

    def one(self, data: bytes) -> None:
        from fuzz import targets

        cpu = time.process_time()
        try:
            targets.run(self.target, data)
        except Exception as err:  # noqa: BLE001 - every exception but a refusal is a finding
            self._keep("crash", signature(err), data, traceback.format_exc())
        cpu = time.process_time() - cpu
        self.execs += 1
        if cpu > self.slowest:
            self.slowest = cpu
            self.slowest_file.write_bytes(data)
        if cpu > self.slow_cpu_s:
            self._keep("slow", f"slow: over {self.slow_cpu_s:g} CPU s", data,
                       f"{cpu:.2f} CPU seconds, {len(data)} bytes")
        peak = _peak_rss_mb()
        if peak - self.baseline_mb > self.memory_mb:
            self._keep("memory", f"memory: peak RSS over {self.memory_mb:g} MiB above start",
                       data, f"peak RSS {peak:.0f} MiB, {peak - self.baseline_mb:.0f} MiB "
                       f"above start-up, {len(data)} bytes")
            self.baseline_mb = peak  # the next such input must go higher again
        self.write()

    def write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.written < 1.0:
            return
        self.written = now
        tmp = self.stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({
            "target": self.target, "execs": self.execs, "seconds": now - self.started,
            "cpu_seconds": time.process_time() - self.cpu_started,
            "slowest_cpu_s": self.slowest, "slowest_file": str(self.slowest_file),
            "peak_rss_mb": _peak_rss_mb(), "findings": list(self.findings.values()),
        }))
        os.replace(tmp, self.stats_path)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target")
    parser.add_argument("--stats", type=pathlib.Path, required=True)
    parser.add_argument("--findings", type=pathlib.Path, required=True)
    parser.add_argument("--slow-cpu", type=float, default=SLOW_CPU_S)
    parser.add_argument("--memory-mb", type=float, default=MEMORY_MB)
    parser.add_argument("--exec-as", help="the program libFuzzer runs again for -merge=1 (its "
                        "argv[0]): an executable that starts this harness with these options")
    args, libfuzzer = parser.parse_known_args(argv[1:])
    with atheris.instrument_imports(include=INSTRUMENTED):
        from fuzz import targets
        # The readers load lazily in the worker; here at once, so they are instrumented.
        from citerun.pipeline.writer import bib, csl, docx, latex  # noqa: F401
        from citerun.web import intake  # noqa: F401
    if args.target not in targets.TARGETS:
        parser.error(f"unknown target {args.target!r}; one of {', '.join(targets.TARGETS)}")
    targets.run(args.target, b"")  # warm: caches, lazy imports
    recorder = Recorder(args.target, args.stats, args.findings, args.slow_cpu, args.memory_mb)
    recorder.write(force=True)
    atheris.Setup([args.exec_as or argv[0], *libfuzzer], recorder.one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
