"""Both sides of a quotation check as words: text normalised (compatibility forms,
invisible characters, words hyphenated at a line end), words found by a vectorised word
mask, and a source's pages prepared once (:class:`SourceText`) for all the quotations of
one source."""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from citerun.pipeline.citations.quotations import MAX_SOURCE_CHARS, QuotationError


# Characters that vanish inside a word (soft hyphen, zero-width marks).
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
# Raised and lowered digits are note numbers and formulas, not part of the word they touch.
_NOT_WORD = frozenset("⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉")
_RAISED = re.compile("[\u00b2\u00b3\u00b9\u2070\u2074-\u2079\u2080-\u2089]")
_LINE_HYPHEN = re.compile(r"[-\u2010\u2011](?<=[^\W\d_].)[ \t]*\n\s*(?=[^\W\d_])")
_HYPHENS = "-\u2010\u2011"


def _join_line_hyphen(match: re.Match[str]) -> str:
    """ "cita-" + "tion" is one word; "post-" + "Soviet" keeps its hyphen (a separator)."""
    return "" if match.string[match.end()].islower() else "-"


def _normal(text: str) -> str:
    """Compatibility forms unfolded (NFKC: "ﬁ" -> "fi", "…" -> "..."), invisible
    characters removed, words hyphenated at a line end joined."""
    if not text.isascii():
        text = _INVISIBLE.sub("", _RAISED.sub(" ", text))
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
    if "\n" in text:
        text = _LINE_HYPHEN.sub(_join_line_hyphen, text)
    return text


@functools.lru_cache(maxsize=1 << 16)
def _is_word_char(code: int) -> bool:
    """Letters, digits and the combining marks inside a word ("i̇" of a folded "İ")."""
    char = chr(code)
    if char in _NOT_WORD or char == "_":
        return False
    return char.isalnum() or unicodedata.category(char) in ("Mn", "Mc")


_ASCII_WORD = np.array([_is_word_char(code) for code in range(128)], dtype=bool)


def _codes(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _word_mask(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """Which code points are word characters, vectorised: ASCII by a table, the rest
    by one look-up per distinct character."""
    mask = np.zeros(len(codes), dtype=bool)
    ascii_ = codes < 128
    mask[ascii_] = _ASCII_WORD[codes[ascii_]]
    other = ~ascii_
    if other.any():
        distinct, where = np.unique(codes[other], return_inverse=True)
        flags = np.fromiter((_is_word_char(int(c)) for c in distinct), dtype=bool, count=len(distinct))
        mask[other] = flags[where]
    return mask


def _bounds(codes: npt.NDArray[np.uint32]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Where each word begins and ends (code point offsets), and the word mask."""
    mask = _word_mask(codes)
    edges = np.diff(mask.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), mask


def _words(text: str) -> list[str]:
    """The words of already normalised ``text``, case kept."""
    if not text:
        return []
    starts, ends, _ = _bounds(_codes(text))
    return [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())]


@dataclasses.dataclass(eq=False)
class SourceText:
    """A source's pages as words, ready for many quotations (see :func:`prepare_source`).

    ``hay`` is the case-folded words run together; word ``i`` is
    ``hay[starts[i]:starts[i] + lengths[i]]`` and stands on page ``page_of[i]``; a word
    hyphenated over a page break is one word of the first page, listed in ``spills``.
    The words as printed (case kept) are read from ``texts`` page by page when a
    quotation is found there.
    """

    labels: tuple[str, ...]
    texts: tuple[str, ...]
    hay: str
    starts: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    page_of: npt.NDArray[np.int64]
    first_word: npt.NDArray[np.int64]  # per page, and the word count at the end
    spills: frozenset[int]
    _exact: dict[int, list[str]] = dataclasses.field(default_factory=dict)

    @property
    def word_count(self) -> int:
        return len(self.starts)

    def is_start(self, offset: int) -> bool:
        """Whether ``offset`` of :attr:`hay` is where a word begins (or the end)."""
        if offset >= len(self.hay):
            return offset == len(self.hay)
        at = int(np.searchsorted(self.starts, offset))
        return at < len(self.starts) and int(self.starts[at]) == offset

    def word_from(self, offset: int) -> int:
        """The index of the word starting at ``offset`` (a word start), or the word count."""
        return int(np.searchsorted(self.starts, offset))

    def offset(self, word: int) -> int:
        """Where word ``word`` begins in :attr:`hay` (its length for the word count)."""
        return int(self.starts[word]) if word < self.word_count else len(self.hay)

    def folded(self, a: int, b: int) -> list[str]:
        """Words ``a:b`` case-folded."""
        return [self.hay[s:s + n] for s, n in zip(self.starts[a:b].tolist(), self.lengths[a:b].tolist())]

    def exact(self, a: int, b: int) -> list[str]:
        """Words ``a:b`` as printed."""
        if b <= a:
            return []
        words: list[str] = []
        for page in range(int(self.page_of[a]), int(self.page_of[b - 1]) + 1):
            words.extend(self._page_words(page))
        first = int(self.first_word[int(self.page_of[a])])
        return words[a - first:b - first]

    def _page_words(self, page: int) -> list[str]:
        if page not in self._exact:
            words = _words(self.texts[page])
            first, last = int(self.first_word[page]), int(self.first_word[page + 1])
            if page > 0 and (first - 1) in self.spills:
                words = words[1:]  # its first word is the end of the last one of the page before
            if (last - 1) in self.spills and page + 1 < len(self.texts):
                following = _words(self.texts[page + 1])
                if words and following:
                    words[-1] += following[0]
            if len(words) != last - first:
                words = self.folded(first, last)  # casefold split a word: no case check here
            self._exact[page] = words
        return self._exact[page]


def prepare_source(pages: Sequence[tuple[str, str]]) -> SourceText:
    """``(label, text)`` pages as words, once for all the quotations of one source.

    Vectorised (numpy over the code points): a 2,000-page source takes about a second.
    """
    if sum(len(text) for _, text in pages) > MAX_SOURCE_CHARS:
        raise QuotationError(f"the source is longer than {MAX_SOURCE_CHARS:,} characters")
    texts = [_normal(text).strip() for _, text in pages]
    parts: list[str] = []
    page_starts: list[int] = []
    joins: list[int] = []
    offset = 0
    for index, text in enumerate(texts):
        if parts:
            previous = texts[index - 1]
            if previous[-1:] in _HYPHENS and previous[-2:-1].isalpha() and text[:1].islower():
                # "exam-" at the foot of one page, "ple" at the head of the next: one word.
                parts[-1] = parts[-1][:-1]
                offset -= 1
                joins.append(offset)
            else:
                parts.append("\n")
                offset += 1
        page_starts.append(offset)
        folded = text.casefold()
        parts.append(folded)
        offset += len(folded)
    codes = _codes("".join(parts))
    word_starts, word_ends, mask = _bounds(codes)
    lengths = (word_ends - word_starts).astype(np.int64)
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    page_of = np.searchsorted(np.asarray(page_starts, dtype=np.int64), word_starts, side="right") - 1
    first_word = np.searchsorted(page_of, np.arange(len(texts) + 1), side="left").astype(np.int64)
    spills = {int(np.searchsorted(word_starts, join, side="right")) - 1 for join in joins}
    return SourceText(
        labels=tuple(label for label, _ in pages), texts=tuple(texts),
        hay=codes[mask].tobytes().decode("utf-32-le", "surrogatepass"),
        starts=starts, lengths=lengths, page_of=page_of.astype(np.int64), first_word=first_word,
        spills=frozenset(s for s in spills if s >= 0),
    )


__all__ = ["SourceText", "prepare_source"]
