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
    "SCHEMA_VERSION", "Box", "CitationEntry", "CitationSource", "EvidenceEntry", "FetchedFrom",
    "FetchedWork",
    "MatchInfo", "PageCheck", "Probabilities", "Problem", "ProblemCounts", "QuotationResult",
    "Report", "SkippedEntry", "SourceEntry", "SourceStatus", "Summary", "ThesisInfo",
    "VerdictCounts", "confidence_of", "main", "schema_json", "summarize", "unused",
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
    title: str | None = pydantic.Field(description="The thesis's own title: its PDF's metadata or "
                                       "first page, a LaTeX thesis's \\title, a Word document's "
                                       "title in its properties; null when it gives none.")
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
    ocr_pages: int = pydantic.Field(
        default=0, ge=0, description="Pages read by OCR (it had no usable text layer: a scan, "
        "or replacement characters); their words may be misread. 0: read from its text layer."
    )


class VerdictCounts(_Model):
    """How many citations got each verdict; every verdict is present, zeros included."""

    supported: int = pydantic.Field(default=0, ge=0)
    partially_supported: int = pydantic.Field(default=0, ge=0)
    unsupported: int = pydantic.Field(default=0, ge=0)
    contradicted: int = pydantic.Field(default=0, ge=0)
    source_unavailable: int = pydantic.Field(default=0, ge=0)
    unresolved_citation: int = pydantic.Field(default=0, ge=0)
    not_checked: int = pydantic.Field(default=0, ge=0)
    not_in_abstract: int = pydantic.Field(default=0, ge=0)

    def get(self, verdict: judge.Verdict) -> int:
        value: int = getattr(self, verdict.value)
        return value


class Problem(enum.StrEnum):
    """What the checks beyond the verdict found wrong with a citation as written: the
    cited page, or a quotation. A citation may have any number of them, whatever its
    verdict; the report counts them, filters by them and ranks them as doubtful."""

    WRONG_PAGE = "wrong_page"
    ALTERED_QUOTATION = "altered_quotation"
    QUOTATION_NOT_FOUND = "quotation_not_found"


class ProblemCounts(_Model):
    """How many citations have each problem; every problem is present, zeros included."""

    wrong_page: int = pydantic.Field(default=0, ge=0)
    altered_quotation: int = pydantic.Field(default=0, ge=0)
    quotation_not_found: int = pydantic.Field(default=0, ge=0)

    def get(self, problem: Problem) -> int:
        value: int = getattr(self, problem.value)
        return value


class Summary(_Model):
    """Counts over all citations."""

    total: int = pydantic.Field(ge=0, description="Number of citations (one per claim and source).")
    by_verdict: VerdictCounts
    by_problem: ProblemCounts | None = pydantic.Field(
        default=None, description="How many citations have each problem (`wrong_page`, "
        "`altered_quotation`, `quotation_not_found`: see `CitationEntry.problems`); a citation "
        "with two problems counts under both. Null only in reports built before it existed.")


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


class FetchedFrom(_Model):
    """Where a source nobody gave came from: an open-access service (issue 51)."""

    kind: typing.Literal["pdf", "abstract"] = pydantic.Field(
        description="`pdf`: an open-access PDF, read as an uploaded one; `abstract`: only the "
        "work's abstract (the citations judged on it say so: `not_in_abstract` where it "
        "does not state the claim).")
    service: str | None = pydantic.Field(
        default=None, description='Who named the PDF link or gave the abstract ("Unpaywall").')
    url: str | None = pydantic.Field(
        default=None, description="Where the PDF was fetched from; for an abstract, the "
        "work's landing page where known.")
    licence: str | None = pydantic.Field(
        default=None, description='The licence the service states ("cc-by"); null when it '
        "states none.")
    version: str | None = pydantic.Field(
        default=None, description='"publishedVersion", "acceptedVersion", '
        '"submittedVersion" where the service says.')


class FetchedWork(_Model):
    """A cited work without a PDF that the run looked for (``--fetch-sources``)."""

    key: str = pydantic.Field(description="The citation key or reference label the thesis gives it.")
    reference: str = pydantic.Field(description="Its reference entry as the thesis has it.")
    status: typing.Literal["pdf", "abstract", "not_found"] = pydantic.Field(
        description="`pdf`: an open-access PDF was found and read; `abstract`: only its "
        "abstract; `not_found`: nothing (see `tried` and `reason`).")
    tried: list[str] = pydantic.Field(
        default_factory=list, description='The identifiers looked up: "DOI 10.1000/x", '
        '"arXiv 2101.01234", "PMID 123", a title.')
    attempts: list[str] = pydantic.Field(
        default_factory=list, description='Each request and its outcome: "Unpaywall: DOI '
        '10.1000/x: no open-access copy".')
    source: FetchedFrom | None = pydantic.Field(
        default=None, description="Where what was found came from; null when not found.")
    reason: str | None = pydantic.Field(
        default=None, description="Why nothing usable was found, where more than "
        "'nothing found' (a PDF that could not be read, the look-up failed on every attempt).")


class CitationSource(_Model):
    """The source document a citation was mapped to."""

    document_id: str
    filename: str
    title: str | None
    fetched: FetchedFrom | None = pydantic.Field(
        default=None, description="Where the source came from when no one gave it (an "
        "open-access PDF or abstract, issue 51); null for a source given.")


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


class Probabilities(_Model):
    """The judge's calibrated probabilities of the three readings of a claim against its
    source; they add up to 1 (up to rounding)."""

    support: float = pydantic.Field(ge=0.0, le=1.0, description="The source states the claim.")
    contradict: float = pydantic.Field(ge=0.0, le=1.0, description="The source says the opposite.")
    not_enough_info: float = pydantic.Field(
        ge=0.0, le=1.0, description="The source does not say either.")


def confidence_of(verdict: judge.Verdict, probabilities: Probabilities | None,
                  stated: float) -> float:
    """The one meaning of a citation's confidence: the judge's probability that the verdict
    it gives is right. From the judge's three probabilities: ``supported`` and
    ``partially_supported`` -> that the source supports the claim, ``unsupported`` -> that it
    does not state it (1 - support), ``contradicted`` -> that it says the opposite. A judge
    that gives no probabilities (the LLM judge, the rule judge, a named work) states its
    confidence in its verdict itself: ``stated``; so do the two verdicts no judge gives
    (they are facts: 1)."""
    if probabilities is None or verdict not in (
            judge.Verdict.SUPPORTED, judge.Verdict.PARTIALLY_SUPPORTED,
            judge.Verdict.UNSUPPORTED, judge.Verdict.CONTRADICTED):
        return min(max(float(stated), 0.0), 1.0)
    if verdict is judge.Verdict.CONTRADICTED:
        value = probabilities.contradict
    elif verdict is judge.Verdict.UNSUPPORTED:
        value = 1.0 - probabilities.support
    else:
        value = probabilities.support
    return round(min(max(value, 0.0), 1.0), 3)


class CitationEntry(_Model):
    """One (claim, cited source) pair and its verdict."""

    ordinal: int = pydantic.Field(ge=1, description="Position in reading order, from 1.")
    key: str = pydantic.Field(description='Citation key: "12" for [12], "smith2020a" for Smith (2020a).')
    marker: str = pydantic.Field(description="The marker as written in the thesis.")
    claim: str = pydantic.Field(description="The sentence holding the marker, marker removed.")
    page: int = pydantic.Field(ge=1, description="Thesis page (1-based) the marker stands on.")
    location: str | None = pydantic.Field(
        default=None, description='Where a writer\'s file has the citation: "chapter2.tex:118" '
        '(LaTeX: file and line), "paragraph 34" (Word); null for a PDF thesis (see `page`).')
    locator: str | None = pydantic.Field(
        default=None, description='Page locator of the marker without prefix: "12", "3-5".'
    )
    source: CitationSource | None = pydantic.Field(
        description="The document the citation maps to; null for `unresolved_citation`."
    )
    verdict: judge.Verdict
    confidence: float = pydantic.Field(
        ge=0.0, le=1.0, description="The judge's probability that its verdict is right, 0-1 "
        "(see `confidence_of`: from `probabilities` when the judge gives them; 1 for "
        "`unresolved_citation` and `source_unavailable`, which are facts, not judgements).")
    probabilities: Probabilities | None = pydantic.Field(
        default=None, description="The judge's calibrated probabilities of support, "
        "contradiction and neither; null when the judge gives none (LLM judge, rule judge, "
        "a named work, no judge).")
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

    def problems(self) -> list[Problem]:
        """What the checks found wrong with the citation as written, in :class:`Problem`
        order: the cited page is not where the passage stands; a quotation was changed;
        a quotation is not in the source."""
        found = set()
        if self.page_check is not None and self.page_check.status == "mismatch":
            found.add(Problem.WRONG_PAGE)
        for q in self.quotations:
            if q.status == "altered":
                found.add(Problem.ALTERED_QUOTATION)
            elif q.status == "not_found":
                found.add(Problem.QUOTATION_NOT_FOUND)
        return [p for p in Problem if p in found]


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
    fetched: list[FetchedWork] = pydantic.Field(
        default_factory=list, description="The cited works without a PDF that the run "
        "looked for (``citerun verify --fetch-sources``, a CitationRun's fetchSources): "
        "found as a PDF, as an abstract only, or not at all, with the identifiers tried; "
        "empty when it looked for none.")
    judge_tokens: int = pydantic.Field(
        default=0, ge=0,
        description="Tokens the run's LLM judge spent (usage.total_tokens); an answer from "
        "the cache costs none; 0 for the embedded judge.",
    )

    @pydantic.model_validator(mode="after")
    def _summary_matches(self) -> Report:
        expected = summarize(self.citations)
        if self.summary.by_problem is None:  # a report built before problems were counted
            expected = expected.model_copy(update={"by_problem": None})
        if self.summary != expected:
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
        fetched: collections.abc.Sequence[FetchedWork] = (),
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
            fetched=list(fetched),
        )


def unused(sources: collections.abc.Sequence[SourceEntry]) -> list[str]:
    """File names of the sources that no citation maps to."""
    return [s.filename for s in sources if s.cited_by == 0]


def summarize(citations: collections.abc.Sequence[CitationEntry]) -> Summary:
    """Total, per-verdict and per-problem counts of ``citations``."""
    counts = collections.Counter(c.verdict.value for c in citations)
    problems = collections.Counter(p.value for c in citations for p in c.problems())
    return Summary(total=len(citations), by_verdict=VerdictCounts(**counts),
                   by_problem=ProblemCounts(**problems))


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

