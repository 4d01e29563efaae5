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
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from citerun.web import identity, pages, store
from citerun.web.context import (
    CALLER,
    KEY_AUTH,
    KEY_CSRF,
    KEY_POOL,
    KEY_SEEN,
    KEY_SETTINGS,
    Caller,
    caller,
    error,
)

#: How often one process records a signed-in user as seen (``web_users``), in seconds.
SEEN_EVERY_S = 3600.0

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SESSION_COOKIE = "citerun_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
#: The attribute of a handler that checks a multipart body's token itself, as the body's
#: first field while it streams (the upload): :func:`csrf_checked_in_body`.
CSRF_STREAMED = "csrf_checked_in_body"


def csrf_checked_in_body(handler: Handler) -> Handler:
    """Mark ``handler`` as reading a multipart body's CSRF token itself (its first field,
    refused when missing or wrong): the one route that may; any other route's multipart
    body is read and its token checked here."""
    setattr(handler, CSRF_STREAMED, True)
    return handler


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
    seen = request.app[KEY_SEEN]  # who has signed in: a run shared with a typo says so
    if time.monotonic() - seen.get(who.user, -SEEN_EVERY_S) >= SEEN_EVERY_S:
        await store.seen(request.app[KEY_POOL], who.user)
        seen[who.user] = time.monotonic()
    new_session = None
    token = ""
    if who.browser_session:
        session = request.cookies.get(SESSION_COOKIE, "")
        if not _SESSION.match(session):
            if request.method not in ("GET", "HEAD"):
                return error(request, 403, "no browser session: reload the page first")
            session = new_session = secrets.token_urlsafe(32)
        token = csrf_token(request.app[KEY_CSRF], who.user, session)
    reset = CALLER.set(Caller(who, token))
    try:
        if request.method not in ("GET", "HEAD", "OPTIONS") and who.browser_session:
            refused = await _csrf_refusal(request)
            if refused is not None:
                logger.warning("refused %s %s of %s: %s", request.method, request.path,
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
    expected, _, _ = _expected_origin(request)
    return request.secure or (expected is not None and expected.startswith("https://"))


def csrf_token(key: bytes, user: str, session: str) -> str:
    """The token of one user's browser session: an HMAC, so nothing is stored per session
    and every replica checks it with the key in ``web_keys``."""
    mac = hmac.new(key, b"csrf\0" + user.encode() + b"\0" + session.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


def _normal(origin: str) -> str | None:
    """``scheme://host[:port]`` in lower case, the scheme's default port dropped; None
    for anything that is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def _expected_origin(request: web.Request) -> tuple[str | None, str, bool]:
    """The origin this service's pages have (None: nothing usable), where that comes
    from (for a refusal's words) and whether its scheme is known: ``web.public_origin``;
    else, with ``web.trust_forwarded_origin`` and a trusted peer,
    ``X-Forwarded-Proto``/``X-Forwarded-Host``; else the request's own ``Host`` (whose
    scheme behind a TLS-terminating proxy is not known)."""
    settings = request.app[KEY_SETTINGS]
    if settings.public_origin is not None:
        return (_normal(settings.public_origin), f"web.public_origin {settings.public_origin}",
                True)
    headers = request.headers
    if settings.trust_forwarded_origin and request.app[KEY_AUTH].trusted(request.remote) \
            and ("X-Forwarded-Host" in headers or "X-Forwarded-Proto" in headers):
        hosts = headers.getall("X-Forwarded-Host", [headers.get("Host", "")])
        protos = headers.getall("X-Forwarded-Proto", [request.scheme])
        said = (f"X-Forwarded-Proto {', '.join(protos)} and "
                f"{'X-Forwarded-Host' if 'X-Forwarded-Host' in headers else 'Host'} "
                f"{', '.join(hosts)} from the trusted proxy")
        if len(hosts) > 1 or len(protos) > 1 or "," in hosts[0] or "," in protos[0]:
            return None, said + " (more than one value: set web.public_origin)", True
        return _normal(f"{protos[0].strip()}://{hosts[0].strip()}"), said, True
    host = headers.get("Host", "")
    return _normal(f"{request.scheme}://{host}"), f"Host {host or '(none)'}", False


def page_origin(request: web.Request) -> str | None:
    """This service's origin as its pages have it (for a link to send), or None."""
    return _expected_origin(request)[0]


def _same_origin(request: web.Request, origin: str) -> str | None:
    """None when ``origin`` is this service's; else the refusal, naming what it compared
    and what to set."""
    expected, source, scheme_known = _expected_origin(request)
    given = _normal(origin)
    if given is not None and expected is not None:
        if given == expected or (not scheme_known and given.partition("://")[2]
                                 == expected.partition("://")[2]):
            return None
    if request.app[KEY_SETTINGS].public_origin is not None:
        fix = ("if the page was this service's own, web.public_origin "
               "(CITERUN_WEB__PUBLIC_ORIGIN) must be exactly the address in the browser's "
               "address bar, scheme://host[:port]")
    else:
        fix = ("behind a proxy, set web.public_origin (CITERUN_WEB__PUBLIC_ORIGIN) to the "
               "address in the browser's address bar, scheme://host[:port]; or have the "
               "proxy pass the browser's Host (nginx: proxy_set_header Host $http_host), or "
               "set X-Forwarded-Host and X-Forwarded-Proto there and "
               "CITERUN_WEB__TRUST_FORWARDED_ORIGIN=true")
    return (f"cross-site request refused: the browser's Origin {origin[:200]} is not this "
            f"service's origin {expected or '(unknown)'} (from {source[:300]}); {fix}")


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
            return (f"cross-site request refused: the browser says it comes from another "
                    f"site's page (Sec-Fetch-Site: {site[:40]}, "
                    f"Origin: {(origin or '(none)')[:200]})")
        if origin is not None and origin != "null":
            refused = _same_origin(request, origin)
            if refused is not None:
                return refused
    else:
        named = "Origin"
        if origin is None:
            referer = request.headers.get("Referer")
            if referer:
                parts = urlsplit(referer)
                origin = f"{parts.scheme}://{parts.netloc}"
                named = "Referer"
        if origin is None:
            return ("cross-site request refused: it carries none of Sec-Fetch-Site, Origin "
                    "and Referer, so nothing says it comes from this service's pages")
        refused = _same_origin(request, origin)
        if refused is not None:
            return refused if named == "Origin" else refused.replace(
                "the browser's Origin", "the browser's Referer's origin", 1)
    given = request.headers.get(CSRF_HEADER)
    if given is None and request.content_type == "multipart/form-data" \
            and getattr(request.match_info.handler, CSRF_STREAMED, False):
        caller().csrf_in_body = True  # the upload's first field, checked as it streams
        return None
    if given is None and request.content_type in ("application/x-www-form-urlencoded",
                                                  "multipart/form-data"):
        # Any other route's form, however encoded (issue 48: cancel, share and unshare
        # sent as multipart passed without a token), within the 64 KB form cap.
        form = await request.post()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
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
