"""A run's rows made in memory: what the worker stores for a run (its documents, its
citations with their verdicts, the pages evidence comes from), made from the recipe's
results, so :func:`citerun.pipeline.report.build` builds the report of
:func:`citerun.pipeline.recipe.verify` as it builds a run's from Postgres."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from citerun.core.states import DocumentState
from citerun.pipeline import citations, document, judge, report
from citerun.pipeline.document import Document, Source

#: What a report lists of the markers not taken (the first ones, in reading order).
MAX_SKIPPED = 1000

_PAGE_COLUMNS = ("number", "text", "width", "height", "lines", "image", "label", "ocr")


def evidence_rows(judgement: judge.Judgement) -> list[dict[str, Any]]:
    """A judgement's evidence as the ``verdicts.evidence`` column stores it."""
    return [{"quote": e.quote, "page_start": e.page_start, "page_end": e.page_end,
             "score": round(float(e.score), 4), "chunk_id": e.chunk_id}
            for e in judgement.evidence]


def rows(name: str, thesis: Document, given: Sequence[Source],
         extraction: citations.Extraction, mapped: Sequence[citations.MappedCitation],
         verdicts: Sequence[judge.Judgement]) -> tuple[Any, ...]:
    """The arguments of :func:`report.build`: the run, its documents, its citations with
    verdicts, the evidence pages (by source id and number) and the quoted sources' pages."""
    state = {True: DocumentState.PARSED, False: DocumentState.FAILED}
    docs: list[dict[str, Any]] = [
        {"digest": "", "role": "thesis", "filename": name, "title": thesis.title,
         "page_count": thesis.page_count, "state": DocumentState.PARSED, "error": None,
         "written_format": thesis.written.format if thesis.written else None},
        *({"digest": s.id, "role": "source", "filename": s.filename, "state": state[s.read],
           "title": s.document.title, "error": s.error,
           "ocr_pages": sum(p.ocr for p in s.document.pages)} for s in given)]
    cited = [{**dataclasses.asdict(m.citation), "digest": m.document_id,
              "reference": m.reference.text if m.reference else None, "match_method": m.method,
              "match_score": m.score, "match_reason": m.reason, "verdict": str(v.verdict),
              "confidence": v.confidence, "rationale": v.rationale, "evidence": evidence_rows(v)}
             for m, v in zip(mapped, verdicts)]
    read = {s.id: s.document for s in given}
    pages = {(digest, page.number): dict(zip(_PAGE_COLUMNS, document.page_row(page)))
             for digest, numbers in report.evidence_pages(cited).items()
             for page in read[digest].pages if page.number in numbers}
    run = {"id": name, "name": name, "created_at": datetime.now(timezone.utc),
           "tokens_spent": sum(v.tokens_used for v in verdicts),
           "skipped": [dataclasses.asdict(s) for s in extraction.skipped[:MAX_SKIPPED]]}
    quoted = {digest: [(p.label or str(p.number), p.text) for p in read[digest].pages]
              for digest in report.quoting_sources(cited)}
    return run, docs, cited, pages, quoted
