"""Quotations in a thesis, and whether each stands verbatim in its source, on which pages.

A quotation is a promise that the source says exactly this: a changed word is a finding
of its own, whatever the judge makes of the claim. :func:`find_quotations` finds the
quoted passages of a sentence ("…", “…”, „…“, »…«, «…», ‘…’), :func:`block_quotation`
takes a whole paragraph as one; :func:`check_quotation` looks each up in the source's
pages and says "exact", "altered" (with the words the thesis changed, added or left out)
or "not_found", and the page labels it stands on, so that the cited page can be checked
against the printed page (:mod:`.locators`).

This module holds what a quotation and a check are, their limits, and the finding;
:mod:`.quotation_source` reads a source's pages (and a quotation) as words, and
:mod:`.quotation_check` compares the two.

Both sides are compared as words: ligatures, hyphenation at line and page ends, quote
marks, dashes and spacing do not count. The thesis's own marks do not count either: an
ellipsis ("[…]", "[...]", "(…)") stands for omitted words (a bounded number), "[sic]"
and bracketed insertions ("[the model]") are marked changes, reported but still exact.
Locating is exact search of the folded letters first (C speed), then, for an altered
quotation, anchors of two or three words vote for a window that rapidfuzz aligns word
by word: no step is quadratic in Python, so a 2,000-page source and a 10,000-word
quotation take well under a second or two.
"""

from __future__ import annotations

import dataclasses
import re
import typing

from citerun.core import errors
from citerun.pipeline import normalize


QuoteStatus = typing.Literal["exact", "altered", "not_found"]
DifferenceKind = typing.Literal["changed", "added", "omitted", "case"]

# Fewer words than this between quote marks is a scare quote or a term ("so-called"),
# not a quotation.
MIN_WORDS = 4
# Longest quotation checked; a longer one is refused (QuotationError), not truncated.
MAX_QUOTE_WORDS = 20_000
# Largest source text (characters of all pages) a quotation is looked up in.
MAX_SOURCE_CHARS = 60_000_000
# Source words one ellipsis may stand for: a paragraph or two, not a chapter.
MAX_OMITTED_WORDS = 400
# Source words a bracketed insertion ("[the model]" for "it") may replace.
MAX_REPLACED_WORDS = 6
# An altered quotation: at most this share of its words changed, added or left out ...
MAX_ALTERED_SHARE = 0.2
# ... and at least this many of its words found unchanged, in order.
MIN_ANCHOR_WORDS = 3
# Anchors (runs of two or three words) voting for where an altered quotation stands,
# occurrences of each one read, and candidate windows aligned.
_MAX_ANCHORS = 64
_MAX_HITS = 64
_MAX_WINDOWS = 3
# Occurrences of an exact part tried before the exact search gives up.
_MAX_TRIES = 200
# Differences kept per check (a long altered quotation has many); the count stays exact.
_MAX_DIFFERENCES = 200
_FOUND_CHARS = 4000


class QuotationError(errors.CiterunError):
    """A quotation or source that cannot be checked: empty, or over the limits."""


@dataclasses.dataclass(frozen=True)
class Quotation:
    """A quoted passage: ``text`` inside the marks, at ``start:end`` of the sentence.

    ``opening``/``closing`` are the marks as written ("„", "“"); a block quotation has
    none (``block`` true).
    """

    text: str
    start: int
    end: int
    opening: str
    closing: str
    block: bool = False


@dataclasses.dataclass(frozen=True)
class Difference:
    """One place where the thesis's wording differs from the source's.

    ``changed``: the thesis has ``thesis`` where the source has ``source``; ``added``:
    words of the thesis the source lacks; ``omitted``: source words the thesis left out
    without an ellipsis; ``case``: the same word with another capitalisation or spelling.
    """

    kind: DifferenceKind
    thesis: str
    source: str

    def describe(self) -> str:
        """One readable phrase: 'changed "important" to "crucial"'."""
        if self.kind == "added":
            return f'added "{self.thesis}"'
        if self.kind == "omitted":
            return f'left out "{self.source}"'
        if self.kind == "case":
            return f'wrote "{self.source}" as "{self.thesis}"'
        return f'changed "{self.source}" to "{self.thesis}"'


@dataclasses.dataclass(frozen=True)
class QuotationCheck:
    """What the source says about one quotation.

    ``labels`` are the page labels the quoted words stand on (two for a quotation split
    over a page break), ``pages`` the same pages as 0-based positions in the pages
    given; ``found`` the source's words it stands for; ``differences`` what the thesis
    changed (empty for "exact"), ``edits`` their number in words; ``marked`` the
    thesis's own marks ("[…]", "[sic]", "[the model]"); ``score`` the share of the
    quotation's words found unchanged.
    """

    status: QuoteStatus
    labels: tuple[str, ...] = ()
    pages: tuple[int, ...] = ()
    found: str = ""
    differences: tuple[Difference, ...] = ()
    edits: int = 0
    marked: tuple[str, ...] = ()
    score: float = 0.0

    @property
    def difference(self) -> str:
        """The differences as one short readable string ("" when there are none)."""
        shown = [d.describe() for d in self.differences[:8]]
        more = self.edits - sum(_width(d) for d in self.differences[:8])
        if len(self.differences) > 8 and more > 0:
            shown.append(f"and {more} more words")
        return "; ".join(shown)


def _width(difference: Difference) -> int:
    return max(len(difference.thesis.split()), len(difference.source.split()), 1)


# --- finding quotations ----------------------------------------------------------------

_LETTER = r"[^\W_]"
_QUOTED = re.compile(
    r"„(?P<low>[^„“”]*)(?P<lowc>[“”])"
    r"|“(?P<en>[^“”]*)”"
    r"|»(?P<de>[^»«]*)«"
    r"|«(?P<fr>[^«»]*)»"
    r"|‚(?P<slow>[^‚‘’]*)‘"
    r"|›(?P<sde>[^›‹]*)‹"
    r"|‹(?P<sfr>[^‹›]*)›"
    r'|"(?P<plain>[^"]*)"'
    # ‘…’ only where the marks are not apostrophes: the opening one not after a letter,
    # the closing one not before a letter ("don’t" inside stays inside).
    rf"|(?<!{_LETTER})‘(?P<single>(?:[^‘’]|’(?={_LETTER}))*)’(?!{_LETTER})"
)
_CLOSING = {"en": "”", "de": "«", "fr": "»", "slow": "‘", "sde": "‹", "sfr": "›", "plain": '"',
            "single": "’"}


def find_quotations(claim_text: str, *, min_words: int = MIN_WORDS) -> list[Quotation]:
    """The quoted passages of a sentence, in order, each at least ``min_words`` long.

    A quotation inside another (“he wrote ‘…’”) is part of the outer one; marks around
    fewer than ``min_words`` words are scare quotes and are skipped.
    """
    found: list[Quotation] = []
    for match in _QUOTED.finditer(claim_text):
        group = next(name for name in _CLOSING.keys() | {"low"} if match.group(name) is not None)
        text = match.group(group)
        if len(normalize.words(text, transliterate=False)) < min_words:
            continue
        closing = match.group("lowc") if group == "low" else _CLOSING[group]
        found.append(Quotation(text=text, start=match.start(group), end=match.end(group),
                               opening=claim_text[match.start()], closing=closing))
    return found


_ENCLOSING = {"“": "”", "„": "“”", "»": "«", "«": "»", '"': '"', "‘": "’"}
# A citation closing a block quotation: "(Smith 2020, p. 12)", "[12]", "(ebd., S. 4)".
_TRAILING_CITATION = re.compile(
    r"\s*(?:\((?=[^()]*\d)[^()]{1,160}\)|\[\d[\d,;\s–-]{0,40}\])\s*\.?\s*$")


def block_quotation(paragraph: str, *, min_words: int = MIN_WORDS) -> Quotation | None:
    """A whole paragraph given as a quotation (an indented block), without the marks
    around it and the citation after it; None when fewer than ``min_words`` remain."""
    start, end = 0, len(paragraph)
    citation = _TRAILING_CITATION.search(paragraph)
    if citation:
        end = citation.start()
    while start < end and paragraph[start].isspace():
        start += 1
    while end > start and paragraph[end - 1].isspace():
        end -= 1
    opening = closing = ""
    if end - start >= 2 and paragraph[start] in _ENCLOSING:
        ends = _ENCLOSING[paragraph[start]]
        last = end - 1
        if paragraph[last] in ".,;" and last - 1 > start:
            last -= 1
        if paragraph[last] in ends:
            opening, closing = paragraph[start], paragraph[last]
            start, end = start + 1, last
    text = paragraph[start:end]
    if len(normalize.words(text, transliterate=False)) < min_words:
        return None
    return Quotation(text=text, start=start, end=end, opening=opening, closing=closing, block=True)



__all__ = [
    "Difference", "Quotation", "QuotationCheck", "QuotationError", "block_quotation",
    "find_quotations",
]
