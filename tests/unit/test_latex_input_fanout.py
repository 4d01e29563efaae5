"""Issue 41 (Low): tiny ``\\input`` files fanned out 10 x 20 deep (2.4 KB) escaped the text
cap's intent and burnt the parse stage's clock on every run (18.6 s of CPU on the
development machine before the 20 MB cap stopped it). Every reading of an included file
now counts (LatexLimits.max_includes, a setting): the bundle is refused at once, in the real parse job
under the sandbox's parse limits, with a message that says why."""

from __future__ import annotations

import time

from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.pipeline.writer import formats
from citerun.worker import sandbox, steps


def _fanout(width: int = 10, depth: int = 20) -> bytes:
    files = {"main.tex": "\\documentclass{article}\\begin{document}\n"
             + "\\input{f1}\n" * width + "\\end{document}\n"}
    for level in range(1, depth + 1):
        files[f"f{level}.tex"] = (f"\\input{{f{level + 1}}}\n" * width if level < depth
                                  else "Heat.\n")
    files[formats.MAIN_MEMBER] = "main.tex"
    return formats.bundle({name: text.encode() for name, text in files.items()})


async def test_an_input_fanout_is_refused_at_once() -> None:
    data = _fanout()
    assert len(data) < 2500
    limits = LimitSettings()
    started = time.monotonic()
    outcome = await sandbox.run(limits.parse, steps.parse, data, limits,
                                DocumentSettings(max_bytes=10**8), slots=limits.max_children)
    elapsed = time.monotonic() - started
    assert isinstance(outcome, steps.Rejected), outcome
    assert f"reads included files over {limits.writer.latex.max_includes:,} times" in outcome.message
    assert elapsed < 3.0, elapsed


def test_a_thesis_of_many_chapters_read_once_each_is_read() -> None:
    chapters = {f"ch{n}.tex": f"Chapter {n} on heat.\n" for n in range(300)}
    main = ("\\documentclass{article}\\begin{document}\n"
            + "".join(f"\\input{{ch{n}}}\n" for n in range(300)) + "\\end{document}\n")
    data = formats.bundle({"main.tex": main.encode(), formats.MAIN_MEMBER: b"main.tex",
                           **{k: v.encode() for k, v in chapters.items()}})
    thesis = formats.read_thesis(data)
    text = " ".join(t for _, t in thesis.pages)
    assert "Chapter 0 on heat." in text and "Chapter 299 on heat." in text
