"""What the layout step costs: its stages timed on one (large) PDF, and pymupdf4llm's
layout model against the line geometry on the smallest real PDFs (``--pymupdf4llm``)."""

from __future__ import annotations

import pathlib
import time

from bench import machine
from bench.common import evaldata
from citerun.pipeline import pdf, recipe
from citerun.pipeline.settings import LimitSettings


def layout_cost(path: pathlib.Path) -> list[tuple[str, float]]:
    """Seconds for one PDF: MuPDF's block order (the old parser's text step), the layout
    step (``get_text("dict")`` lines, columns, paragraphs), the page renderings, the whole
    read and the extraction as a run does them (``recipe.read``, ``recipe.extract``)."""
    import pymupdf  # noqa: PLC0415 (only this measurement needs it directly)

    from citerun.pipeline import layout, layout_reading  # noqa: PLC0415

    data = path.read_bytes()
    timings: list[tuple[str, float]] = []
    with pymupdf.open(stream=data, filetype="pdf") as doc:  # type: ignore[no-untyped-call]
        start = time.perf_counter()
        for index in range(doc.page_count):
            doc[index].get_text("blocks", flags=layout.TEXT_FLAGS, sort=True)
        timings.append(("MuPDF blocks, sorted (old text step)", time.perf_counter() - start))
        start = time.perf_counter()
        layout_reading.read_document(doc)
        timings.append(("layout: dict lines, columns, paragraphs", time.perf_counter() - start))
        start = time.perf_counter()
        pdf.render_pages(doc)
        timings.append(("render every page (grey JPEG, 0.6x)", time.perf_counter() - start))
    start = time.perf_counter()
    parsed = recipe.read(data, LimitSettings(), 500 * 1024 * 1024)
    timings.append(("read (as the worker runs it)", time.perf_counter() - start))
    start = time.perf_counter()
    recipe.extract(parsed, LimitSettings())
    timings.append(("extract", time.perf_counter() - start))
    return timings


LAYOUT_SECTION = "## Layout step: pymupdf4llm vs line geometry"


def time_pymupdf4llm(count: int, write: bool) -> int:
    """Seconds per page of pymupdf4llm's layout model against this module's layout step."""
    import sys  # noqa: PLC0415

    # citerun.pipeline keeps pymupdf's layout analyser out (issue 47): this comparison is
    # the one place that wants it.
    if sys.modules.get("pymupdf.layout", False) is None:
        del sys.modules["pymupdf.layout"]
    import pymupdf  # noqa: PLC0415
    import pymupdf.layout  # noqa: F401, PLC0415
    import pymupdf4llm  # type: ignore[import-not-found]  # noqa: PLC0415

    from citerun.pipeline import layout_reading  # noqa: PLC0415

    paths = sorted((evaldata() / "realpdf" / "pdfs").glob("*.pdf"), key=lambda p: p.stat().st_size)
    lines = [
        LAYOUT_SECTION,
        "",
        "`python -m bench.quality.realpdf --pymupdf4llm 3 --write`: pymupdf 2's own layout",
        "analysis (`pymupdf4llm.to_markdown(doc, use_ocr=False)`, an ONNX model shipped in",
        "the wheel) against `src/citerun/pipeline/layout.py` (`get_text(\"dict\")` lines, columns,",
        "paragraphs) on the smallest real PDFs, same process, same machine.",
        "",
        "| document | pages | pymupdf4llm s/page | layout step s/page |",
        "|---|---:|---:|---:|",
    ]
    print("\n".join(lines))
    for path in paths[:count]:
        with pymupdf.open(path) as doc:  # type: ignore[no-untyped-call]
            start = time.perf_counter()
            pymupdf4llm.to_markdown(doc, use_ocr=False, show_progress=False)
            model = time.perf_counter() - start
            start = time.perf_counter()
            layout_reading.read_document(doc)
            ours = time.perf_counter() - start
            lines.append(f"| {path.name} | {doc.page_count} | {model / doc.page_count:.2f} | "
                         f"{ours / doc.page_count:.3f} |")
            print(lines[-1], flush=True)
    lines += [
        "",
        "Chosen: the line geometry. The model is one to two orders of magnitude slower per",
        "page (a 150-page thesis would take minutes, over the 30 s budget for parse +",
        "extract), and it returns Markdown without the line boxes that the report needs to",
        "highlight evidence; the geometry gives reading order across columns, line starts,",
        "hanging indents and boxes directly. The model stays an option for layouts the",
        "geometry misreads (three columns, text wrapped around figures).",
        "",
        machine.summary_line(),
        "",
    ]
    if write:
        machine.write_section(LAYOUT_SECTION, "\n".join(lines))
    return 0
