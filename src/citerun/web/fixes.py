"""The citations to fix, as a CSV a student opens in a spreadsheet: one row per citation
whose verdict is not plainly supported, read from the stored JSON report
(:class:`citerun.pipeline.report.model.Report`).

"Not plainly supported": any verdict but ``supported``, and a ``supported`` citation whose
cited page is not where the passage stands (``page_check.status`` ``mismatch``) or whose
quotation is altered or not found in the source. Rows keep the thesis's reading order.
A cell that a spreadsheet would run as a formula (it starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return) gets a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

COLUMNS = ("thesis_page", "marker", "cited_key", "page_cited", "claim", "source",
           "verdict", "reason")

_VERDICT_WORDS = {
    "supported": "supported", "partially_supported": "partially supported",
    "unsupported": "unsupported", "contradicted": "contradicted",
    "source_unavailable": "source unavailable", "unresolved_citation": "unresolved citation",
}
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split()) if "\n" in text else text
    return "'" + text if text.startswith(_FORMULA) else text


def _problems(citation: Mapping[str, Any]) -> list[str]:
    """What is wrong besides the verdict: a wrong page, an altered or missing quotation."""
    found = []
    check = citation.get("page_check") or {}
    if check.get("status") == "mismatch":
        found.append(f"wrong page: {check.get('reason') or 'the passage is elsewhere'}")
    for quotation in citation.get("quotations") or []:
        if quotation.get("status") == "altered":
            found.append(f"quotation altered: {quotation.get('difference') or 'words differ'}")
        elif quotation.get("status") == "not_found":
            found.append("quotation not found in the source")
    return found


def to_fix(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """The rows of the CSV, in reading order."""
    rows = []
    for citation in sorted(report.get("citations") or [],
                           key=lambda c: int(c.get("ordinal") or 0)):
        verdict = str(citation.get("verdict", ""))
        problems = _problems(citation)
        if verdict == "supported" and not problems:
            continue
        source = citation.get("source") or {}
        reason = "; ".join([str(citation.get("rationale") or "").strip(), *problems])
        rows.append({
            "thesis_page": str(citation.get("page", "")),
            "marker": str(citation.get("marker", "")),
            "cited_key": str(citation.get("key", "")),
            "page_cited": str(citation.get("locator") or ""),
            "claim": str(citation.get("claim", "")),
            "source": str(source.get("filename") or citation.get("reference") or ""),
            "verdict": _VERDICT_WORDS.get(verdict, verdict),
            "reason": reason.strip("; "),
        })
    return rows


def citations_to_fix_csv(report: Mapping[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in to_fix(report):
        writer.writerow([_cell(row[c]) for c in COLUMNS])
    return out.getvalue()
