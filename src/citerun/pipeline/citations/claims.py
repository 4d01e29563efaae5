"""Cut the body into the sentences markers stand in; a sentence, markers cut out, is the claim.

Sentences come from :func:`citerun.pipeline.pdf.sentence_spans`, the splitter the
chunker uses, so a claim and the evidence it is judged against are cut by the same
rules. A marker belongs to the sentence it stands in, except one that opens a sentence
("... grows fast. [12] Next"), which closes the sentence before it.
"""

from __future__ import annotations

import bisect
import collections.abc
import re

from citerun.pipeline import pdf
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

