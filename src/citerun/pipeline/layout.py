"""Lines of a PDF page in reading order, with their geometry.

Real theses and papers are set in one or two columns, with running heads, page numbers,
rotated margin stamps ("arXiv:1706.03762v5 [cs.CL] ...") and reference lists whose
entries are told apart only by a hanging indent. MuPDF's own block order (``sort=True``)
is top-to-bottom, which interleaves the two columns of a page, and joining a block's
lines loses the line starts that headings and reference entries are found by. So this
module works on the *lines* of ``page.get_text("dict")`` (their bounding boxes, font
size and boldness) and rebuilds reading order itself:

1. Lines that are not horizontal (margin stamps) are dropped; fragments MuPDF split on
   one baseline are joined (a row is read left to right, so a list label set as a line
   of its own opens its entry); a spacing accent glyph ("F¨arber") is joined to the
   letter under it; raised note numbers become superscript digits, except in lines set
   larger than the text (affiliation marks under a title).
2. A page is cut into horizontal bands at lines that span the gutter (a title, a
   full-width figure caption); inside a band the left column is read before the right.
   The gutter is the x position, near the middle, crossed by the fewest lines; a
   clean gutter makes two columns even when one is short (a paper's last page).
3. Running heads and footers (a line at the top or bottom edge whose text, digits
   aside, repeats on other pages) and bare page numbers are dropped.
4. Each line is marked as the start of a paragraph or not, from geometry: a vertical
   gap, a change of font size or weight, an outdented line in a hanging-indent column
   (a reference entry), an indented line after a line that ended a sentence.

pymupdf 2's own layout analysis (the ONNX model behind ``pymupdf4llm.to_markdown``) was
measured against this on the real evaluation PDFs (``docs/benchmarks.md``, "Layout"):
it is many times slower per page and gives Markdown without line geometry, so the
report could not point at the evidence's box. This geometry is what the pipeline uses.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import statistics
import typing
import unicodedata

import pymupdf

from citerun.pipeline import normalize

Box = tuple[float, float, float, float]

# Ligatures are expanded (no TEXT_PRESERVE_LIGATURES) so that "ﬁnd" matches "find";
# images are not extracted (TEXT_PRESERVE_IMAGES would copy every image's bytes).
TEXT_FLAGS = pymupdf.TEXT_MEDIABOX_CLIP

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

_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_DIGITS = re.compile(r"\d+")
PAGE_NUMBER = re.compile(
    r"(?:(?:page|seite|p\.|s\.)\s*)?(?:\d{1,4}|(?=[ivxlc])c{0,3}(?:x[cl]|l?x{0,3})(?:i[xv]|v?i{0,3}))"
    r"(?:\s*(?:/|of|von)\s*\d{1,4})?"
    r"|[-–—]\s*\d{1,4}\s*[-–—]",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?:][\"'”’)\]]*$")


# TeX sets "í" as a dotless ı and a combining accent ("Ası́n", "Melı́cio"); so do
# some fonts for "ȷ". With the dot put back the pair composes to the usual letter.
_DOTLESS = re.compile("([ıȷ])(?=[\u0300-\u036f])")


def normalize_spaces(text: str) -> str:
    """Invisible characters removed, runs of spaces collapsed, ends stripped; a dotless
    i or j under a combining accent becomes the accented letter ("ı́" -> "í")."""
    text = _SPACES.sub(" ", _INVISIBLE.sub("", text)).strip()
    if "ı" in text or "ȷ" in text:
        text = unicodedata.normalize("NFC", _DOTLESS.sub(lambda m: "i" if m[1] == "ı" else "j", text))
    return text


# TeX-set and some publishers' PDFs carry an accent as a glyph of its own, set over its
# letter: "F¨arber", "Ondˇrej", "Dog˘an", "L’Abbe´" in the text layer. The accent's
# horizontal middle is its letter's, so geometry tells which neighbour it belongs to
# (the text alone cannot: "Dog˘an" is "Doğan", "Ondˇrej" is "Ondřej").
_SPACING_ACCENTS = {"¨": "\u0308", "´": "\u0301", "`": "\u0300", "ˆ": "\u0302", "˜": "\u0303",
                    "˘": "\u0306", "ˇ": "\u030c", "¸": "\u0327", "˚": "\u030a", "˝": "\u030b",
                    "˙": "\u0307", "¯": "\u0304"}


def _middle(char: dict[str, typing.Any]) -> float:
    return float(char["bbox"][0] + char["bbox"][2]) / 2


def _accented_spans(line: dict[str, typing.Any]) -> list[dict[str, typing.Any]]:
    """A ``rawdict`` line's spans with their text, each spacing accent joined to the
    letter under it: the neighbour whose middle is nearest, within that letter's width."""
    texts = [[c["c"] for c in span["chars"]] for span in line["spans"]]
    flat = [(si, ci) for si, span in enumerate(line["spans"]) for ci in range(len(span["chars"]))]

    def char(k: int) -> dict[str, typing.Any]:
        si, ci = flat[k]
        return typing.cast(dict[str, typing.Any], line["spans"][si]["chars"][ci])

    for k, (si, ci) in enumerate(flat):
        accent = texts[si][ci]
        if accent not in _SPACING_ACCENTS:
            continue
        middle = _middle(char(k))
        best: tuple[float, int] | None = None
        for j in (k - 1, k + 1):
            if 0 <= j < len(flat) and texts[flat[j][0]][flat[j][1]].isalpha():
                box = char(j)["bbox"]
                distance = abs(_middle(char(j)) - middle)
                if distance <= max(box[2] - box[0], 1.0) / 2 and (best is None or distance < best[0]):
                    best = (distance, j)
        if best is not None:
            sj, cj = flat[best[1]]
            texts[sj][cj] = unicodedata.normalize("NFC", texts[sj][cj] + _SPACING_ACCENTS[accent])
            texts[si][ci] = ""
    return [dict(span, text="".join(text)) for span, text in zip(line["spans"], texts)]


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of text as read: its page box (points, origin top-left), font size,
    whether it is all bold, and whether it starts a paragraph."""

    text: str
    bbox: Box
    size: float
    bold: bool
    paragraph_start: bool = False


@dataclasses.dataclass(frozen=True)
class PageLayout:
    """The lines of one page in reading order; ``number`` is 1-based."""

    number: int
    width: float
    height: float
    lines: tuple[Line, ...]

    def text(self) -> str:
        """Lines joined by newlines, paragraphs by a blank line."""
        parts: list[str] = []
        for line in self.lines:
            if parts:
                parts.append("\n\n" if line.paragraph_start else "\n")
            parts.append(line.text)
        return "".join(parts)


# --- raw lines -----------------------------------------------------------------------


@dataclasses.dataclass
class _Raw:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    bold: bool

    @property
    def height(self) -> float:
        return max(self.y1 - self.y0, 1.0)


# The raised digits a note number is written in, and the signs a note opens with; the
# citation extraction reads them too (superscript citations, a footnote closing a page).
SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
NOTE_SIGNS = "*∗†‡§¶"
_SUPERSCRIPT_DIGITS = str.maketrans("0123456789", SUPERSCRIPT_DIGITS)
_FROM_SUPERSCRIPT = str.maketrans(SUPERSCRIPT_DIGITS, "0123456789")
# Raised note numbers: "14", "11–13", "2 4", "1,2". Some fonts map the en dash of a
# range to the letter "e" ("1e3" for 1–3, as in "Gut 2007;56:772e81"); between raised
# digits that "e" can be nothing else.
_NOTE_NUMBERS = re.compile(r"\s*\d{1,3}(?:\s*(?:[,–-]|(?<=\d)e(?=\d))?\s*\d{1,3})*\s*")


def _spans_text(spans: typing.Sequence[dict[str, typing.Any]]) -> str:
    """A line's text from its spans; raised note numbers ("bias¹⁴ ¹⁵", "Jadad,¹¹⁻¹³")
    become superscript digits, so that citation extraction can tell them from numbers in
    the text. A run of raised spans is read as one ("1", "e", "3" -> "¹–³")."""
    parts: list[str] = []
    run: list[str] = []

    def flush() -> None:
        text = "".join(run)
        if _NOTE_NUMBERS.fullmatch(text) and text.strip():
            text = re.sub(r"(?<=\d)e(?=\d)", "–", text).translate(_SUPERSCRIPT_DIGITS)
        parts.append(text)
        run.clear()

    for span in spans:
        if span["flags"] & 1:  # TEXT_FONT_SUPERSCRIPT
            run.append(span["text"])
            continue
        if run:
            flush()
        parts.append(span["text"])
    if run:
        flush()
    return "".join(parts)


def _by_rows(lines: list[_Raw]) -> list[_Raw]:
    """Lines top to bottom, and left to right within a row.

    A row is the lines whose middles lie within a third of a line's height of the row's
    first line: a list label ("9.") set as its own line beside an entry whose first line
    is taller (an accent, "L’Abbé", raises its top) still comes before that entry, where
    sorting by the rounded middle put it after.
    """
    rows: list[list[_Raw]] = []
    for raw in sorted(lines, key=lambda r: (r.y0 + r.y1) / 2):
        middle = (raw.y0 + raw.y1) / 2
        if rows:
            first = rows[-1][0]
            if abs(middle - (first.y0 + first.y1) / 2) < 0.35 * min(first.height, raw.height):
                rows[-1].append(raw)
                continue
        rows.append([raw])
    return [raw for row in rows for raw in sorted(row, key=lambda r: r.x0)]


# A list label set apart from its entry: "12.", "[3]", "(4)", "7)", "•".
_LIST_LABEL = re.compile(r"\[\d{1,3}\]|\(\d{1,3}\)|\d{1,3}[.)]?|[A-Za-z][.)]|[•◦▪–-]|\[[A-Za-z+]{1,8}\d{2,4}[a-z]?\]")


def _raw_lines(page: pymupdf.Page) -> list[_Raw]:
    """Horizontal lines of a page; fragments on one baseline that touch are joined."""
    found: list[_Raw] = []
    page_dict = page.get_text("dict", flags=TEXT_FLAGS)  # type: ignore[no-untyped-call]
    if any(c in span["text"] for block in page_dict["blocks"] for line in block.get("lines", ())
           for span in line["spans"] for c in _SPACING_ACCENTS):
        # Only pages with spacing accents pay for the characters' boxes.
        page_dict = page.get_text("rawdict", flags=TEXT_FLAGS)  # type: ignore[no-untyped-call]
        for block in page_dict["blocks"]:
            for line in block.get("lines", ()):
                line["spans"] = _accented_spans(line)
    for block in page_dict["blocks"]:
        for line in block.get("lines", ()):
            dx, dy = line["dir"]
            if abs(dy) > 0.05 or dx <= 0:  # rotated or mirrored: a stamp, not the text
                continue
            spans = [s for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            text = normalize_spaces(_spans_text(line["spans"]))
            if not text:
                continue
            chars = sum(len(s["text"].strip()) for s in spans)
            size = sum(s["size"] * len(s["text"].strip()) for s in spans) / max(chars, 1)
            bold = all(s["flags"] & 16 or "bold" in s["font"].lower() for s in spans)
            x0, y0, x1, y1 = line["bbox"]
            found.append(_Raw(text, x0, y0, x1, y1, round(size, 1), bold))
    found = _by_rows(found)
    joined: list[_Raw] = []
    for raw in found:
        last = joined[-1] if joined else None
        if (
            last is not None
            and abs((last.y0 + last.y1) / 2 - (raw.y0 + raw.y1) / 2) < 0.35 * min(last.height, raw.height)
            and 0 <= raw.x0 - last.x1 < (4.0 if _LIST_LABEL.fullmatch(last.text) else 1.2) * raw.size
        ):  # a label ("12.", "[3]") may stand further off its entry; a year ("2013.")
            # ending a line of the left column is no label of the right column's entry
            space = "" if raw.x0 - last.x1 < 0.15 * raw.size else " "
            last.text = f"{last.text}{space}{raw.text}"
            last.x1 = max(last.x1, raw.x1)
            last.y0, last.y1 = min(last.y0, raw.y0), max(last.y1, raw.y1)
            last.bold = last.bold and raw.bold
            continue
        joined.append(raw)
    return joined


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


# A footnote's first line: its number, plain ("12 See ...") or raised, or a note sign,
# then its text. Page text without sizes (the citations' reference list) also needs a
# plain ``number`` glued to the text, or a list's own "12 Smith" would be a note.
FOOTNOTE_START = re.compile(
    rf"^(?:(?P<number>\d{{1,3}})|[{SUPERSCRIPT_DIGITS}]{{1,3}}|[{NOTE_SIGNS}])\s*(?=\S)")


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


def read_document(doc: pymupdf.Document) -> list[PageLayout]:
    """Every page's lines in reading order, running heads and page numbers dropped."""
    raw_pages: list[list[_Raw]] = []
    sizes: list[tuple[float, float]] = []
    for index in range(doc.page_count):
        page = doc[index]
        raw_pages.append(_raw_lines(page))
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
            PageLayout(index + 1, width, height, tuple(_mark_paragraphs(ordered)))
        )
    return layouts


# --- evidence boxes ------------------------------------------------------------------

LineRow = list[typing.Any]  # [x0, y0, x1, y1, text], as stored with a page


def line_rows(lines: typing.Sequence[Line]) -> list[LineRow]:
    """A page's lines as compact rows for storage (boxes rounded to 0.1 pt)."""
    return [[round(x, 1) for x in line.bbox] + [line.text] for line in lines]


def find_boxes(rows: typing.Sequence[LineRow], quote: str, *, tight: bool = False) -> list[Box]:
    """The boxes of the lines that hold ``quote`` (a sentence of the page), in order.

    Letters and digits alone are compared (hyphenation, ligatures and spacing differ
    between a quote and its lines); the quote's opening and closing words locate the
    first and last line. Nothing is returned when the quote is not on the page. With
    ``tight``, a line the quote starts or ends within is cut to the quote's part of it,
    at the x its letters' share of the line gives (lines keep no character boxes), so
    a neighbouring sentence on the same line is left out.
    """
    folded = [normalize.fold(str(row[4]), transliterate=False) for row in rows]
    text = "".join(folded)
    target = normalize.fold(quote, transliterate=False)
    if not target or not text:
        return []
    start = text.find(target)
    end = start + len(target)
    if start < 0:
        head, tail = target[:40], target[-40:]
        start = text.find(head)
        if start < 0:
            return []
        tail_at = text.find(tail, start)
        end = tail_at + len(tail) if tail_at >= 0 else start + len(head)
    boxes: list[Box] = []
    offset = 0
    for row, piece in zip(rows, folded):
        if offset < end and offset + len(piece) > start:
            x0, y0, x1, y1 = float(row[0]), float(row[1]), float(row[2]), float(row[3])
            if tight:
                step = (x1 - x0) / len(piece)  # a letter's share of the line's width
                first, last = max(start - offset, 0), min(end - offset, len(piece))
                if first > 0:
                    x0 = min(x1, x0 + step * (first - 0.5))
                if last < len(piece):
                    x1 = max(x0, float(row[0]) + step * (last + 0.5))
            boxes.append((x0, y0, x1, y1))
        offset += len(piece)
    return boxes
