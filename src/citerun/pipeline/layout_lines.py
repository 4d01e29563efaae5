"""A PDF page's raw lines (step 1 of :mod:`.layout`): lines that are not horizontal
dropped, fragments of one baseline joined, spacing accent glyphs put on their letters,
raised note numbers as superscript digits."""

from __future__ import annotations

import dataclasses
import re
import typing
import unicodedata

import pymupdf

from citerun.pipeline.layout import SUPERSCRIPT_DIGITS, TEXT_FLAGS, normalize_spaces


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


def _raw_lines(page: pymupdf.Page, textpage: pymupdf.TextPage | None = None) -> list[_Raw]:
    """Horizontal lines of a page (of ``textpage``, an OCR's, where given); fragments on
    one baseline that touch are joined."""
    found: list[_Raw] = []
    page_dict = page.get_text("dict", flags=TEXT_FLAGS, textpage=textpage)  # type: ignore[no-untyped-call]
    if any(c in span["text"] for block in page_dict["blocks"] for line in block.get("lines", ())
           for span in line["spans"] for c in _SPACING_ACCENTS):
        # Only pages with spacing accents pay for the characters' boxes.
        page_dict = page.get_text("rawdict", flags=TEXT_FLAGS, textpage=textpage)  # type: ignore[no-untyped-call]
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
