"""The report of a run: a versioned JSON document and one self-contained HTML page.

:mod:`.model` holds the pydantic models that *are* the JSON's documented schema
(``docs/report.schema.json``, ``docs/report.md``), :mod:`.build` assembles a run's
report from its stored rows, and :mod:`.render` renders it as HTML. Callers use the
names below (``report.build``, ``report.render_html``, ``report.Report``...).
"""

from __future__ import annotations

from citerun.pipeline.report.build import Pages, Row, build, evidence_pages, page_images
from citerun.pipeline.report.model import (
    SCHEMA_VERSION,
    Box,
    CitationEntry,
    CitationSource,
    EvidenceEntry,
    MatchInfo,
    Report,
    SourceEntry,
    SourceStatus,
    Summary,
    ThesisInfo,
    VerdictCounts,
    main,
    schema_json,
    summarize,
    unused,
)
from citerun.pipeline.report.render import PageImages, render_html, risk

__all__ = [
    "SCHEMA_VERSION", "Box", "CitationEntry", "CitationSource", "EvidenceEntry", "MatchInfo",
    "PageImages", "Pages", "Report", "Row", "SourceEntry", "SourceStatus", "Summary",
    "ThesisInfo", "VerdictCounts", "build", "evidence_pages", "main", "page_images",
    "render_html", "risk", "schema_json", "summarize", "unused",
]
