"""Issue 48, low finding: a .bib amplified into what is stored. Entries a few dozen bytes
long that name big ``@string`` macros (or a crossref parent) each gave the whole of them:
a 65 KB .bib became 48 MB of stored written thesis and +300 MiB in the worker, and the
same names were decoded again for every entry.

The real parse child (``steps.parse`` under ``sandbox.run``, as the worker runs it) reads
a LaTeX thesis whose 65 KB .bib has 1,150 entries naming a 2,000-character title and
4,400 characters of file paths by macro: refused as corrupt naming
``BibLimits.max_items_chars`` before its items leave the child. A real library (shared
journal macros, a proceedings crossref'd by its papers) is read as before, and a
crossref parent's 200 names are decoded once for its 600 children.
"""

from __future__ import annotations

import json
import time

from citerun.pipeline import document, intake
from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.pipeline.writer import bib
from citerun.worker import sandbox, steps

LIMITS = LimitSettings()
TEX = (b"\\documentclass{article}\n\\begin{document}\nCrows bend twigs \\cite{k1}.\n"
       b"\\bibliography{refs}\n\\end{document}\n")


def _repeating_macros(entries: int = 1_150) -> str:
    paths = ";".join(f":pdfs/paper-{n:04d}.pdf:PDF" for n in range(200))
    return "\n".join([
        "@string{t = {" + "Tool use in crows " * 110 + "}}",
        "@string{f = {" + paths + "}}",
        *(f"@article{{k{n}, title = t, file = f, year = 2020}}" for n in range(entries))]) + "\n"


async def test_a_bib_repeating_big_macros_is_refused_before_its_items_leave_the_child(
        ) -> None:
    library = _repeating_macros()
    assert 60_000 < len(library) < 70_000
    data = intake.thesis_bytes("thesis.tex", TEX, [("refs.bib", library.encode())])
    started = time.monotonic()
    outcome = await sandbox.run(LIMITS.parse, steps.parse, data, LIMITS,
                                DocumentSettings(max_bytes=10**8), slots=LIMITS.max_children)
    took_s = time.monotonic() - started
    # (before: the child ran past its 45 s wall-clock limit here, a failure of the moment
    # that leaves the document staged for every new run to parse again)
    if isinstance(outcome, steps.Parsed):  # every entry's items sent back and stored
        stored = json.dumps(document.written_json(outcome.document))
        raise AssertionError(f"{len(library):,} bytes of .bib: {len(stored) / 1e6:.1f} MB of "
                             f"parsed JSON, in {took_s:.1f} s")
    assert outcome.reason == "corrupt", outcome
    assert "CITERUN_LIMITS__WRITER__BIB__MAX_ITEMS_CHARS" in outcome.message, outcome.message
    print(f"{len(library):,} bytes of .bib refused in {took_s:.1f} s")
    assert took_s < 30, took_s


def test_a_real_library_is_read_and_a_parents_names_decoded_once() -> None:
    real = "\n".join([
        '@string{jbio = "Journal of Biology"}',
        "@proceedings{icml, title = {Proceedings of ICML}, editor = {Ng, A. and Li, B.},"
        " year = 2020}",
        *(f"@inproceedings{{p{n}, title = {{Paper {n}}}, author = {{Alt, A. and Bo, B.}},"
          f" crossref = {{icml}}, journal = jbio}}" for n in range(300))]) + "\n"
    items, skipped = bib.read_bibtex(real)
    assert len(items) == 301 and skipped == ()
    assert items[1].title == "Paper 0" and items[1].authors == ("Alt", "Bo")
    assert items[1].year == 2020  # from the parent

    authors = " and ".join(f"Author{n}, A." for n in range(200))
    shared = "\n".join([f"@book{{p, title = {{A book}}, author = {{{authors}}}, year = 2020}}",
                        *(f"@inbook{{c{n}, crossref = p}}" for n in range(600))]) + "\n"
    started = time.process_time()
    items, _ = bib.read_bibtex(shared)
    cpu_s = time.process_time() - started
    print(f"600 children of a parent with 200 names: {cpu_s:.1f} s CPU")
    assert len(items) == 601 and all(len(i.authors) == 200 for i in items)
    # (before: every child's names decoded again: 21 s here; 2,000 children 238 s)
    assert cpu_s < 5, cpu_s
