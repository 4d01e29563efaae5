"""The data the extraction and the mapping hand on: plain frozen dataclasses.

Everything here is a frozen dataclass except :class:`MatchConfig`, which is part of a
run's spec and therefore pydantic. :class:`Ref` and :class:`Marker` are the package's
own working parts (what a marker in the body names, and where it stands); the others
are what :func:`~citerun.pipeline.citations.extract` and
:func:`~citerun.pipeline.citations.map_citations` return.
"""

from __future__ import annotations

import dataclasses
import typing

import pydantic

from citerun.core import citekeys, errors
from citerun.pipeline import normalize



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
    ``names_work`` is the name the marker is attached to ("called Chubby [8]": "Chubby"),
    None when it cites its sentence's claim (see :mod:`.attribution`). ``markers`` is how
    many markers of its sentence it stands for: a sentence that cites the same source
    (and locator) twice is one citation, judged once. ``location`` is where a writer's
    file has it ("chapter2.tex:118", "paragraph 34"); None for a PDF thesis.
    """

    ordinal: int
    key: str
    claim: str
    page: int
    marker: str
    locator: str | None
    authors: tuple[str, ...] = ()
    year: int | None = None
    names_work: str | None = None
    markers: int = 1
    location: str | None = None


@dataclasses.dataclass(frozen=True)
class Skipped:
    """Something that looked like a citation, or should have been one, and was not taken,
    with the reason: a report says what it left out (nothing is dropped silently).

    ``where`` is "page 12", "reference list (page 40)", "chapter2.tex:118".
    """

    where: str
    text: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Extraction:
    """What :func:`extract` found: citations, the reference list and where it starts,
    and what it did not take (:class:`Skipped`)."""

    citations: tuple[ExtractedCitation, ...]
    references: tuple[ReferenceEntry, ...]
    reference_page: int | None
    skipped: tuple[Skipped, ...] = ()


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
    max_source_authors: int = pydantic.Field(
        default=100,
        ge=1,
        description=(
            "Authors of a source the matching reads, the first ones: the first author "
            "decides and a share of 100 names is as telling as of all. A source whose "
            "metadata lists 20,000 authors (a physics collaboration, or a hostile PDF) "
            "cost 26 s with 20 references before this cap (issue 27)."
        ),
    )
    max_references: int = pydantic.Field(
        default=5000,
        ge=1,
        description=(
            "Reference entries of one thesis beyond which its run is refused "
            "(TooLargeToMatch, the run fails with the limit named): the longest "
            "theses and review articles list under 2,000; 5,000 bounds the matching's "
            "work (indexes are linear in the entries, a source's title search scans them)."
        ),
    )
    max_citations: int = pydantic.Field(
        default=20_000,
        ge=1,
        description=(
            "Citations (marker and source pairs) of one thesis beyond which its run is "
            "refused: a 300-page thesis has a few thousand; each citation is also one "
            "judge task, so 20,000 bounds the run's work as well as the matching's."
        ),
    )


class DuplicateKeyError(errors.CiterunError):
    """The same explicit citation key is given for two different sources."""


class TooLargeToMatch(errors.CiterunError):
    """The thesis has more reference entries or citations than the matching's caps."""


#: The form keys are compared in: "[1]" -> "1", "Müller2018" -> "mueller2018" (the
#: core's, so the run spec refuses keys by the same rule).
normalize_key = citekeys.normalize_key




@dataclasses.dataclass(frozen=True)
class Ref:
    """One source a marker names: a numeric key, or authors and a year."""

    key: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    ibid: bool = False
    superscript: bool = False


@dataclasses.dataclass(frozen=True)
class Marker:
    """A citation marker in the body: where it stands, what it names and its locator."""

    start: int
    end: int
    # What is cut out of the claim: the whole marker, or only "(2020)" of "Smith (2020)".
    cut_start: int
    cut_end: int
    text: str
    refs: tuple[Ref, ...]
    locator: str | None
    # "Singh and Agarwal [1989]": names, then the year alone in square brackets.
    year_bracket: bool = False

