"""Issue 48, low finding: ``citerun verify --bib`` joined ``@string`` references with ``#``
without a size limit, in the CLI's own process (outside the parse sandbox): a 1 MB .bib
reached 4.08 GB RSS. The joined value is bounded now (``BibLimits.max_joined_chars``,
100,000 characters, an ``@string``'s or a field's, checked before joining) and a .bib
over it is refused with the limit named.

The real CLI in a child process, its peak RSS read as its parent's
``RUSAGE_CHILDREN`` (a fresh parent, so only this child counts): a 96 KB .bib whose two
titles name one 60,000-character ``@string`` 3,000 times each (180 MB a title), and an
813-byte one whose ``@string`` doubles itself 30 times (16 GiB once joined, as BibTeX
joins them), are refused at once with the limit named; a library that joins a journal's
name from its macros is still read.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

from citerun.pipeline.writer import bib
from tests.conftest import citerun_command

LATEX = r"""\documentclass{article}
\begin{document}
Crows bend twigs into hooks \cite{a0}.
\bibliography{refs}
\end{document}
"""
LIMIT = "CITERUN_LIMITS__WRITER__BIB__MAX_JOINED_CHARS"
# Peak RSS of the CLI refusing a .bib: its imports and the file (measured ~150 MiB).
MAX_RSS_MIB = 400

# A parent whose only child is the CLI: its peak RSS and exit status, as JSON.
_MEASURE = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300)
print(json.dumps({"rc": done.returncode, "stderr": done.stderr[-3000:],
                  "rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _many_references() -> str:
    refs = " # ".join(["big"] * 3_000)
    return "\n".join([
        '@string{big = "' + "x" * 60_000 + '"}',
        *(f"@article{{a{n}, title = {refs}, author = {{Alt, A.}}, year = 2020}}"
          for n in range(2))]) + "\n"


def _doubling() -> str:
    lines = ['@string{s0 = "xxxxxxxxxxxxxxxx"}']
    lines += [f"@string{{s{n} = s{n - 1} # s{n - 1}}}" for n in range(1, 31)]
    lines.append("@article{a0, title = s30, author = {Alt, A.}, year = 2020}")
    return "\n".join(lines) + "\n"


def _verify(tmp_path: pathlib.Path, library: str) -> tuple[dict[str, object], float]:
    folder = tmp_path / "thesis"
    folder.mkdir(exist_ok=True)
    (folder / "thesis.tex").write_text(LATEX)
    (folder / "refs.bib").write_text(library)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *citerun_command(), "verify",
         str(folder / "thesis.tex"), "--bib", str(folder / "refs.bib"),
         "--out", str(tmp_path / "report.json")],
        cwd=tmp_path, env={**{k: v for k, v in os.environ.items()
                              if k != "CITERUN_DATABASE_URL"},
                           "CITERUN_DATA_DIR": str(tmp_path / "data")},
        capture_output=True, text=True, timeout=400, check=True)
    return json.loads(done.stdout), time.monotonic() - started


def test_a_bib_joining_gigabytes_from_a_small_file_is_refused_with_the_limit_named(
        tmp_path: pathlib.Path) -> None:
    for name, library in (("many references", _many_references()), ("doubling", _doubling())):
        run, took_s = _verify(tmp_path, library)
        print(f"{name}: {len(library):,} bytes -> exit {run['rc']} in {took_s:.1f} s, "
              f"peak RSS {run['rss_mib']:.0f} MiB")
        # (before, many references: exit 0 after 73 s, the two 180 MB titles joined, peak
        # RSS 517 MiB, growing with the file; now exit 2 in 9 s, 173 MiB; doubling: read,
        # each @string left unjoined)
        assert run["rc"] == 2, run
        assert LIMIT in str(run["stderr"]) and "refs.bib" in str(run["stderr"]), run
        assert float(str(run["rss_mib"])) < MAX_RSS_MIB, run
        assert took_s < 60, took_s


def test_a_library_that_joins_names_from_its_macros_is_still_read() -> None:
    items, skipped = bib.read_bibtex(
        '@string{icml = "Proc. of " # "ICML"}\n@string{icml20 = icml # { 2020}}\n'
        '@inproceedings{a, title = "Deep " # icml20, author = {Alt, A.}, year = 2020,'
        ' month = jan}\n@article{b, title = {C# in {Depth}}, author = {Alt, A.}, year = 2020}\n')
    assert [(i.key, i.title) for i in items] == [
        ("a", "Deep Proc. of ICML 2020"), ("b", "C# in Depth")]
    assert skipped == ()
