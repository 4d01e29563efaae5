"""Sentence splitting, one set of rules for the sources and the thesis.

Chunks are cut on sentence boundaries because both retrieval (BM25 and vectors) and the
judge read whole sentences; claim extraction splits the thesis with the very same rules
(:func:`sentence_spans`), and the judge splits a passage with :func:`sentences`.
"""

from __future__ import annotations

import re

from citerun.pipeline import layout

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

# A candidate end: . ! ? (or an ellipsis), then closing quotes/brackets (German ones
# too: „…“, ‚…‘, »…« and «…»), then space,
# then something a sentence can start with. Raised note numbers after the period
# ("in Asia.¹–³ The", "one billion.⁴Many") belong to the sentence they close, and end
# it even with no space after them.
_OPENS = r"""["'“‘„«(\[]?[A-ZÄÖÜ0-9]"""
_RAISED = rf"[{layout.SUPERSCRIPT_DIGITS}]{{1,3}}(?:\s?[,–⁻-]?\s?[{layout.SUPERSCRIPT_DIGITS}]{{1,3}})*"
_SENTENCE_END = re.compile(
    rf"""[.!?…]+["'”’»“‘«›‹)\]]*(?:(?=\s+{_OPENS})|{_RAISED}(?=\s*{_OPENS}))""")
_PARAGRAPH = re.compile(r"\n\s*\n")
# Lower-cased words a line of running text may end on but a heading does not.
_FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "of", "and", "or", "nor", "but", "to", "in", "on", "for", "with",
        "by", "from", "at", "as", "that", "which", "who", "is", "are", "was", "were", "be",
        "been", "has", "have", "had", "our", "their", "its", "this", "these", "those", "we",
        "than", "into", "via", "per", "not", "such", "both", "either", "und", "oder", "der",
        "die", "das", "den", "dem", "des", "ein", "eine", "mit", "von", "zu", "im", "auf",
    }
)
_WORD_DELIMITERS = frozenset(" \t\n\r\f\v([\"'“„")
_SECTION_NUMBER = re.compile(r"(?:\d{1,3}\.)*\d{1,3}")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``, stripped of outer spaces.

    A blank line ends a sentence (headings are their own sentence), unless the text
    before it stops mid-phrase (a lower-case word or a comma) and the text after it goes
    on in lower case: a layout that set every line apart cut nothing. A heading line
    over the first line of a sentence, without a blank line between them, is a sentence
    of its own too (see :func:`_is_heading`). Otherwise a sentence ends at ``.``, ``!``
    or ``?`` followed by space and an upper-case letter or digit, except after an
    abbreviation ("et al.", "e.g.", "Fig.", "vgl.", "S."), an initial ("J. Smith") or a
    bare section number ("2. Methods" is one sentence).
    """
    spans: list[tuple[int, int]] = []
    paragraph_start = 0
    breaks = [m for m in _PARAGRAPH.finditer(text) if not _goes_on(text, m.start(), m.end())]
    for paragraph in [*breaks, None]:
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


def _goes_on(text: str, before: int, after: int) -> bool:
    """Whether the sentence runs on over the blank line between ``before`` and ``after``."""
    return (before > 0 and after < len(text) and (text[before - 1].islower() or text[before - 1] == ",")
            and text[after].islower())


def _is_heading(line: str, next_line: str) -> bool:
    """A line that opens a sentence and is a heading: short against the line under it
    (or all capitals), upper case at both starts, no final punctuation, not ending on
    a word running text breaks after ("the", "of", "and"), no marker in it."""
    words = line.split()
    if not words or len(words) > 10 or "[" in line or not next_line[:1].isupper():
        return False
    if not (line[0].isupper() or line[0].isdigit()) or line[-1] in ".,;:!?-–(":
        return False
    if words[-1].casefold() in _FUNCTION_WORDS:
        return False
    capitals = line.isupper() and len(line) >= 4
    return capitals or len(line) <= 0.7 * len(next_line.strip())


def _add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    # Heading lines that open the sentence ("Model Architecture\nBERT's model ...")
    # are sentences of their own.
    while start < end and (start == 0 or text[start - 1] == "\n"):
        line_end = text.find("\n", start, end)
        if line_end < 0:
            break
        next_start = line_end + 1
        while next_start < end and text[next_start].isspace():
            next_start += 1
        next_end = text.find("\n", next_start, end)
        next_line = text[next_start:end if next_end < 0 else next_end]
        if not _is_heading(text[start:line_end].strip(), next_line):
            break
        heading_end = line_end
        while heading_end > start and text[heading_end - 1].isspace():
            heading_end -= 1
        spans.append((start, heading_end))
        start = next_start
    if start < end:
        spans.append((start, end))


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each with its inner whitespace collapsed to one space."""
    return [" ".join(text[start:end].split()) for start, end in sentence_spans(text)]
