"""A user's runs: the list (their own and those shared with them), one run's state and
progress (the API's JSON and the page, which shows the report once the run has
succeeded), cancelling one, and a document of theirs.

A run the backend has not created yet (a CitationRun the operator has not admitted) is
shown as running, with what it waits for.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import asyncpg
from aiohttp import web

from citerun.core import runs
from citerun.core.states import FINISHED_DOCUMENT, RunState
from citerun.web import middleware, pages, report_page, store
from citerun.web.backend import Backend
from citerun.web.context import (
    KEY_BACKEND,
    KEY_POOL,
    KEY_SETTINGS,
    caller,
    error,
    not_found,
    owned_run,
    readable_run,
    user,
)
from citerun.web.reports import page_response

logger = logging.getLogger(__name__)

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


async def run_status(pool: asyncpg.Pool, run: asyncpg.Record,
                     waiting: str | None = None) -> dict[str, Any]:
    """A run's state and progress as the API and the page show it; ``waiting``: what it
    waits for before it exists (a CitationRun the operator has not admitted)."""
    progress = await runs.progress(pool, run["id"])
    documents = await store.run_documents(pool, run["id"])
    state = progress["state"] if progress is not None else run["state"]
    # Each document's state for this run: read, could not be read (its own failure or
    # this run's reason), or waiting; "read" counts what is no longer waiting.
    shown = [{"digest": d["digest"], "role": d["role"], "filename": d["filename"],
              "state": d["state"], "error_reason": d["error_reason"],
              "stateLabel": pages.document_label(d, state)} for d in documents]
    done = sum(1 for d in documents if d["state"] in FINISHED_DOCUMENT
               or d["error_reason"] is not None or d["read_for_run"])
    judged = progress["judged"] if progress else 0
    stage = None
    if state == RunState.RUNNING:
        stage = (waiting if progress is None else
                 pages.stage_label(await store.run_stage(pool, run["id"]), judged))
    thesis = next((d for d in documents if d["role"] == "thesis"), None)
    return {
        "runId": str(run["id"]), "name": run["name"], "state": state,
        "title": pages.run_title({"title": await store.thesis_title(pool, run["id"]),
                                  "filename": thesis["filename"] if thesis else None,
                                  "name": run["name"]}),
        "stateLabel": pages.STATE_LABELS.get(state, state),
        "stage": stage,
        "waiting": waiting if progress is None else None,
        "error": progress["error"] if progress is not None else run["error"],
        "createdAt": _iso(run["created_at"]), "finishedAt": _iso(run["finished_at"]),
        "progress": {
            "documents": len(documents),
            "documentsDone": done,
            "citations": progress["citations"] if progress else 0,
            "judged": judged},
        "verdicts": dict(progress["verdicts"] or {}) if progress else {},
        "documents": shown,
        "reportUrl": f"/runs/{run['id']}" if state == RunState.SUCCEEDED else None,
    }


def _listed(r: asyncpg.Record) -> dict[str, Any]:
    return {"runId": str(r["id"]), "name": r["name"], "title": pages.run_title(r),
            "state": r["state"], "error": r["error"],
            "waiting": bool(r["pending"]) and r["state"] == RunState.RUNNING,
            "createdAt": _iso(r["created_at"]), "finishedAt": _iso(r["finished_at"]),
            "documents": r["documents"], "citations": r["citations"], "judged": r["judged"],
            "verdicts": dict(r["verdicts"] or {}),
            "progressLabel": pages.progress_words(r)}


async def api_list(request: web.Request) -> web.StreamResponse:
    rows = await store.runs_of(request.app[KEY_POOL], user(request),
                               request.app[KEY_SETTINGS].list_limit)
    return web.json_response({"runs": [_listed(r) for r in rows]})


async def api_shared(request: web.Request) -> web.StreamResponse:
    """The runs other users shared with this one (read-only)."""
    rows = await store.shared_with(request.app[KEY_POOL], user(request),
                                   request.app[KEY_SETTINGS].list_limit)
    return web.json_response({"runs": [{**_listed(r), "owner": r["owner"]} for r in rows]})


async def _waiting(request: web.Request,
                   run: asyncpg.Record) -> tuple[asyncpg.Record, str | None]:
    """The run as it stands after the backend looked at what it waits for (a submission
    refused for good is closed by that look), and that message."""
    backend: Backend = request.app[KEY_BACKEND]
    message = await backend.waiting(run)
    if message is not None:
        run = await readable_run(request) or run
    return run, message


async def api_status(request: web.Request) -> web.StreamResponse:
    run = await readable_run(request)
    if run is None:
        return not_found(request)
    run, waiting = await _waiting(request, run)
    return web.json_response(await run_status(request.app[KEY_POOL], run, waiting))


async def _cancel(request: web.Request) -> tuple[asyncpg.Record | None, web.Response | None]:
    run = await owned_run(request)
    if run is None:
        return None, not_found(request)
    if run["state"] != RunState.RUNNING:
        return run, error(request, 409, f"the run has finished ({run['state']})")
    backend: Backend = request.app[KEY_BACKEND]
    await backend.cancel(run["id"])
    logger.info("run %s cancelled by %s", run["id"], user(request))
    return run, None


async def api_cancel(request: web.Request) -> web.StreamResponse:
    run, refusal = await _cancel(request)
    if refusal is not None:
        return refusal
    assert run is not None
    return web.json_response({"runId": str(run["id"]), "state": RunState.CANCELLED})


async def api_document(request: web.Request) -> web.StreamResponse:
    digest = request.match_info["digest"]
    row = None
    if _DIGEST.match(digest):
        row = await store.document_of(request.app[KEY_POOL], digest, user(request))
    if row is None:
        return not_found(request)
    return web.json_response({
        "digest": row["digest"], "filename": row["filename"], "sizeBytes": row["size_bytes"],
        "state": row["state"], "errorReason": row["error_reason"], "title": row["title"],
        "year": row["year"], "pages": row["page_count"]})


async def page_runs(request: web.Request) -> web.StreamResponse:
    pool = request.app[KEY_POOL]
    limit = request.app[KEY_SETTINGS].list_limit
    rows = await store.runs_of(pool, user(request), limit)
    shared = await store.shared_with(pool, user(request), limit)
    deleted = request.query.get("deleted") == "1"
    return web.Response(content_type="text/html", text=pages.runs_page(
        [dict(r) for r in rows], shared=[dict(r) for r in shared], user=user(request),
        csrf=caller().csrf, keep_days=request.app[KEY_SETTINGS].keep_days,
        notice="The run was deleted, with its report and its uploaded files."
        if deleted else None))


async def page_run(request: web.Request) -> web.StreamResponse:
    run = await readable_run(request)
    if run is None:
        return not_found(request)
    pool = request.app[KEY_POOL]
    who = user(request)
    owner = run["owner"] == who
    readers = await store.readers_of(pool, run["id"]) if owner else []
    unknown = await store.unknown(pool, readers)
    link = run_link(request, str(run["id"]))
    if run["state"] == RunState.SUCCEEDED:
        page = await page_response(pool, run["id"], report_page.report_bar(
            str(run["id"]), csrf=caller().csrf, owner=owner, owner_name=run["owner"],
            readers=readers, link=link, unknown=unknown,
            sharing=request.query.get("sharing") == "1"))
        if page is not None:
            return page
    run, waiting = await _waiting(request, run)
    status = await run_status(pool, run, waiting)
    shown = dict(run)
    if status["waiting"] and not shown["error"] and not status["stage"]:
        shown["error"] = status["waiting"]
    return web.Response(content_type="text/html", text=pages.run_page(
        shown, status, user=who, csrf=caller().csrf, owner=owner, readers=readers,
        link=link, unknown=unknown))


def run_link(request: web.Request, run_id: str) -> str:
    """The run's address to send a reader: absolute where the service's origin is known
    (``web.public_origin``, a trusted proxy's, the request's ``Host``)."""
    origin = middleware.page_origin(request)
    return f"{origin or ''}/runs/{run_id}"


def _back(form: Any, run_id: str) -> str:
    """Where a page's form returns to: "My runs" or the run's page, nothing else."""
    wanted = form.get("next") if form is not None else None
    return wanted if wanted in ("/runs", f"/runs/{run_id}") else f"/runs/{run_id}"


async def page_cancel(request: web.Request) -> web.StreamResponse:
    """The page's Cancel. A form that says ``ask=1`` (the pages' buttons) and not
    ``confirm=yes`` (the script's confirmation) is answered with a page that asks."""
    form = await request.post() if request.content_type == \
        "application/x-www-form-urlencoded" else None
    if form is not None and form.get("ask") == "1" and form.get("confirm") != "yes":
        run = await owned_run(request)
        if run is None:
            return not_found(request)
        if run["state"] == RunState.RUNNING:
            status = await run_status(request.app[KEY_POOL], run)
            return web.Response(content_type="text/html", text=pages.cancel_page(
                str(run["id"]), status["title"], user=user(request), csrf=caller().csrf,
                back=_back(form, str(run["id"]))))
    run, refusal = await _cancel(request)
    if refusal is not None and run is None:
        return refusal
    raise web.HTTPSeeOther(_back(form, request.match_info["run_id"]))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/runs", page_runs)
    router.add_get("/runs/{run_id}", page_run)
    router.add_post("/runs/{run_id}/cancel", page_cancel)
    router.add_get("/api/runs", api_list)
    router.add_get("/api/shared", api_shared)
    router.add_get("/api/runs/{run_id}", api_status)
    router.add_post("/api/runs/{run_id}/cancel", api_cancel)
    router.add_get("/api/documents/{digest}", api_document)
