"""A document's pages in reading order (steps 2-4 of :mod:`.layout`): columns cut at
the gutter, running heads, footers and page numbers dropped, paragraph starts marked from
geometry, footnotes moved after the body (:func:`read_document`)."""

from __future__ import annotations

import collections
import re
import statistics
from collections.abc import Callable

import pymupdf

from citerun.pipeline.layout import FOOTNOTE_START, PAGE_NUMBER, Line, PageLayout
from citerun.pipeline.layout_lines import _FROM_SUPERSCRIPT, _Raw, _raw_lines


# A line is a running head or footer when it lies in this share of the page's height
# at the top or bottom; the margins of A4/Letter layouts are 7-12 %.
_EDGE_SHARE = 0.09
# Running heads repeat their text (digits aside) on at least this many pages.
_MIN_REPEATS = 2
# The gutter is searched for in this middle share of the text's width.
_GUTTER_RANGE = (0.3, 0.7)
# A page reads as two columns only when at most this share of its lines crosses the
# gutter and each side holds at least this share of the lines.
_MAX_CROSSING_SHARE = 0.3
_MIN_SIDE_SHARE = 0.15
# ... or, when no more than 5 % of the lines cross the gutter, this many lines.
_MIN_SHORT_SIDE = 5
# A line this many points larger than the body text is a title or an author line.
_TITLE_SIZE_STEP = 2.0
# Indent differences below this many points are noise (justified text, italic slant).
_INDENT_TOLERANCE = 2.5

_DIGITS = re.compile(r"\d+")
_SENTENCE_END = re.compile(r"[.!?:][\"'”’)\]]*$")


# --- columns -------------------------------------------------------------------------


def _gutter(lines: list[_Raw]) -> float | None:
    """The x of the gap between two columns, or None for a one-column page."""
    if len(lines) < 8:
        return None
    left_edge = min(r.x0 for r in lines)
    right_edge = max(r.x1 for r in lines)
    width = right_edge - left_edge
    if width <= 0:
        return None
    best: tuple[int, float] | None = None
    steps = 80
    low, high = _GUTTER_RANGE
    for step in range(steps + 1):
        x = left_edge + width * (low + (high - low) * step / steps)
        crossing = sum(1 for r in lines if r.x0 < x - 1 and r.x1 > x + 1)
        if best is None or crossing < best[0]:
            best = (crossing, x)
    assert best is not None
    crossing, x = best
    left = sum(1 for r in lines if r.x1 <= x + 1)
    right = sum(1 for r in lines if r.x0 >= x - 1)
    total = len(lines)
    if crossing > _MAX_CROSSING_SHARE * total:
        return None
    # A clean gutter (next to no line crosses it) also makes two columns when one side
    # is short: the last page of a paper, whose right column holds a few entries.
    clean = crossing <= 0.05 * total
    least = max(_MIN_SHORT_SIDE, 0.05 * total) if clean else _MIN_SIDE_SHARE * total
    if left < least or right < least:
        return None
    # Columns of text, not a table's label column: the right side holds long lines.
    right_widths = sorted(r.x1 - r.x0 for r in lines if r.x0 >= x - 1)
    left_widths = sorted(r.x1 - r.x0 for r in lines if r.x1 <= x + 1)
    # (The upper quartile: labels of a figure are many short lines.)
    if right_widths[3 * len(right_widths) // 4] < 0.25 * width or left_widths[3 * len(left_widths) // 4] < 0.25 * width:
        return None
    return x


def _reading_order(lines: list[_Raw]) -> list[tuple[_Raw, int]]:
    """Lines in reading order, each with its column (0 whole width, 1 left, 2 right)."""
    gutter = _gutter(lines)
    if gutter is None:
        return [(r, 0) for r in lines]
    ordered: list[tuple[_Raw, int]] = []
    band: list[_Raw] = []

    left_edge = min(r.x0 for r in lines)
    right_edge = max(r.x1 for r in lines)
    reach = 0.08 * (right_edge - left_edge)  # how far a spanning line reaches past the gutter

    def flush() -> None:
        ordered.extend((r, 1) for r in band if (r.x0 + r.x1) / 2 <= gutter)
        ordered.extend((r, 2) for r in band if (r.x0 + r.x1) / 2 > gutter)
        band.clear()

    for raw in lines:
        if raw.x0 < gutter - reach and raw.x1 > gutter + reach:
            flush()
            ordered.append((raw, 0))
        else:
            band.append(raw)
    flush()
    return ordered


# --- running heads -------------------------------------------------------------------


def _edge_key(text: str) -> str:
    """Running heads differ only in their numbers ("Chapter 2 · 17"), so ignore those."""
    return _DIGITS.sub("#", text.casefold())


def _lone_head(lines: list[_Raw], height: float) -> _Raw | None:
    """A running head printed once ("BIBLIOGRAPHY" on the last page of a list): the
    page's top line, inside the top margin band, well above the text below it."""
    by_y = sorted(lines, key=lambda r: r.y0)
    if len(by_y) < 2:
        return None
    top, below = by_y[0], by_y[1]
    if top.y1 < 0.07 * height and below.y0 - top.y1 > 1.5 * top.height and len(top.text) <= 80:
        return top
    return None


def _edge_lines(lines: list[_Raw], height: float) -> list[_Raw]:
    """Lines in the top or bottom margin band, and the first and last two lines of the
    page when they lie within twice that band (a head set low, a footer set high)."""
    if not lines:
        return []
    by_y = sorted(lines, key=lambda r: r.y0)
    # The first two lines, with what stands beside the second ("Processing" and the page
    # number "5" on the second line of a wrapped running head), and the last two.
    second = by_y[min(1, len(by_y) - 1)].y0
    near = {id(r) for r in by_y[-2:]} | {id(r) for r in by_y if r.y0 <= second + 1.0}
    return [
        r
        for r in lines
        if r.y1 < _EDGE_SHARE * height
        or r.y0 > (1 - _EDGE_SHARE) * height
        or (
            id(r) in near
            and (r.y1 < 2 * _EDGE_SHARE * height or r.y0 > (1 - 2 * _EDGE_SHARE) * height)
        )
    ]


# --- paragraphs ----------------------------------------------------------------------


def _column_edges(ordered: list[tuple[_Raw, int]]) -> dict[int, tuple[float, float, bool]]:
    """Per column: the body's left edge, its right edge, and whether it hangs.

    The left edge is where most *full* lines (those that reach the right edge) start:
    an abstract set narrower on both sides does not move it. A column hangs (reference
    entries with a hanging indent) when some full lines start left of that edge.
    """
    by_column: dict[int, list[_Raw]] = collections.defaultdict(list)
    for raw, column in ordered:
        by_column[column].append(raw)
    edges: dict[int, tuple[float, float, bool]] = {}
    for column, raws in by_column.items():
        ends = sorted(r.x1 for r in raws)
        right = ends[int(0.9 * (len(ends) - 1))]
        starts = [r.x0 for r in raws]
        width = max(right - min(starts), 1.0)
        full = [r for r in raws if r.x1 >= right - 0.06 * width] or raws
        counter = collections.Counter(round(r.x0) for r in full)
        left = float(counter.most_common(1)[0][0])
        outdented = sum(1 for r in full if r.x0 < left - _INDENT_TOLERANCE)
        hanging = outdented >= max(2, 0.1 * len(full)) and left - min(starts) < 0.2 * width
        if not hanging:
            # Entries of a hanging list alternate: an outdented first line, then
            # indented ones; an abstract set in from the body is one block.
            mode = float(collections.Counter(round(r.x0) for r in raws).most_common(1)[0][0])
            flags = [r.x0 < mode - _INDENT_TOLERANCE for r in raws]
            runs = sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1]))
            if runs >= 3 and sum(flags) <= 0.6 * len(flags) and mode - min(starts) < 0.2 * width:
                hanging, left = True, mode
        if not hanging:
            left = min(left, min(r.x0 for r in full))
        edges[column] = (left, right, hanging)
    return edges


def _mark_paragraphs(ordered: list[tuple[_Raw, int]]) -> list[Line]:
    edges = _column_edges(ordered)
    gaps = [
        b.y0 - a.y1
        for (a, ca), (b, cb) in zip(ordered, ordered[1:])
        if ca == cb and 0 <= b.y0 - a.y1 < 2 * a.height and abs(a.size - b.size) < 0.5
    ]
    heights = [raw.height for raw, _ in ordered]
    quarter_line = 0.25 * statistics.median(heights) if heights else 3.0
    usual_gap = min(statistics.median(gaps), quarter_line) if gaps else quarter_line
    lines: list[Line] = []
    previous: tuple[_Raw, int] | None = None
    for raw, column in ordered:
        start = True
        if previous is not None:
            before, before_column = previous
            left, _, hanging = edges[column]
            before_left, before_right, _ = edges[before_column]
            indent = raw.x0 - left
            before_indent = before.x0 - before_left
            ended = bool(_SENTENCE_END.search(before.text))
            short = before.x1 < before_right - 0.12 * max(before_right - before_left, 1.0)
            same_column = column == before_column and raw.y0 >= before.y0
            gap = raw.y0 - before.y1 if same_column else 0.0
            style_change = abs(raw.size - before.size) >= 0.8 or (raw.bold != before.bold and (
                len(before.text) < 80 or len(raw.text) < 80))
            if hanging:
                start = indent < -_INDENT_TOLERANCE or (gap > usual_gap + 0.6 * raw.height)
            else:
                start = (
                    gap > usual_gap + 0.6 * raw.height
                    or (indent > _INDENT_TOLERANCE and before_indent <= _INDENT_TOLERANCE and ended)
                    or (short and ended)
                )
            start = start or style_change or not same_column and ended and short
            if before.text.endswith("-") and raw.text[:1].islower():
                start = False
        lines.append(Line(raw.text, (raw.x0, raw.y0, raw.x1, raw.y1), raw.size, raw.bold, start))
        previous = (raw, column)
    return lines

def _footnotes_last(ordered: list[tuple[_Raw, int]], body_size: float) -> list[tuple[_Raw, int]]:
    """Footnotes (a run of small lines closing a column, opened by a note number) move
    to the end of the page, so they do not cut a sentence or a reference entry that
    goes on in the next column."""
    moved: list[tuple[_Raw, int]] = []
    kept: list[tuple[_Raw, int]] = []
    columns = sorted({column for _, column in ordered})
    for column in columns:
        lines = [item for item in ordered if item[1] == column]
        if not lines:
            continue
        note_size = lines[-1][0].size
        start = len(lines)
        while start > 0 and abs(lines[start - 1][0].size - note_size) <= 0.3:
            start -= 1
        if start > 0 and lines[start - 1][0].size < note_size + 0.9 or note_size > body_size - 0.9:
            start = len(lines)  # no smaller run below the column's text
        # The run must sit below the column's body text and open with a note number.
        if 0 < start < len(lines) and FOOTNOTE_START.match(lines[start][0].text):
            moved.extend(lines[start:])
            kept.extend(lines[:start])
        else:
            kept.extend(lines)
    if not moved:
        return ordered
    order = {id(raw): index for index, (raw, _) in enumerate(ordered)}
    kept.sort(key=lambda item: order[id(item[0])])
    return kept + [(raw, 3) for raw, _ in moved]


# --- pages ---------------------------------------------------------------------------


def _body_size(pages: list[list[_Raw]]) -> float:
    chars: collections.Counter[float] = collections.Counter()
    for lines in pages:
        for raw in lines:
            chars[raw.size] += len(raw.text)
    return chars.most_common(1)[0][0] if chars else 10.0


#: Reads one page by OCR (:func:`citerun.pipeline.pdf.ocr.read_page` with its settings).
PageOcr = Callable[[pymupdf.Page], pymupdf.TextPage]


def read_document(doc: pymupdf.Document, ocr: PageOcr | None = None,
                  max_page_chars: int | None = None) -> list[PageLayout]:
    """Every page's lines in reading order, running heads and page numbers dropped.

    A text layer that is not text (U+FFFD, glyph ids: :func:`~.pdf.ocr.text_layer`) is left
    out, as if the page had none; with ``ocr``, such a page, and a page without a text
    layer that shows an image, is read by OCR instead. A page of more than
    ``max_page_chars`` characters is kept as it is, whatever they are: the page cap refuses
    it (a hostile page of "Aa, Aa, …" is too complex, not a scan to read by OCR)."""
    from citerun.pipeline.pdf import ocr as ocr_mod  # noqa: PLC0415 - pdf imports this module

    raw_pages: list[list[_Raw]] = []
    sizes: list[tuple[float, float]] = []
    by_ocr: set[int] = set()
    not_text: set[int] = set()
    for index in range(doc.page_count):
        page = doc[index]
        lines = _raw_lines(page)
        over = max_page_chars is not None and sum(len(r.text) for r in lines) > max_page_chars
        layer = "text" if over else ocr_mod.text_layer(r.text for r in lines)
        if layer == "not_text":
            not_text.add(index)
            lines = []
        if ocr is not None and layer != "text" and (layer == "not_text" or page.get_images()):  # type: ignore[no-untyped-call]
            lines = _raw_lines(page, ocr(page))
            by_ocr.add(index)
        raw_pages.append(lines)
        sizes.append((float(page.rect.width), float(page.rect.height)))
    counts: collections.Counter[str] = collections.Counter()  # key -> pages with it at an edge
    everywhere: collections.Counter[str] = collections.Counter()  # key -> lines with it
    for lines, (_, height) in zip(raw_pages, sizes):
        counts.update({_edge_key(r.text) for r in _edge_lines(lines, height)})
        everywhere.update(_edge_key(r.text) for r in lines)
    # A running head stands once a page, at its edge; a line whose shape fills the pages
    # ("[12] Source document 12." in a list of uniform entries) is text, at the edge or not.
    heads = {key for key, pages in counts.items()
             if pages >= _MIN_REPEATS and everywhere[key] < 2 * pages}
    body_size = _body_size(raw_pages)
    layouts: list[PageLayout] = []
    for index, (lines, (width, height)) in enumerate(zip(raw_pages, sizes)):
        edge = {id(r) for r in _edge_lines(lines, height)}
        lone_head = _lone_head(lines, height)
        kept = [
            r
            for r in lines
            if not (
                id(r) in edge
                and (_edge_key(r.text) in heads or PAGE_NUMBER.fullmatch(r.text))
            )
            and r is not lone_head
        ]
        for raw in kept:
            # Raised numbers in a line set larger than the text (the authors under a
            # title: "Xiaolu Huang,¹,² Xinhua Qu¹,²") mark affiliations, not citations.
            if raw.size >= body_size + _TITLE_SIZE_STEP:
                raw.text = raw.text.translate(_FROM_SUPERSCRIPT)
        ordered = _footnotes_last(_reading_order(kept), body_size)
        layouts.append(
            PageLayout(index + 1, width, height, tuple(_mark_paragraphs(ordered)),
                       ocr=index in by_ocr, not_text=index in not_text)
        )
    return layouts
