"""A finished run's report: the page, and the downloads (the stored HTML, its JSON, the
citations to fix as CSV). A reader the run was shared with gets them as its owner does."""

from __future__ import annotations

import logging
import re
from urllib.parse import quote

import asyncpg
import pydantic
from aiohttp import web

from citerun.core import runs
from citerun.pipeline import report as report_model
from citerun.web import report_page
from citerun.web.context import KEY_POOL, error, not_found, readable_run

logger = logging.getLogger(__name__)


async def _report(request: web.Request) -> tuple[asyncpg.Record | None, web.Response | None]:
    run = await readable_run(request)
    if run is None:
        return None, not_found(request)
    row = await runs.report(request.app[KEY_POOL], run["id"])
    if row is None:
        return None, error(request, 409, f"the run has no report (it is {run['state']})")
    return row, None


def _download_name(name: str, suffix: str) -> str:
    """A Content-Disposition value: an ASCII name any browser takes, and the UTF-8 one."""
    ascii_name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "thesis"
    return (f'attachment; filename="{ascii_name}-{suffix}"; '
            f"filename*=UTF-8''{quote(name[:80], safe='')}-{suffix}")


def _downloaded(request: web.Request) -> bool:
    return request.query.get("download") not in (None, "", "0")


def report_response(document: str, bar: str = "") -> web.Response:
    """The stored report as a page of this service (its policy allows its own blocks)."""
    text, csp = report_page.report_page(document, bar)
    return web.Response(text=text, content_type="text/html",
                        headers={"Content-Security-Policy": csp})


async def api_report_json(request: web.Request) -> web.StreamResponse:
    row, refusal = await _report(request)
    if refusal is not None:
        return refusal
    assert row is not None
    headers = ({"Content-Disposition": _download_name(str(row["json"].get("name", "")),
                                                      "report.json")}
               if _downloaded(request) else None)
    return web.json_response(row["json"], headers=headers)


async def api_report_html(request: web.Request) -> web.StreamResponse:
    row, refusal = await _report(request)
    if refusal is not None:
        return refusal
    assert row is not None
    if _downloaded(request):
        # The stored, self-contained page (its inline script and styles work offline);
        # as an attachment it is saved, not shown here.
        return web.Response(text=row["html"], content_type="text/html", headers={
            "Content-Disposition": _download_name(str(row["json"].get("name", "")),
                                                  "report.html"),
            "Content-Security-Policy": "sandbox; default-src 'none'"})
    return report_response(row["html"])


async def api_citations_csv(request: web.Request) -> web.StreamResponse:
    """The citations to fix, one row each, for a spreadsheet: the report's own rows
    (``report.to_fix_csv``: every citation but a supported one without problems, most
    doubtful first, with where it stands, the claim, the verdict, the problems, why and
    what to do), from the stored JSON read back into the report's model."""
    row, refusal = await _report(request)
    if refusal is not None:
        return refusal
    assert row is not None
    try:
        stored = report_model.Report.model_validate(row["json"])
    except pydantic.ValidationError:
        logger.warning("run %s: its stored report does not read as this version's model",
                       row["json"].get("run_id"))
        return error(request, 409, "this report was written by another version of "
                     "citerun and has no list of citations to fix: download its JSON")
    return web.Response(
        body=report_model.to_fix_csv(stored).encode("utf-8-sig"),
        content_type="text/csv", charset="utf-8",
        headers={"Content-Disposition": _download_name(stored.name, "citations-to-fix.csv")})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/runs/{run_id}/citations.csv", api_citations_csv)
    router.add_get("/api/runs/{run_id}/report.json", api_report_json)
    router.add_get("/api/runs/{run_id}/report.html", api_report_html)
