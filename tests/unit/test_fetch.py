"""Downloading documents from URLs: address policy (SSRF), redirects, scheme, size and
time caps, against real servers on loopback.

The positive-path tests allow-list 127.0.0.1 explicitly (:data:`LOCAL`); every other
loopback or private address stays refused, and the hostile servers count what reaches
them."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from citerun.pipeline import fetch

BODY = b"%PDF-1.7\n" + b"x" * 5000
LOCAL = fetch.AddressPolicy.from_strings(allow=["127.0.0.1/32"])


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
        elif self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
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
    assert await fetch.download(f"{server}/doc.pdf", max_bytes=10_000, timeout_s=5,
                                policy=LOCAL) == BODY


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.org/x.pdf",
                                 "gopher://x/y"])
async def test_only_http_and_https_are_fetched(url: str) -> None:
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(url, max_bytes=10_000, timeout_s=5)
    assert err.value.reason == "bad_scheme" and err.value.permanent


@pytest.mark.parametrize("path", ["/big-declared.pdf", "/big-streamed.pdf"])
async def test_the_size_cap_stops_a_large_download(server: str, path: str) -> None:
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(policy=LOCAL, url=f"{server}{path}", max_bytes=10_000, timeout_s=5)
    assert err.value.reason == "too_large" and err.value.permanent
    assert "10000" in str(err.value)


async def test_the_time_cap_stops_a_slow_download(server: str) -> None:
    started = time.monotonic()
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(policy=LOCAL, url=f"{server}/slow.pdf", max_bytes=10_000, timeout_s=0.5)
    assert time.monotonic() - started < 2
    assert err.value.reason == "timeout" and not err.value.permanent


async def test_http_errors_say_whether_a_retry_can_help(server: str) -> None:
    with pytest.raises(fetch.DownloadError) as missing:
        await fetch.download(policy=LOCAL, url=f"{server}/gone.pdf", max_bytes=10_000, timeout_s=5)
    assert missing.value.permanent and missing.value.reason == "http_error"
    with pytest.raises(fetch.DownloadError) as busy:
        await fetch.download(policy=LOCAL, url=f"{server}/busy.pdf", max_bytes=10_000, timeout_s=5)
    assert not busy.value.permanent and busy.value.reason == "http_error"
    assert str(busy.value) == str(missing.value) == fetch.GENERIC_MESSAGE


class _Hostile(http.server.BaseHTTPRequestHandler):
    """An internal endpoint: it must never be reached."""

    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hostile() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.2 (loopback, not allow-listed) counting its requests."""
    _Hostile.hits = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.2", 0), _Hostile)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.2:{httpd.server_address[1]}", _Hostile.hits
    httpd.shutdown()
    httpd.server_close()


async def test_loopback_and_internal_addresses_are_refused_without_a_request(
        hostile: tuple[str, list[str]]) -> None:
    hostport, hits = hostile
    port = hostport.rsplit(":", 1)[1]
    urls = [f"http://{hostport}/x.pdf",
            f"http://[::ffff:127.0.0.2]:{port}/x.pdf", f"http://0.0.0.0:{port}/x.pdf",
            "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/x.pdf",
            "http://192.168.1.1/x.pdf", "http://172.16.0.1/x.pdf", "http://100.64.0.1/x.pdf",
            "http://[fd00::1]/x.pdf", "http://[::1]/x.pdf"]
    for url in urls:
        with pytest.raises(fetch.DownloadError) as err:
            await fetch.download(url, max_bytes=10_000, timeout_s=5, policy=LOCAL)
        assert err.value.reason == "blocked_address", url
        assert str(err.value) == fetch.GENERIC_MESSAGE
    assert hits == []


async def test_a_redirect_to_an_internal_address_is_refused(
        server: str, hostile: tuple[str, list[str]]) -> None:
    hostport, hits = hostile
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(f"{server}/redirect?to=http://{hostport}/secret", max_bytes=10_000,
                             timeout_s=5, policy=LOCAL)
    assert err.value.reason == "blocked_address" and err.value.permanent
    assert hits == []
    # An allowed redirect target is followed (the check is per hop, not a blanket refusal).
    assert await fetch.download(f"{server}/redirect?to={server}/doc.pdf", max_bytes=10_000,
                                timeout_s=5, policy=LOCAL) == BODY


async def test_the_default_policy_refuses_loopback(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    for url in (f"{server}/doc.pdf", f"http://localhost:{port}/doc.pdf"):
        with pytest.raises(fetch.DownloadError) as err:
            await fetch.download(url, max_bytes=10_000, timeout_s=5)
        assert err.value.reason == "blocked_address"


async def test_open_and_closed_ports_give_the_same_message(server: str) -> None:
    import socket as socket_mod
    with socket_mod.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(fetch.DownloadError) as refused:
        await fetch.download(f"http://127.0.0.1:{closed}/x.pdf", max_bytes=10_000,
                             timeout_s=5, policy=LOCAL)
    with pytest.raises(fetch.DownloadError) as missing:
        await fetch.download(f"{server}/nothing-here.pdf", max_bytes=10_000, timeout_s=5,
                             policy=LOCAL)
    assert str(refused.value) == str(missing.value) == fetch.GENERIC_MESSAGE
