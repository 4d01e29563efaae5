"""Sentence splitting, one set of rules for the sources and the thesis.

Chunks are cut on sentence boundaries because both retrieval (BM25 and vectors) and the
judge read whole sentences; claim extraction splits the thesis with the very same rules
(:func:`sentence_spans`), and the judge splits a passage with :func:`sentences`.
"""

from __future__ import annotations

import re

# Lower-cased words that end with a period without ending the sentence. Single letters
# (initials, "S." for Seite, "p.") are handled by a rule of their own.
ABBREVIATIONS = frozenset(
    {
        "al", "e.g", "i.e", "cf", "vs", "fig", "figs", "tab", "eq", "eqs", "sec", "ch",
        "chap", "vol", "vols", "no", "nos", "pp", "ed", "eds", "dr", "prof", "mr", "mrs",
        "ms", "st", "approx", "ca", "resp", "ibid", "op", "cit", "et", "jr", "sr", "dept",
        "univ", "inc", "ltd", "co", "vgl", "z.b", "d.h", "u.a", "bzw", "abb", "kap",
        "hrsg", "aufl", "bd", "jg", "nr", "s.o", "s.u", "usw", "u.ä", "sog", "ggf",
        "inkl", "evtl", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
        "oct", "nov", "dec",
    }
)

# A candidate end: . ! ? (or an ellipsis), then closing quotes/brackets, then space,
# then something a sentence can start with.
_SENTENCE_END = re.compile(r"""[.!?…]+["'”’»)\]]*(?=\s+["'“‘„«(\[]?[A-ZÄÖÜ0-9])""")
_PARAGRAPH = re.compile(r"\n\s*\n")
_WORD_DELIMITERS = frozenset(" \t\n\r\f\v([\"'“„")
_SECTION_NUMBER = re.compile(r"(?:\d{1,3}\.)*\d{1,3}")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``, stripped of outer spaces.

    A blank line always ends a sentence (headings are their own sentence). Otherwise a
    sentence ends at ``.``, ``!`` or ``?`` followed by space and an upper-case letter or
    digit, except after an abbreviation ("et al.", "e.g.", "Fig.", "vgl.", "S."), an
    initial ("J. Smith") or a bare section number ("2. Methods" is one sentence).
    """
    spans: list[tuple[int, int]] = []
    paragraph_start = 0
    for paragraph in [*_PARAGRAPH.finditer(text), None]:
        paragraph_end = paragraph.start() if paragraph else len(text)
        start = paragraph_start
        for end_match in _SENTENCE_END.finditer(text, paragraph_start, paragraph_end):
            end = end_match.end()
            if _is_sentence_end(text, start, end_match.start()):
                _add_span(spans, text, start, end)
                start = end
        _add_span(spans, text, start, paragraph_end)
        if paragraph:
            paragraph_start = paragraph.end()
    return spans


def _is_sentence_end(text: str, start: int, period: int) -> bool:
    if text[period] != ".":
        return True
    # The word before the period, found by walking back (a regex anchored at the
    # period would retry at every position of a long word: quadratic).
    word_start = period
    while word_start > start and text[word_start - 1] not in _WORD_DELIMITERS:
        word_start -= 1
    if word_start == period:
        return True
    word = text[word_start:period]
    bare = word.rstrip(".").casefold()
    if bare in ABBREVIATIONS or (len(bare) == 1 and bare.isalpha()):
        return False
    # "2." or "3.1." alone at the start of a sentence is a heading number.
    return not (
        _SECTION_NUMBER.fullmatch(word.rstrip(".")) and not text[start:word_start].strip()
    )


def _add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        spans.append((start, end))


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each with its inner whitespace collapsed to one space."""
    return [" ".join(text[start:end].split()) for start, end in sentence_spans(text)]
