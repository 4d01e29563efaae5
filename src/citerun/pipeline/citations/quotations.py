"""Quotations in a thesis, and whether each stands verbatim in its source, on which pages.

A quotation is a promise that the source says exactly this: a changed word is a finding
of its own, whatever the judge makes of the claim. :func:`find_quotations` finds the
quoted passages of a sentence ("…", “…”, „…“, »…«, «…», ‘…’), :func:`block_quotation`
takes a whole paragraph as one; :func:`check_quotation` looks each up in the source's
pages and says "exact", "altered" (with the words the thesis changed, added or left out)
or "not_found", and the page labels it stands on, so that the cited page can be checked
against the printed page (:mod:`.locators`).

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

import collections
import dataclasses
import functools
import re
import typing
import unicodedata
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import Levenshtein

from citerun import errors
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


# --- normalising both sides ------------------------------------------------------------

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


# --- the quotation's parts ---------------------------------------------------------------

_ELLIPSIS = r"\.(?:\s?\.){2,3}"
_MARKS = re.compile(
    rf"\[\s*{_ELLIPSIS}\s*\]|\(\s*{_ELLIPSIS}\s*\)|{_ELLIPSIS}"
    # A word the thesis changed inside ("[T]he", "model[s]").
    r"|(?P<word>[^\W_]+\[[^\[\]\s]{1,40}\][^\W_]*|\[[^\[\]\s]{1,40}\][^\W_]+)"
    r"|\[(?P<inside>[^\[\]]{0,200})\]"
)
_SIC = re.compile(r"\s*(?:sic|sic!|!|sic\s*!)\s*", re.IGNORECASE)
_NOTE = re.compile(
    r"\s*(?:emphasis|italics|hervorh|herv\.|kursiv|anm\.|footnote|fn\.|original)", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class _Quote:
    """A quotation as words: ``folded``/``exact`` in order, ``gaps[i]`` the most source
    words that may stand before word ``i`` (an ellipsis or an insertion), ``free`` the
    words whose capitalisation may differ (the first word, the first after a gap)."""

    exact: list[str]
    folded: list[str]
    gaps: dict[int, int]
    free: frozenset[int]
    marked: tuple[str, ...]
    segments: list[tuple[int, int]]  # word ranges between gaps


def _parse_quote(quote: str) -> _Quote:
    text = _normal(quote)
    exact: list[str] = []
    gaps: dict[int, int] = {}
    free: set[int] = {0}
    marked: list[str] = []
    position = 0

    def add_gap(width: int) -> None:
        gaps[len(exact)] = min(gaps.get(len(exact), 0) + width, MAX_OMITTED_WORDS * 4)
        free.add(len(exact))

    for match in _MARKS.finditer(text):
        exact.extend(_words(text[position:match.start()]))
        position = match.end()
        marked.append(match.group(0).strip())
        inside = match.group("inside")
        if match.group("word") is None and inside is None:
            add_gap(MAX_OMITTED_WORDS)  # an ellipsis
        elif inside is not None and (_SIC.fullmatch(inside) or _NOTE.match(inside)):
            continue  # "[sic]", "[emphasis added]": no words of the source
        else:
            add_gap(MAX_REPLACED_WORDS)
    exact.extend(_words(text[position:]))
    if not exact:
        raise QuotationError("the quotation has no words to look up")
    if len(exact) > MAX_QUOTE_WORDS:
        raise QuotationError(f"the quotation has {len(exact):,} words, more than {MAX_QUOTE_WORDS:,}")
    # A gap before the first word or after the last one stands for nothing.
    gaps.pop(0, None)
    gaps.pop(len(exact), None)
    cuts = [0, *sorted(gaps), len(exact)]
    segments = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    return _Quote(exact, [w.casefold() for w in exact], gaps, frozenset(free), tuple(marked),
                  segments)


# --- checking ----------------------------------------------------------------------------


def check_quotation(quote: str, pages: Sequence[tuple[str, str]] | SourceText) -> QuotationCheck:
    """Whether ``quote`` stands in the source ``pages`` (``(label, text)`` in order).

    "exact": every word as in the source (case kept; the first word's capitalisation,
    ellipses and bracketed insertions excepted); "altered": found with at most
    :data:`MAX_ALTERED_SHARE` of its words changed, added or left out; "not_found"
    otherwise. Raises :class:`QuotationError` for an empty or too long quotation or
    too large a source.
    """
    source = pages if isinstance(pages, SourceText) else prepare_source(pages)
    parsed = _parse_quote(quote)
    if not source.word_count:
        return QuotationCheck(status="not_found", marked=parsed.marked)
    spans = _exact_spans(parsed, source)
    if spans is not None:
        return _exact_result(parsed, source, spans)
    return _fuzzy_result(parsed, source)


def _find_aligned(source: SourceText, needle: str, start: int, end: int, *, backward: bool) -> typing.Iterator[int]:
    """Offsets in ``hay[start:end]`` where ``needle`` stands on word boundaries, nearest first."""
    hay = source.hay
    tries = 0
    while tries < _MAX_TRIES:
        at = hay.rfind(needle, start, end) if backward else hay.find(needle, start, end)
        if at < 0:
            return
        tries += 1
        if source.is_start(at) and source.is_start(at + len(needle)):
            yield at
        if backward:
            end = at + len(needle) - 1
        else:
            start = at + 1


def _exact_spans(parsed: _Quote, source: SourceText) -> list[tuple[int, int]] | None:
    """The source word ranges of the quotation's segments, when every segment stands
    there letter for letter with gaps no wider than allowed; None otherwise."""
    needles = ["".join(parsed.folded[a:b]) for a, b in parsed.segments]
    pivot = max(range(len(needles)), key=lambda i: len(needles[i]))
    for at in _find_aligned(source, needles[pivot], 0, len(source.hay), backward=False):
        spans: dict[int, tuple[int, int]] = {
            pivot: (source.word_from(at), source.word_from(at + len(needles[pivot])))}
        if _extend(parsed, source, needles, spans, pivot):
            return [spans[i] for i in range(len(needles))]
    return None


def _extend(parsed: _Quote, source: SourceText, needles: list[str],
            spans: dict[int, tuple[int, int]], pivot: int) -> bool:
    """Place the segments before and after the pivot, each nearest its neighbour."""
    words = source.word_count
    for index in range(pivot - 1, -1, -1):
        first_word = spans[index + 1][0]
        gap = parsed.gaps.get(parsed.segments[index + 1][0], 0)
        low_word = max(0, first_word - gap - 2 * (parsed.segments[index][1] - parsed.segments[index][0]) - 2)
        end = int(source.starts[first_word]) if first_word < words else len(source.hay)
        for at in _find_aligned(source, needles[index], int(source.starts[low_word]), end, backward=True):
            a, b = source.word_from(at), source.word_from(at + len(needles[index]))
            if first_word - b <= gap:
                spans[index] = (a, b)
                break
        else:
            return False
    for index in range(pivot + 1, len(needles)):
        last_word = spans[index - 1][1]
        gap = parsed.gaps.get(parsed.segments[index][0], 0)
        start = int(source.starts[last_word]) if last_word < words else len(source.hay)
        high_word = last_word + gap + 2 * (parsed.segments[index][1] - parsed.segments[index][0]) + 2
        end = int(source.starts[high_word]) if high_word < words else len(source.hay)
        for at in _find_aligned(source, needles[index], start, end, backward=False):
            a, b = source.word_from(at), source.word_from(at + len(needles[index]))
            if a - last_word <= gap:
                spans[index] = (a, b)
                break
        else:
            return False
    return True


def _pages(source: SourceText, spans: Sequence[tuple[int, int]]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The pages the words of ``spans`` stand on, in order."""
    pages: set[int] = set()
    for a, b in spans:
        if b <= a:
            continue
        first, last = int(source.page_of[a]), int(source.page_of[b - 1])
        if (b - 1) in source.spills:
            last += 1
        pages.update(range(first, last + 1))
    ordered = tuple(sorted(p for p in pages if p < len(source.labels)))
    return tuple(source.labels[p] for p in ordered), ordered


def _found_text(source: SourceText, a: int, b: int) -> str:
    text = " ".join(source.exact(a, min(b, a + _FOUND_CHARS)))
    return text if len(text) <= _FOUND_CHARS else text[:_FOUND_CHARS] + " …"


def _case_differences(parsed: _Quote, q_index: int, thesis: str, original: str) -> Difference | None:
    if thesis == original:
        return None
    if q_index in parsed.free and thesis[1:] == original[1:] and thesis[:1].casefold() == original[:1].casefold():
        return None
    kind: DifferenceKind = "case" if thesis.lower() == original.lower() or thesis.casefold() == original.casefold() else "changed"
    return Difference(kind, thesis, original)


def _exact_result(parsed: _Quote, source: SourceText, spans: list[tuple[int, int]]) -> QuotationCheck:
    differences: list[Difference] = []
    for (qa, qb), (sa, sb) in zip(parsed.segments, spans):
        thesis, original = parsed.exact[qa:qb], source.exact(sa, sb)
        if "".join(thesis) == "".join(original):
            continue
        if len(thesis) == len(original):
            pairs = list(zip(range(qa, qb), thesis, original))
        else:
            ops = Levenshtein.opcodes(parsed.folded[qa:qb], source.folded(sa, sb))
            pairs = [(qa + op.src_start + k, thesis[op.src_start + k], original[op.dest_start + k])
                     for op in ops if op.tag == "equal" for k in range(op.src_end - op.src_start)]
            if not pairs:
                pairs = [(qa, " ".join(thesis), " ".join(original))]
        for q_index, word, theirs in pairs:
            difference = _case_differences(parsed, q_index, word, theirs)
            if difference:
                differences.append(difference)
    labels, pages = _pages(source, spans)
    return QuotationCheck(
        status="altered" if differences else "exact", labels=labels, pages=pages,
        found=_found_text(source, spans[0][0], spans[-1][1]),
        differences=tuple(differences[:_MAX_DIFFERENCES]), edits=len(differences),
        marked=parsed.marked,
        score=1.0 - len(differences) / len(parsed.exact),
    )


def _anchors(parsed: _Quote) -> list[tuple[int, str]]:
    """Runs of words of the quotation (never across a gap) to look up exactly: three
    words in a long quotation, two in a short one; the longest (rarest) first."""
    size = 3 if len(parsed.folded) >= 12 else 2
    found: list[tuple[int, str]] = []
    for a, b in parsed.segments:
        width = min(size, b - a)
        for i in range(a, b - width + 1):
            text = "".join(parsed.folded[i:i + width])
            if len(text) >= 6:
                found.append((i, text))
    found.sort(key=lambda anchor: (-len(anchor[1]), anchor[0]))
    return found[:_MAX_ANCHORS]


def _windows(parsed: _Quote, source: SourceText) -> list[tuple[int, int]]:
    """Source word ranges where many anchors of the quotation stand together, best first."""
    hits: list[tuple[int, int]] = []  # (source word, quotation word)
    for q_index, needle in _anchors(parsed):
        for count, at in enumerate(_find_aligned(source, needle, 0, len(source.hay), backward=False)):
            if count >= _MAX_HITS:
                break
            hits.append((source.word_from(at), q_index))
    if not hits:
        return []
    hits.sort()
    length = len(parsed.folded)
    omitted = min(sum(parsed.gaps.values()), 4 * length + 2 * MAX_OMITTED_WORDS)
    spread = length // 20 + 5
    reach = length + length // 4 + 10 + omitted
    scored: list[tuple[int, int, int]] = []  # (-distinct anchors, first hit, last hit)
    inside: collections.Counter[int] = collections.Counter()
    right = 0
    for left in range(len(hits)):
        while right < len(hits) and hits[right][0] - hits[left][0] <= reach:
            inside[hits[right][1]] += 1
            right += 1
        scored.append((-len(inside), left, right))
        inside[hits[left][1]] -= 1
        if not inside[hits[left][1]]:
            del inside[hits[left][1]]
    scored.sort()
    windows: list[tuple[int, int]] = []
    for _, left, right in scored:
        # Where the quotation would begin by each hit; hits far from the consensus are
        # repeated phrases elsewhere, and would only widen the window.
        begins = sorted(s - q for s, q in hits[left:right])
        middle = begins[len(begins) // 2]
        group = [(s, q) for s, q in hits[left:right] if -spread <= s - q - middle <= spread + omitted]
        firsts = sorted(s - q for s, q in group)
        lasts = sorted(s + (length - q) for s, q in group)
        outliers = len(group) // 20
        low = max(0, firsts[outliers] - 3)
        high = min(source.word_count, lasts[len(lasts) - 1 - outliers] + 3)
        if any(low < b and a < high for a, b in windows):
            continue
        windows.append((low, high))
        if len(windows) >= _MAX_WINDOWS:
            break
    return windows


def _fuzzy_result(parsed: _Quote, source: SourceText) -> QuotationCheck:
    best: QuotationCheck | None = None
    length = len(parsed.folded)
    for low, high in _windows(parsed, source):
        check = _align(parsed, source, low, high)
        if check is not None and (best is None or check.edits < best.edits):
            best = check
    allowed = int(MAX_ALTERED_SHARE * length)
    if best is None or best.edits > allowed or round(best.score * length) < MIN_ANCHOR_WORDS:
        return QuotationCheck(status="not_found", marked=parsed.marked)
    return best


def _trimmed(opcodes: typing.Iterable[typing.Any]) -> list[typing.Any]:
    """Opcodes without the source words before the quotation's first word and after its last."""
    ops = list(opcodes)
    while ops and ops[0].tag == "insert":
        ops.pop(0)
    while ops and ops[-1].tag == "insert":
        ops.pop()
    return ops


def _align(parsed: _Quote, source: SourceText, low: int, high: int) -> QuotationCheck | None:
    """The quotation aligned word by word with ``source`` words ``low:high``."""
    window = source.folded(low, high)
    ops = _trimmed(Levenshtein.opcodes(parsed.folded, window))
    if not ops:
        return None
    # Inside a window, an edit costs the same wherever it falls: the source words around
    # the quotation may be taken for omissions inside it. Aligned again with only the
    # source words from its first to its last match, they cannot.
    matches = [op for op in ops if op.tag == "equal"]
    if matches and (matches[0].dest_start > 0 or matches[-1].dest_end < len(window)):
        first = matches[0].dest_start - matches[0].src_start
        last = matches[-1].dest_end + (len(parsed.folded) - matches[-1].src_end)
        low, high = low + max(0, first), low + min(len(window), max(last, matches[-1].dest_end))
        window = source.folded(low, high)
        ops = _trimmed(Levenshtein.opcodes(parsed.folded, window))
    printed = source.exact(low, high)
    differences: list[Difference] = []
    edits = 0
    equal = 0
    spans: list[tuple[int, int]] = []
    for op in ops:
        qa, qb, sa, sb = op.src_start, op.src_end, low + op.dest_start, low + op.dest_end
        thesis = " ".join(parsed.exact[qa:qb])
        original = " ".join(printed[sa - low:sb - low])
        if op.tag == "equal":
            equal += qb - qa
            spans.append((sa, sb))
            for k in range(qb - qa):
                difference = _case_differences(parsed, qa + k, parsed.exact[qa + k], printed[sa - low + k])
                if difference:
                    differences.append(difference)
                    edits += 1
        elif op.tag == "insert":
            if sb - sa <= parsed.gaps.get(qa, 0):
                continue  # what an ellipsis or a bracketed insertion stands for
            differences.append(Difference("omitted", "", original))
            edits += sb - sa
        elif op.tag == "delete":
            differences.append(Difference("added", thesis, ""))
            edits += qb - qa
        else:
            spans.append((sa, sb))
            differences.append(Difference("changed", thesis, original))
            edits += qb - qa
    if not spans:
        return None
    labels, pages = _pages(source, spans)
    return QuotationCheck(
        status="altered" if edits else "exact", labels=labels, pages=pages,
        found=_found_text(source, spans[0][0], spans[-1][1]),
        differences=tuple(differences[:_MAX_DIFFERENCES]), edits=edits, marked=parsed.marked,
        score=equal / len(parsed.folded),
    )


__all__ = [
    "Difference", "Quotation", "QuotationCheck", "QuotationError", "SourceText",
    "block_quotation", "check_quotation", "find_quotations", "prepare_source",
]
