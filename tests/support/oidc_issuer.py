"""A small OpenID Connect issuer on loopback for the tests of the OIDC recipe (issue 47):
the authorization code flow as an identity provider serves it to a real oauth2-proxy.

``GET /authorize`` shows a sign-in form (a user name, no password); its ``POST`` sends
the browser back to the client's ``redirect_uri`` with a one-time code and the ``state``.
``POST /token`` (the client's id and secret, HTTP Basic or form fields, as RFC 6749
allows) redeems the code once for an access token and an ID token (RS256, the issuer's
key: ``iss``, ``sub``, ``aud``, ``email`` (the name at ``domain``), ``email_verified``,
``nonce``, ``iat``, ``exp``); ``GET /jwks`` serves the public key. Nothing else (no
discovery: the client is told each endpoint). It runs on its own event loop in a thread.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import secrets
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator

from aiohttp import web
from joserfc import jwt
from joserfc.jwk import RSAKey


class Issuer:
    """The issuer at ``url`` (http://127.0.0.1:PORT) for one client."""

    def __init__(self, client_id: str, client_secret: str, domain: str) -> None:
        self.client_id, self.client_secret, self.domain = client_id, client_secret, domain
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-issuer", "use": "sig",
                                                         "alg": "RS256"})
        self._codes: dict[str, tuple[str, str | None]] = {}
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.signed_in: list[str] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/authorize", self._form)
        app.router.add_post("/authorize", self._signed_in)
        app.router.add_post("/token", self._token)
        app.router.add_get("/jwks", self._jwks)
        return app

    async def _form(self, request: web.Request) -> web.Response:
        hidden = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                         for k, v in request.query.items())
        return web.Response(content_type="text/html", text=(
            "<!DOCTYPE html><html lang=en><title>Sign in</title><form method=post>"
            f'{hidden}<label>User <input name="user" id="user"></label>'
            "<button type=submit>Sign in</button></form></html>"))

    async def _signed_in(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("client_id") != self.client_id or form.get("response_type") != "code":
            raise web.HTTPBadRequest(text="unknown client or response type")
        user = str(form["user"])
        code = secrets.token_urlsafe(16)
        nonce = form.get("nonce")
        self._codes[code] = (user, str(nonce) if nonce is not None else None)
        self.signed_in.append(user)
        back = str(form["redirect_uri"])
        query = urllib.parse.urlencode({"code": code, "state": str(form.get("state", ""))})
        raise web.HTTPFound(back + ("&" if "?" in back else "?") + query)

    def _client(self, request: web.Request, form: dict[str, str]) -> bool:
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            given_id, _, given_secret = base64.b64decode(header[6:]).decode().partition(":")
            given_id, given_secret = (urllib.parse.unquote_plus(given_id),
                                      urllib.parse.unquote_plus(given_secret))
        else:
            given_id, given_secret = form.get("client_id", ""), form.get("client_secret", "")
        return (given_id, given_secret) == (self.client_id, self.client_secret)

    async def _token(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        if not self._client(request, form):
            return web.json_response({"error": "invalid_client"}, status=401)
        found = self._codes.pop(form.get("code", ""), None)
        if form.get("grant_type") != "authorization_code" or found is None:
            return web.json_response({"error": "invalid_grant"}, status=400)
        user, nonce = found
        now = int(time.time())
        claims = {"iss": self.url, "sub": f"{user}-subject", "aud": self.client_id,
                  "email": f"{user}@{self.domain}", "email_verified": True,
                  "iat": now, "exp": now + 3600}
        if nonce:
            claims["nonce"] = nonce
        token = jwt.encode({"alg": "RS256", "kid": "test-issuer"}, claims, self.key)
        return web.json_response({"access_token": secrets.token_urlsafe(24), "token_type": "Bearer",
                                  "expires_in": 3600, "id_token": token})

    async def _jwks(self, request: web.Request) -> web.Response:
        return web.json_response({"keys": [self.key.as_dict(private=False)]})


@contextlib.contextmanager
def running(client_id: str, client_secret: str, domain: str) -> Iterator[Issuer]:
    """An :class:`Issuer` serving on 127.0.0.1 until the block ends."""
    issuer = Issuer(client_id, client_secret, domain)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(issuer.app())
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", issuer.port).start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="oidc-issuer", daemon=True)
    thread.start()
    assert ready.wait(30), "the test issuer did not start"
    try:
        yield issuer
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
