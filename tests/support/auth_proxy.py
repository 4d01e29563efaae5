"""An authenticating reverse proxy on loopback, for the browser tests: what stands in
front of ``citerun serve`` in a deployment (oauth2-proxy, an ingress with auth), so the
browser sets no header by hand.

The browser signs in with HTTP Basic (Playwright's ``http_credentials``: the browser's
own login prompt); the proxy checks the password, drops any ``X-Forwarded-User`` or
``Authorization`` the client sent, and forwards the request to the service with the
user's name in ``X-Forwarded-User`` from 127.0.0.1 (a trusted peer). Everything else
the browser sent (Origin, Sec-Fetch-*, cookies, Host) passes through unchanged, and the
answer comes back as the service gave it (redirects are not followed).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import AsyncIterator, Mapping

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailers", "transfer-encoding", "upgrade", "content-length", "content-encoding"}


def _login(header: str, passwords: Mapping[str, str]) -> str | None:
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user if passwords.get(user) == password and user else None


@contextlib.asynccontextmanager
async def auth_proxy(upstream: str, passwords: Mapping[str, str]) -> AsyncIterator[str]:
    """A proxy in front of ``upstream`` (the service's base URL) for these users and
    passwords; yields its own base URL."""
    client = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.StreamResponse:
        user = _login(request.headers.get("Authorization", ""), passwords)
        if user is None:
            return web.Response(status=401, text="sign in",
                                headers={"WWW-Authenticate": 'Basic realm="citerun"'})
        headers = CIMultiDict((k, v) for k, v in request.headers.items()
                              if k.lower() not in _HOP | {"authorization", "x-forwarded-user"})
        headers["X-Forwarded-User"] = user
        body = await request.read() if request.body_exists else None
        async with client.request(request.method, upstream + request.rel_url.raw_path_qs,
                                  headers=headers, data=body, allow_redirects=False) as answer:
            payload = await answer.read()
            out = CIMultiDict((k, v) for k, v in answer.headers.items()
                              if k.lower() not in _HOP)
            return web.Response(status=answer.status, body=payload, headers=out)

    app = web.Application(client_max_size=1 << 30)
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        await client.close()
