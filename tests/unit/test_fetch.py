"""Downloading documents from URLs: address policy (SSRF), redirects, scheme, size and
time caps, against real servers on loopback.

The positive-path tests allow-list 127.0.0.1 explicitly (:data:`LOCAL`); every other
loopback or private address stays refused, and the hostile servers count what reaches
them."""

from __future__ import annotations

import http.server
import ipaddress
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from citerun.pipeline import fetch

BODY = b"%PDF-1.7\n" + b"x" * 5000
LOCAL = fetch.AddressPolicy.from_strings(allow=["127.0.0.1/32"])

# Location values an attacker's server may answer with (issue 27): backslashes (which
# browsers read as slashes and urllib as a path), a scheme without a host, a broken IPv6
# literal, nothing, a bad port, control characters and 10 kB ones. Sent as latin-1.
BAD_LOCATIONS = ["http:\\\\127.0.0.2/secret", "https:\\\\example.org/x.pdf", "/\\\\127.0.0.2/x",
                 "http:///x", "https:///x", "http:x.pdf", "//[::1", "http://[::1/x", "",
                 "   ", "http://127.0.0.1:99999/x", "http://127.0.0.1:x/", "/x\x7fy",
                 "http://exa mple.org/x", "/" + "a" * 10_000,
                 "http://" + "a" * 10_000 + "/x.pdf"]


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
        elif self.path.startswith("/bad-redirect/"):
            self.send_response(302)
            self.send_header("Location", BAD_LOCATIONS[int(self.path.rsplit("/", 1)[1])])
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


def _teredo(server: str, client: str) -> str:
    """A Teredo address (2001::/32) naming ``server`` and, bit-inverted, ``client``."""
    value = (0x2001 << 112) | (int(ipaddress.IPv4Address(server)) << 64) | (
        0xFFFFFFFF ^ int(ipaddress.IPv4Address(client)))
    return str(ipaddress.IPv6Address(value))


# IPv6 addresses that carry an internal IPv4 address (every stdlib or RFC 6052 form),
# and the deprecated site-local range: each must be judged by the IPv4 inside.
INTERNAL_V6 = ["::127.0.0.1", "::ffff:0:7f00:1", "::ffff:0:10.0.0.1", "::ffff:127.0.0.1",
               "::169.254.169.254", "64:ff9b::127.0.0.1", "64:ff9b::10.0.0.1",
               "64:ff9b:1::8.8.8.8", "64:ff9b:1:ffff::a00:1", "2002:7f00:1::1",
               "2002:a9fe:a9fe::1", _teredo("65.54.227.120", "10.0.0.1"),
               _teredo("127.0.0.1", "8.8.8.8"), "fec0::1", "fec0:0:0:ffff::1", "feff::1",
               "::", "::1", "::0.0.0.2"]


@pytest.mark.parametrize("address", INTERNAL_V6)
def test_ipv6_that_embeds_an_internal_ipv4_or_is_site_local_is_refused(address: str) -> None:
    assert not fetch.DEFAULT_POLICY.permits(ipaddress.ip_address(address)), address


def test_ipv6_that_embeds_a_public_ipv4_is_judged_by_it() -> None:
    for address in ("64:ff9b::8.8.8.8", "2002:808:808::1", "::ffff:8.8.8.8",
                    _teredo("65.54.227.120", "8.8.4.4"), "2606:4700::1111"):
        assert fetch.DEFAULT_POLICY.permits(ipaddress.ip_address(address)), address
    # The operator's IPv4 lists reach the IPv4 inside as well: allowing 127.0.0.1 allows
    # its IPv6 spellings (as it always did for ::ffff:127.0.0.1), denying a range denies them.
    for address in ("::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::127.0.0.1", "2002:7f00:1::1"):
        assert LOCAL.permits(ipaddress.ip_address(address)), address
    cluster = fetch.AddressPolicy.from_strings(deny=["8.8.8.0/24"])
    for address in ("64:ff9b::8.8.8.8", "2002:808:808::1", _teredo("65.54.227.120", "8.8.8.8")):
        assert not cluster.permits(ipaddress.ip_address(address)), address


async def test_ipv6_urls_that_embed_loopback_reach_nothing(
        hostile: tuple[str, list[str]]) -> None:
    hostport, hits = hostile
    port = hostport.rsplit(":", 1)[1]
    for literal in ("::127.0.0.2", "::ffff:0:127.0.0.2", "64:ff9b::127.0.0.2",
                    "2002:7f00:2::1", _teredo("65.54.227.120", "127.0.0.2"), "fec0::1"):
        for policy in (fetch.DEFAULT_POLICY, LOCAL):
            with pytest.raises(fetch.DownloadError) as err:
                await fetch.download(f"http://[{literal}]:{port}/x.pdf", max_bytes=10_000,
                                     timeout_s=5, policy=policy)
            assert err.value.reason == "blocked_address", literal
    assert hits == []


@pytest.mark.parametrize("index", range(len(BAD_LOCATIONS)))
async def test_a_malformed_redirect_is_an_ordinary_download_failure(
        server: str, hostile: tuple[str, list[str]], index: int) -> None:
    hostport, hits = hostile
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(f"{server}/bad-redirect/{index}", max_bytes=10_000, timeout_s=5,
                             policy=LOCAL)
    assert err.value.reason == "bad_redirect" and err.value.permanent, err.value.reason
    assert str(err.value) == fetch.GENERIC_MESSAGE
    assert hits == []


@pytest.mark.parametrize("url", ["http://127.0.0.1/\x01", "http://127.0.0.1/a\x7fb",
                                 "http://[::1", "http://127.0.0.1:99999/",
                                 "http://" + "a" * 3000 + "/x.pdf"])
async def test_a_malformed_url_is_an_ordinary_download_failure(url: str) -> None:
    with pytest.raises(fetch.DownloadError) as err:
        await fetch.download(url, max_bytes=10_000, timeout_s=5, policy=LOCAL)
    assert err.value.reason == "bad_url" and err.value.permanent
    assert str(err.value) == fetch.GENERIC_MESSAGE


async def test_a_client_passed_in_gets_the_location_check_once(server: str) -> None:
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as client:
        for _ in range(2):
            with pytest.raises(fetch.DownloadError) as err:
                # "//[::1": httpx itself would raise RemoteProtocolError ("network").
                await fetch.download(f"{server}/bad-redirect/6", max_bytes=10_000,
                                     timeout_s=5, policy=LOCAL, client=client)
            assert err.value.reason == "bad_redirect"
        assert len(client.event_hooks["response"]) == 1
        assert await fetch.download(f"{server}/redirect?to={server}/doc.pdf", max_bytes=10_000,
                                    timeout_s=5, policy=LOCAL, client=client) == BODY
