"""A finished run's report: the page, and the downloads (the stored HTML, its JSON, the
citations to fix as CSV). A reader the run was shared with gets them as its owner does.

Nothing of a report is built or decoded on the event loop (issue 48: 16 concurrent CSV
downloads of a 20,000-citation report held ``/healthz`` 3.8 s): the HTML and the JSON
are sent as the stored bytes Postgres writes, in pieces (:func:`_send`); the CSV is
built in a thread from the report's citations, each read back into the report's model on
its own (a call of a millisecond: the loop gets the GIL between them, where one
validation of the whole report held it for seconds), and so is the report's page. At
most :data:`BUILDS_AT_ONCE` of those are built at once per process; the others wait
their turn, which bounds their memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import re
import threading
import weakref
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import asyncpg
import pydantic
from aiohttp import web

from citerun.core import sql
from citerun.pipeline import report as report_model
from citerun.web import report_page
from citerun.web.context import KEY_POOL, error, not_found, readable_run

logger = logging.getLogger(__name__)

_Q = sql.load("citerun.web", "reports.sql")

#: Reports built (a CSV, a page) at once per process; each holds its citations in memory.
BUILDS_AT_ONCE = 2
#: Bytes written to the socket at a time, each write waiting until the client takes it.
CHUNK_BYTES = 256 * 1024

_builds: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def _build_slot() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    slot = _builds.get(loop)
    if slot is None:
        slot = _builds[loop] = asyncio.Semaphore(BUILDS_AT_ONCE)
    return slot


async def _readable(request: web.Request) -> tuple[Any, web.Response | None]:
    run = await readable_run(request)
    if run is None:
        return None, not_found(request)
    return run, None


def _no_report(request: web.Request, run: Any) -> web.Response:
    return error(request, 409, f"the run has no report (it is {run['state']})")


def _download_name(name: str, suffix: str) -> str:
    """A Content-Disposition value: an ASCII name any browser takes, and the UTF-8 one."""
    ascii_name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "thesis"
    return (f'attachment; filename="{ascii_name}-{suffix}"; '
            f"filename*=UTF-8''{quote(name[:80], safe='')}-{suffix}")


def _downloaded(request: web.Request) -> bool:
    return request.query.get("download") not in (None, "", "0")


async def _send(request: web.Request, body: bytes, content_type: str,
                headers: dict[str, str]) -> web.StreamResponse:
    """``body`` in pieces of :data:`CHUNK_BYTES`, each sent before the next is handed to
    the socket (a slow client never makes the transport copy the whole of it)."""
    response = web.StreamResponse(headers=headers)
    response.content_type = content_type
    response.charset = "utf-8"
    response.content_length = len(body)
    await response.prepare(request)
    view = memoryview(body)
    for start in range(0, len(view), CHUNK_BYTES):
        await response.write(view[start:start + CHUNK_BYTES])
    await response.write_eof()
    return response


def report_response(document: str, bar: str = "") -> web.Response:
    """The stored report as a page of this service (its policy allows its own blocks)."""
    text, csp = report_page.report_page(document, bar)
    return web.Response(text=text, content_type="text/html",
                        headers={"Content-Security-Policy": csp})


async def page_response(pool: asyncpg.Pool, run_id: Any, bar: str = "") -> web.Response | None:
    """:func:`report_response` of a run's stored report, made in a thread; None without
    a report."""
    async with _build_slot():
        document = await pool.fetchval(_Q["report_html"], run_id)
        if document is None:
            return None
        return await asyncio.to_thread(report_response, document, bar)


async def _stored(request: web.Request, kind: str) -> tuple[Any, web.Response | None]:
    run, refusal = await _readable(request)
    if refusal is not None:
        return None, refusal
    row = await request.app[KEY_POOL].fetchrow(_Q["report_bytes"], run["id"], kind)
    if row is None:
        return None, _no_report(request, run)
    return row, None


async def api_report_json(request: web.Request) -> web.StreamResponse:
    row, refusal = await _stored(request, "json")
    if refusal is not None:
        return refusal
    headers = ({"Content-Disposition": _download_name(row["name"] or "", "report.json")}
               if _downloaded(request) else {})
    return await _send(request, row["body"], "application/json", headers)


async def api_report_html(request: web.Request) -> web.StreamResponse:
    if not _downloaded(request):
        run, refusal = await _readable(request)
        if refusal is not None:
            return refusal
        page = await page_response(request.app[KEY_POOL], run["id"])
        return page if page is not None else _no_report(request, run)
    row, refusal = await _stored(request, "html")
    if refusal is not None:
        return refusal
    # The stored, self-contained page (its inline script and styles work offline); as an
    # attachment it is saved, not shown here.
    return await _send(request, row["body"], "text/html", {
        "Content-Disposition": _download_name(row["name"] or "", "report.html"),
        "Content-Security-Policy": "sandbox; default-src 'none'"})


_collecting_paused = 0
_pause_lock = threading.Lock()


@contextlib.contextmanager
def _no_cyclic_collection() -> Iterator[None]:
    """The cyclic garbage collector paused while a thread builds a report: its tens of
    thousands of models made Python's full collections, which hold the GIL throughout,
    pause the event loop 0.5-0.9 s each (measured for 20,000 citations); what a build
    drops is freed by reference counting, and the collector runs again when the last
    build ends."""
    global _collecting_paused
    with _pause_lock:
        _collecting_paused += 1
        gc.disable()
    try:
        yield
    finally:
        with _pause_lock:
            _collecting_paused -= 1
            if _collecting_paused == 0:
                gc.enable()


def _fix_csv(head: str, citations: list[str]) -> tuple[str, bytes]:
    """The report's name and its CSV of citations to fix (:func:`api_citations_csv`'s
    thread): each citation validated on its own, then the report's own rows."""
    with _no_cyclic_collection():
        fields = json.loads(head)  # the report but its citations: small
        fields["citations"] = [report_model.CitationEntry.model_validate_json(c)
                               for c in citations]
        stored = report_model.Report.model_validate(fields)  # the entries taken as they are
        return stored.name, report_model.to_fix_csv(stored).encode("utf-8-sig")


async def api_citations_csv(request: web.Request) -> web.StreamResponse:
    """The citations to fix, one row each, for a spreadsheet: the report's own rows
    (``report.to_fix_csv``: every citation but a supported one without problems, most
    doubtful first, with where it stands, the claim, the verdict, the problems, why and
    what to do), from the stored JSON read back into the report's model, in a thread."""
    run, refusal = await _readable(request)
    if refusal is not None:
        return refusal
    pool = request.app[KEY_POOL]
    async with _build_slot():
        head = await pool.fetchval(_Q["report_head"], run["id"])
        if head is None:
            return _no_report(request, run)
        citations = [r["citation"] for r in await pool.fetch(_Q["report_citations"],
                                                              run["id"])]
        try:
            name, body = await asyncio.to_thread(_fix_csv, head, citations)
        except pydantic.ValidationError:
            logger.warning("run %s: its stored report does not read as this version's "
                           "model", run["id"])
            return error(request, 409, "this report was written by another version of "
                         "citerun and has no list of citations to fix: download its JSON")
        del citations
    return await _send(request, body, "text/csv", {
        "Content-Disposition": _download_name(name, "citations-to-fix.csv")})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/runs/{run_id}/citations.csv", api_citations_csv)
    router.add_get("/api/runs/{run_id}/report.json", api_report_json)
    router.add_get("/api/runs/{run_id}/report.html", api_report_html)
