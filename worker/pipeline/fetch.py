"""Downloading a document from a URL with scheme, size and time caps.

Only http and https are allowed (no file://, no internal schemes); the body is streamed
and the download aborted as soon as it passes the size cap, so a huge or endless
response cannot fill a worker's memory; the whole download has one deadline.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx

from citerun import errors


class DownloadError(errors.CiterunError):
    """The document could not be downloaded."""

    def __init__(self, reason: str, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.permanent = permanent


async def download(url: str, *, max_bytes: int, timeout_s: float,
                   client: httpx.AsyncClient | None = None) -> bytes:
    """The body of ``url``; raises :class:`DownloadError` with a reason."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise DownloadError("bad_scheme", f"only http and https URLs are fetched, not {scheme!r}",
                            permanent=True)
    own = client is None
    client = client or httpx.AsyncClient(follow_redirects=True, max_redirects=5)
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream("GET", url, headers={"Accept": "application/pdf"}) as resp:
                if resp.status_code >= 400:
                    permanent = resp.status_code < 500 and resp.status_code not in (408, 429)
                    raise DownloadError("http_error", f"GET {url} answered {resp.status_code}",
                                        permanent=permanent)
                declared = resp.headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > max_bytes:
                    raise DownloadError("too_large", f"{url} is {declared} bytes, over the "
                                        f"cap of {max_bytes}", permanent=True)
                body = bytearray()
                async for part in resp.aiter_bytes():
                    body.extend(part)
                    if len(body) > max_bytes:
                        raise DownloadError("too_large", f"{url} is over the cap of "
                                            f"{max_bytes} bytes", permanent=True)
                return bytes(body)
    except TimeoutError as err:
        raise DownloadError("timeout", f"downloading {url} took over {timeout_s:.0f}s",
                            permanent=False) from err
    except httpx.HTTPError as err:
        raise DownloadError("network", f"downloading {url} failed: {err}",
                            permanent=False) from err
    finally:
        if own:
            await client.aclose()
