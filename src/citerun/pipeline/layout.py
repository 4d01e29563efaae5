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

This module holds what a layout is (:class:`Line`, :class:`PageLayout`, the signs of note
numbers, the page-number and footnote patterns) and the evidence boxes found in stored
lines; :mod:`.layout_lines` reads a page's raw lines (step 1), :mod:`.layout_reading`
orders them and marks paragraphs (steps 2-4, :func:`~.layout_reading.read_document`).
"""

from __future__ import annotations

import dataclasses
import re
import typing
import unicodedata

import pymupdf

from citerun.pipeline import normalize


Box = tuple[float, float, float, float]

# Ligatures are expanded (no TEXT_PRESERVE_LIGATURES) so that "ﬁnd" matches "find";
# images are not extracted (TEXT_PRESERVE_IMAGES would copy every image's bytes).
TEXT_FLAGS = pymupdf.TEXT_MEDIABOX_CLIP

_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
PAGE_NUMBER = re.compile(
    r"(?:(?:page|seite|p\.|s\.)\s*)?(?:\d{1,4}|(?=[ivxlc])c{0,3}(?:x[cl]|l?x{0,3})(?:i[xv]|v?i{0,3}))"
    r"(?:\s*(?:/|of|von)\s*\d{1,4})?"
    r"|[-–—]\s*\d{1,4}\s*[-–—]",
    re.IGNORECASE,
)



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
    #: The lines were read by OCR (the page had no text layer, or one that is not text).
    ocr: bool = False
    #: The page's own text layer was not text (U+FFFD, glyph ids) and was left out.
    not_text: bool = False

    def text(self) -> str:
        """Lines joined by newlines, paragraphs by a blank line."""
        parts: list[str] = []
        for line in self.lines:
            if parts:
                parts.append("\n\n" if line.paragraph_start else "\n")
            parts.append(line.text)
        return "".join(parts)


# The raised digits a note number is written in, and the signs a note opens with; the
# citation extraction reads them too (superscript citations, a footnote closing a page).
SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
NOTE_SIGNS = "*∗†‡§¶"

# A footnote's first line: its number, plain ("12 See ...") or raised, or a note sign,
# then its text. Page text without sizes (the citations' reference list) also needs a
# plain ``number`` glued to the text, or a list's own "12 Smith" would be a note.
FOOTNOTE_START = re.compile(
    rf"^(?:(?P<number>\d{{1,3}})|[{SUPERSCRIPT_DIGITS}]{{1,3}}|[{NOTE_SIGNS}])\s*(?=\S)")



# --- evidence boxes ------------------------------------------------------------------

# [x0, y0, x1, y1, text, size, bold, paragraph_start], as stored with a page; rows stored
# before the size was kept end at the text.
LineRow = list[typing.Any]


def line_rows(lines: typing.Sequence[Line]) -> list[LineRow]:
    """A page's lines as compact rows for storage (boxes and sizes rounded to 0.1 pt)."""
    return [[round(x, 1) for x in line.bbox]
            + [line.text, round(line.size, 1), int(line.bold), int(line.paragraph_start)]
            for line in lines]


def lines_of(rows: typing.Iterable[LineRow]) -> tuple[Line, ...]:
    """The lines back from :func:`line_rows`' rows."""
    return tuple(Line(text=str(row[4]), bbox=(float(row[0]), float(row[1]), float(row[2]),
                                              float(row[3])),
                      size=float(row[5]) if len(row) > 5 else 0.0,
                      bold=bool(row[6]) if len(row) > 6 else False,
                      paragraph_start=bool(row[7]) if len(row) > 7 else False)
                 for row in rows)


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
