"""The judge's HTTP client (issue 27): one per tenant, and no cookie kept from one request
to the next (a judge endpoint's cookie rode on another tenant's requests)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from citerun.worker import tasks


@pytest.fixture
def server() -> Iterator[tuple[str, list[str | None]]]:
    seen: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.headers.get("Cookie"))
            self.send_response(200)
            self.send_header("Set-Cookie", "session=alice-secret; Path=/")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_no_cookie_rides_on_a_later_request(server: tuple[str, list[str | None]]) -> None:
    url, seen = server
    alice, bob = tasks._http_client("alice"), tasks._http_client("bob")
    assert alice is not bob and alice is tasks._http_client("alice")
    assert (await alice.get(url)).status_code == 200
    await alice.get(url)
    await bob.get(url)
    assert seen == [None, None, None]
