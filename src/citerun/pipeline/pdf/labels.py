"""The page labels a source prints, which is what a thesis cites ("S. 273"), not the PDF's index.

A journal article printed as pages 272-278 is pages 1-7 of its PDF; a book has roman
front matter before page 1. A cited page is checked against these labels, never against
the position in the file. The PDF's own /PageLabels win when they say more than the
index; otherwise the number printed in the page's head or foot is read, and trusted only
when most pages agree on one offset from their index (a stray "3" of a section heading
or a figure's axis cannot move a label). Without either, the label is the 1-based index.
"""

from __future__ import annotations

import collections
import re
import typing

import pymupdf

# Share of the page height at the top and at the bottom where a printed page number stands.
_BAND = 0.12
# Lines of each band, nearest the edge, whose numbers are read.
_EDGE_LINES = 3
# Documents longer than this are sampled: the first pages (front matter) and an even
# spread of the rest; an offset that holds on the sample holds on the document.
_MAX_SAMPLED = 200
_FRONT_SAMPLED = 40
# Words of one page read; a page with more (a hostile PDF) is read only this far.
_MAX_WORDS = 20_000

_PREFIX = r"(?:(?:page|seite|pg\.|p\.|s\.)\s*)?"
_ARABIC_LINE = re.compile(
    rf"{_PREFIX}(\d{{1,5}})(?:\s*(?:/|of|von)\s*\d{{1,5}})?|[-–—]\s*(\d{{1,5}})\s*[-–—]",
    re.IGNORECASE,
)
_ROMAN_LINE = re.compile(rf"{_PREFIX}([ivxlcdm]{{1,9}})", re.IGNORECASE)
# A number at either end of a running head ("2 Rehabilitation Research", "Chapter 2 · 17").
_HEAD_START = re.compile(r"(\d{1,5})\s+[|·•]?\s*\D")
_HEAD_END = re.compile(r"\D\s*[|·•]?\s+(\d{1,5})$")
_ROMAN = re.compile(r"m{0,4}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")
_ROMAN_VALUES = (
    (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
    (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
)


def page_labels(doc: pymupdf.Document) -> list[str]:
    """The printed label of every page of ``doc``, in page order.

    The PDF's /PageLabels (``page.get_label()``) when they differ from the plain index;
    else the page numbers printed at the top or bottom when one offset from the index
    holds for most pages (roman numbers before the arabic ones are read the same way);
    else ``"1"``, ``"2"``, ... . Work per page is one text extraction, of at most
    :data:`_MAX_SAMPLED` pages.
    """
    count = int(doc.page_count)
    index_labels = [str(i + 1) for i in range(count)]
    if count == 0:
        return []
    own = _pdf_labels(doc, count)
    if own is not None and own != index_labels:
        return own
    return _printed_labels(doc, count) or index_labels


def to_roman(number: int) -> str:
    """``12`` -> ``"xii"`` (lower case, as front matter is printed)."""
    parts: list[str] = []
    for value, letters in _ROMAN_VALUES:
        while number >= value:
            parts.append(letters)
            number -= value
    return "".join(parts)


def from_roman(text: str) -> int | None:
    """``"xii"`` or ``"XII"`` -> ``12``; None when ``text`` is not a roman number."""
    low = text.casefold()
    if not low or not _ROMAN.fullmatch(low):
        return None
    value = 0
    rest = low
    for number, letters in _ROMAN_VALUES:
        while rest.startswith(letters):
            value += number
            rest = rest[len(letters):]
    return value or None


def _pdf_labels(doc: pymupdf.Document, count: int) -> list[str] | None:
    """The /PageLabels of every page, or None when the document defines none."""
    if not doc.get_page_labels():  # type: ignore[no-untyped-call]
        return None
    labels = []
    for index in range(count):
        label = str(doc[index].get_label() or "")  # type: ignore[no-untyped-call]
        labels.append(label or str(index + 1))
    return labels


def _sampled(count: int) -> list[int]:
    if count <= _MAX_SAMPLED:
        return list(range(count))
    front = list(range(_FRONT_SAMPLED))
    rest = _MAX_SAMPLED - _FRONT_SAMPLED
    step = (count - _FRONT_SAMPLED) / rest
    return front + sorted({_FRONT_SAMPLED + int(k * step) for k in range(rest)})


def _edge_texts(page: pymupdf.Page) -> list[str]:
    """The texts of the lines nearest the top and the bottom edge of ``page``."""
    height = float(page.rect.height) or 1.0
    top_y = float(page.rect.y0)
    words = page.get_text("words")[:_MAX_WORDS]  # type: ignore[no-untyped-call]
    lines: dict[tuple[int, int], list[typing.Any]] = {}
    for word in words:
        lines.setdefault((int(word[5]), int(word[6])), []).append(word)
    top: list[tuple[float, str]] = []
    bottom: list[tuple[float, str]] = []
    for line in lines.values():
        y0 = min(float(w[1]) for w in line) - top_y
        y1 = max(float(w[3]) for w in line) - top_y
        text = " ".join(str(w[4]) for w in sorted(line, key=lambda w: float(w[0])))
        if y1 <= _BAND * height:
            top.append((y0, text))
        elif y0 >= (1 - _BAND) * height:
            bottom.append((-y1, text))
    top.sort()
    bottom.sort()
    return [t for _, t in top[:_EDGE_LINES]] + [t for _, t in bottom[:_EDGE_LINES]]


def _candidates(texts: list[str]) -> tuple[set[int], set[int], bool]:
    """Arabic and roman page numbers the edge lines may print, and whether a roman
    number is printed in capitals."""
    arabic: set[int] = set()
    roman: set[int] = set()
    upper = False
    for text in texts:
        text = text.strip()
        if len(text) > 200:
            text = text[:100] + " " + text[-100:]
        lone = _ARABIC_LINE.fullmatch(text)
        if lone:
            arabic.add(int(lone.group(1) or lone.group(2)))
            continue
        numeral = _ROMAN_LINE.fullmatch(text)
        if numeral and (value := from_roman(numeral.group(1))):
            roman.add(value)
            upper = upper or numeral.group(1).isupper()
            continue
        for edge in (_HEAD_START.match(text), _HEAD_END.search(text)):
            if edge:
                arabic.add(int(edge.group(1)))
    return arabic, roman, upper


def _best_offset(votes: collections.Counter[int], pages: int) -> int | None:
    """The offset most pages agree on, if at least two and at least half of ``pages`` do."""
    if not votes:
        return None
    offset, support = votes.most_common(1)[0]
    return offset if support >= 2 and 2 * support >= pages else None


def _printed_labels(doc: pymupdf.Document, count: int) -> list[str] | None:
    """Labels from the printed page numbers, or None when they are not consistent."""
    sampled = _sampled(count)
    seen: dict[int, tuple[set[int], set[int], bool]] = {}
    for index in sampled:
        seen[index] = _candidates(_edge_texts(doc[index]))
    arabic_votes: collections.Counter[int] = collections.Counter()
    for index, (arabic, _, _) in seen.items():
        arabic_votes.update({value - (index + 1) for value in arabic})
    # The arabic numbers need not cover the front matter: half of the pages that have any.
    numbered = sum(1 for arabic, _, _ in seen.values() if arabic)
    offset = _best_offset(arabic_votes, max(numbered, len(sampled) // 3))
    first_arabic = 0 if offset is None else max(0, -offset)
    front = [i for i in sampled if i < first_arabic] if offset is not None else sampled
    roman_votes: collections.Counter[int] = collections.Counter()
    upper_votes = 0
    for index in front:
        _, roman, upper = seen[index]
        roman_votes.update({value - (index + 1) for value in roman})
        upper_votes += 1 if upper and roman else (-1 if roman else 0)
    roman_numbered = sum(1 for i in front if seen[i][1])
    roman_offset = _best_offset(roman_votes, roman_numbered)
    if offset is None and roman_offset is None:
        return None
    labels: list[str] = []
    for index in range(count):
        if offset is not None and index + 1 + offset >= 1:
            labels.append(str(index + 1 + offset))
        elif roman_offset is not None and index + 1 + roman_offset >= 1:
            numeral = to_roman(index + 1 + roman_offset)
            labels.append(numeral.upper() if upper_votes > 0 else numeral)
        else:
            labels.append(str(index + 1))
    return labels
