"""Page texts joined into one text that still knows each offset's page.

Sentences and citation markers are found in the whole text, since a sentence may run
over a page break, but the report names the page each one stands on. The chunker and
claim extraction both join pages here, so that an offset means the same page in both.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import typing

_HYPHEN_AT_END = re.compile(r"[^\W\d_]-$")
# A page's last paragraph that is a heading ("4. Cool roofs", "Results"): a short
# paragraph of its own without closing punctuation, followed by a page opening in capitals.
_LAST_PARAGRAPH = re.compile(r"(?:^|\n\s*\n)([^\n]{1,80})$")
_CLOSING = re.compile(r"[.!?:;,)\]\-–—]$")
_MAX_HEADING_WORDS = 10


def _ends_with_heading(previous: str, following: str) -> bool:
    """Whether ``previous`` (a page) closes with a heading of what ``following`` opens:
    then the two are joined by a paragraph break, so the heading is not glued in front
    of the first sentence of the next page ("4. Cool roofs Reflective white roofs ...")."""
    last = _LAST_PARAGRAPH.search(previous)
    if last is None or last.start() == 0 and "\n" not in previous:
        return False
    heading = last.group(1).strip()
    return (bool(heading) and not _CLOSING.search(heading)
            and len(heading.split()) <= _MAX_HEADING_WORDS and following[:1].isupper())


@dataclasses.dataclass(frozen=True)
class JoinedPages:
    """``text`` is the pages' texts in order; ``starts[i]`` is where the page numbered
    ``numbers[i]`` begins in it."""

    text: str
    starts: tuple[int, ...]
    numbers: tuple[int, ...]

    def page_at(self, offset: int) -> int:
        """The number of the page that holds ``offset`` of :attr:`text`."""
        return self.numbers[max(bisect.bisect_right(self.starts, offset) - 1, 0)]


def join_pages(
    pages: typing.Iterable[tuple[int, str]], *, mend_hyphens: bool = False
) -> JoinedPages:
    """``(page_number, text)`` pairs as one text: each text stripped, blank pages left
    out, one space between pages (a paragraph break after a page that ends in a heading).

    With ``mend_hyphens`` a word hyphenated across a page break ("exam-" | "ple") is
    joined into one word instead.
    """
    parts: list[str] = []
    starts: list[int] = []
    numbers: list[int] = []
    offset = 0
    for number, text in pages:
        text = text.strip()
        if not text:
            continue
        if parts:
            previous = parts[-1]
            if mend_hyphens and _HYPHEN_AT_END.search(previous) and text[0].islower():
                parts[-1] = previous[:-1]
                offset -= 1
            elif _ends_with_heading(previous, text):
                parts.append("\n\n")
                offset += 2
            else:
                parts.append(" ")
                offset += 1
        starts.append(offset)
        numbers.append(number)
        parts.append(text)
        offset += len(text)
    return JoinedPages("".join(parts), tuple(starts), tuple(numbers))
