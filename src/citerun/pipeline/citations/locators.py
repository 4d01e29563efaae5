"""A citation's page locator ("S. 45 f.", "pp. 12-14", "xii"), and whether the evidence
stands on the pages it names.

The check compares printed page labels (:func:`citerun.pipeline.pdf.labels.page_labels`),
never the PDF's index: "S. 273" of an article printed as pages 272-278 is its second
page. A margin number ("Rn. 12"), a footnote alone ("Fn. 3"), a section or a column is
not a page: such a locator is "not_checkable", never a mismatch.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Sequence

from citerun.pipeline.citations import patterns
from citerun.pipeline.pdf.labels import from_roman, to_roman

LocatorKind = typing.Literal["pages", "margin_number", "footnote", "other"]
LocatorStatus = typing.Literal["ok", "mismatch", "not_checkable"]

# "45 ff.": the cited passage runs on; this many pages after the first are accepted.
FOLLOWING_PAGES = 3
_MAX_TEXT = 200
_MAX_RANGES = 20

# A page prefix (patterns.PAGE_PREFIXES, any case), or a leaf's ("Bl.") or a law
# report's ("at 45"), which only a locator's own text may start with.
_PAGE_PREFIX = re.compile(rf"^(?:{patterns.PAGE_PREFIX}|bl\.|at)\s*", re.IGNORECASE)
_MARGIN = re.compile(
    r"^(?:rn\.?|rdnr\.?|rdn\.?|randnr\.?|randnummer|rz\.?|randziffer|mn\.?|para\.?|paras\.?|¶|§+|"
    r"sp\.?|spalte|col\.?|kap\.?|chap\.?|ch\.?|sec\.?|abschn\.?|art\.?|nr\.?|no\.?)\s*\S",
    re.IGNORECASE)
_FOOTNOTE = re.compile(
    r"(?:^|[\s,])(?:fn\.?|fußnote|fussnote|anm\.?|n\.|nn\.|note|notes|footnote)\s*(?P<note>\d{1,4})",
    re.IGNORECASE)
_NUMBER = r"(?:\d{1,6}|[ivxlcdm]{1,9})"
_RANGE = re.compile(
    rf"(?P<first>{_NUMBER})(?:\s*(?:[-–—]|bis|to)\s*(?P<last>{_NUMBER}))?"
    r"(?:\s*(?P<follow>f{1,2}\.?|et\s+seq\.?|sqq?\.?))?",
    re.IGNORECASE)
_SEPARATOR = re.compile(r"\s*(?:,|;|&|and|und|u\.)\s*", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class PageRange:
    """Cited pages ``first`` to ``last`` as printed; ``roman`` for front-matter pages.
    An open range ("45 ff.") has ``last`` = ``first`` + :data:`FOLLOWING_PAGES`."""

    first: int
    last: int
    roman: bool = False
    open_end: bool = False


@dataclasses.dataclass(frozen=True)
class Locator:
    """A parsed locator: ``kind`` "pages" with its ``ranges``; "margin_number",
    "footnote" (a note alone, or ``note`` beside pages) or "other" are not pages."""

    text: str
    kind: LocatorKind
    ranges: tuple[PageRange, ...] = ()
    note: str | None = None

    @property
    def checkable(self) -> bool:
        return self.kind == "pages" and bool(self.ranges)

    def describe(self) -> str:
        """The cited pages in one form whatever the style: "45-46", "xii", "45-48 (ff.)"."""
        parts = []
        for r in self.ranges:
            first = to_roman(r.first) if r.roman else str(r.first)
            last = to_roman(r.last) if r.roman else str(r.last)
            parts.append(first if r.first == r.last else f"{first}-{last}")
            if r.open_end:
                parts[-1] += " (ff.)"
        return ", ".join(parts) or self.text


@dataclasses.dataclass(frozen=True)
class LocatorCheck:
    """``ok``: the evidence stands on a cited page; ``mismatch``: on none of them,
    ``actual`` says where it stands; ``not_checkable``: the locator names no page, or
    the evidence was not located. ``outside`` are evidence pages beyond the cited ones
    (a quotation that runs on to the next page) for an "ok"."""

    status: LocatorStatus
    actual: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    reason: str = ""


def parse_locator(text: str) -> Locator | None:
    """The locator as written after a citation ("45", "pp. 45-47", "S. 45 f.", "Rn. 12",
    "xii", "Fn. 3", "S. 45 Fn. 3"); None when ``text`` is none of these."""
    raw = " ".join(text.split())
    if not raw or len(raw) > _MAX_TEXT:
        return None
    body = raw.rstrip(".,;: ")
    if body.endswith(("f", "ff")) and raw[len(body):].startswith("."):
        body += "."
    if _MARGIN.match(body):
        kind: LocatorKind = "margin_number" if re.match(r"(?i)r|mn|para|¶", body) else "other"
        return Locator(text=raw, kind=kind)
    note_match = _FOOTNOTE.search(body)
    note = note_match.group("note") if note_match else None
    if note_match:
        body = (body[:note_match.start()] + body[note_match.end():]).strip(" ,;")
        if not body:
            return Locator(text=raw, kind="footnote", note=note)
    body = _PAGE_PREFIX.sub("", body)
    ranges = _ranges(body)
    if not ranges:
        return None
    return Locator(text=raw, kind="pages", ranges=tuple(ranges), note=note)


def _ranges(body: str) -> list[PageRange]:
    ranges: list[PageRange] = []
    position = 0
    while position < len(body) and len(ranges) < _MAX_RANGES:
        match = _RANGE.match(body, position)
        if not match:
            return []
        page_range = _one_range(match)
        if page_range is None:
            return []
        ranges.append(page_range)
        position = match.end()
        separator = _SEPARATOR.match(body, position)
        if position < len(body):
            if not separator or separator.end() == position:
                return []
            position = separator.end()
    return ranges if position >= len(body) else []


def _value(text: str) -> tuple[int, bool] | None:
    if text.isdigit():
        return int(text), False
    value = from_roman(text)
    return (value, True) if value else None


def _one_range(match: re.Match[str]) -> PageRange | None:
    first = _value(match.group("first"))
    if first is None:
        return None
    start, roman = first
    end = start
    if match.group("last"):
        last = _value(match.group("last"))
        if last is None or last[1] != roman:
            return None
        end = last[0]
        written = match.group("last")
        if not roman and end < start and len(written) < len(match.group("first")):
            # "123-7", "123-27": the end written with its last digits only.
            head = match.group("first")[: len(match.group("first")) - len(written)]
            end = int(head + written)
        if end < start:
            return None
    follow = (match.group("follow") or "").casefold()
    if follow.startswith("ff") or follow.startswith(("et", "sq")):
        return PageRange(start, max(end, start + FOLLOWING_PAGES), roman, open_end=True)
    if follow.startswith("f"):
        return PageRange(start, max(end, start + 1), roman)
    return PageRange(start, end, roman)


def _label_value(label: str) -> tuple[int, bool] | None:
    """A printed label as a number: "273" -> (273, arabic), "xii" -> (12, roman)."""
    text = label.strip()
    if text.isdigit():
        return int(text), False
    value = from_roman(text)
    return (value, True) if value else None


def _within(label: str, locator: Locator) -> bool:
    value = _label_value(label)
    if value is None:
        return False
    number, roman = value
    return any(r.roman == roman and r.first <= number <= r.last for r in locator.ranges)


def check_locator(locator: Locator | None, labels: Sequence[str]) -> LocatorCheck:
    """Whether the evidence, standing on the pages printed as ``labels``, is on a page
    ``locator`` cites.

    "ok" when one of ``labels`` is within the cited pages (the others, if any, in
    ``outside``); "mismatch" with the actual labels when none is; "not_checkable" when
    there is no locator, it names no page (a margin number, a footnote alone) or the
    evidence was not found on any page.
    """
    if locator is None:
        return LocatorCheck("not_checkable", reason="no page locator")
    if not locator.checkable:
        return LocatorCheck("not_checkable", reason=f'"{locator.text}" names no page ({locator.kind})')
    actual = tuple(dict.fromkeys(label for label in labels if label))
    if not actual:
        return LocatorCheck("not_checkable", reason="the evidence was not located in the source")
    inside = [label for label in actual if _within(label, locator)]
    if inside:
        return LocatorCheck("ok", actual=actual,
                            outside=tuple(label for label in actual if label not in inside))
    return LocatorCheck(
        "mismatch", actual=actual,
        reason=f"cited {locator.describe()}, found on {', '.join(actual)}",
    )
