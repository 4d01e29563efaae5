"""A test's web user: one browser session behind the authenticating proxy (its cookies,
its page's CSRF token), as the service's e2e and cluster tests drive it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
THESIS = ROOT / "examples" / "thesis.pdf"
SOURCES = sorted((ROOT / "examples" / "sources").glob("*.pdf"))


class User:
    """One browser session behind the proxy: its cookies, its page's CSRF token."""

    def __init__(self, base: str, name: str | None, *, bearer: str | None = None) -> None:
        self.base = base
        headers = {"X-Forwarded-User": name} if name is not None else {}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        self.http = aiohttp.ClientSession(
            base, headers=headers, cookie_jar=aiohttp.CookieJar(unsafe=True))
        self.csrf = ""

    async def open(self) -> User:
        async with self.http.get("/", headers={"Accept": "text/html"}) as page:
            assert page.status == 200, await page.text()
            match = re.search(r'<meta name="csrf-token" content="([^"]+)">', await page.text())
            assert match
            self.csrf = match.group(1)
        return self

    def post_headers(self, **extra: str) -> dict[str, str]:
        return {"Origin": self.base, "X-CSRF-Token": self.csrf, "Accept": "application/json",
                **extra}

    async def upload(self, thesis: Path = THESIS, sources: list[Path] = SOURCES, *,
                     headers: dict[str, str] | None = None,
                     extra: tuple[tuple[str, str, bytes], ...] | list[tuple[str, str, bytes]] = ()
                     ) -> tuple[int, dict[str, Any]]:
        form = aiohttp.FormData()
        form.add_field("thesis", thesis.read_bytes(), filename=thesis.name,
                       content_type="application/pdf")
        for path in sources:
            form.add_field("sources", path.read_bytes(), filename=path.name,
                           content_type="application/pdf")
        for field, name, data in extra:
            form.add_field(field, data, filename=name, content_type="application/octet-stream")
        async with self.http.post("/api/runs", data=form,
                                  headers=self.post_headers() if headers is None else headers
                                  ) as response:
            return response.status, await response.json()

    async def get(self, path: str) -> tuple[int, Any]:
        async with self.http.get(path, headers={"Accept": "application/json"}) as response:
            body = await response.text()
            try:
                return response.status, json.loads(body)
            except ValueError:
                return response.status, body

    async def post(self, path: str) -> tuple[int, Any]:
        async with self.http.post(path, headers=self.post_headers()) as response:
            return response.status, await response.json()

    async def close(self) -> None:
        await self.http.close()
