"""Issue 41 (Low): a repeated ``X-Forwarded-User`` header -- the first value won, so behind
a proxy that appends its own line after the client's, a client named itself. The real
service on loopback, a request from the trusted proxy's address with the header twice:
refused (400), as is a repeated ``Authorization``; one header is still believed."""

from __future__ import annotations

import aiohttp
import asyncpg
from multidict import CIMultiDict

from tests.e2e.test_web_service import served


async def _get(base: str, headers: CIMultiDict[str]) -> tuple[int, str]:
    async with aiohttp.ClientSession(base) as http, \
            http.get("/api/runs", headers=headers) as response:
        return response.status, await response.text()


async def test_an_identity_header_given_twice_is_refused(pool: asyncpg.Pool) -> None:
    async with served(pool) as base:
        twice = CIMultiDict([("X-Forwarded-User", "alice"), ("X-Forwarded-User", "mallory"),
                             ("Accept", "application/json")])
        status, body = await _get(base, twice)
        assert status == 400 and "X-Forwarded-User header came more than once" in body, body
        bearer = CIMultiDict([("Authorization", "Bearer a"), ("Authorization", "Bearer b"),
                              ("Accept", "application/json")])
        status, body = await _get(base, bearer)
        assert status == 400 and "Authorization header came more than once" in body, body
        once = CIMultiDict([("X-Forwarded-User", "alice"), ("Accept", "application/json")])
        status, body = await _get(base, once)
        assert status == 200, body
