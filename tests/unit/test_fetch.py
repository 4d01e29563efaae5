"""Downloading documents from URLs: scheme, size and time caps, against a real server."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from citerun.worker.pipeline import fetch

BODY = b"%PDF-1.7\n" + b"x" * 5000


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path == "/doc.pdf":
            self._send(200, BODY)
        elif self.path == "/big-declared.pdf":
            self.send_response(200)
            self.send_header("Content-Length", str(10**9))
            self.end_headers()
        elif self.path == "/big-streamed.pdf":
            self.send_response(200)
            self.end_headers()  # no Content-Length: the cap must stop the stream
            for _ in range(100):
                self.wfile.write(b"y" * 1000)
        elif self.path == "/slow.pdf":
            time.sleep(3)
            self._send(200, BODY)
        elif self.path == "/busy.pdf":
            self._send(503, b"try later")
        else:
            self._send(404, b"no such document")

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


async def test_download_returns_the_body(server: str) -> None:
    assert await fetch.download(f"{server}/doc.pdf", max_bytes=10_000, timeout_s=5) == BODY


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.org/x.pdf",
                                 "gopher://x/y"])
async def test_only_http_and_https_are_fetched(url: str) -> None:
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(url, max_bytes=10_000, timeout_s=5)
    assert err.value.reason == "bad_scheme" and err.value.permanent


@pytest.mark.parametrize("path", ["/big-declared.pdf", "/big-streamed.pdf"])
async def test_the_size_cap_stops_a_large_download(server: str, path: str) -> None:
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(f"{server}{path}", max_bytes=10_000, timeout_s=5)
    assert err.value.reason == "too_large" and err.value.permanent
    assert "10000" in str(err.value)


async def test_the_time_cap_stops_a_slow_download(server: str) -> None:
    started = time.monotonic()
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(f"{server}/slow.pdf", max_bytes=10_000, timeout_s=0.5)
    assert time.monotonic() - started < 2
    assert err.value.reason == "timeout" and not err.value.permanent


async def test_http_errors_say_whether_a_retry_can_help(server: str) -> None:
    with pytest.raises(fetch.DownloadError) as missing:
        await fetch.download(f"{server}/gone.pdf", max_bytes=10_000, timeout_s=5)
    assert missing.value.permanent and "404" in str(missing.value)
    with pytest.raises(fetch.DownloadError) as busy:
        await fetch.download(f"{server}/busy.pdf", max_bytes=10_000, timeout_s=5)
    assert not busy.value.permanent and "503" in str(busy.value)
