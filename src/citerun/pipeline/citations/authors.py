"""Read the author group that stands before a year: "Smith, Jones and Lee (2020)".

Every author-year marker (in parentheses, in square brackets, narrative, bare) names
its authors before its years. They are read by a bounded backward walk from the year,
never by a regex that may retry at every position, so a marker costs the same in any
text; and a capitalised word that only opens a sentence ("However (2020)"), a month
("May 2020") or a pronoun ("He (2019)") is not a surname.
"""

from __future__ import annotations

import re

from citerun.pipeline import layout, normalize
from citerun.pipeline.citations import patterns
from citerun.pipeline.citations import model

_SURNAME_TOKEN = re.compile(patterns.SURNAME_WORD)
_YEAR_IN_LIST = re.compile(rf"(?P<y>{patterns.YEAR})(?P<s>[a-z])?")
_YEAR_SPAN = re.compile(patterns.YEAR_SPAN)
_SPLIT_SURNAMES = re.compile(rf"\s*(?:,|{patterns.JOIN}(?=\s))\s*")
# How far before "(2020)" a narrative author group may start, in characters.
_NARRATIVE_WINDOW = 160
# A note mark glued to a name ("†Saier and Färber (2020)" opening a footnote).
_NOTE_MARKS = layout.NOTE_SIGNS + layout.SUPERSCRIPT_DIGITS


def surnames(authors: str) -> tuple[str, ...]:
    """Surnames of an in-text author group: "Smith, Jones & Lee et al." -> 3 names."""
    authors = patterns.ET_AL_RE.sub("", authors)
    return tuple(name for name in _SPLIT_SURNAMES.split(authors) if name)


def written_surname(name: str) -> str:
    """The surname of a name as a list writes it: "Smith, John" -> "Smith", "John
    Smith" -> "Smith" (the last word)."""
    name = name.strip()
    return name.split(",")[0].strip() if "," in name else (name.split() or [""])[-1]


def author_year_refs(authors: str, years: str) -> list[model.Ref]:
    """One :class:`~citerun.pipeline.citations.model.Ref` a year of ``years``, keyed
    "smith2020a" by the first surname; none when the first "surname" is a word that only
    opens a sentence or a date."""
    names = surnames(authors)
    # "August et al., 2023" and "May and Lee (2020)" are people; "(May 2020)" is a date.
    group = len(names) > 1 or bool(patterns.ET_AL_RE.search(authors))
    not_names = (patterns.NOT_SURNAMES - patterns.MONTHS - patterns.PRONOUN_SURNAMES
                 if group else patterns.NOT_SURNAMES)
    if not names or normalize.fold(names[0]) in not_names or names[0].casefold() in not_names:
        return []
    refs = []
    # "2008–2023" (software, a series) is one work, keyed by its first year.
    span = _YEAR_SPAN.fullmatch(years.strip())
    for match in [_YEAR_IN_LIST.match(years.strip())] if span else _YEAR_IN_LIST.finditer(years):
        if match is None:
            continue
        year, suffix = int(match["y"]), match["s"] or ""
        refs.append(model.Ref(f"{normalize.fold(names[0])}{year}{suffix}", names, year))
    return refs


def is_surname(token: str, group: bool = False) -> bool:
    """A capitalised name word; months pass here, :func:`author_year_refs` decides.
    In a ``group`` (before "et al." or "and") "He" and "She" are surnames too."""
    allowed = patterns.MONTHS | patterns.PRONOUN_SURNAMES if group else patterns.MONTHS
    return bool(_SURNAME_TOKEN.fullmatch(token)) and (
        token.casefold() not in patterns.NOT_SURNAMES or token.casefold() in allowed
    )


def authors_before(text: str, end: int, *, comma_list: bool) -> tuple[int, str] | None:
    """The author group that ends at ``end``: "Smith", "Smith and Jones", "Smith,
    Jones and Lee", "van der Berg et al." -> (start offset, the group as written).

    A bounded backward walk over the words before ``end`` (never a regex that may
    retry at every position), so a marker costs the same in any text. Without
    ``comma_list`` (narrative markers) a comma list needs its "and", or "However,
    Smith (2020)" would read as two authors.
    """
    limit = max(0, end - _NARRATIVE_WINDOW)
    read: list[tuple[int, str]] = []  # words read backwards from ``end``: read[0] is the last
    cursor = end

    def word(n: int) -> str:
        """The n-th word before ``end`` (0: the last one), read lazily."""
        nonlocal cursor
        while len(read) <= n and cursor > limit:
            stop = cursor
            while stop > limit and text[stop - 1].isspace():
                stop -= 1
            begin = stop
            while begin > limit and not text[begin - 1].isspace():
                begin -= 1
            cursor = begin
            if begin == stop or (begin == limit and limit > 0):  # nothing, or cut by the window
                cursor = limit
                break
            lead = len(text[begin:stop]) - len(text[begin:stop].lstrip(_NOTE_MARKS))
            read.append((begin + lead, text[begin + lead:stop]))
        return read[n][1] if n < len(read) else ""

    n = 0
    if word(0).rstrip(",") in ("al.", "al") and word(1) == "et":
        n = 2
    elif word(0) == "colleagues" and word(1) == "and":
        n = 2
    elif word(0).rstrip(",") == "a." and word(1) == "u.":
        n = 2
    if not is_surname(word(n).rstrip(","), group=n == 2):
        return None

    def take_surname(k: int) -> int:
        """Index of the first word of the surname ending at word k (particles included)."""
        while word(k + 1).casefold() in patterns.PARTICLES:
            k += 1
        return k

    first = take_surname(n)
    if n == 2 and word(first + 1).endswith(","):
        # "et al." follows one name: "(datasets like XSUM, Narayan et al., 2018)" is
        # Narayan's, not a list "XSUM, Narayan".
        pass
    elif word(first + 1) in ("and", "&", "und", "u."):
        k = first + 2
        if is_surname(word(k).rstrip(","), group=True):
            first = take_surname(k)
            while word(first + 1).endswith(",") and is_surname(word(first + 1)[:-1]) and not (
                    is_surname(word(first + 2)) and word(first + 2).casefold() not in patterns.PARTICLES):
                # ("PubMed Central, Saier and Färber (2019)": "Central" ends a longer name)
                first = take_surname(first + 1)
    elif comma_list:
        while word(first + 1).endswith(",") and is_surname(word(first + 1)[:-1]):
            first = take_surname(first + 1)
    start = read[first][0]
    return start, text[start:end]
