"""Find the cited claims of a thesis and map each one to a source document.

This is the pure half of the ``extract_citations`` stage: pages in, plain data out, no
database, so a retried task gets exactly the same citations again. It is cut in the
order a reader works:

1. **The reference list** is found by its heading (the *last* heading on a line of its
   own, so a table of contents or an early "Literature" chapter does not win), split
   into entries (numbered ``[1]``/``1.`` entries, or author-year entries that start a
   paragraph or line with a surname) and each entry is parsed, best effort, into its
   surnames, year and title.
2. **Markers** are found in the body before the list: numeric (``[3, 7]``, ``[4-6]``),
   author-year in parentheses (``(Smith & Jones, 2019; Lee et al., 2021)``, German
   ``(vgl. Müller 2018: 12)``), narrative (``Smith et al. (2020)``) and ``ebd.``/``ibid.``
   (the source cited just before). Each marker belongs to the sentence it stands in; the
   sentence, with the markers cut out, is the claim. Sentences come from
   :func:`citerun.worker.pipeline.pdf.sentence_spans`, the splitter the chunker uses, so
   a claim and the evidence it is judged against are cut by the same rules.
3. **Mapping**: a key the user gave explicitly always wins; otherwise each reference
   entry is fuzzily matched (rapidfuzz) against every source's title, authors and year,
   and one source goes to at most one entry, best scores first. A citation that maps to
   nothing is kept with ``document_id=None``: it is reported as ``unresolved_citation``,
   never silently dropped.

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
from citerun.worker.pipeline import pdf

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


MatchMethod = typing.Literal["explicit", "reference", "marker"]


@dataclasses.dataclass(frozen=True)
class MappedCitation:
    """A citation and the document it points to (``None``: unresolved).

    ``method`` says how it was mapped: an explicit key, the reference entry's fuzzy
    match, or the marker's surname and year matched directly against the sources.
    ``score`` is the fuzzy score (0-100) or ``None`` for an explicit key.
    """

    citation: ExtractedCitation
    reference: ReferenceEntry | None
    document_id: str | None
    method: MatchMethod | None
    score: float | None


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
_PAREN = re.compile(r"\((?P<body>[^()\[\]]{3,300})\)")
_AUTHORS_IN_PAREN = (
    rf"{_SURNAME}(?:\s*,\s*{_SURNAME})*(?:\s*,?\s*{_JOIN}\s*{_SURNAME})?(?:\s*,?\s*{_ET_AL})?"
)
_PAREN_PART = re.compile(
    rf"(?<![\w.])(?P<authors>{_AUTHORS_IN_PAREN})\s*,?\s*"
    rf"(?P<years>{_YEAR}[a-z]?(?![\w])(?:\s*,\s*{_YEAR}[a-z]?(?![\w]))*)"
    rf"(?:\s*(?:,\s*|:\s*)(?:{_PREFIXED_LOC}|(?P<loc2>{_PAGES})))?"
    r"(?=\s*(?:[,;]|$))"
)
# A comma list needs its "and" ("Smith, Jones and Lee (2019)"), or "However, Smith
# (2020)" would read as two authors.
_AUTHORS_NARRATIVE = (
    rf"{_SURNAME}(?:(?:,\s+{_SURNAME})*,?\s+{_JOIN}\s+{_SURNAME})?(?:\s+{_ET_AL})?"
)
_NARRATIVE = re.compile(
    rf"(?<![\w.])(?P<authors>{_AUTHORS_NARRATIVE})\s*"
    rf"(?P<paren>\(\s*(?P<years>{_YEAR}[a-z]?(?:\s*,\s*{_YEAR}[a-z]?)*)"
    rf"(?:\s*(?:,\s*|:\s*)(?:{_PREFIXED_LOC}|(?P<loc2>{_PAGES})))?\s*\))"
)
_IBID_WORD = r"(?:ebd\.|ebenda|ibid\.?|ibidem|ib\.)"
_IBID_PART = re.compile(
    rf"^\s*(?:(?:vgl\.|cf\.|see)\s*)?{_IBID_WORD}\s*(?:,?\s*{_PREFIXED_LOC}|:\s*(?P<loc2>{_PAGES}))?\s*$",
    re.IGNORECASE,
)
_IBID_BARE = re.compile(
    rf"(?<![\w.])(?:(?i:vgl\.)\s*)?(?i:{_IBID_WORD})(?:,?\s*{_PREFIXED_LOC})?"
)
_YEAR_IN_LIST = re.compile(rf"(?P<y>{_YEAR})(?P<s>[a-z])?")
_SPLIT_SURNAMES = re.compile(rf"\s*(?:,|{_JOIN}(?=\s))\s*")
_ET_AL_RE = re.compile(rf"\s*,?\s*{_ET_AL}\s*$")


@dataclasses.dataclass(frozen=True)
class _Ref:
    """One source a marker names: a numeric key, or authors and a year."""

    key: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    ibid: bool = False


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


def _clean_locator(raw: str | None) -> str | None:
    if not raw:
        return None
    text = re.sub(r"\s*[-–—]\s*", "-", raw.strip())
    return re.sub(r"\s*(ff?\.)$", r" \1", text)


def _surnames(authors: str) -> tuple[str, ...]:
    """Surnames of an in-text author group: "Smith, Jones & Lee et al." -> 3 names."""
    authors = _ET_AL_RE.sub("", authors)
    return tuple(name for name in _SPLIT_SURNAMES.split(authors) if name)


def _author_year_refs(authors: str, years: str) -> list[_Ref]:
    names = _surnames(authors)
    if not names or fold(names[0]) in _NOT_SURNAMES or names[0].casefold() in _NOT_SURNAMES:
        return []
    refs = []
    for match in _YEAR_IN_LIST.finditer(years):
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
        elif part:
            keys.append(str(int(part)))
    return list(dict.fromkeys(keys))


def _find_markers(text: str) -> list[_Marker]:
    markers: list[_Marker] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    def add(marker: _Marker) -> None:
        markers.append(marker)
        taken.append((marker.start, marker.end))

    for match in _NUMERIC.finditer(text):
        refs = tuple(_Ref(key) for key in _expand_numbers(match["body"]))
        add(_Marker(match.start(), match.end(), match.start(), match.end(), match[0], refs,
                    _clean_locator(match["loc"])))
    for match in _NARRATIVE.finditer(text):
        refs = tuple(_author_year_refs(match["authors"], match["years"]))
        if refs and free(match.start(), match.end()):
            add(_Marker(match.start(), match.end(), match.start("paren"), match.end("paren"),
                        match[0], refs, _clean_locator(match["loc"] or match["loc2"])))
    for match in _PAREN.finditer(text):
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
            found = _PAREN_PART.search(part.strip())
            if found:
                refs_list.extend(_author_year_refs(found["authors"], found["years"]))
                locator = locator or _clean_locator(found["loc"] or found["loc2"])
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
    spans = pdf.sentence_spans(text)
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and any(m.start < merged[-1][1] and m.end > start for m in markers):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _sentence_of(marker: _Marker, spans: list[tuple[int, int]], text: str) -> int:
    starts = [s for s, _ in spans]
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


def _claim_text(text: str, start: int, end: int, markers: list[_Marker]) -> str:
    pieces: list[str] = []
    position = start
    overlapping = (m for m in markers if m.cut_start < end and m.cut_end > start)
    for marker in sorted(overlapping, key=lambda m: m.cut_start):
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

_HEADING = re.compile(
    r"^\s*(?:(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4}|[A-Z])\.?\s+)?"
    r"(?:references|reference\s+list|list\s+of\s+references|bibliography|works\s+cited|"
    r"literature(?:\s+cited)?|literatur|literaturverzeichnis|quellenverzeichnis|"
    r"quellen-\s*und\s+literaturverzeichnis)\s*:?\s*$",
    re.IGNORECASE,
)
_STOP_HEADING = re.compile(
    r"^\s*(?:appendix|appendices|anhang|eidesstattliche\s+erkl[äa]rung|"
    r"selbstst[äa]ndigkeitserkl[äa]rung|declaration(?:\s+of\s+\w+)?|erkl[äa]rung)"
    r"(?:\s+[A-Z0-9]{1,3})?\s*:?\s*$",
    re.IGNORECASE,
)
_BRACKET_LABEL = re.compile(r"(?:^|(?<=\s))\[(?P<n>\d{1,4})\]\s*")
_DOT_LABEL_LINE = re.compile(r"^[ \t]*(?P<n>\d{1,4})[.)]\s+", re.MULTILINE)
_DOT_LABEL_ANY = re.compile(rf"(?:^|(?<=\s))(?P<n>\d{{1,4}})[.)]\s+(?={_CAP})")
_ENTRY_LINE_START = re.compile(
    rf"^\s*{_SURNAME}(?:\s*,\s*(?:{_CAP}\.|{_CAP}[a-zäöüßé]+)|\s+[A-Z]{{1,3}}(?:,|\.|\s))"
)
_ENTRY_IN_LINE = re.compile(
    rf"(?<=[.)])\s+(?={_SURNAME}\s*,\s*(?:{_CAP}\.|{_CAP}[a-zäöüßé]+\s*(?:\(|,|;|/|und\b|and\b|&)))"
)
_ANY_YEAR = re.compile(rf"(?<![\w])(?P<y>{_YEAR})(?P<s>[a-z])?(?![\w])")
_PAREN_YEAR = re.compile(rf"\(\s*(?P<y>{_YEAR})(?P<s>[a-z])?\s*\)")
_QUOTED = re.compile(r"[\"“„«‘](?P<t>[^\"“”„«»]{5,}?)[\"”“»’]")
_EDITOR = re.compile(r"\((?:Hrsg|Hg|Eds?|ed|eds)\.?\)|\b(?:Hrsg|Hg)\.", re.IGNORECASE)
_VANCOUVER = re.compile(
    rf"^(?P<a>{_SURNAME}\s+[A-Z]{{1,3}}(?:\s*,\s*{_SURNAME}\s+[A-Z]{{1,3}})*(?:\s*,?\s*et\s+al)?)"
    r"\.\s+(?P<t>[^.?!]+[.?!]?)"
)
_INITIALS = re.compile(rf"^(?:{_CAP}\.\s*(?:-\s*)?)+$|^[A-Z]{{1,3}}$")
_SENTENCE_BREAK = re.compile(r"(?<![\s.][A-Z])(?<!^[A-Z])[.?!](?=\s|$)")


def _find_reference_section(
    pages: list[tuple[int, str]],
) -> tuple[list[tuple[int, str]], str, int | None]:
    """Split the pages into the body before the reference heading and the list text."""
    heading: tuple[int, int] | None = None
    for page_index, (_, text) in enumerate(pages):
        for line_index, line in enumerate(text.split("\n")):
            if _HEADING.match(line):
                heading = (page_index, line_index)
    if heading is None:
        return pages, "", None
    page_index, line_index = heading
    number, text = pages[page_index]
    lines = text.split("\n")
    body = [*pages[:page_index], (number, "\n".join(lines[:line_index]))]
    rest = ["\n".join(lines[line_index + 1:])] + [t for _, t in pages[page_index + 1:]]
    reference_lines: list[str] = []
    for line in "\n\n".join(rest).split("\n"):
        if _STOP_HEADING.match(line):
            break
        reference_lines.append(line)
    return body, "\n".join(reference_lines), number


def _split_numbered(text: str) -> list[tuple[str, str]] | None:
    """Entries of a numbered list as (label, text), if the list is numbered 1, 2, 3 ..."""
    for pattern in (_BRACKET_LABEL, _DOT_LABEL_LINE, _DOT_LABEL_ANY):
        bounds: list[tuple[int, int, str]] = []
        expected = 1  # a list starts at 1, which keeps "vol. 3. ... 4. Aufl." out
        for match in pattern.finditer(text):
            number = int(match["n"])
            if number == expected:
                bounds.append((match.start(), match.end(), match["n"]))
                expected = number + 1
        if len(bounds) >= 2:
            return [
                (label, " ".join(text[end:(bounds[i + 1][0] if i + 1 < len(bounds) else len(text))].split()))
                for i, (_, end, label) in enumerate(bounds)
            ]
    return None


def _split_author_year(text: str) -> list[str]:
    """Author-year entries: a blank line, or a surname-led line/run after a complete one."""
    entries: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        current = ""
        for line in paragraph.split("\n"):
            line = line.strip()
            if not line:
                continue
            if current and _ANY_YEAR.search(current) and _ENTRY_LINE_START.match(line):
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
            current = f"{current} {line[position:]}".strip()
        if current:
            entries.append(current)
    return [" ".join(entry.split()) for entry in entries if len(entry.strip()) > 3]


def _entry_surnames(authors: str) -> tuple[str, ...]:
    """Surnames from an entry's author part, in the common styles.

    "Smith, J., Jones, K. L., & Lee, M." (APA), "J. Smith, K. Jones, and M. Lee"
    (IEEE), "Smith J, Jones KL" (Vancouver), "Müller, Hans; Schmidt, Petra" (German).
    """
    authors = _EDITOR.sub(" ", authors)
    authors = _ET_AL_RE.sub("", authors.strip(" .,:;([")).strip()
    if ";" in authors or "/" in authors:
        chunks = [c.strip() for c in re.split(r"[;/]", authors)]
        names = [c.split(",")[0].strip() if "," in c else (c.split() or [""])[-1] for c in chunks]
        return tuple(_tidy_surname(n) for n in names if _tidy_surname(n))
    names = []
    for chunk in re.split(rf"\s*,\s*(?:{_JOIN}\s+)?|\s+{_JOIN}\s+|\s*&\s*", authors):
        chunk = chunk.strip()
        if not chunk or _INITIALS.match(chunk):
            continue
        words = chunk.split()
        initials = [bool(_INITIALS.match(w)) for w in words]
        if initials[0] and not all(initials):  # "J. Smith", "K. L. van der Berg"
            name = " ".join(w for w, i in zip(words, initials) if not i)
        elif len(words) > 1 and all(initials[1:]):  # "Smith J", "Smith KL"
            name = words[0]
        else:
            name = chunk
        if _tidy_surname(name):
            names.append(_tidy_surname(name))
    return tuple(names)


def _tidy_surname(name: str) -> str:
    name = name.strip(" .,:;()[]")
    return name if re.search(r"[^\W\d_]{2,}", name) else ""


def _first_segment(text: str) -> str | None:
    text = text.strip(" .,:;)")
    match = _SENTENCE_BREAK.search(text)
    segment = (text[:match.start()] if match else text).strip(" .,:;")
    return segment or None


def parse_entry(text: str, index: int, label: str | None = None) -> ReferenceEntry:
    """Parse one reference entry (without its ``[1]`` label) into surnames, year, title."""
    year_match = _PAREN_YEAR.search(text) or _ANY_YEAR.search(text)
    year = int(year_match["y"]) if year_match else None
    suffix = (year_match["s"] or "") if year_match else ""
    quoted = _QUOTED.search(text)
    vancouver = _VANCOUVER.match(text)
    if quoted and (year_match is None or quoted.start() < year_match.start()):
        authors, title = text[:quoted.start()], quoted["t"].strip(" ,.")
    elif vancouver:
        authors, title = vancouver["a"], vancouver["t"].strip(" .")
    elif year_match:
        authors, title = text[:year_match.start()], _first_segment(text[year_match.end():])
    else:
        authors = _first_segment(text) or ""
        title = _first_segment(text[len(authors):].lstrip(" ."))
    return ReferenceEntry(
        index=index,
        text=text,
        label=label,
        authors=_entry_surnames(authors),
        year=year,
        year_suffix=suffix,
        title=title or None,
    )


def parse_reference_list(text: str) -> tuple[ReferenceEntry, ...]:
    """Split the text after the reference heading into entries and parse each one."""
    numbered = _split_numbered(text)
    if numbered is not None:
        return tuple(parse_entry(t, i, label) for i, (label, t) in enumerate(numbered, 1))
    return tuple(parse_entry(t, i) for i, t in enumerate(_split_author_year(text), 1))


# --- extraction ----------------------------------------------------------------------


def extract(pages: collections.abc.Iterable[tuple[int, str]]) -> Extraction:
    """Find the reference list, the markers of the body and the claim of each marker.

    ``pages`` are ``(page_number, text)`` in reading order. A marker citing three
    sources gives three citations; ``ebd.``/``ibid.`` repeats the source cited just
    before it (or stays unresolved with key "ibid" if there is none).
    """
    body_pages, reference_text, reference_page = _find_reference_section(list(pages))
    references = parse_reference_list(reference_text) if reference_text else ()

    parts: list[str] = []
    page_starts: list[int] = []
    page_numbers: list[int] = []
    offset = 0
    for number, text in body_pages:
        text = text.strip()
        if not text:
            continue
        if parts:
            parts.append(" ")
            offset += 1
        page_starts.append(offset)
        page_numbers.append(number)
        parts.append(text)
        offset += len(text)
    body = "".join(parts)
    if not body:
        return Extraction((), references, reference_page)

    markers = _find_markers(body)
    spans = _claim_spans(body, markers)
    sentence_of = [_sentence_of(marker, spans, body) for marker in markers]

    citations: list[ExtractedCitation] = []
    previous: _Ref | None = None
    for marker, index in zip(markers, sentence_of):
        start, end = spans[index]
        claim = _claim_text(body, start, end, markers)
        page = page_numbers[max(bisect.bisect_right(page_starts, marker.start) - 1, 0)]
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
    """How well a reference entry describes a source, 0-100.

    A weighted mean over what both sides know: title similarity (the parsed title,
    or the source title found inside the entry's text), the share of the source's
    surnames found in the entry, and year equality. A source named like the entry's
    key ("smith2020.pdf" for Smith 2020) scores 100. Without a title or authors to
    compare, the score is 0: a year alone proves nothing.
    """
    if entry.author_year_key and normalize_key(_filename_words(source.filename)) == entry.author_year_key:
        return 100.0
    parts: list[tuple[float, float]] = []
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
    surnames = _source_surnames(source)
    if surnames:
        entry_words = _words(entry.text).split()
        found = sum(
            1
            for name in surnames
            if any(_same_surname(name, other, config) for other in (*entry.authors, *entry_words))
        )
        parts.append((100.0 * found / len(surnames), config.author_weight))
    if not parts:
        return 0.0
    if source.year is not None and entry.year is not None:
        parts.append((100.0 if source.year == entry.year else 0.0, config.year_weight))
    total = sum(weight for _, weight in parts)
    return sum(score * weight for score, weight in parts) / total if total else 0.0


def _marker_score(citation: ExtractedCitation, source: SourceInfo, config: MatchConfig) -> float:
    """A marker's first surname and year against a source that has no reference entry."""
    if not citation.authors or citation.year is None:
        return 0.0
    if normalize_key(_filename_words(source.filename)) == citation.key:
        return 100.0
    surname = citation.authors[0]
    names = _source_surnames(source)
    if not any(_same_surname(surname, name, config) for name in names[:1] or names):
        return 0.0
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
) -> ReferenceEntry | None:
    if not citation.authors:
        return next((e for e in references if e.label == citation.key), None)
    candidates = [
        e
        for e in references
        if e.year == citation.year and e.authors and _same_surname(e.authors[0], citation.authors[0], config)
    ]
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

    entry_source: dict[int, tuple[SourceInfo, MatchMethod, float | None]] = {}
    for entry in extraction.references:
        for key in entry.keys:
            if key in explicit:
                entry_source[entry.index] = (explicit[key], "explicit", None)
                break
    taken = {source.document_id for source, _, _ in entry_source.values()}
    scored = sorted(
        (
            (match_score(entry, source, config), entry.index, source_index)
            for entry in extraction.references
            if entry.index not in entry_source
            for source_index, source in enumerate(sources)
            if source.document_id not in taken
        ),
        key=lambda item: (-item[0], item[1], item[2]),
    )
    for score, entry_index, source_index in scored:
        source = sources[source_index]
        if score < config.threshold:
            break
        if entry_index in entry_source or source.document_id in taken:
            continue
        entry_source[entry_index] = (source, "reference", score)
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
    entry_source: dict[int, tuple[SourceInfo, MatchMethod, float | None]],
    config: MatchConfig,
) -> MappedCitation:
    entry = _entry_for(citation, references, config)
    key = normalize_key(citation.key)
    if key in explicit:
        return MappedCitation(citation, entry, explicit[key].document_id, "explicit", None)
    if entry is not None:
        if entry.index not in entry_source:
            return MappedCitation(citation, entry, None, None, None)
        source, method, score = entry_source[entry.index]
        return MappedCitation(citation, entry, source.document_id, method, score)
    scored = [(_marker_score(citation, source, config), source) for source in sources]
    best = max(scored, key=lambda item: item[0], default=None)
    if best is None or best[0] < config.threshold:
        return MappedCitation(citation, None, None, None, None)
    return MappedCitation(citation, None, best[1].document_id, "marker", best[0])
