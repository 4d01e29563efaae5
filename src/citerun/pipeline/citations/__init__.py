"""Find the cited claims of a thesis and map each one to a source document.

This is the pure half of the ``extract_citations`` stage: pages in, plain data out, no
database, so a retried task gets exactly the same citations again. It is cut in the
order a reader works:

1. **The reference list** is found by its heading, in English, German, Portuguese,
   Spanish, French or Italian, on a line of its own; of several candidates the one
   followed by the most reference-like text wins (a table of contents, an early
   "Literature" chapter or a table cell do not). It ends at an appendix, a declaration
   or a letter-numbered section; a footnote closing a page of the list ("19The ...")
   stays body text. Entries are split by the labels at line starts
   (``[12]``, ``12.``, ``[AB12]``: the longest run n, n+1, ... wins) or, author-year,
   by the paragraphs the layout found (hanging indents, gaps), joined where a paragraph
   cannot open an entry. Each entry is parsed, best effort, into surnames ("Surname,
   I.", "Given Surname", "Surname I", an organisation kept whole: "World Health
   Organization"), year with suffix (not one in a URL's path, an arXiv id or a span
   of years in a title), title, DOI and arXiv id.
2. **Markers** are found in the body and in what follows the list (an appendix cites
   too), never in the list: numeric (``[3, 7]``, ``[4-6]``, superscript numbers when
   the paper numbers its list and has no bracketed ones), alpha (``[AB12]``),
   author-year in parentheses or square brackets (``(Smith & Jones, 2019; Lee et al.,
   2021)``, ``[Knight and Marcu, 2004]``, German ``(vgl. Müller 2018: 12)``), narrative
   (``Smith et al. (2020)``, not ``Dokshitzer(1977)`` in an equation) and
   ``ebd.``/``ibid.``; not a square of a symbol ("I²") and, in a paper that numbers
   its list and cites by number, no author-year group (quoted material). Every pattern is linear in the text: author groups are read by a
   bounded backward walk from the year, never by a regex that retries at every
   position. Each marker belongs to the sentence it stands in; the sentence, with the
   markers cut out, is the claim. Sentences come from
   :func:`citerun.pipeline.pdf.sentence_spans`, the splitter the chunker uses, so
   a claim and the evidence it is judged against are cut by the same rules.
3. **Mapping**: a key the user gave explicitly always wins; then a DOI or arXiv id
   equal on both sides; otherwise each reference entry is scored (rapidfuzz) against
   every source's title, first author or surnames, and year (one apart still counts:
   preprint and publication), and one source goes to at most one entry, best scores
   first. The decision records its reason. A citation that maps to nothing is kept
   with ``document_id=None``: it is reported as ``unresolved_citation`` with its
   reference entry, never silently dropped.

Everything here is a frozen dataclass except :class:`MatchConfig`, which is part of a
run's spec and therefore pydantic.
"""

from __future__ import annotations

import bisect
import collections.abc
import dataclasses
import re
import typing
import unicodedata

import pydantic
import rapidfuzz.fuzz

from citerun import errors
from citerun.pipeline import pdf

# --- data ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ReferenceEntry:
    """One entry of the thesis's reference list, parsed best effort.

    ``label`` is the entry's number in a numbered list ("12"), ``authors`` are surnames
    as written, ``year_suffix`` is the "a" of "2020a".
    """

    index: int
    text: str
    label: str | None
    authors: tuple[str, ...]
    year: int | None
    year_suffix: str
    title: str | None
    doi: str | None = None
    arxiv_id: str | None = None

    @property
    def author_year_key(self) -> str | None:
        """``smith2020a``-style key from the first surname and the year, if both known."""
        if not self.authors or self.year is None:
            return None
        return f"{normalize_key(self.authors[0])}{self.year}{self.year_suffix}"

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key a citation or the user may use for this entry."""
        keys = [self.label] if self.label else []
        if self.author_year_key:
            keys.append(self.author_year_key)
        return tuple(keys)


@dataclasses.dataclass(frozen=True)
class ExtractedCitation:
    """One (claim, cited source) pair, in reading order.

    ``key`` is "12" for ``[12]`` and "smith2020a" for ``Smith (2020a)``; ``marker`` is the
    marker as written; ``page`` is the 1-based thesis page the marker stands on;
    ``locator`` is the page locator of the marker without its prefix ("12", "3-5",
    "12 f."). ``authors`` and ``year`` are what an author-year marker names (empty for a
    numeric one); they let a marker with no reference entry be matched directly.
    """

    ordinal: int
    key: str
    claim: str
    page: int
    marker: str
    locator: str | None
    authors: tuple[str, ...] = ()
    year: int | None = None


@dataclasses.dataclass(frozen=True)
class Extraction:
    """What :func:`extract` found: citations, the reference list and where it starts."""

    citations: tuple[ExtractedCitation, ...]
    references: tuple[ReferenceEntry, ...]
    reference_page: int | None


@dataclasses.dataclass(frozen=True)
class SourceInfo:
    """A source document of the run, as the mapping sees it.

    ``explicit_keys`` are the citation keys the user assigned to it in the run's spec
    ("1", "smith2020"); they win over any fuzzy match.
    """

    document_id: str
    filename: str
    title: str | None
    authors: tuple[str, ...]
    year: int | None
    explicit_keys: tuple[str, ...] = ()
    doi: str | None = None
    arxiv_id: str | None = None


MatchMethod = typing.Literal["explicit", "reference", "marker"]


@dataclasses.dataclass(frozen=True)
class MappedCitation:
    """A citation and the document it points to (``None``: unresolved).

    ``method`` says how it was mapped: an explicit key, the reference entry's fuzzy
    match, or the marker's surname and year matched directly against the sources.
    ``score`` is the fuzzy score (0-100) or ``None`` for an explicit key; ``reason``
    says which fields matched ("doi equal", "title 96, first author, year ±1").
    """

    citation: ExtractedCitation
    reference: ReferenceEntry | None
    document_id: str | None
    method: MatchMethod | None
    score: float | None
    reason: str | None = None


class MatchConfig(pydantic.BaseModel):
    """How a reference entry is fuzzily matched against a source's metadata."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    threshold: float = pydantic.Field(
        default=70.0,
        ge=0.0,
        le=100.0,
        description=(
            "Lowest score (0-100) at which an entry maps to a source. 70 accepts a "
            "title with typos or a missing subtitle when authors and year agree, and "
            "rejects an unrelated title even when the year happens to match."
        ),
    )
    title_weight: float = pydantic.Field(
        default=0.6,
        ge=0.0,
        description="Weight of the title similarity; the title is the most specific field.",
    )
    author_weight: float = pydantic.Field(
        default=0.25,
        ge=0.0,
        description="Weight of the share of the source's surnames found in the entry.",
    )
    year_weight: float = pydantic.Field(
        default=0.15,
        ge=0.0,
        description="Weight of year equality; low, because preprint and print years differ.",
    )
    surname_similarity: float = pydantic.Field(
        default=85.0,
        ge=0.0,
        le=100.0,
        description=(
            "rapidfuzz ratio (0-100) at which two surnames count as the same; 85 "
            "accepts Mueller/Muller and OCR slips, rejects Smith/Smyth."
        ),
    )


class DuplicateKeyError(errors.CiterunError):
    """The same explicit citation key is given for two different sources."""


# --- normalisation -------------------------------------------------------------------

_UMLAUTS = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def fold(text: str) -> str:
    """Lower-case ASCII letters and digits: "Müller-Lüdenscheidt" -> "muellerluedenscheidt"."""
    text = text.casefold().translate(_UMLAUTS)
    text = unicodedata.normalize("NFKD", text)
    return _NON_ALNUM.sub("", "".join(c for c in text if not unicodedata.combining(c)))


def normalize_key(key: str) -> str:
    """The form keys are compared in: "[1]" -> "1", "Müller2018" -> "mueller2018"."""
    return fold(key)


def _words(text: str) -> str:
    """Folded words separated by single spaces, for fuzzy comparison."""
    text = unicodedata.normalize("NFKD", text.casefold().translate(_UMLAUTS))
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(re.findall(r"[a-z0-9]+", text))


# --- patterns ------------------------------------------------------------------------

_CAP = r"[A-ZÄÖÜÀ-ÖØ-ÞŁŚŻŹČŠŽ]"
_SURNAME_WORD = rf"{_CAP}[\w'’]*(?:-{_CAP}[\w'’]*)?"
_PARTICLE = r"(?:(?i:van|von|der|den|de|del|della|di|da|du|le|la|ten|ter|zu|dos)\s+)"
_SURNAME = rf"{_PARTICLE}*{_SURNAME_WORD}"
_ET_AL = r"(?:et\s+al\.?|u\.\s*a\.|and\s+colleagues)"
_JOIN = r"(?:&|and|und|u\.)"
_YEAR = r"(?:1[6-9]|20)\d{2}"
_YEAR_ITEM = rf"(?P<y>{_YEAR})(?P<s>[a-z])?(?![\w])"
_PAGES = r"\d+(?:\s*[-–—]\s*\d+)?(?:\s*ff?\.)?"
_PREFIXED_LOC = rf"(?:S\.|p\.|pp\.|Seite|Seiten|page|pages)\s*(?P<loc>{_PAGES})"

# Words that start a sentence with a capital and are then followed by "(2020)".
_NOT_SURNAMES = frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "in", "on", "at", "by", "for",
        "from", "since", "until", "however", "thus", "hence", "also", "and", "or", "but",
        "see", "cf", "vgl", "table", "figure", "fig", "chapter", "section", "appendix",
        "tab", "abb", "kapitel", "abschnitt", "anhang", "der", "die", "das", "im", "seit",
        "bis", "und", "oder", "year", "years", "jahr", "study", "studies", "survey",
        "report", "edition", "version", "january", "february", "march", "april", "may",
        "june", "july", "august", "september", "october", "november", "december",
        "januar", "februar", "märz", "juni", "juli", "oktober", "dezember", "summer",
        "winter", "spring", "autumn", "fall", "it", "we", "they", "he", "she",
    }
)

_NUMERIC = re.compile(
    r"\[\s*(?P<body>\d{1,4}(?:\s*[-–—]\s*\d{1,4})?(?:\s*[,;]\s*\d{1,4}(?:\s*[-–—]\s*\d{1,4})?)*)"
    rf"(?:\s*,\s*{_PREFIXED_LOC})?\s*\]"
)
# A bracket or parenthesis holding author-year parts: "(Smith, 2020; Lee et al., 2021)",
# "[Knight and Marcu, 2004]". The body is bounded and holds no nested group.
_GROUP = re.compile(r"(?P<open>[(\[])(?P<body>[^()\[\]\n]{1,300}(?:\n[^()\[\]\n]{1,300}){0,3})[)\]]")
# Alpha-style labels: "[AB12]", "[Knu84]", "[GHJV95, ABC+12]".
_ALPHA_KEY = r"[A-Z][A-Za-z+]{0,7}\d{2,4}[a-z]?"
_ALPHA_GROUP = re.compile(rf"\[(?P<body>{_ALPHA_KEY}(?:\s*[,;]\s*{_ALPHA_KEY}){{0,20}})\]")
# "(2020)", "(2020a, 2021)", "(2020, p. 12)" right after a narrative author group.
_YEAR_PAREN = re.compile(
    rf"\(\s*(?P<years>{_YEAR}[a-z]?(?![\w])(?:\s*,\s*{_YEAR}[a-z]?(?![\w])){{0,10}})"
    rf"(?:\s*(?:,\s*|:\s*)(?:{_PREFIXED_LOC}|(?P<loc2>{_PAGES})))?\s*\)"
)
# ACM/Springer narrative style, the year alone in square brackets after the names:
# "Qu et al. [2009]", "Lopes and Smith-Miles [2010, 2013]", "Bagger et al. [2019a,
# Table 6]", "Lewis et al. [2007, §3]". Whatever follows the years is the locator.
_YEAR_BRACKET = re.compile(
    rf"\[\s*(?P<years>{_YEAR}[a-z]?(?![\w])(?:\s*,\s*{_YEAR}[a-z]?(?![\w])){{0,10}})"
    r"(?:\s*[,;:]\s*(?P<loc>[^\[\]\n]{1,40}?))?\s*\]"
)
# The years of a part followed by words: "see Qu et al., 2009, for a discussion",
# "see Müller et al., 2018, §3.5" (the part then ends with its locator or a remark).
_PART_YEARS_THEN = re.compile(
    rf"(?:^|(?<=[\s,(]))(?P<years>{_YEAR}[a-z]?(?![\w])(?:\s*,\s*{_YEAR}[a-z]?(?![\w])){{0,10}})"
    rf"\s*,\s*(?P<tail>(?!{_YEAR})[^,]\S*(?:\s+\S+){{0,8}})\s*$"
)
# The year list (and locator) that ends an author-year part: "Smith & Lee, 2019a, S. 3".
_PART_YEARS = re.compile(
    rf"(?:^|(?<=[\s,(]))(?P<years>{_YEAR}[a-z]?(?![\w])(?:\s*,\s*{_YEAR}[a-z]?(?![\w])){{0,10}}"
    rf"|{_YEAR}\s*[-–]\s*(?:{_YEAR}|(?i:present|today|heute)))"
    rf"(?:\s*(?:,\s*|:\s*)(?:{_PREFIXED_LOC}|(?P<loc2>{_PAGES})))?\s*$"
)
_SURNAME_TOKEN = re.compile(rf"{_SURNAME_WORD}")
_IBID_WORD = r"(?:ebd\.|ebenda|ibid\.?|ibidem|ib\.)"
_IBID_PART = re.compile(
    rf"^\s*(?:(?:vgl\.|cf\.|see)\s*)?{_IBID_WORD}\s*(?:,?\s*{_PREFIXED_LOC}|:\s*(?P<loc2>{_PAGES}))?\s*$",
    re.IGNORECASE,
)
_IBID_BARE = re.compile(
    rf"(?<![\w.])(?:(?i:vgl\.)\s*)?(?i:{_IBID_WORD})(?:,?\s*{_PREFIXED_LOC})?"
)
# Superscript citation numbers as the layout writes them: "bias¹⁴ ¹⁵", "Jadad,¹¹⁻¹³".
_SUPERSCRIPT = re.compile(r"(?<=[^\s⁰¹²³⁴⁵⁶⁷⁸⁹])(?P<body>[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}(?:\s?[,–⁻-]?\s?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}){0,20})")
_FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_YEAR_IN_LIST = re.compile(rf"(?P<y>{_YEAR})(?P<s>[a-z])?")
_SPLIT_SURNAMES = re.compile(rf"\s*(?:,|{_JOIN}(?=\s))\s*")
# How far before "(2020)" a narrative author group may start, in characters.
_NARRATIVE_WINDOW = 160
_ET_AL_RE = re.compile(rf"\s*,?\s*{_ET_AL}\s*$")


@dataclasses.dataclass(frozen=True)
class _Ref:
    """One source a marker names: a numeric key, or authors and a year."""

    key: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    ibid: bool = False
    superscript: bool = False


@dataclasses.dataclass(frozen=True)
class _Marker:
    start: int
    end: int
    # What is cut out of the claim: the whole marker, or only "(2020)" of "Smith (2020)".
    cut_start: int
    cut_end: int
    text: str
    refs: tuple[_Ref, ...]
    locator: str | None
    # "Singh and Agarwal [1989]": names, then the year alone in square brackets.
    year_bracket: bool = False


def _clean_locator(raw: str | None) -> str | None:
    if not raw:
        return None
    text = re.sub(r"\s*[-–—]\s*", "-", raw.strip())
    return re.sub(r"\s*(ff?\.)$", r" \1", text)


def _surnames(authors: str) -> tuple[str, ...]:
    """Surnames of an in-text author group: "Smith, Jones & Lee et al." -> 3 names."""
    authors = _ET_AL_RE.sub("", authors)
    return tuple(name for name in _SPLIT_SURNAMES.split(authors) if name)


_MONTHS = frozenset(
    {"january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december", "januar", "februar", "märz", "juni", "juli",
     "oktober", "dezember"}
)


# Surnames that are also pronouns ("He et al., 2010", "She and Li, 2019"): names only in
# a group, where "et al." or a co-author follows.
_PRONOUN_SURNAMES = frozenset({"he", "she"})
_YEAR_SPAN = re.compile(rf"{_YEAR}\s*[-–]\s*(?:{_YEAR}|(?i:present|today|heute))")


def _author_year_refs(authors: str, years: str) -> list[_Ref]:
    names = _surnames(authors)
    # "August et al., 2023" and "May and Lee (2020)" are people; "(May 2020)" is a date.
    group = len(names) > 1 or bool(_ET_AL_RE.search(authors))
    not_names = _NOT_SURNAMES - _MONTHS - _PRONOUN_SURNAMES if group else _NOT_SURNAMES
    if not names or fold(names[0]) in not_names or names[0].casefold() in not_names:
        return []
    refs = []
    # "2008–2023" (software, a series) is one work, keyed by its first year.
    span = _YEAR_SPAN.fullmatch(years.strip())
    for match in [_YEAR_IN_LIST.match(years.strip())] if span else _YEAR_IN_LIST.finditer(years):
        if match is None:
            continue
        year, suffix = int(match["y"]), match["s"] or ""
        refs.append(_Ref(f"{fold(names[0])}{year}{suffix}", names, year))
    return refs


def _expand_numbers(body: str) -> list[str]:
    keys: list[str] = []
    for part in re.split(r"\s*[,;]\s*", body.strip()):
        bounds = re.split(r"\s*[-–—]\s*", part)
        if len(bounds) == 2:
            low, high = int(bounds[0]), int(bounds[1])
            # "[4-6]" is a range; "[9-2]" or "[1-5000]" is not, so keep only its ends.
            numbers = range(low, high + 1) if 0 < high - low <= 100 else (low, high)
            keys.extend(str(n) for n in numbers)
        elif part.isdigit():
            keys.append(str(int(part)))
    return list(dict.fromkeys(keys))


_JOIN_WORDS = frozenset({"and", "&", "und", "u.", "y", "et"})


def _is_surname(token: str, group: bool = False) -> bool:
    """A capitalised name word; months pass here, :func:`_author_year_refs` decides.
    In a ``group`` (before "et al." or "and") "He" and "She" are surnames too."""
    allowed = _MONTHS | _PRONOUN_SURNAMES if group else _MONTHS
    return bool(_SURNAME_TOKEN.fullmatch(token)) and (
        token.casefold() not in _NOT_SURNAMES or token.casefold() in allowed
    )


_NOTE_MARKS = "†‡§¶*∗⁰¹²³⁴⁵⁶⁷⁸⁹"


def _authors_before(text: str, end: int, *, comma_list: bool) -> tuple[int, str] | None:
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
            # A note mark glued to a name ("†Saier and Färber (2020)" opening a footnote).
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
    if not _is_surname(word(n).rstrip(","), group=n == 2):
        return None

    def take_surname(k: int) -> int:
        """Index of the first word of the surname ending at word k (particles included)."""
        while word(k + 1).casefold() in _PARTICLES:
            k += 1
        return k

    first = take_surname(n)
    if n == 2 and word(first + 1).endswith(","):
        # "et al." follows one name: "(datasets like XSUM, Narayan et al., 2018)" is
        # Narayan's, not a list "XSUM, Narayan".
        pass
    elif word(first + 1) in ("and", "&", "und", "u."):
        k = first + 2
        if _is_surname(word(k).rstrip(","), group=True):
            first = take_surname(k)
            while word(first + 1).endswith(",") and _is_surname(word(first + 1)[:-1]) and not (
                    _is_surname(word(first + 2)) and word(first + 2).casefold() not in _PARTICLES):
                # ("PubMed Central, Saier and Färber (2019)": "Central" ends a longer name)
                first = take_surname(first + 1)
    elif comma_list:
        while word(first + 1).endswith(",") and _is_surname(word(first + 1)[:-1]):
            first = take_surname(first + 1)
    start = read[first][0]
    return start, text[start:end]


_NAME_BEFORE = re.compile(rf"{_SURNAME_WORD}\s$")


def _is_power(text: str, start: int, body: str) -> bool:
    """A square or cube of a one-letter symbol ("the I² value", "(y²)", "χ²"), not a
    citation; "Lin Y²⁷" (an initial after a surname) and "Egger’s²⁴" still cite."""
    if body not in ("²", "³") or start < 1 or not text[start - 1].isalpha():
        return False
    before = text[max(0, start - 40):start - 1]
    if before[-1:].isalpha() or before[-1:] in ("'", "’"):
        return False  # part of a longer word
    return not (text[start - 1].isupper() and _NAME_BEFORE.search(before))


def _find_markers(text: str) -> list[_Marker]:
    """Every citation marker of ``text``, in order; linear in the text's length."""
    markers: list[_Marker] = []
    taken = bytearray(len(text) + 1)

    def free(start: int, end: int) -> bool:
        return not any(taken[start:end])

    def add(marker: _Marker) -> None:
        markers.append(marker)
        taken[marker.start:marker.end] = b"\x01" * (marker.end - marker.start)

    def narrative(match: re.Match[str], *, year_bracket: bool) -> None:
        """Names right before a bracketed or parenthesised year make one citation; with
        no space before the bracket ("Dokshitzer(1977)" in an equation) there is none."""
        if match.start() == 0 or not text[match.start() - 1].isspace():
            return
        before = text[:match.start()].rstrip()
        found = _authors_before(text, len(before), comma_list=False)
        if found is None:
            return
        start, authors = found
        refs = tuple(_author_year_refs(authors, match["years"]))
        if refs and free(start, match.end()):
            locator = match["loc"] or match.groupdict().get("loc2")
            add(_Marker(start, match.end(), match.start(), match.end(), text[start:match.end()],
                        refs, _clean_locator(locator), year_bracket=year_bracket))

    for match in _YEAR_BRACKET.finditer(text):
        # "Singh and Agarwal [1989]": names right before the bracket make the number a
        # year, not entry 1989 of a numbered list.
        narrative(match, year_bracket=True)
    for match in _NUMERIC.finditer(text):
        if not free(match.start(), match.end()):
            continue
        refs = tuple(_Ref(key) for key in _expand_numbers(match["body"]))
        add(_Marker(match.start(), match.end(), match.start(), match.end(), match[0], refs,
                    _clean_locator(match["loc"])))
    for match in _SUPERSCRIPT.finditer(text):
        if _is_power(text, match.start(), match["body"]):
            continue
        body = re.sub(r"\s+", ",", match["body"].translate(_FROM_SUPERSCRIPT).replace("–", "-"))
        body = re.sub(r",+", ",", body)
        refs = tuple(_Ref(key, superscript=True) for key in _expand_numbers(body))
        if refs:
            add(_Marker(match.start(), match.end(), match.start(), match.end(), match[0], refs, None))
    for match in _ALPHA_GROUP.finditer(text):
        if free(match.start(), match.end()):
            refs = tuple(_Ref(key.strip()) for key in re.split(r"\s*[,;]\s*", match["body"]))
            add(_Marker(match.start(), match.end(), match.start(), match.end(), match[0], refs, None))
    for match in _YEAR_PAREN.finditer(text):
        narrative(match, year_bracket=False)
    for match in _GROUP.finditer(text):
        if not free(match.start(), match.end()):
            continue
        refs_list: list[_Ref] = []
        locator: str | None = None
        for part in match["body"].split(";"):
            ibid = _IBID_PART.match(part)
            if ibid:
                refs_list.append(_Ref("ibid", ibid=True))
                locator = locator or _clean_locator(ibid["loc"] or ibid["loc2"])
                continue
            part = " ".join(part.split())
            years = _PART_YEARS.search(part)
            trailing = None if years else _PART_YEARS_THEN.search(part)
            if trailing is not None:
                head = part[:trailing.start()].rstrip(" ,")
                found = _authors_before(head, len(head), comma_list=True)
                if found is not None:
                    refs_list.extend(_author_year_refs(found[1], trailing["years"]))
                    tail = trailing["tail"].strip()
                    # A locator ("§3.5", "p. 4", "Table 6"), not a remark ("for a discussion").
                    if re.match(r"^(?:§|(?:p|pp|S|ch|chap|sec|Section|Table|Tab|Fig|Figure|"
                                r"Chapter|Theorem|Lemma|Eq)\b\.?\s*)?\s*[\dIVX]", tail):
                        locator = locator or _clean_locator(tail)
                continue
            if not years:
                continue
            head = part[:years.start()].rstrip(" ,")
            found = _authors_before(head, len(head), comma_list=True)
            if found is not None:
                refs_list.extend(_author_year_refs(found[1], years["years"]))
                locator = locator or _clean_locator(years["loc"] or years["loc2"])
        if refs_list:
            add(_Marker(match.start(), match.end(), match.start(), match.end(), match[0],
                        tuple(refs_list), locator))
    for match in _IBID_BARE.finditer(text):
        if free(match.start(), match.end()):
            add(_Marker(match.start(), match.end(), match.start(), match.end(), match[0],
                        (_Ref("ibid", ibid=True),), _clean_locator(match["loc"])))
    return sorted(markers, key=lambda m: m.start)


# --- sentences and claims ------------------------------------------------------------


def _claim_spans(text: str, markers: list[_Marker]) -> list[tuple[int, int]]:
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


def _sentence_of(marker: _Marker, spans: list[tuple[int, int]], starts: list[int], text: str) -> int:
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


def _claim_text(text: str, start: int, end: int, markers: collections.abc.Sequence[_Marker]) -> str:
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


# --- the reference list --------------------------------------------------------------

# Reference-list headings in English, German, Portuguese, Spanish, French and Italian,
# optionally numbered ("7 References", "VI. BIBLIOGRAPHY", "Capítulo 5 Referências").
_HEADING = re.compile(
    r"^\s*(?:(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4}|[A-Z])\.?\s+)?"
    r"(?:references?(?:\s+cited)?|reference\s+list|list\s+of\s+references|bibliography|"
    r"selected\s+bibliography|works\s+cited|literature(?:\s+cited)?|cited\s+literature|"
    r"literatur|literaturverzeichnis|quellenverzeichnis|quellen|"
    r"quellen-\s*und\s+literaturverzeichnis|literatur-\s*und\s+quellenverzeichnis|"
    r"bibliografia|bibliografía|bibliograf[ií]a\s+citada|bibliographie|"
    r"refer[êe]ncias(?:\s+bibliogr[áa]ficas)?|referencias(?:\s+bibliogr[áa]ficas)?|"
    r"r[ée]f[ée]rences(?:\s+bibliographiques)?|riferimenti(?:\s+bibliografici)?|"
    r"fontes|fuentes|obras\s+citadas)\s*:?\s*$",
    re.IGNORECASE,
)
# What ends a reference list: an appendix, a declaration, a CV, a checklist.
_STOP_HEADING = re.compile(
    r"^\s*(?:(?:[A-Z]|\d{1,2})\.?\s+)?(?:appendix|appendices|anhang|anh[äa]nge|ap[êe]ndices?|anexos?|"
    r"annexes?|appendice|appendici|allegat[oi]|ap[ée]ndices?|supplementary(?:\s+\w+){0,2}|"
    r"supplemental(?:\s+\w+){0,2}|eidesstattliche\s+(?:erkl[äa]rung|versicherung)|"
    r"selbstst[äa]ndigkeitserkl[äa]rung|declaration(?:\s+of\s+\w+)?|erkl[äa]rung|"
    r"curriculum\s+vitae|lebenslauf|checklist|author\s+biograph(?:y|ies)|"
    r"list\s+of\s+(?:figures|tables|abbreviations)|abbildungsverzeichnis|tabellenverzeichnis)"
    r"(?:\s+[A-Z0-9]{1,3})?\s*[:.]?\s*$",
    re.IGNORECASE,
)
# An appendix section headed by a letter: "A Background & Terminology", "B.1 Data".
_LETTER_HEADING = re.compile(r"^\s*[A-H](?:\.\d{1,2})?\.?\s+[A-Z][^.!?]{2,80}$")
_BRACKET_LABEL = re.compile(r"^[ \t]*\[(?P<n>\d{1,4})\][ \t]*", re.MULTILINE)
_BRACKET_LABEL_ANY = re.compile(r"(?:^|(?<=\s))\[(?P<n>\d{1,4})\]\s*")
_DOT_LABEL_LINE = re.compile(r"^[ \t]*(?P<n>\d{1,4})[.)](?:[ \t]+|$)", re.MULTILINE)
_DOT_LABEL_ANY = re.compile(rf"(?:^|(?<=\s))(?P<n>\d{{1,4}})[.)]\s+(?={_CAP})")
_BARE_LABEL_LINE = re.compile(rf"^[ \t]*(?P<n>\d{{1,4}})[ \t]+(?={_CAP})", re.MULTILINE)
_ALPHA_LABEL = re.compile(r"^[ \t]*\[(?P<n>[A-Za-z][A-Za-z+]{0,7}\d{2,4}[a-z]?)\][ \t]*", re.MULTILINE)
_ENTRY_LINE_START = re.compile(
    rf"^\s*{_SURNAME}(?:\s*,\s*(?:{_CAP}\.|{_CAP}[a-zäöüßé]+)|\s+[A-Z]{{1,3}}(?:,|\.|\s))"
)
# "Jeffrey Dean and Sanjay Ghemawat. 2004." / "Kyle Lo, Lucy Lu Wang, ..." (ACL, ACM).
_GIVEN_FIRST_START = re.compile(
    rf"^\s*{_CAP}[\w'’-]*\.?(?:\s+{_CAP}[\w'’-]*\.?){{0,2}}\s+{_SURNAME}\s*(?:,|\band\b|&|\.\s+(?:1[6-9]|20)\d\d)"
)
_ENTRY_IN_LINE = re.compile(
    rf"(?<=[.)])\s+(?={_SURNAME}\s*,\s*(?:{_CAP}\.|{_CAP}[a-zäöüßé]+\s*(?:\(|,|;|/|und\b|and\b|&)))"
)
_ANY_YEAR = re.compile(rf"(?<![\w])(?P<y>{_YEAR})(?P<s>[a-z])?(?![\w])")
_PAREN_YEAR = re.compile(rf"\(\s*(?P<y>{_YEAR})(?P<s>[a-z])?\s*\)")
# ACL/ACM: "Authors. 2020a. Title. Venue."
_DOTTED_YEAR = re.compile(rf"\.\s+(?P<y>{_YEAR})(?P<s>[a-z])?\.\s")
_QUOTED = re.compile(r"[\"“„«‘](?P<t>[^\"“”„«»]{5,}?)[\"”“»’]")
_EDITOR = re.compile(r"\((?:Hrsg|Hg|Eds?|ed|eds)\.?\)|\b(?:Hrsg|Hg)\.", re.IGNORECASE)
_VANCOUVER = re.compile(
    rf"^(?P<a>{_SURNAME}\s+[A-Z]{{1,3}}(?:\s*,\s*{_SURNAME}\s+[A-Z]{{1,3}}){{0,40}}(?:\s*,?\s*et\s+al)?)"
    r"\.\s+(?P<t>[^.?!]+[.?!]?)"
)
# What follows "Michael J." when it is a given name and an initial, not Vancouver's
# "Smith J.": the surname, then more given-first names joined by "and".
_NAMES_GO_ON = re.compile(
    rf"^{_SURNAME}(?:\s+(?:[IVX]{{1,3}}|Jr\.?))?\s*,\s*{_CAP}[\w'’-]+\s+(?:{_CAP}\.?\s+)*{_CAP}[\w'’-]+"
    rf"[^.]*?\band\s+{_CAP}"
)
# What follows "Edmund K." when the entry names its authors given name first: the
# surname, then "and" and another author, or the full stop that ends a lone author.
_GIVEN_INITIAL_SURNAME = re.compile(
    rf"{_SURNAME}(?:\s+(?:and|&)\s+{_CAP}[\w'’-]+\s+{_CAP}|\.\s+{_CAP}[a-z]"
    rf"|\s*,\s*{_CAP}[\w'’-]+(?:\s+{_CAP}\.)*\s+{_CAP}[\w'’-]+\s*,)")
# BMC/Springer: "Smith AB, Jones C: Title of the article. Journal 2010, 158:515-9."
_COLON_STYLE = re.compile(
    rf"^(?P<a>{_SURNAME}\s+[A-Z]{{1,3}}(?:\s*,\s*{_SURNAME}\s+[A-Z]{{1,3}}){{0,40}}(?:\s*,?\s*et\s+al\.?)?)"
    r"\s*:\s+(?P<t>[^.?!]+[.?!]?)"
)
_INITIALS = re.compile(rf"^(?:{_CAP}\.\s*(?:-\s*)?)+$|^[A-Z]{{1,3}}$")
_SENTENCE_BREAK = re.compile(r"(?<![\s.][A-Z])(?<!^[A-Z])[.?!](?=\s|$)")
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+[^\s\"<>.,;)\]])")
_ARXIV = re.compile(r"(?:arxiv\s*(?:preprint\s*)?:?\s*(?:abs/)?|arxiv\.org/abs/|\babs/)(\d{4}\.\d{4,5})",
                    re.IGNORECASE)
# How far after a heading the list is sampled to tell a reference list from a chapter.
_HEADING_SAMPLE = 3000


# A heading misspelt by one letter ("REFFERENCES", "Refrences", "Bibliograpy"): only a
# line that is that one word alone (optionally numbered), never a running head (the
# layout drops those) nor a sentence, and it must still be followed by a list.
_HEADING_WORDS = ("references", "bibliography", "literature", "bibliografia", "bibliographie",
                  "referencias", "literaturverzeichnis")
_ONE_WORD_HEADING = re.compile(r"^\s*(?:(?:\d{1,2}|[IVX]{1,4})\.?\s+)?(?P<w>[^\W\d_]{8,24})\s*:?\s*$")


def _one_edit_apart(a: str, b: str) -> bool:
    """One letter inserted, dropped, replaced, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1:] == shorter[i:]


def _is_heading(line: str) -> bool:
    if _HEADING.match(line):
        return True
    word = _ONE_WORD_HEADING.match(line)
    if word is None or not (word["w"].isupper() or word["w"].istitle()):
        return False
    folded = word["w"].casefold()
    # The first letter is kept: "Preferences" is a word of its own, not a misspelling.
    return any(folded[0] == known[0] and _one_edit_apart(folded, known) for known in _HEADING_WORDS)


def _heading_score(text: str) -> int:
    """How much the text after a heading looks like a reference list: year-ish items."""
    sample = text[:_HEADING_SAMPLE]
    return len(_ANY_YEAR.findall(sample)) + 2 * len(
        [line for line in sample.split("\n") if _ENTRY_LINE_START.match(line)
         or _GIVEN_FIRST_START.match(line) or _BRACKET_LABEL.match(line)
         or _ALPHA_LABEL.match(line) or _DOT_LABEL_LINE.match(line)]
    )


def _is_stop(line: str, previous_blank: bool) -> bool:
    if _STOP_HEADING.match(line):
        return True
    return previous_blank and bool(_LETTER_HEADING.match(line)) and not _ANY_YEAR.search(line)


def _find_reference_section(
    pages: list[tuple[int, str]],
) -> tuple[list[tuple[int, str]], str, int | None]:
    """Split the pages into the body (before the list and after it) and the list text.

    Every line that is a reference heading on its own is a candidate; the one followed
    by the most reference-like text wins (ties: the later one), so a table of contents,
    an early "Literature" chapter or a table cell that says "Bibliography" does not.
    The list ends at an appendix, a declaration or a similar heading; what follows it
    is body again (an appendix may cite too).
    """
    lines: list[tuple[int, str]] = []  # (page index, line)
    page_first: set[int] = set()  # indices of each page's first line
    for page_index, (_, text) in enumerate(pages):
        page_first.add(len(lines))
        lines.extend((page_index, line) for line in text.split("\n"))
    best: tuple[int, int] | None = None  # (score, line index)
    for index, (_, line) in enumerate(lines):
        if len(line) <= 60 and _is_heading(line):
            following = "\n".join(text for _, text in lines[index + 1:index + 80])
            score = _heading_score(following)
            if score >= 3 and (best is None or score >= best[0]):
                best = (score, index)
    if best is None:
        return pages, "", None
    heading = best[1]
    end = len(lines)
    for index in range(heading + 1, len(lines)):
        opens = index in page_first or not lines[index - 1][1].strip()
        if index > heading + 3 and _is_stop(lines[index][1], opens):
            end = index
            break
    notes = _footnotes_in(lines, heading + 1, end)
    reference_text = "\n".join(line for i, (_, line) in enumerate(lines) if heading < i < end and i not in notes)
    body: list[tuple[int, str]] = []
    for page_index, (number, _) in enumerate(pages):
        kept = [line for i, (p, line) in enumerate(lines)
                if p == page_index and (not heading <= i < end or i in notes)]
        if kept:
            body.append((number, "\n".join(kept)))
    return body, reference_text, pages[lines[heading][0]][0]


# A footnote's first line: its number glued to the text ("19The Kaggle ..."), raised, or
# a note sign. A list's own labels ("19.", "[19]", "19 Smith") are never glued.
_FOOTNOTE_LINE = re.compile(r"^\s*(?:\d{1,3}(?=[A-Z][a-z])|[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}\s*(?=\S)|[*†‡§¶]\s*(?=\S))")


def _footnotes_in(lines: list[tuple[int, str]], start: int, end: int) -> set[int]:
    """Lines of ``start:end`` that are a footnote closing a page (the layout puts a
    page's footnotes last): on the page where the list begins, a note of the body text
    ("19The Kaggle competitions. See Wang et al. (2020).") would otherwise be read as
    the tail of a reference entry, and its citation lost."""
    notes: set[int] = set()
    index = start
    while index < end:
        page = lines[index][0]
        stop = index
        while stop < end and lines[stop][0] == page:
            stop += 1
        # The page's last paragraph inside the list, if it opens like a footnote.
        first = stop
        while first > index and lines[first - 1][1].strip():
            first -= 1
        if index < first < stop and _FOOTNOTE_LINE.match(lines[first][1]):
            notes.update(range(first, stop))
        index = stop
    return notes


def _longest_chain(matches: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The longest run of labels numbered n, n+1, n+2 ... in reading order."""
    best_end: dict[int, tuple[int, int]] = {}  # number -> (chain length, match index)
    back: list[int] = []
    top = (0, -1)
    for index, (_, _, label) in enumerate(matches):
        number = int(label)
        before = best_end.get(number - 1)
        length = before[0] + 1 if before else 1
        back.append(before[1] if before else -1)
        if length > best_end.get(number, (0, -1))[0]:
            best_end[number] = (length, index)
        if length > top[0]:
            top = (length, index)
    chain: list[tuple[int, int, str]] = []
    index = top[1]
    while index >= 0:
        chain.append(matches[index])
        index = back[index]
    return chain[::-1]


def _split_numbered(text: str) -> list[tuple[str, str]] | None:
    """Entries of a numbered list as (label, text), if the list is numbered n, n+1, ...

    Labels at a line start are tried first ("[12]", "12.", "12 Smith"), then anywhere
    (a list flattened into one line). The longest consecutive chain wins, so "vol. 3."
    or "4. Aufl." inside an entry does not cut it, and a list whose first page was
    missed still splits.
    """
    for pattern in (_ALPHA_LABEL, _BRACKET_LABEL, _DOT_LABEL_LINE, _BRACKET_LABEL_ANY,
                    _DOT_LABEL_ANY, _BARE_LABEL_LINE):
        found = [(m.start(), m.end(), m["n"]) for m in pattern.finditer(text)
                 if pattern is _ALPHA_LABEL or not 1600 <= int(m["n"]) <= 2099]
        if pattern is _ALPHA_LABEL:
            bounds = found if len(found) >= 2 else []
        else:
            bounds = _longest_chain(found)
        if len(bounds) >= 2 and (pattern is not _BARE_LABEL_LINE or len(bounds) >= 5):
            return [
                (label, " ".join(text[end:(bounds[i + 1][0] if i + 1 < len(bounds) else len(text))].split()))
                for i, (_, end, label) in enumerate(bounds)
            ]
    return None


def _starts_entry(text: str) -> bool:
    """Whether a paragraph can open a reference entry (not a wrapped continuation)."""
    stripped = text.lstrip()
    if not stripped:
        return False
    if stripped[0].isupper() or stripped[0] in "[„“\"'(":
        return True
    # "van der Berg, A." and software named in lower case: "pdfplumber. 2023. ..."
    return stripped.split(" ", 1)[0].casefold() in _PARTICLES or bool(
        re.match(rf"^[\w.-]{{2,40}}\.\s+{_YEAR}", stripped))


_NAME_WORD = re.compile(rf"^(?:{_CAP}[\w'’.-]*|[A-Z]{{1,3}}\.?|and|&|und|et|al\.?|eds?\.?|"
                        r"(?i:van|von|der|den|de|del|della|di|da|du|le|la|ten|ter|zu|dos))$")


def _looks_like_authors(paragraph: str) -> bool:
    """Whether a paragraph opens with names ("Jeffrey Dean and Sanjay Ghemawat. 2004."),
    not with a title wrapped from the entry before ("Simplified data processing ...")."""
    head = paragraph.lstrip()
    if head[:1] == "[" or re.match(rf"^[\w.-]{{2,40}}\.\s+{_YEAR}", head):
        return True
    segment = re.split(r"(?<![A-Z])\.\s|\(|:|\d", head, maxsplit=1)[0]
    words = [w for w in re.split(r"[\s,;]+", segment) if w][:12]
    if not words:
        return False
    return sum(1 for w in words if _NAME_WORD.match(w)) >= 0.6 * len(words)


def _split_author_year(text: str) -> list[str]:
    """Author-year entries: a paragraph each (geometry put the blank lines there), a
    paragraph that cannot open an entry joined to the one before, and a surname-led
    line or run after a complete entry inside a paragraph."""
    paragraphs: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        if not paragraph.strip():
            continue
        if paragraphs and (
            not _starts_entry(paragraph)
            or not _looks_like_authors(paragraph)
            or not _ANY_YEAR.search(paragraphs[-1])
            or paragraphs[-1].rstrip().endswith(("-", ",", "&", " and", " und"))
        ):
            paragraphs[-1] = f"{paragraphs[-1]}\n{paragraph}"
        else:
            paragraphs.append(paragraph)
    entries: list[str] = []
    for paragraph in paragraphs:
        current = ""
        previous_line = ""
        for line in paragraph.split("\n"):
            line = line.strip()
            if not line:
                continue
            if (
                current
                and _ANY_YEAR.search(current)
                and previous_line.endswith(".")
                and (_ENTRY_LINE_START.match(line) or _GIVEN_FIRST_START.match(line))
                and line.split(" ", 1)[0].casefold() not in _NOT_SURNAMES
            ):
                entries.append(current)
                current = ""
            # Several entries run together on one line (a PDF block joined into one).
            position = 0
            for cut in _ENTRY_IN_LINE.finditer(line):
                piece = line[position:cut.start()]
                candidate = f"{current} {piece}".strip()
                if _ANY_YEAR.search(candidate):
                    entries.append(candidate)
                    current = ""
                    position = cut.end()
            current = _join_line(current, line[position:])
            previous_line = line
        if current:
            entries.append(current)
    return [" ".join(entry.split()) for entry in entries if len(entry.strip()) > 3]


def _join_line(text: str, line: str) -> str:
    """Append a line; a word hyphenated at the line end ("Bhagavat-" "ula") is joined."""
    if not text:
        return line
    if re.search(r"[^\W\d_]-$", text) and line[:1].islower():
        return text[:-1] + line
    return f"{text} {line}"


_PARTICLES = frozenset(
    {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "le", "la", "ten",
     "ter", "zu", "dos", "das", "do", "af", "al", "el", "bin", "ibn"}
)


def _given_first_surname(words: list[str]) -> str:
    """"Jeffrey Dean" -> "Dean", "Madeleine van Zuylen" -> "van Zuylen",
    "K. L. van der Berg" -> "van der Berg", "CHARLES BAZERMAN" -> "Bazerman"."""
    words = [w for w in words if not _INITIALS.match(w)] or words
    start = len(words) - 1
    while start > 0 and words[start - 1].casefold() in _PARTICLES:
        start -= 1
    name = " ".join(words[start:])
    return name.title() if name.isupper() and len(name) > 3 else name


def _entry_surnames(authors: str) -> tuple[str, ...]:
    """Surnames from an entry's author part, in the common styles.

    "Smith, J., Jones, K. L., & Lee, M." (APA), "J. Smith, K. Jones, and M. Lee"
    (IEEE), "Jeffrey Dean and Sanjay Ghemawat" (ACL, ACM), "Smith J, Jones KL"
    (Vancouver), "Müller, Hans; Schmidt, Petra" (German).
    """
    authors = _EDITOR.sub(" ", authors)
    authors = _ET_AL_RE.sub("", authors.strip(" .,:;([")).strip()
    if ";" in authors or "/" in authors:
        chunks = [c.strip() for c in re.split(r"[;/]", authors)]
        names = [c.split(",")[0].strip() if "," in c else (c.split() or [""])[-1] for c in chunks]
        return tuple(_tidy_surname(n) for n in names if _tidy_surname(n))
    head = authors.split(",", 1)[0].strip()
    if _organisation(head):  # "National Academies of Sciences and Medicine", kept whole
        rest = authors[len(head):].lstrip(" ,")
        return (head, *(_entry_surnames(rest) if rest else ()))
    chunks = [c.strip() for c in re.split(rf"\s*,\s*(?:{_JOIN}\s+)?|\s+{_JOIN}\s+|\s*&\s*", authors)]
    chunks = [c for c in chunks if c]
    # "Smith, John" / "Smith, J." (inverted) against "John Smith, Jane Doe" (given first):
    # inverted lists alternate a one-word surname with given names or initials.
    inverted = (
        len(chunks) >= 2
        and len(_strip_particles(chunks[0]).split()) == 1
        and (bool(_INITIALS.match(chunks[1])) or (len(chunks[1].split()) == 1 and len(chunks) == 2))
    )
    names = []
    for position, chunk in enumerate(chunks):
        words = chunk.split()
        if _organisation(chunk):
            names.append(chunk)  # "World Health Organization" is one author, kept whole
            continue
        initials = [bool(_INITIALS.match(w)) for w in words]
        if all(initials):
            continue
        if inverted:
            if position % 2 == 1 and not _INITIALS.match(chunk) and len(words) == 1 and len(chunks) == 2:
                continue  # "Smith, John": "John" is the given name
            name = chunk if len(words) == 1 or not all(initials[1:]) else words[0]
            if len(words) > 1 and all(initials[1:]):
                name = words[0]  # "Smith J" inside an inverted list
        elif initials[0] and not all(initials):  # "J. Smith", "K. L. van der Berg"
            name = _given_first_surname(words)
        elif len(words) > 1 and all(initials[1:]):  # "Smith J", "Smith KL"
            name = words[0]
        elif len(words) > 1:
            name = _given_first_surname(words)
        else:
            name = chunk
        if _tidy_surname(name):
            names.append(_tidy_surname(name))
    return tuple(names)


def _strip_particles(name: str) -> str:
    words = name.split()
    while len(words) > 1 and words[0].casefold() in _PARTICLES:
        words = words[1:]
    return " ".join(words)


def _tidy_surname(name: str) -> str:
    name = name.strip(" .,:;()[]*")
    return name if re.search(r"[^\W\d_]{2,}", name) else ""


def _first_segment(text: str) -> str | None:
    text = text.strip(" .,:;)")
    match = _SENTENCE_BREAK.search(text)
    segment = (text[:match.start()] if match else text).strip(" .,:;")
    return segment or None


def _plain_year(text: str) -> re.Match[str] | None:
    """The first year that dates the entry: not one inside a URL's path
    (".../publications/2008/...", "/1994-99/") nor one end of a span of years in a title
    ("anaemia 1993-2005"); the first year at all when there is no other."""
    first = None
    for match in _ANY_YEAR.finditer(text):
        first = first or match
        before, after = text[max(0, match.start() - 2):match.start()], text[match.end():match.end() + 2]
        if before.endswith("/") or after.startswith("/") or re.match(r"[-–]\d|\.\d", after) or re.search(
                r"\d[-–]$|[:.]$", before):  # also an arXiv id's "1806.04558", "arXiv:2004"
            continue
        return match
    return first


# A year that is an access date, not the publication's.
_ACCESSED = re.compile(r"(?i:accessed|retrieved|visited|abgerufen|zugegriffen|last\s+checked)\b[^()\[\]]{0,30}$")


def _last_year(text: str, first: re.Match[str]) -> re.Match[str]:
    """The last year of the entry that dates it (by :func:`_plain_year`'s tests), not an
    access date; ``first`` when there is none after it."""
    last = first
    for match in _ANY_YEAR.finditer(text, first.end()):
        before, after = text[max(0, match.start() - 2):match.start()], text[match.end():match.end() + 2]
        if before.endswith("/") or after.startswith("/") or re.match(r"[-–]\d|\.\d", after) or re.search(
                r"\d[-–]$|[:.]$", before) or _ACCESSED.search(text, max(0, match.start() - 40), match.start()):
            continue
        last = match
    return last


_ORGANISATION_WORD = re.compile(
    r"\b(?:Organi[sz]ation|University|Universit[äy]t|Institute?|Association|Office|Society|"
    r"Council|Committee|Group|Agency|Department|Ministry|Foundation|Consortium|Cent(?:re|er)|"
    r"Bureau|Board|Commission|Collaboration|Corporation|Federation|Union|Authority|"
    r"Administration|Academy|Academies|Institutes|Court|Courts|Clearinghouse|Organizers|"
    r"Organisers|Team|Project|Initiative|Bundesamt|Bundesministerium|Network|Programme|Program|"
    r"Service)\b"
)
# A name with "of" between capitalised words: "Office of Quality Improvement",
# "National Institutes of Health", "Organizers of Queer in AI".
_ORGANISATION_OF = re.compile(rf"^{_CAP}\S*(?:\s+{_CAP}\S*)*\s+(?:of|for|on)\s+{_CAP}")


def _organisation(chunk: str) -> bool:
    words = chunk.split()
    return len(words) >= 2 and words[0][:1].isupper() and bool(
        _ORGANISATION_WORD.search(chunk) or _ORGANISATION_OF.match(chunk))


def parse_entry(text: str, index: int, label: str | None = None) -> ReferenceEntry:
    """Parse one reference entry (without its label) into surnames, year, title, ids.

    Styles: APA "Smith, J. (2020). Title.", ACL/ACM "Jeffrey Dean and Sanjay Ghemawat.
    2004. Title.", IEEE 'J. Smith, "Title," Venue, 2020.', Vancouver "Smith J, Lee K.
    Title. BMJ. 2020;12:1-5." and BMC "Smith AB, Lee C: Title. Journal 2010, 158:515-9."
    """
    dotted = _DOTTED_YEAR.search(text)
    paren_year = _PAREN_YEAR.search(text)
    year_match = paren_year or dotted or _plain_year(text)
    if dotted and paren_year and dotted.start() < paren_year.start():
        year_match = dotted
    if year_match is not None and year_match is not paren_year and year_match is not dotted and (
            _SENTENCE_BREAK.search(text, 0, year_match.start())):
        # The year follows the title and venue ("... (PATAT-2002), pages 262-275. Springer,
        # 2003."): a year inside the venue's name is not the publication year, the last is.
        year_match = _last_year(text, year_match)
    year = int(year_match["y"]) if year_match else None
    suffix = (year_match["s"] or "") if year_match else ""
    quoted = _QUOTED.search(text)
    vancouver = _VANCOUVER.match(text)
    if vancouver and (_NAMES_GO_ON.match(vancouver["t"])
                      or _GIVEN_INITIAL_SURNAME.match(text, vancouver.start("t"))):
        # "Michael J. Bommarito II, Daniel Martin Katz, and Eric M. ...", "Edmund K.
        # Burke and Yuri Bykov.", "Jeffrey H. Kingston. Educational timetabling."
        vancouver = None
    colon_style = _COLON_STYLE.match(text)
    if quoted and (year_match is None or quoted.start() < year_match.start()):
        authors, title = text[:quoted.start()], quoted["t"].strip(" ,.")
    elif dotted and year_match is dotted and dotted.start() > 0:
        authors, title = text[:dotted.start()], _first_segment(text[dotted.end():])
    elif colon_style:
        authors, title = colon_style["a"], colon_style["t"].strip(" .")
    elif vancouver:
        authors, title = vancouver["a"], vancouver["t"].strip(" .")
    elif year_match and year_match.start() > 0 and (
        year_match is paren_year or not _SENTENCE_BREAK.search(text, 0, year_match.start())
    ):
        authors, title = text[:year_match.start()], _first_segment(text[year_match.end():])
    elif year_match and year_match.start() > 0:
        # "World Health Organization. World prevalence of anaemia 1993-2005. ..." and
        # "Michael Dobson. Title. Journal 2002;6": the authors end at the first full stop.
        authors = _first_segment(text) or ""
        title = _first_segment(text[len(authors):].lstrip(" ."))
    elif year_match:  # "2019. CHI '19: Proceedings ..." (no authors)
        authors, title = "", _first_segment(text[year_match.end():].lstrip(" ."))
    else:
        authors = _first_segment(text) or ""
        title = _first_segment(text[len(authors):].lstrip(" ."))
    doi = _DOI.search(text)
    arxiv = _ARXIV.search(text)
    return ReferenceEntry(
        index=index,
        text=text,
        label=label,
        authors=_entry_surnames(authors),
        year=year,
        year_suffix=suffix,
        title=title or None,
        doi=doi.group(1).lower() if doi else None,
        arxiv_id=arxiv.group(1) if arxiv else None,
    )


def parse_reference_list(text: str) -> tuple[ReferenceEntry, ...]:
    """Split the text after the reference heading into entries and parse each one."""
    numbered = _split_numbered(text)
    if numbered is not None:
        return tuple(parse_entry(t, i, label) for i, (label, t) in enumerate(numbered, 1))
    return tuple(parse_entry(t, i) for i, t in enumerate(_split_author_year(text), 1))


# --- extraction ----------------------------------------------------------------------


# Citations printed without brackets ("found by Nagata 2018", a table header whose
# names stand over their years) are only taken when the first surname and the year
# name an entry of the paper's own list: a bare year after a name is too common else.
_BARE_YEAR = re.compile(rf"(?<=\s)(?P<y>{_YEAR})(?P<s>[a-z])?(?![\w\])])")
_YEAR_LINE = re.compile(rf"[ \t]*{_YEAR}[a-z]?(?:[ \t]+{_YEAR}[a-z]?)*[ \t]*")
_NAME_GROUP = re.compile(rf"{_SURNAME}(?:\s+(?:and|&)\s+{_SURNAME}|\s+et\s+al\.?)?")
_NAME_GROUPS_LINE = re.compile(rf"[ \t]*{_NAME_GROUP.pattern}(?:[ \t]+{_NAME_GROUP.pattern})*[ \t]*")


def _bare_markers(text: str, found: list[_Marker], references: tuple[ReferenceEntry, ...]) -> list[_Marker]:
    """Author-year citations without brackets whose first surname and year are those
    of an entry of the list: "Lewis and Thompson 2015" in running text, and table
    headers of name lines over a row of years (paired in reading order, all or none)."""
    entries = {(fold(e.authors[0]), e.year) for e in references if e.authors and e.year}
    if not entries:
        return []
    taken = bytearray(len(text) + 1)
    for marker in found:
        taken[marker.start:marker.end] = b"\x01" * (marker.end - marker.start)
    added: list[_Marker] = []

    def cites(refs: list[_Ref]) -> bool:
        return bool(refs) and all(r.authors and (fold(r.authors[0]), r.year) in entries for r in refs)

    # Table headers: a run of lines of author groups, then a run of lines of years only.
    lines: list[tuple[int, str]] = []
    offset = 0
    for line in text.split("\n"):
        lines.append((offset, line))
        offset += len(line) + 1
    index = 0
    while index < len(lines):
        if not _YEAR_LINE.fullmatch(lines[index][1]) or index == 0:
            index += 1
            continue
        first_year = index
        while index < len(lines) and _YEAR_LINE.fullmatch(lines[index][1]):
            index += 1
        years = [(lines[i][0] + m.start(), m) for i in range(first_year, index)
                 for m in _ANY_YEAR.finditer(lines[i][1])]
        names_end = first_year
        while names_end > 0 and not lines[names_end - 1][1].strip():
            names_end -= 1  # a paragraph break between the names and the years
        start = names_end
        while start > 0 and lines[start - 1][1].strip() and _NAME_GROUPS_LINE.fullmatch(lines[start - 1][1]):
            start -= 1
        groups = [(lines[i][0] + m.start(), m[0]) for i in range(start, names_end)
                  for m in _NAME_GROUP.finditer(lines[i][1])]
        if not groups or len(groups) != len(years):
            continue
        pairs = []
        for (at, group), (year_at, year) in zip(groups, years):
            refs = _author_year_refs(group, year[0])
            if not cites(refs) or any(taken[at:at + len(group)]):
                break
            pairs.append(_Marker(at, at + len(group), at, at + len(group), f"{group} {year[0]}",
                                 tuple(refs), None))
        else:
            added.extend(pairs)
            for marker in pairs:
                taken[marker.start:marker.end] = b"\x01" * (marker.end - marker.start)
    # Running text: "found by Nagata 2018", "Lewis and Thompson 2015".
    for match in _BARE_YEAR.finditer(text):
        if any(taken[match.start():match.end()]) or text[match.start() - 1] == "\n":
            continue
        before = text[:match.start()].rstrip()
        if before.endswith((",", ".", ";", ":")) and not before.endswith("al."):
            continue
        got = _authors_before(text, len(before), comma_list=False)
        if got is None or "\n" in got[1]:
            continue
        refs = _author_year_refs(got[1], match[0])
        if cites(refs) and not any(taken[got[0]:match.end()]):
            added.append(_Marker(got[0], match.end(), match.start(), match.end(), text[got[0]:match.end()],
                                 tuple(refs), None))
            taken[got[0]:match.end()] = b"\x01" * (match.end() - got[0])
    return added


def extract(pages: collections.abc.Iterable[tuple[int, str]]) -> Extraction:
    """Find the reference list, the markers of the body and the claim of each marker.

    ``pages`` are ``(page_number, text)`` in reading order. A marker citing three
    sources gives three citations; ``ebd.``/``ibid.`` repeats the source cited just
    before it (or stays unresolved with key "ibid" if there is none).
    """
    body_pages, reference_text, reference_page = _find_reference_section(list(pages))
    references = parse_reference_list(reference_text) if reference_text else ()

    joined = pdf.join_pages(body_pages)
    body = joined.text
    if not body:
        return Extraction((), references, reference_page)

    markers = _find_markers(body)
    labels = {e.label for e in references if e.label}
    # Raised numbers cite only in a paper that numbers its list and has no bracketed
    # numbers; elsewhere they are footnote marks.
    bracketed = any(not r.superscript and r.key.isdigit() for m in markers for r in m.refs)
    if bracketed or not labels:
        markers = [m for m in markers if not any(r.superscript for r in m.refs)]
    numeric = [m for m in markers if m.refs and all(r.key.isdigit() for r in m.refs)]
    # "[0, 1]" is an interval; in a paper whose list is author-year, or whose numbered
    # list holds none of the numbers, a bracketed number is an equation or a range.
    drop = {
        id(m)
        for m in numeric
        if any(r.key == "0" for r in m.refs)
        or (len(references) >= 5 and not any(r.key in labels for r in m.refs))
    }
    markers = [m for m in markers if id(m) not in drop]
    if labels and all(label.isdigit() for label in labels) and any(
            r.key in labels for m in numeric if id(m) not in drop for r in m.refs):
        # A paper that numbers its list and cites by number makes no author-year
        # citations of its own: "(Brown et al., 2020)" there is quoted material (a
        # figure reproducing another paper's text), and "Smith et al. (2020) [5]" is
        # cited by its "[5]". "Singh and Agarwal [1989]" is the paper's own narrative
        # citation (its year in brackets where a number would stand), so it stays.
        markers = [m for m in markers if m.year_bracket or not any(r.authors for r in m.refs)]
    markers = sorted(markers + _bare_markers(body, markers, references), key=lambda m: m.start)
    spans = _claim_spans(body, markers)
    starts = [s for s, _ in spans]
    sentence_of = [_sentence_of(marker, spans, starts, body) for marker in markers]
    cut_starts = [m.cut_start for m in markers]
    cut_ends = [m.cut_end for m in markers]
    claims: dict[int, str] = {}

    def claim_of(index: int) -> str:
        if index not in claims:
            start, end = spans[index]
            inside = markers[bisect.bisect_right(cut_ends, start):bisect.bisect_left(cut_starts, end)]
            claims[index] = _claim_text(body, start, end, inside)
        return claims[index]

    citations: list[ExtractedCitation] = []
    previous: _Ref | None = None
    for marker, index in zip(markers, sentence_of):
        claim = claim_of(index)
        page = joined.page_at(marker.start)
        for ref in marker.refs:
            if ref.ibid:
                ref = previous if previous is not None else ref
            else:
                previous = ref
            citations.append(
                ExtractedCitation(
                    ordinal=len(citations) + 1,
                    key=ref.key,
                    claim=claim,
                    page=page,
                    marker=" ".join(marker.text.split()),
                    locator=marker.locator,
                    authors=ref.authors,
                    year=ref.year,
                )
            )
    return Extraction(tuple(citations), references, reference_page)


# --- mapping -------------------------------------------------------------------------


def _source_surnames(source: SourceInfo) -> list[str]:
    names = []
    for author in source.authors:
        author = author.strip()
        name = author.split(",")[0] if "," in author else (author.split() or [""])[-1]
        if fold(name):
            names.append(fold(name))
    return names


def _same_surname(a: str, b: str, config: MatchConfig) -> bool:
    return rapidfuzz.fuzz.ratio(fold(a), fold(b)) >= config.surname_similarity


def _filename_words(filename: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", filename)
    return _words(re.sub(r"[_\-.]+", " ", stem))


def match_score(entry: ReferenceEntry, source: SourceInfo, config: MatchConfig) -> float:
    """How well a reference entry describes a source, 0-100 (see :func:`match`)."""
    return match(entry, source, config)[0]


def match(entry: ReferenceEntry, source: SourceInfo, config: MatchConfig) -> tuple[float, str]:
    """How well a reference entry describes a source, 0-100, and why.

    A DOI or arXiv id printed in the entry that equals the source's wins outright (100).
    Otherwise a weighted mean over what both sides know: title similarity (the parsed
    title, or the source title found inside the entry's text), authors (the first
    author's surname, else the share of the source's surnames found in the entry), and
    the year (equal, or one apart: a preprint and its publication). A source named
    like the entry's key ("smith2020.pdf" for Smith 2020) scores 100. Without a title or
    authors to compare, the score is 0: a year alone proves nothing.
    """
    if entry.doi and source.doi and entry.doi.casefold() == source.doi.casefold():
        return 100.0, "doi equal"
    if entry.arxiv_id and source.arxiv_id and entry.arxiv_id == source.arxiv_id:
        return 100.0, "arxiv id equal"
    if entry.author_year_key and normalize_key(_filename_words(source.filename)) == entry.author_year_key:
        return 100.0, "file name is the entry's key"
    parts: list[tuple[float, float]] = []
    why: list[str] = []
    title = _words(source.title or "")
    from_filename = _filename_words(source.filename)
    if len(title.split()) < 2 and len(from_filename.split()) >= 3:
        title = from_filename  # "deep_learning_for_theses.pdf" says more than no title
    if title:
        scores = [0.0]
        if entry.title:
            entry_title = _words(entry.title)
            scores.append(
                (rapidfuzz.fuzz.token_set_ratio(entry_title, title)
                 + rapidfuzz.fuzz.token_sort_ratio(entry_title, title)) / 2
            )
        if len(title) >= 20:
            scores.append(rapidfuzz.fuzz.partial_ratio(title, _words(entry.text)))
        parts.append((max(scores), config.title_weight))
        why.append(f"title {max(scores):.0f}")
    surnames = _source_surnames(source)
    if surnames:
        entry_words = _words(entry.text).split()
        first_agrees = bool(entry.authors) and any(
            _same_surname(surnames[0], part, config) for part in _words(entry.authors[0]).split()
        )
        found = sum(
            1
            for name in surnames
            if any(_same_surname(name, other, config) for other in (*entry.authors, *entry_words))
        )
        author_score = 100.0 if first_agrees else 100.0 * found / len(surnames)
        parts.append((author_score, config.author_weight))
        why.append("first author" if first_agrees else f"authors {found}/{len(surnames)}")
    if not parts:
        return 0.0, "nothing to compare"
    if source.year is not None and entry.year is not None:
        gap = abs(source.year - entry.year)
        parts.append((100.0 if gap == 0 else 70.0 if gap == 1 else 0.0, config.year_weight))
        why.append("year" if gap == 0 else "year ±1" if gap == 1 else "year differs")
    total = sum(weight for _, weight in parts)
    score = sum(score * weight for score, weight in parts) / total if total else 0.0
    return score, ", ".join(why)


def _marker_score(citation: ExtractedCitation, source: SourceInfo, config: MatchConfig) -> float:
    """A marker's first surname and year against a source that has no reference entry."""
    if not citation.authors or citation.year is None:
        return 0.0
    if normalize_key(_filename_words(source.filename)) == citation.key:
        return 100.0
    surname = citation.authors[0]
    names = _source_surnames(source)
    if not any(_same_surname(part, name, config)
               for name in names[:1] for part in [surname, *_words(surname).split()]):
        return 0.0
    # The exact year: without an entry's title, a year apart is another work.
    if source.year != citation.year:
        return 0.0
    return 100.0


def _explicit_sources(sources: collections.abc.Sequence[SourceInfo]) -> dict[str, SourceInfo]:
    explicit: dict[str, SourceInfo] = {}
    for source in sources:
        for key in source.explicit_keys:
            normalized = normalize_key(key)
            other = explicit.get(normalized)
            if other is not None and other.document_id != source.document_id:
                raise DuplicateKeyError(
                    f"the citation key {key!r} is given for both {other.filename!r} "
                    f"and {source.filename!r}"
                )
            explicit[normalized] = source
    return explicit


def _entry_for(
    citation: ExtractedCitation,
    references: collections.abc.Sequence[ReferenceEntry],
    config: MatchConfig,
    mapped: collections.abc.Container[int] = (),
) -> ReferenceEntry | None:
    """The reference entry a citation names: its label, or its first surname and year.

    When one author has several entries (Chang 2017, Chang 2023a, Chang 2023b) the
    year and its suffix decide, then the second surname, then an entry that maps to a
    source wins over one that does not.
    """
    if not citation.authors:
        key = normalize_key(citation.key)
        return next((e for e in references if e.label and normalize_key(e.label) == key), None)
    same_author = [
        e for e in references
        if e.authors and e.year is not None
        and any(_same_surname(part, citation.authors[0], config)
                for part in [e.authors[0], *_words(e.authors[0]).split()])
    ]
    candidates = [e for e in same_author if e.year == citation.year]
    suffix = citation.key[len(normalize_key(citation.authors[0])) + 4:]
    exact = [e for e in candidates if e.year_suffix == suffix]
    candidates = exact or [e for e in candidates if not e.year_suffix or not suffix]
    if len(candidates) > 1 and len(citation.authors) > 1:
        # "Smith & Jones 2019" vs "Smith & Lee 2019": the second surname decides.
        second = [
            e
            for e in candidates
            if len(e.authors) > 1 and _same_surname(e.authors[1], citation.authors[1], config)
        ]
        candidates = second or candidates
    if len(candidates) > 1:
        candidates = [e for e in candidates if e.index in mapped] or candidates
    return candidates[0] if candidates else None


def map_citations(
    extraction: Extraction,
    sources: collections.abc.Sequence[SourceInfo],
    config: MatchConfig | None = None,
) -> tuple[MappedCitation, ...]:
    """Map every citation to a source document, keeping the unmapped ones.

    Order of precedence: an explicit key of a source equal to the citation's key or to
    one of its reference entry's keys; the reference entry's best fuzzy match (one
    source to at most one entry, greedily from the best score down, at or above
    ``config.threshold``); for an author-year marker without an entry, its surname and
    year matched directly against the sources. Raises :class:`DuplicateKeyError` when
    two sources claim the same explicit key.
    """
    config = config or MatchConfig()
    explicit = _explicit_sources(sources)

    entry_source: dict[int, tuple[SourceInfo, MatchMethod, float | None, str]] = {}
    for entry in extraction.references:
        for key in entry.keys:
            if key in explicit:
                entry_source[entry.index] = (explicit[key], "explicit", None, f"explicit key {key}")
                break
    taken = {source.document_id for source, _, _, _ in entry_source.values()}
    scored = sorted(
        (
            (*match(entry, source, config), entry.index, source_index)
            for entry in extraction.references
            if entry.index not in entry_source
            for source_index, source in enumerate(sources)
            if source.document_id not in taken
        ),
        key=lambda item: (-item[0], item[2], item[3]),
    )
    for score, reason, entry_index, source_index in scored:
        source = sources[source_index]
        if score < config.threshold:
            break
        if entry_index in entry_source or source.document_id in taken:
            continue
        entry_source[entry_index] = (source, "reference", score, reason)
        taken.add(source.document_id)

    return tuple(
        _resolve(citation, extraction.references, sources, explicit, entry_source, config)
        for citation in extraction.citations
    )


def _resolve(
    citation: ExtractedCitation,
    references: collections.abc.Sequence[ReferenceEntry],
    sources: collections.abc.Sequence[SourceInfo],
    explicit: dict[str, SourceInfo],
    entry_source: dict[int, tuple[SourceInfo, MatchMethod, float | None, str]],
    config: MatchConfig,
) -> MappedCitation:
    entry = _entry_for(citation, references, config, entry_source)
    key = normalize_key(citation.key)
    if key in explicit:
        return MappedCitation(citation, entry, explicit[key].document_id, "explicit", None,
                              f"explicit key {citation.key}")
    if entry is not None:
        if entry.index not in entry_source:
            return MappedCitation(citation, entry, None, None, None,
                                  "no source matches the reference entry")
        source, method, score, reason = entry_source[entry.index]
        return MappedCitation(citation, entry, source.document_id, method, score, reason)
    scored = [(_marker_score(citation, source, config), source) for source in sources]
    best = max(scored, key=lambda item: item[0], default=None)
    if best is None or best[0] < config.threshold:
        return MappedCitation(citation, None, None, None, None,
                              "the reference list has no entry for it and no source matches")
    return MappedCitation(citation, None, best[1].document_id, "marker", best[0],
                          "marker's first author and year")
