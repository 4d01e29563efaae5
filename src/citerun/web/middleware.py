"""The web service's middlewares: aiohttp's own errors in the API's words, the caller's
identity and CSRF check on every request, and the security headers of every answer.

Every request but the static files and ``/healthz`` first gets an identity
(:mod:`citerun.web.identity`); a POST from a browser session (the proxy's header, which
comes with the browser's cookies) must also come from this service's origin and carry
the session's CSRF token; a bearer-token call is exempt (a browser never adds the
header by itself). The CSRF key lives in Postgres (``web_keys``), so every replica
checks the same tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from citerun.web import identity, pages
from citerun.web.context import CALLER, KEY_AUTH, KEY_CSRF, KEY_SETTINGS, Caller, caller, error

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SESSION_COOKIE = "citerun_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"

JSON_CSP = "default-src 'none'; frame-ancestors 'none'"
_SESSION = re.compile(r"^[A-Za-z0-9_-]{43}$")


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's own errors (404 of an unknown path, 405, 413) in the API's words."""
    try:
        return await handler(request)
    except web.HTTPException as err:
        if err.status < 400 or err.empty_body:
            raise
        return error(request, err.status, err.reason)


@web.middleware
async def identity_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/static/") or request.path in ("/healthz", "/favicon.ico"):
        return await handler(request)
    auth = request.app[KEY_AUTH]
    try:
        who = await auth.identify(request.remote, request.headers)
    except identity.IdentityError as err:
        logger.info("refused %s %s from %s: %s", request.method, request.path,
                    request.remote, err)
        refusal = error(request, err.status, str(err))
        if err.status == 401:
            refusal.headers["WWW-Authenticate"] = 'Bearer realm="citerun"'
        return refusal
    new_session = None
    token = ""
    if who.via == "proxy":
        session = request.cookies.get(SESSION_COOKIE, "")
        if not _SESSION.match(session):
            if request.method not in ("GET", "HEAD"):
                return error(request, 403, "no browser session: reload the page first")
            session = new_session = secrets.token_urlsafe(32)
        token = csrf_token(request.app[KEY_CSRF], who.user, session)
    reset = CALLER.set(Caller(who, token))
    try:
        if request.method not in ("GET", "HEAD", "OPTIONS") and who.via == "proxy":
            refused = await _csrf_refusal(request)
            if refused is not None:
                logger.info("refused %s %s of %s: %s", request.method, request.path,
                            who.user, refused)
                return error(request, 403, refused)
        response = await handler(request)
    finally:
        CALLER.reset(reset)
    if new_session is not None:
        response.set_cookie(SESSION_COOKIE, new_session, httponly=True, samesite="Strict",
                            path="/", secure=_secure(request))
    return response


def _secure(request: web.Request) -> bool:
    origin = request.app[KEY_SETTINGS].public_origin
    return request.secure or (origin is not None and origin.startswith("https://"))


def csrf_token(key: bytes, user: str, session: str) -> str:
    """The token of one user's browser session: an HMAC, so nothing is stored per session
    and every replica checks it with the key in ``web_keys``."""
    mac = hmac.new(key, b"csrf\0" + user.encode() + b"\0" + session.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


def _same_origin(request: web.Request, origin: str) -> bool:
    wanted = request.app[KEY_SETTINGS].public_origin
    if wanted is not None:
        return origin.lower() == wanted.lower()
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == request.host.lower()


async def _csrf_refusal(request: web.Request) -> str | None:
    """Why a browser session's POST is refused (None: it is not).

    The defence is the session's token (a hidden field of every form, or the script's
    header), bound to the session cookie (``SameSite=Strict``); the browser's own word on
    where the request comes from is checked on top, never instead: ``Sec-Fetch-Site``
    when the browser sends it (every current one does), else ``Origin``, else
    ``Referer``. A form's ``Origin: null`` (a page under ``Referrer-Policy:
    no-referrer``) counts as this origin only when ``Sec-Fetch-Site`` says
    ``same-origin``; a request that carries none of the three is refused.
    """
    site = request.headers.get("Sec-Fetch-Site")
    origin = request.headers.get("Origin")
    if site is not None:
        if site.strip().lower() != "same-origin":
            return "cross-site request refused: it does not come from this service's pages"
        if origin is not None and origin != "null" and not _same_origin(request, origin):
            return "cross-site request refused: it does not come from this service's pages"
    else:
        if origin is None:
            referer = request.headers.get("Referer")
            if referer:
                parts = urlsplit(referer)
                origin = f"{parts.scheme}://{parts.netloc}"
        if origin is None or not _same_origin(request, origin):
            return "cross-site request refused: it does not come from this service's pages"
    given = request.headers.get(CSRF_HEADER)
    if given is None and request.content_type == "application/x-www-form-urlencoded":
        form = await request.post()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if given is None and request.content_type == "multipart/form-data":
        caller().csrf_in_body = True  # the upload's first field, checked as it streams
        return None
    if given is None or not hmac.compare_digest(given.encode(), caller().csrf.encode()):
        return "the form's CSRF token is missing or wrong: reload the page"
    return None


async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """The security headers of every answer."""
    headers = response.headers
    if "Content-Security-Policy" not in headers:
        html = response.content_type == "text/html"
        headers["Content-Security-Policy"] = pages.PAGE_CSP if html else JSON_CSP
    headers["X-Frame-Options"] = "DENY"
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "same-origin"
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    headers.setdefault("Cache-Control", "no-store")
