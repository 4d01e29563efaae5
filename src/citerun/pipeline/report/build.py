"""Assembling a run's report from what the run stored: its documents, its citations with
their verdicts, and the line boxes of the source pages the evidence quotes come from.

The worker loads the rows (``run_documents``, ``run_report_rows``,
``document_pages_evidence`` of src/citerun/worker/tasks.sql) and records the
result; everything between is here, so the report's shape has one owner. A document is
content-addressed and shared by every run that gives the same bytes, under whatever
name each run gave it: every name in a report comes from the run's own source list
(``run_sources``), never from the document's row.
"""

from __future__ import annotations

import collections
import collections.abc
from datetime import datetime, timezone
from typing import Any, Protocol

from citerun.core import verdicts
from citerun.pipeline import fetched as fetching, judge, layout
from citerun.pipeline.report import checks, reasons
from citerun.pipeline.report.model import (
    Box,
    CitationEntry,
    CitationSource,
    EvidenceEntry,
    FetchedFrom,
    FetchedWork,
    MatchInfo,
    Report,
    SourceEntry,
    SkippedEntry,
    SourceStatus,
    ThesisInfo,
    confidence_of,
    summarize,
    unused,
)
from citerun.core.states import DocumentState

__all__ = ["Pages", "Row", "build", "evidence_pages", "page_images", "quoting_sources"]


class Row(Protocol):
    """A stored row read by column name (an ``asyncpg.Record``, a dict in a test)."""

    def __getitem__(self, key: str, /) -> Any: ...


#: Source pages by (document digest, page number): their size, line boxes and image.
Pages = collections.abc.Mapping[tuple[str, int], Row]


def evidence_pages(rows: collections.abc.Iterable[Row]) -> dict[str, list[int]]:
    """The pages, by document digest, that the evidence quotes of ``rows`` come from."""
    wanted: dict[str, set[int]] = {}
    for r in rows:
        for e in r["evidence"] or []:
            if r["digest"]:
                wanted.setdefault(r["digest"], set()).update(
                    range(e["page_start"], e["page_end"] + 1))
    return {digest: sorted(numbers) for digest, numbers in wanted.items()}


def page_images(pages: Pages) -> dict[tuple[str, int], bytes]:
    """The renderings of ``pages`` that have one, for :func:`~.render.render_html`."""
    return {key: bytes(page["image"]) for key, page in pages.items() if page["image"]}


def _evidence(digest: str | None, e: dict[str, Any], pages: Pages) -> EvidenceEntry:
    """An evidence quote, located on the first of its pages whose lines hold it."""
    for number in range(e["page_start"], e["page_end"] + 1):
        page = pages.get((digest or "", number))
        boxes = layout.find_boxes(page["lines"], e["quote"], tight=True) if page and page["lines"] else []
        if page is not None and boxes:
            return EvidenceEntry(
                quote=e["quote"], page_start=e["page_start"], page_end=e["page_end"],
                score=e["score"], page=number, page_width=page["width"],
                page_height=page["height"],
                boxes=[Box(x0=b[0], y0=b[1], x1=b[2], y1=b[3]) for b in boxes])
    return EvidenceEntry(quote=e["quote"], page_start=e["page_start"],
                         page_end=e["page_end"], score=e["score"])


def _get(row: Row, key: str) -> Any:
    """A column a row may lack (a row of a test, a report built before it existed)."""
    try:
        return row[key]
    except (KeyError, IndexError):
        return None


def _format_of(thesis: Row) -> str:
    written = _get(thesis, "written_format")
    return str(written) if written else "pdf"


def quoting_sources(rows: collections.abc.Iterable[Row]) -> list[str]:
    """The sources whose whole text the report needs: those a quoting claim cites."""
    return sorted({r["digest"] for r in rows if r["digest"] and checks.quoted(r["claim"])})


def _fetched_from(status: str, found: collections.abc.Mapping[str, Any]) -> FetchedFrom:
    if status == "pdf":
        return FetchedFrom(kind="pdf", service=found.get("service"), url=found.get("pdf_url"),
                           licence=found.get("licence"), version=found.get("version"))
    return FetchedFrom(kind="abstract", service=found.get("abstract_service") or found.get("service"),
                       url=found.get("landing_url"), licence=found.get("licence"))


def _fetched_works(fetches: collections.abc.Sequence[Row]) -> list[FetchedWork]:
    """The works a run looked for (``run_fetches`` rows), found or not, in label order."""
    works = []
    for f in fetches:
        found = f["found"] or {}
        status = f["status"] if f["status"] in ("pdf", "abstract") else "not_found"
        works.append(FetchedWork(
            key=f["label"], reference=f["reference"], status=status,
            tried=fetching.ids_from_json(f["ids"] or {}).tried(),
            attempts=[f"{a.get('service')}: {a.get('identifier')}: {a.get('outcome')}"
                      for a in found.get("attempts") or []],
            source=_fetched_from(status, found) if status != "not_found" else None,
            reason=f["error"] if f["status"] != "failed" else
            f"the look-up failed on every attempt ({f['error']})"))
    return works


def build(run: Row, docs: collections.abc.Sequence[Row], rows: collections.abc.Sequence[Row],
          pages: Pages | None = None,
          source_pages: collections.abc.Mapping[str, checks.SourcePages] | None = None,
          fetches: collections.abc.Sequence[Row] = ()) -> Report:
    """The report of a run from its rows (documents with the names the run gave them,
    citations with verdicts), the evidence pages' line boxes and labels, the pages
    (label, text) of the sources quoting claims cite (:func:`quoting_sources`), and the
    works it looked for without a PDF (``run_fetches`` rows, issue 51)."""
    thesis = next(d for d in docs if d["role"] == "thesis")
    came_from = {f["digest"]: _fetched_from(f["status"], f["found"] or {}) for f in fetches
                 if f["digest"] and f["status"] in ("pdf", "abstract")}
    given = {d["digest"]: d for d in docs if d["role"] == "source"}
    checker = checks.Checker(source_pages or {})
    labels: dict[str, dict[int, str]] = {}  # digest -> page number -> printed label, once
    for (digest, number), page in (pages or {}).items():
        labels.setdefault(digest, {})[number] = str(_get(page, "label") or number)
    entries = []
    for r in rows:
        if r["verdict"] is None:
            continue
        verdict = judge.Verdict(r["verdict"])
        evidence = [_evidence(r["digest"], e, pages or {}) for e in r["evidence"] or []]
        quoted, found = checker.check_quotes(r["claim"], r["digest"])
        probabilities = reasons.probabilities_in(r["rationale"]) if verdict in verdicts.JUDGED else None
        entries.append(CitationEntry(
            ordinal=r["ordinal"], key=r["key"], marker=r["marker"], claim=r["claim"],
            page=r["page"], locator=r["locator"], location=_get(r, "location"),
            source=(CitationSource(document_id=r["digest"],
                                   filename=given[r["digest"]]["filename"],
                                   title=given[r["digest"]]["title"],
                                   fetched=came_from.get(r["digest"])) if r["digest"] else None),
            verdict=verdict, probabilities=probabilities,
            confidence=confidence_of(verdict, probabilities, float(r["confidence"])),
            rationale=r["rationale"],
            evidence=evidence, reference=r["reference"],
            match=MatchInfo(method=r["match_method"], score=r["match_score"],
                            reason=r["match_reason"]),
            quotations=quoted,
            page_check=checker.page_check(r["locator"], verdict, found, evidence,
                                          labels.get(r["digest"] or "", {}))))
    not_checked = ([SkippedEntry(
        where="report", text=f"{checker.unchecked:,} citation(s)",
        reason=f"their quotations were not searched for in their sources: a report searches "
               f"those of {checks.MAX_QUOTE_CHECKS:,} distinct claim and source pairs")]
        if checker.unchecked else [])
    cited = collections.Counter(e.source.document_id for e in entries if e.source)
    sources = [SourceEntry(
        document_id=d["digest"], filename=d["filename"], title=d["title"],
        status=SourceStatus.PARSED if d["state"] == DocumentState.PARSED else SourceStatus.FAILED,
        error=d["error"], cited_by=cited[d["digest"]], ocr_pages=int(_get(d, "ocr_pages") or 0))
        for d in given.values()]
    return Report(
        run_id=str(run["id"]), name=run["name"], created_at=datetime.now(timezone.utc),
        thesis=ThesisInfo(filename=thesis["filename"], title=thesis["title"],
                          pages=thesis["page_count"] or 0,
                          format=_format_of(thesis),
                          skipped=[SkippedEntry(**s) for s in _get(run, "skipped") or []]
                          + not_checked),
        sources=sources, summary=summarize(entries), citations=entries,
        unused_sources=unused(sources), judge_tokens=int(run["tokens_spent"] or 0),
        fetched=_fetched_works(fetches))
