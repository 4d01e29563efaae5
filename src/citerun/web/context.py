"""What every route of the web service reads: the application's keys, who is calling,
the answer to an error, and the run a request names (the user's own, or one they may read).

Every read takes the user: another user's run or document is 404, exactly like an id
nobody used.
"""

from __future__ import annotations

import contextvars
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg
from aiohttp import web

from citerun.web import identity, intake, pages, store
from citerun.web.settings import WebSettings

KEY_POOL: web.AppKey[asyncpg.Pool] = web.AppKey("pool", asyncpg.Pool)
KEY_BACKEND: web.AppKey[Any] = web.AppKey("backend", object)
KEY_SETTINGS: web.AppKey[WebSettings] = web.AppKey("settings", WebSettings)
KEY_AUTH: web.AppKey[identity.Authenticator] = web.AppKey("auth", identity.Authenticator)
KEY_CSRF: web.AppKey[bytes] = web.AppKey("csrf_key", bytes)
KEY_INTAKE: web.AppKey[intake.Intake] = web.AppKey("intake", intake.Intake)
#: When this process last recorded each user as seen (``store.seen``), monotonic seconds.
KEY_SEEN: web.AppKey[dict[str, float]] = web.AppKey("seen", dict)


@dataclass
class Caller:
    """Who sent the request being handled, and their session's CSRF token ("" for a
    bearer call). Kept in a context variable: the handler runs in the middleware's task."""

    identity: identity.Identity
    csrf: str
    csrf_in_body: bool = False


#: Set by the identity middleware (:mod:`citerun.web.middleware`) around each handler.
CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "citerun_web_caller", default=None)


def caller() -> Caller:
    found = CALLER.get()
    assert found is not None, "a route behind the identity middleware"
    return found


def user(request: web.Request) -> str:
    return caller().identity.user


def is_api(request: web.Request) -> bool:
    return request.path.startswith("/api/")


def error(request: web.Request, status: int, message: str) -> web.Response:
    """An error as JSON for the API, as a small page otherwise."""
    if is_api(request) or "text/html" not in request.headers.get("Accept", ""):
        return web.json_response({"error": message}, status=status)
    who = CALLER.get()
    return web.Response(
        status=status, content_type="text/html",
        text=pages.message_page(f"Error {status}", message,
                                user=who.identity.user if who else "",
                                csrf=who.csrf if who else ""))


def not_found(request: web.Request) -> web.Response:
    return error(request, 404, "no such run or document")


def run_id(request: web.Request) -> uuid.UUID | None:
    try:
        return uuid.UUID(request.match_info["run_id"])
    except ValueError:
        return None


async def owned_run(request: web.Request) -> asyncpg.Record | None:
    """The run the request names, if the user owns it."""
    found = run_id(request)
    if found is None:
        return None
    return await store.run_of(request.app[KEY_POOL], found, user(request))


async def readable_run(request: web.Request) -> asyncpg.Record | None:
    """A run the user owns or that its owner shared with them (``owner`` says whose)."""
    found = run_id(request)
    if found is None:
        return None
    return await store.run_readable(request.app[KEY_POOL], found, user(request))
