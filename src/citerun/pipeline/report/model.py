"""The report's JSON: the pydantic models that *are* its documented schema.

``Report.model_json_schema()`` is committed as ``docs/report.schema.json`` (regenerate
with ``python -m citerun.pipeline.report docs/report.schema.json``; a test fails when
the file is stale) and ``docs/report.md`` explains the fields. ``schema_version``
changes only when a field changes meaning or goes away, so tools reading old reports
keep working while fields are added.
"""

from __future__ import annotations

import collections
import collections.abc
import datetime
import enum
import json
import pathlib
import sys
import typing

import pydantic

from citerun.pipeline import judge

__all__ = [
    "SCHEMA_VERSION", "Box", "CitationEntry", "CitationSource", "EvidenceEntry",
    "MatchInfo", "PageCheck", "QuotationResult", "Report", "SkippedEntry", "SourceEntry",
    "SourceStatus", "Summary", "ThesisInfo", "VerdictCounts", "main", "schema_json",
    "summarize", "unused",
]

SCHEMA_VERSION: typing.Final = 1  # = Report.schema_version (tests/unit/test_single_sources.py)


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class SkippedEntry(_Model):
    """Something that looked like a citation, or should have been one, and was not taken."""

    where: str = pydantic.Field(
        description='Where it stands: "page 12", "reference list (page 40)", "chapter2.tex:118".')
    text: str = pydantic.Field(description='What was not taken, as written: "[250]", "entries 37, 38".')
    reason: str = pydantic.Field(description="Why it was not taken as a citation.")


class ThesisInfo(_Model):
    """The thesis the run checked."""

    filename: str = pydantic.Field(description="File name of the thesis as uploaded.")
    title: str | None = pydantic.Field(description="Title from the PDF's metadata or first page.")
    pages: int = pydantic.Field(ge=0, description="Number of pages of the thesis (1 for a writer's file).")
    format: typing.Literal["pdf", "latex", "docx"] = pydantic.Field(
        default="pdf", description="What the thesis was read from: its PDF's pages, or the "
        "writer's own files (a LaTeX bundle with its .bib, a Word document's citation fields).")
    skipped: list[SkippedEntry] = pydantic.Field(
        default_factory=list, description="What was not taken as a citation, with the reason "
        "(nothing is dropped silently); empty when everything was taken.")


class SourceStatus(enum.StrEnum):
    """Whether a source document could be read."""

    PARSED = "parsed"
    FAILED = "failed"


class SourceEntry(_Model):
    """One source PDF of the run."""

    document_id: str = pydantic.Field(description="Content address of the PDF (sha256, hex).")
    filename: str = pydantic.Field(description="File name as uploaded.")
    title: str | None = pydantic.Field(description="Title from the PDF's metadata or first page.")
    status: SourceStatus = pydantic.Field(
        description="`parsed`, or `failed` when the PDF could not be read (see `error`)."
    )
    error: str | None = pydantic.Field(
        default=None, description="Why the PDF could not be read; null when parsed."
    )
    cited_by: int = pydantic.Field(
        default=0, ge=0, description="How many citations map to it; 0: no citation uses it."
    )


class VerdictCounts(_Model):
    """How many citations got each verdict; every verdict is present, zeros included."""

    supported: int = pydantic.Field(default=0, ge=0)
    partially_supported: int = pydantic.Field(default=0, ge=0)
    unsupported: int = pydantic.Field(default=0, ge=0)
    contradicted: int = pydantic.Field(default=0, ge=0)
    source_unavailable: int = pydantic.Field(default=0, ge=0)
    unresolved_citation: int = pydantic.Field(default=0, ge=0)

    def get(self, verdict: judge.Verdict) -> int:
        value: int = getattr(self, verdict.value)
        return value


class Summary(_Model):
    """Counts over all citations."""

    total: int = pydantic.Field(ge=0, description="Number of citations (one per claim and source).")
    by_verdict: VerdictCounts


class Box(_Model):
    """A rectangle on a page, in PDF points from the page's top-left corner."""

    x0: float
    y0: float
    x1: float
    y1: float


class EvidenceEntry(_Model):
    """A sentence of the cited source that bears on the claim."""

    quote: str = pydantic.Field(description="The sentence, as extracted from the source PDF.")
    page_start: int = pydantic.Field(ge=1, description="First page (1-based) of the passage holding it.")
    page_end: int = pydantic.Field(ge=1, description="Last page (1-based, inclusive) of that passage.")
    score: float = pydantic.Field(description="How closely the quote matches the claim, 0-1.")
    page: int | None = pydantic.Field(
        default=None, ge=1, description="The page the quote was found on; null when not located."
    )
    page_width: float | None = pydantic.Field(default=None, description="That page's width in points.")
    page_height: float | None = pydantic.Field(default=None, description="That page's height in points.")
    boxes: list[Box] = pydantic.Field(
        default_factory=list, description="Boxes of the lines holding the quote on `page`."
    )


class MatchInfo(_Model):
    """How a citation was mapped to its source, or why it was not."""

    method: str | None = pydantic.Field(
        description="`explicit` (a key from the run's spec), `reference` (the reference entry "
        "matched the source), `marker` (the marker's author and year), or null: unresolved."
    )
    score: float | None = pydantic.Field(description="Match score 0-100; null for an explicit key.")
    reason: str | None = pydantic.Field(
        description='Which fields matched: "doi equal", "title 96, first author, year ±1".'
    )


class CitationSource(_Model):
    """The source document a citation was mapped to."""

    document_id: str
    filename: str
    title: str | None


class QuotationResult(_Model):
    """A passage the claim quotes, searched for verbatim in the source (issue 24)."""

    quote: str = pydantic.Field(description="The quoted words as the thesis gives them.")
    status: typing.Literal["exact", "altered", "not_found"] = pydantic.Field(
        description="`exact` (hyphenation, ligatures, quote marks, whitespace and the "
        "thesis's own [...] or [sic] aside), `altered` (found with words changed, added or "
        "left out: see `difference`), `not_found`.")
    pages: list[str] = pydantic.Field(
        default_factory=list, description="Printed page labels where it stands in the source "
        "(two for a quotation over a page break).")
    difference: str = pydantic.Field(
        default="", description='What the thesis changed: \'changed "rose" to "fell"\'.')


class PageCheck(_Model):
    """The cited page checked against the printed label of the page where the quotation
    (or, for a supported claim, the evidence) stands."""

    status: typing.Literal["ok", "mismatch", "not_checkable"] = pydantic.Field(
        description="`ok`: on a cited page; `mismatch`: on another page (see `found`); "
        "`not_checkable`: the locator names no page, or the passage was not located.")
    found: list[str] = pydantic.Field(
        default_factory=list, description="Printed page labels where the passage stands.")
    reason: str = pydantic.Field(default="", description='"cited 45-46, found on 52".')


class CitationEntry(_Model):
    """One (claim, cited source) pair and its verdict."""

    ordinal: int = pydantic.Field(ge=1, description="Position in reading order, from 1.")
    key: str = pydantic.Field(description='Citation key: "12" for [12], "smith2020a" for Smith (2020a).')
    marker: str = pydantic.Field(description="The marker as written in the thesis.")
    claim: str = pydantic.Field(description="The sentence holding the marker, marker removed.")
    page: int = pydantic.Field(ge=1, description="Thesis page (1-based) the marker stands on.")
    locator: str | None = pydantic.Field(
        default=None, description='Page locator of the marker without prefix: "12", "3-5".'
    )
    source: CitationSource | None = pydantic.Field(
        description="The document the citation maps to; null for `unresolved_citation`."
    )
    verdict: judge.Verdict
    confidence: float = pydantic.Field(ge=0.0, le=1.0, description="The judge's confidence, 0-1.")
    rationale: str = pydantic.Field(description="Why the judge decided so, in a sentence or two.")
    evidence: list[EvidenceEntry] = pydantic.Field(
        default_factory=list, description="Best matching sentences of the source, best first."
    )
    reference: str | None = pydantic.Field(
        default=None,
        description="The thesis's reference entry the marker names; for an unresolved "
        "citation it says which source is missing.",
    )
    match: MatchInfo | None = pydantic.Field(default=None, description="How it was mapped, and why.")
    quotations: list[QuotationResult] = pydantic.Field(
        default_factory=list, description="The passages the claim quotes, each searched for "
        "in the source; empty when it quotes nothing or has no readable source.")
    page_check: PageCheck | None = pydantic.Field(
        default=None, description="The locator against the printed page where the passage "
        "stands; null without a locator.")


class Report(_Model):
    """The result of one CitationRun."""

    schema_version: typing.Literal[1] = pydantic.Field(
        default=1, description="Changes only on an incompatible change."
    )
    run_id: str = pydantic.Field(description="The CitationRun's uid.")
    name: str = pydantic.Field(description="The CitationRun's name.")
    created_at: pydantic.AwareDatetime = pydantic.Field(description="When the report was built.")
    thesis: ThesisInfo
    sources: list[SourceEntry]
    summary: Summary
    citations: list[CitationEntry]
    unused_sources: list[str] = pydantic.Field(
        default_factory=list,
        description="File names of the supplied sources that no citation maps to.",
    )
    judge_tokens: int = pydantic.Field(
        default=0, ge=0,
        description="Tokens the run's LLM judge spent (usage.total_tokens); an answer from "
        "the cache costs none; 0 for the embedded judge.",
    )

    @pydantic.model_validator(mode="after")
    def _summary_matches(self) -> Report:
        if self.summary != summarize(self.citations):
            raise ValueError("summary does not match the citations")
        if (self.unused_sources or any(s.cited_by for s in self.sources)) and (
            self.unused_sources != unused(self.sources)
        ):
            raise ValueError("unused_sources does not match the sources' cited_by counts")
        return self

    @classmethod
    def build(
        cls,
        *,
        run_id: str,
        name: str,
        thesis: ThesisInfo,
        sources: collections.abc.Sequence[SourceEntry],
        citations: collections.abc.Sequence[CitationEntry],
        created_at: datetime.datetime | None = None,
    ) -> Report:
        """A report with its summary computed from ``citations``."""
        return cls(
            run_id=run_id,
            name=name,
            created_at=created_at or datetime.datetime.now(datetime.timezone.utc),
            thesis=thesis,
            sources=list(sources),
            summary=summarize(citations),
            citations=list(citations),
            unused_sources=unused(sources),
        )


def unused(sources: collections.abc.Sequence[SourceEntry]) -> list[str]:
    """File names of the sources that no citation maps to."""
    return [s.filename for s in sources if s.cited_by == 0]


def summarize(citations: collections.abc.Sequence[CitationEntry]) -> Summary:
    """Total and per-verdict counts of ``citations``."""
    counts = collections.Counter(c.verdict.value for c in citations)
    return Summary(total=len(citations), by_verdict=VerdictCounts(**counts))


def schema_json() -> str:
    """The JSON schema of :class:`Report`, as committed in ``docs/report.schema.json``."""
    return json.dumps(Report.model_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the report's JSON schema to the given path (or stdout)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        pathlib.Path(args[0]).write_text(schema_json(), encoding="utf-8")
    else:
        sys.stdout.write(schema_json())
    return 0

