"""Issue 47: the service behind a stock proxy, and on one's own machine.

The real service on loopback, spoken to as nginx with Basic auth speaks to it: the
browser's ``Authorization: Basic`` passed on beside ``X-Forwarded-User`` (nginx's
default), the upstream's own ``Host`` (nginx's default) where the browser's ``Origin`` is
the proxy's. Before: every request 401 ("the Authorization header is not 'Bearer
<token>'"), every POST "cross-site request refused" naming neither header; no way in
when opened directly.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import aiohttp
import asyncpg
import pydantic
import pytest

from citerun.core import runs
from citerun.core.settings import Settings
from citerun.web import service
from citerun.web.settings import WebSettings
from tests.e2e.test_web_service import served
from tests.support.web_user import User

BASIC = "Basic YWxpY2U6YWxpY2UtcHc="  # alice:alice-pw, as the browser sends it to nginx
JSON = {"Accept": "application/json"}


async def _call(base: str, method: str, path: str, **headers: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession(base) as http, \
            http.request(method, path, headers={**JSON, **headers}) as answer:
        try:
            return answer.status, await answer.json()
        except aiohttp.ContentTypeError:
            return answer.status, await answer.text()


async def test_a_basic_authorization_neither_signs_in_nor_blocks_the_proxys_header(
        pool: asyncpg.Pool) -> None:
    async with served(pool) as base:
        # nginx with auth_basic passes the browser's header on: the proxy's user counts.
        status, body = await _call(base, "GET", "/api/runs", Authorization=BASIC,
                                   **{"X-Forwarded-User": "alice"})
        assert status == 200 and body == {"runs": []}, body
        # The Basic header alone never signs anyone in, and says why.
        status, body = await _call(base, "GET", "/api/runs", Authorization=BASIC)
        assert status == 401, body
        assert "'Basic', which citerun never reads" in body["error"], body
        assert "X-Forwarded-User header came from the trusted proxy" in body["error"], body
        # A bearer token still wins over the header (this service accepts none: 401).
        status, body = await _call(base, "GET", "/api/runs", Authorization="Bearer abc",
                                   **{"X-Forwarded-User": "alice"})
        assert status == 401 and "accepts no bearer tokens" in body["error"], body
        status, body = await _call(base, "GET", "/api/runs", Authorization="Bearer ",
                                   **{"X-Forwarded-User": "alice"})
        assert status == 401, body
        # A Basic-signed browser session is a browser session: its POST needs the token.
        status, body = await _call(base, "POST", f"/api/runs/{uuid.uuid4()}/cancel",
                                   Authorization=BASIC, Origin=base,
                                   Cookie="citerun_session=" + "a" * 43,
                                   **{"X-Forwarded-User": "alice", "Sec-Fetch-Site": "same-origin"})
        assert status == 403 and "CSRF token is missing" in body["error"], body
    # From a peer that is not the trusted proxy, Basic or not, the header is refused.
    async with served(pool, trusted_proxies=["10.0.0.0/8"]) as base:
        status, body = await _call(base, "GET", "/api/runs", Authorization=BASIC,
                                   **{"X-Forwarded-User": "alice"})
        assert status == 403 and "only from the trusted proxy" in body["error"], body


async def _cancel_from(user: User, origin: str, **headers: str) -> tuple[int, Any]:
    """A cancel of no run, from a page at ``origin``: 404 once the CSRF checks pass."""
    async with user.http.post(f"/api/runs/{uuid.uuid4()}/cancel",
                              headers=user.post_headers(**{"Origin": origin,
                                                           "Sec-Fetch-Site": "same-origin",
                                                           **headers})) as answer:
        return answer.status, await answer.json()


async def test_a_cross_site_refusal_names_what_it_compared_and_what_to_set(
        pool: asyncpg.Pool, caplog: pytest.LogCaptureFixture) -> None:
    proxy = "http://127.0.0.1:8443"  # where the browser's page is: the proxy's address
    caplog.set_level(logging.INFO, logger="citerun.web.middleware")
    async with served(pool) as base:
        user = await User(base, "alice").open()
        try:
            status, body = await _cancel_from(user, proxy)
            upstream = base.removeprefix("http://")
            assert status == 403, body
            message = body["error"]
            assert message.startswith("cross-site request refused: the browser's Origin "
                                      f"{proxy} is not this service's origin {base} (from "
                                      f"Host {upstream})"), message
            assert "CITERUN_WEB__PUBLIC_ORIGIN" in message and "$http_host" in message
            logged = [r.getMessage() for r in caplog.records if "cross-site" in r.getMessage()]
            assert logged and proxy in logged[0] and f"Host {upstream}" in logged[0], logged
            # The same page's POST from the service's own origin passes (404: no such run).
            assert (await _cancel_from(user, base))[0] == 404
            # X-Forwarded-Host/Proto are not read unless configured.
            status, body = await _cancel_from(user, proxy, **{
                "X-Forwarded-Host": "127.0.0.1:8443", "X-Forwarded-Proto": "http"})
            assert status == 403 and f"from Host {upstream}" in body["error"], body
        finally:
            await user.close()
    async with served(pool, public_origin=proxy) as base:
        user = await User(base, "alice").open()
        try:
            assert (await _cancel_from(user, proxy))[0] == 404
            assert (await _cancel_from(user, proxy + "/"))[0] == 404
            status, body = await _cancel_from(user, "https://127.0.0.1:8443")
            assert status == 403, body
            assert (f"is not this service's origin {proxy} (from web.public_origin {proxy})"
                    in body["error"]), body
        finally:
            await user.close()
    async with served(pool, trust_forwarded_origin=True) as base:
        user = await User(base, "alice").open()
        try:
            forwarded = {"X-Forwarded-Host": "127.0.0.1:8443", "X-Forwarded-Proto": "http"}
            assert (await _cancel_from(user, proxy, **forwarded))[0] == 404
            status, body = await _cancel_from(user, "https://127.0.0.1:8443", **forwarded)
            assert status == 403 and "X-Forwarded-Proto http and X-Forwarded-Host " \
                "127.0.0.1:8443 from the trusted proxy" in body["error"], body
            status, body = await _cancel_from(user, proxy, **{
                "X-Forwarded-Host": "127.0.0.1:8443, evil.example", "X-Forwarded-Proto": "http"})
            assert status == 403 and "more than one value" in body["error"], body
        finally:
            await user.close()


async def test_cross_site_by_the_browsers_word_says_so(pool: asyncpg.Pool) -> None:
    async with served(pool) as base:
        user = await User(base, "alice").open()
        try:
            status, body = await _cancel_from(user, "https://evil.example",
                                              **{"Sec-Fetch-Site": "cross-site"})
            assert status == 403, body
            assert "Sec-Fetch-Site: cross-site, Origin: https://evil.example" in body["error"]
        finally:
            await user.close()


async def test_the_local_mode_is_one_user_on_loopback_only(pool: asyncpg.Pool) -> None:
    async with served(pool) as base:
        # Opened directly: a 401 that says how in.
        status, body = await _call(base, "GET", "/api/runs")
        assert status == 401 and "CITERUN_WEB__LOCAL_USER=<your name>" in body["error"], body
    async with served(pool, local_user="me") as base:
        status, body = await _call(base, "GET", "/api/runs")
        assert status == 200 and body == {"runs": []}, body
        port = base.rsplit(":", 1)[1]
        status, _ = await _call(base, "GET", "/api/runs", Host=f"localhost:{port}")
        assert status == 200
        # A page that rebinds its own name to 127.0.0.1 is not this machine's user.
        status, body = await _call(base, "GET", "/api/runs", Host=f"evil.example:{port}")
        assert status == 401 and "LOCAL_USER" not in body["error"], body
        # Nor is a request a proxy forwarded.
        for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Forwarded-Host"):
            status, body = await _call(base, "GET", "/api/runs", **{header: "203.0.113.9"})
            assert status == 401, (header, body)
        # The proxy's header still names its user; a Basic header signs nobody else in.
        status, body = await _call(base, "GET", "/", **{"X-Forwarded-User": "alice",
                                                        "Accept": "text/html"})
        assert status == 200 and "alice" in body and ">me<" not in body
        # The local user's POSTs are a browser session's: token and origin checked.
        me = await User(base, None).open()
        try:
            status, body = await _cancel_from(me, base)
            assert status == 404, body
            async with me.http.post(f"/api/runs/{uuid.uuid4()}/cancel",
                                    headers={**JSON, "Origin": base}) as answer:
                assert answer.status == 403
                assert "CSRF token" in (await answer.json())["error"]
        finally:
            await me.close()
    # Never on an address others reach, never on a cluster.
    with pytest.raises(runs.RunError, match="listens on loopback only"):
        async with service.running(pool, Settings(), WebSettings(local_user="me"),
                                   host="0.0.0.0"):
            pass
    with pytest.raises(pydantic.ValidationError, match="local_user is for one machine"):
        WebSettings(local_user="me", backend="kubernetes", namespace="theses")
