"""Whether a quotation stands verbatim in its source (:func:`check_quotation`): the
quotation's own marks read (ellipses, "[sic]", insertions), exact search of the folded
words first, then anchors voting for windows that rapidfuzz aligns word by word, and the
differences the thesis made."""

from __future__ import annotations

import collections
import dataclasses
import re
import typing
from collections.abc import Sequence

from rapidfuzz.distance import Levenshtein

from citerun.pipeline.citations.quotation_source import _normal, _words, prepare_source, SourceText
from citerun.pipeline.citations.quotations import (
    _FOUND_CHARS, _MAX_ANCHORS, _MAX_DIFFERENCES, _MAX_HITS, _MAX_TRIES, _MAX_WINDOWS,
    MAX_ALTERED_SHARE, MAX_OMITTED_WORDS, MAX_QUOTE_WORDS, MAX_REPLACED_WORDS, MIN_ANCHOR_WORDS,
    Difference, DifferenceKind, QuotationCheck, QuotationError,
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



__all__ = ["check_quotation"]
