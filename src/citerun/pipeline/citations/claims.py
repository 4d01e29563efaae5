"""Cut the body into the sentences markers stand in; a sentence, markers cut out, is the claim.

Sentences come from :func:`citerun.pipeline.pdf.sentence_spans`, the splitter the
chunker uses, so a claim and the evidence it is judged against are cut by the same
rules. A marker belongs to the sentence it stands in, except one that opens a sentence
("... grows fast. [12] Next"), which closes the sentence before it.

Before any of that, :func:`reading_order` makes whole a sentence that a caption,
footnotes or a figure's text interrupt (left column "... databases have", right column
"Figure 1: ...", then "been studied ..."); :func:`clause_parts` cuts a sentence that
cites different sources for different clauses into one claim per clause.
"""

from __future__ import annotations

import bisect
import collections.abc
import dataclasses
import re

from citerun.pipeline import layout, pdf
from citerun.pipeline.citations import model


def claim_spans(text: str, markers: list[model.Marker]) -> list[tuple[int, int]]:
    """Sentence spans, merged where a marker straddles a boundary the splitter saw."""
    owner = [0] * (len(text) + 1)  # 1 + index of the marker covering a position
    for number, marker in enumerate(markers, 1):
        owner[marker.start:marker.end] = [number] * (marker.end - marker.start)
    merged: list[tuple[int, int]] = []
    for start, end in pdf.sentence_spans(text):
        if merged and owner[start] and owner[start] == owner[merged[-1][1] - 1]:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def sentence_of(marker: model.Marker, spans: list[tuple[int, int]], starts: list[int], text: str) -> int:
    """The index of the span ``marker`` belongs to (``starts`` are the spans' starts)."""
    index = max(bisect.bisect_right(starts, marker.start) - 1, 0)
    start = spans[index][0]
    # "... grows fast. [12] Next ..." : a marker that opens a sentence closes the one
    # before it, unless a paragraph break lies between them. A narrative marker
    # ("Smith (2020) shows ...") is the subject of its own sentence.
    narrative = marker.cut_start != marker.start
    if index > 0 and not narrative and not text[start:marker.start].strip(" ([])"):
        gap = text[spans[index - 1][1]:start]
        if "\n\n" not in gap and not re.search(r"\n\s*\n", gap):
            return index - 1
    return index


def claim_text(
    text: str, start: int, end: int, markers: collections.abc.Sequence[model.Marker]
) -> str:
    """The text of ``start:end`` with the given markers (sorted, disjoint) cut out."""
    pieces: list[str] = []
    position = start
    for marker in markers:
        cut_start, cut_end = max(marker.cut_start, position), min(marker.cut_end, end)
        if cut_start < cut_end:
            pieces.append(text[position:cut_start])
            position = cut_end
    pieces.append(text[position:end])
    claim = " ".join("".join(pieces).split())
    claim = re.sub(r"\s+([.,;:!?)])", r"\1", claim)
    claim = re.sub(r"\(\s*\)", "", claim)
    return " ".join(claim.split()).strip(" ,;")



# --- one claim per cited clause -----------------------------------------------------

# What joins two cited clauses: "X [1] and Y [2]", "X [1]; Y [2]", "X [1], whereas Y [2]".
_CLAUSE_JOIN = re.compile(r"\s*(?:;|,?\s+(?:and|but|whereas|while)\b,?)\s+")
# Words a clause opens with when it has a subject of its own ("and the model ...").
_SUBJECT_WORDS = frozenset(
    {"the", "a", "an", "this", "these", "that", "those", "its", "their", "our", "we", "they",
     "it", "he", "she", "such", "most", "many", "some", "other", "others", "each", "all"}
)
_MIN_CLAUSE_WORDS = 4


def clause_parts(
    text: str, start: int, end: int, inside: collections.abc.Sequence[model.Marker]
) -> list[tuple[int, int, int]]:
    """``(start, end, markers)`` parts of the sentence ``start:end``, whose ``inside``
    markers (sorted) the parts take in turn, ``markers`` of them each.

    A sentence that cites different sources for two clauses ("X [1] and the Y [2].")
    is cut where the clauses join, after a marker: at a semicolon or a coordinating
    conjunction that a clause with its own subject follows (a capital or a determiner:
    "and uses Y [2]" shares its subject, which is not cut off, so it stays whole), the
    last marker closing the sentence, each part four words or more. Else the sentence
    is one part."""
    cuts: list[tuple[int, int, int]] = []  # (part end, next part start, markers before)
    if len(inside) >= 2 and not text[inside[-1].end:end].strip(" .!?)\"”'"):
        for index, (marker, following) in enumerate(zip(inside, inside[1:]), 1):
            if {r.key for r in marker.refs} == {r.key for r in following.refs}:
                continue
            join = _CLAUSE_JOIN.match(text, marker.end)
            if join is None or join.end() >= following.start:
                continue
            first = text[join.end():following.start].split()[0]
            if not (first[0].isupper() or first.casefold() in _SUBJECT_WORDS):
                continue
            before = text[cuts[-1][1] if cuts else start:marker.start]
            after = text[join.end():following.start]
            if len(before.split()) >= _MIN_CLAUSE_WORDS and len(after.split()) >= _MIN_CLAUSE_WORDS:
                cuts.append((marker.end, join.end(), index))
    if not cuts:
        return [(start, end, len(inside))]
    parts: list[tuple[int, int, int]] = []
    part_start, taken = start, 0
    for part_end, next_start, count in cuts:
        parts.append((part_start, part_end, count - taken))
        part_start, taken = next_start, count
    parts.append((part_start, end, len(inside) - taken))
    return parts


def as_sentence(claim: str) -> str:
    """A clause cut out of a sentence, written as one: a capital, a final period."""
    if claim and claim[-1] not in ".!?\"”'":
        claim += "."
    return claim[:1].upper() + claim[1:]


# --- sentences that an inset interrupts ---------------------------------------------

# A caption's first line: "Figure 1:", "Fig. 2.", "Table 3", "Abbildung 4:", "Tabelle 5".
CAPTION_START = re.compile(
    r"(?:Figure|Fig\.|Table|Tab\.|Abbildung|Abb\.|Tabelle|Listing|Algorithm)\s*\d+[a-z]?\s*[:.|]")
_NOTE_START = re.compile(rf"(?:\d{{1,3}}|[{layout.SUPERSCRIPT_DIGITS}{layout.NOTE_SIGNS}]+)\s*\S")
# How far past a sentence left open its continuation is looked for.
_MEND_BLOCKS = 16
_MEND_CHARS = 6000


def _blocks(text: str, page_starts: collections.abc.Sequence[int]) -> list[tuple[int, int]]:
    """The text cut into blocks at blank lines, page starts and captions' first lines."""
    cuts = {0, len(text)} | set(page_starts)
    for match in re.finditer(r"\n\s*\n", text):
        cuts.update((match.start(), match.end()))
    for match in re.finditer(r"(?m)^", text):
        if CAPTION_START.match(text, match.start()):
            cuts.add(match.start())
    edges = sorted(cuts)
    blocks = []
    for start, end in zip(edges, edges[1:]):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            blocks.append((start, end))
    return blocks


def _is_open(block: str) -> bool:
    """Running text of two lines or more that stops mid-sentence."""
    return ("\n" in block and (block[-1].islower() or block[-1] in ",)]")
            and not CAPTION_START.match(block) and not _NOTE_START.match(block))


def reading_order(text: str, page_starts: collections.abc.Sequence[int]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with each sentence an inset interrupts made whole, and where each piece
    of the new text came from (``(new start, old start)``, sorted).

    A block of running text that stops mid-sentence, a caption, footnotes or a figure's
    text after it, then a block that goes on in lower case: the reader reads on in that
    block, so it is moved up to the open one (a line break between them) and the inset
    follows. Of the lower-case blocks within reach the longest goes on (a figure's text
    has short ones); a block of running text that opens a sentence ends the search."""
    blocks = _blocks(text, page_starts)
    follows: dict[int, int] = {}
    moved: set[int] = set()
    for index, (start, end) in enumerate(blocks):
        if index in moved or not _is_open(text[start:end]):
            continue
        best: tuple[int, int] | None = None  # (lines, block index)
        for later in range(index + 1, min(index + 1 + _MEND_BLOCKS, len(blocks))):
            b_start, b_end = blocks[later]
            if b_start - end > _MEND_CHARS:
                break
            block = text[b_start:b_end]
            if block[0].islower() and later not in moved and later != index + 1:
                lines = block.count("\n") + 1
                if best is None or lines > best[0]:
                    best = (lines, later)
            elif ("\n" in block and block[0].isupper() and not CAPTION_START.match(block)
                  and not _NOTE_START.match(block) and not _is_open(block)):
                break
        if best is not None:
            follows[index] = best[1]
            moved.add(best[1])
    if not follows:
        return text, [(0, 0)]
    pieces: list[str] = []
    offsets: list[tuple[int, int]] = []
    length = 0

    last = -1

    def emit(index: int, separator: str) -> None:
        nonlocal length, last
        start, end = blocks[index]
        if pieces:
            if index == last + 1:  # in place: the gap as it was
                separator = text[blocks[last][1]:start]
            pieces.append(separator)
            length += len(separator)
        last = index
        offsets.append((length, start))
        pieces.append(text[start:end])
        length += end - start

    for index in range(len(blocks)):
        if index in moved:
            continue
        emit(index, "\n\n")
        while index in follows:
            index = follows[index]
            emit(index, "\n")
    return "".join(pieces), offsets


def old_offset(offsets: list[tuple[int, int]], offset: int) -> int:
    """Where ``offset`` of :func:`reading_order`'s text stood in the text it was given."""
    index = max(bisect.bisect_right([new for new, _ in offsets], offset) - 1, 0)
    new_start, old_start = offsets[index]
    return old_start + offset - new_start


# --- a bound on a claim's length (issue 41) ------------------------------------------

def cut_claim(claim: str, max_chars: int) -> str:
    """``claim`` cut at the last word boundary before ``max_chars`` characters, with an
    ellipsis; unchanged when it is not longer."""
    if len(claim) <= max_chars:
        return claim
    head = claim[: max_chars - 2]
    space = head.rfind(" ")
    if space > max_chars // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + " …"


def long_claim_note(where: str, claim: str, max_chars: int) -> model.Skipped:
    """What the report says of a claim cut at ``max_chars`` characters."""
    return model.Skipped(
        where, cut_claim(claim, 200),
        f"a claim of {len(claim):,} characters, over the limit of {max_chars:,} "
        f"(limits.max_claim_chars): only its first {max_chars:,} characters are judged "
        "and checked")


def claims_over(claims: collections.abc.Iterable[str], max_total: int) -> str | None:
    """Why the claims together are too many characters (each counted once per citation),
    or None when they are within ``max_total``."""
    count = total = 0
    for claim in claims:
        count += 1
        total += len(claim)
    if total <= max_total:
        return None
    return (f"the claims of its {count:,} citations total {total:,} characters (a sentence "
            f"counts once per citation it carries), over the limit of {max_total:,} "
            "characters (limits.max_claims_chars)")


def bound_claims(extraction: model.Extraction, max_chars: int) -> model.Extraction:
    """``extraction`` with every claim over ``max_chars`` characters cut (:func:`cut_claim`)
    and each such claim reported once in ``skipped`` (its page, its opening words, its
    whole length and how much of it is judged), never cut silently."""
    if all(len(c.claim) <= max_chars for c in extraction.citations):
        return extraction
    cut: list[model.ExtractedCitation] = []
    noted: dict[str, model.Skipped] = {}
    for citation in extraction.citations:
        claim = citation.claim
        if len(claim) > max_chars:
            if claim not in noted:
                noted[claim] = long_claim_note(citation.location or f"page {citation.page}",
                                               claim, max_chars)
            citation = dataclasses.replace(citation, claim=cut_claim(claim, max_chars))
        cut.append(citation)
    return dataclasses.replace(extraction, citations=tuple(cut),
                               skipped=tuple(noted.values()) + extraction.skipped)
