"""Deleting a run (issue 47): its owner's Delete, and the service's own after
``web.keep_days``.

An ended run (finished, failed, cancelled) goes with everything that hangs off it: its
citations, verdicts, report and tasks, its ``web_runs`` row and its shares (a reader
loses it too), and its uploaded documents where nothing else uses them
(:func:`citerun.web.store.delete_run`); on a cluster its CitationRun first
(:meth:`citerun.web.backend.Backend.delete`). A running run is cancelled first. Only
the owner deletes: a reader of a shared run, or anybody else, gets 404.

The page's Delete is a form POST with the CSRF token; the script asks first and sends
``confirm=yes``, and without the script the answer is a page that asks. Registered by
:func:`citerun.web.app.build`, which also starts :func:`expire`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

import asyncpg
from aiohttp import web

from citerun.core import retention
from citerun.web import pages, store
from citerun.web.backend import Backend
from citerun.web.context import (
    KEY_BACKEND,
    KEY_POOL,
    KEY_SETTINGS,
    caller,
    error,
    not_found,
    owned_run,
    user,
)

logger = logging.getLogger(__name__)

#: How often the service looks for runs past ``web.keep_days``, in seconds.
EXPIRE_EVERY_S = 3600.0
#: Runs deleted per look (the rest at the next).
EXPIRE_BATCH = 100


async def delete(pool: asyncpg.Pool, backend: Backend, run_id: uuid.UUID,
                 owner: str) -> str | None:
    """Delete ``owner``'s ended run; None when done, else why not."""
    row = await store.run_of(pool, run_id, owner)
    if row is None:
        return "not found"
    if row["state"] == "running":
        return "the run is still running: cancel it first"
    await backend.delete(run_id)
    return await store.delete_run(pool, run_id, owner)


async def _deleted(request: web.Request) -> tuple[str | None, str]:
    """Delete the run the request names for its owner: why not (None: done), and its
    title."""
    run = await owned_run(request)
    if run is None:
        return "not found", ""
    title = await _title(request.app[KEY_POOL], run)
    why = await delete(request.app[KEY_POOL], request.app[KEY_BACKEND], run["id"],
                       user(request))
    if why is None:
        logger.info("run %s deleted by its owner %s", run["id"], user(request))
    return why, title


async def _title(pool: asyncpg.Pool, run: asyncpg.Record) -> str:
    documents = await store.run_documents(pool, run["id"])
    thesis = next((d["filename"] for d in documents if d["role"] == "thesis"), None)
    return pages.run_title({"title": await store.thesis_title(pool, run["id"]),
                            "filename": thesis, "name": run["name"]})


def _refusal(request: web.Request, why: str) -> web.Response:
    if why == "not found":
        return not_found(request)
    return error(request, 409, why)


async def api_delete(request: web.Request) -> web.StreamResponse:
    why, _ = await _deleted(request)
    if why is not None:
        return _refusal(request, why)
    return web.json_response({"runId": request.match_info["run_id"], "deleted": True})


async def page_delete(request: web.Request) -> web.StreamResponse:
    """The page's Delete: asks first (a page) unless the form says ``confirm=yes``."""
    form = await request.post() if request.content_type == \
        "application/x-www-form-urlencoded" else None
    if form is None or form.get("confirm") != "yes":
        run = await owned_run(request)
        if run is None:
            return not_found(request)
        if run["state"] == "running":
            return error(request, 409, "the run is still running: cancel it first")
        readers = await store.readers_of(request.app[KEY_POOL], run["id"])
        return web.Response(content_type="text/html", text=pages.delete_page(
            str(run["id"]), await _title(request.app[KEY_POOL], run), user=user(request),
            csrf=caller().csrf, readers=readers))
    why, _ = await _deleted(request)
    if why is not None:
        return _refusal(request, why)
    raise web.HTTPSeeOther("/runs?deleted=1")


async def expire(pool: asyncpg.Pool, backend: Backend, keep_days: float) -> int:
    """Delete the runs that ended over ``keep_days`` ago (one batch); how many."""
    done = 0
    for row in await store.expired_runs(pool, keep_days * 86400.0, EXPIRE_BATCH):
        try:
            if await delete(pool, backend, row["run_id"], row["owner"]) is None:
                done += 1
        except Exception:  # one run's trouble (the cluster's API) never stops the rest
            logger.exception("deleting the expired run %s", row["run_id"])
    if done:
        logger.info("deleted %d run(s) ended over %g days ago (web.keep_days)", done,
                    keep_days)
    # The open-access copies runs fetched (issue 51), shared by every user, go after as
    # long: on one machine no operator's cleaner forgets them.
    forgotten = await retention.delete_old_fetched_works(
        pool, older_than_s=keep_days * 86400.0, limit=EXPIRE_BATCH)
    forgotten += await retention.delete_unused_fetched_contents(pool, limit=EXPIRE_BATCH)
    if forgotten:
        logger.info("forgot %d open-access work(s) and copies fetched over %g days ago",
                    forgotten, keep_days)
    return done


async def _expire_loop(app: web.Application) -> None:
    keep_days = app[KEY_SETTINGS].keep_days
    assert keep_days is not None
    while True:
        try:
            await expire(app[KEY_POOL], app[KEY_BACKEND], keep_days)
        except (OSError, asyncpg.PostgresError) as err:
            logger.warning("looking for runs past web.keep_days: %s", err)
        await asyncio.sleep(EXPIRE_EVERY_S)


async def expiry(app: web.Application) -> AsyncIterator[None]:
    """The app's cleanup context: :func:`expire` every :data:`EXPIRE_EVERY_S` while the
    service runs (with ``web.keep_days`` set)."""
    task = (asyncio.create_task(_expire_loop(app), name="citerun-web-expiry")
            if app[KEY_SETTINGS].keep_days is not None else None)
    yield
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/runs/{run_id}/delete", page_delete)
    router.add_delete("/api/runs/{run_id}", api_delete)
