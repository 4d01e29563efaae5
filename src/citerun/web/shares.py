"""Sharing a run with a named reader: its owner grants a user read access to one run
(the run's status, page and report, listed under "Shared with me") and takes it back;
the reader gets no cancel and no sharing, and anybody else still 404 (``web_shares``,
migration 0018, :mod:`citerun.web.store`). A name nobody has signed in as
(``web_users``, migration 0022: a typo) is shared with but said to be unknown, on the
page and in the API's ``unknownReaders``. The page's forms (no script needed) and the
API's JSON reach the same two changes. Registered by :func:`citerun.web.app.build`.
"""

from __future__ import annotations

import logging

from aiohttp import web

from citerun.web import identity, store
from citerun.web.context import KEY_POOL, error, not_found, owned_run, run_id, user

logger = logging.getLogger(__name__)


async def _reader_of(request: web.Request) -> str | None:
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            return None
        value = body.get("reader") if isinstance(body, dict) else None
    else:
        form = await request.post()
        value = form.get("reader")
    if not isinstance(value, str):
        return None
    try:
        return identity.check_user(value, "the reader")
    except identity.IdentityError:
        return None


async def _share_change(request: web.Request, grant: bool,
                        reader: str | None) -> web.Response | None:
    """Grant or take back a reader's access; a refusal, or None when done."""
    run = await owned_run(request)
    if run is None:
        return not_found(request)
    if reader is None:
        return error(request, 400, "name the user to share with (their user name, as "
                     "they sign in)")
    pool = request.app[KEY_POOL]
    if grant:
        if reader == user(request):
            return error(request, 400, "this run is yours already: name another user")
        if not await store.share(pool, run["id"], user(request), reader):
            return error(request, 409, f"this run is shared with {store.MAX_READERS} "
                         "users already: stop sharing it with one first")
        logger.info("run %s of %s shared with %s", run["id"], user(request), reader)
    else:
        await store.unshare(pool, run["id"], user(request), reader)
        logger.info("run %s of %s no longer shared with %s", run["id"], user(request), reader)
    return None


async def _shares_response(request: web.Request) -> web.Response:
    found = run_id(request)
    assert found is not None
    readers = await store.readers_of(request.app[KEY_POOL], found)
    unknown = await store.unknown(request.app[KEY_POOL], readers)
    return web.json_response({"runId": str(found), "readers": readers,
                              "unknownReaders": [r for r in readers if r in unknown]})


async def api_shares(request: web.Request) -> web.StreamResponse:
    if await owned_run(request) is None:
        return not_found(request)
    return await _shares_response(request)


async def api_share(request: web.Request) -> web.StreamResponse:
    refusal = await _share_change(request, True, await _reader_of(request))
    return refusal or await _shares_response(request)


async def api_unshare(request: web.Request) -> web.StreamResponse:
    try:
        reader: str | None = identity.check_user(request.match_info["reader"], "the reader")
    except identity.IdentityError:
        reader = None
    refusal = await _share_change(request, False, reader)
    return refusal or await _shares_response(request)


async def page_share(request: web.Request) -> web.StreamResponse:
    refusal = await _share_change(request, True, await _reader_of(request))
    if refusal is not None:
        return refusal
    raise web.HTTPSeeOther(f"/runs/{request.match_info['run_id']}?sharing=1")


async def page_unshare(request: web.Request) -> web.StreamResponse:
    refusal = await _share_change(request, False, await _reader_of(request))
    if refusal is not None:
        return refusal
    raise web.HTTPSeeOther(f"/runs/{request.match_info['run_id']}?sharing=1")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/runs/{run_id}/shares", page_share)
    router.add_post("/runs/{run_id}/shares/remove", page_unshare)
    router.add_get("/api/runs/{run_id}/shares", api_shares)
    router.add_post("/api/runs/{run_id}/shares", api_share)
    router.add_delete("/api/runs/{run_id}/shares/{reader}", api_unshare)
