"""``citerun serve``'s service end to end: the real aiohttp service on loopback, the real
Postgres (a fresh migrated database per test), and a real ``citerun worker`` running the
pipeline on the demo thesis. Each user is a client whose requests carry the trusted
proxy's header from 127.0.0.1, with its own cookies, as a browser behind the proxy.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from citerun.core import db, runs
from citerun.core.settings import Settings
from citerun.web import service, store
from citerun.web.settings import WebSettings
from citerun.web.units import human_bytes

from tests.support.web_user import ROOT, SOURCES, THESIS, User
RUN_TIMEOUT_S = 420.0




@asynccontextmanager
async def served(pool: asyncpg.Pool, **changes: Any) -> AsyncIterator[str]:
    async with service.running(pool, Settings(), WebSettings(**changes)) as base:
        yield base


@asynccontextmanager
async def users(base: str, *names: str) -> AsyncIterator[list[User]]:
    async with AsyncExitStack() as stack:
        opened = []
        for name in names:
            user = User(base, name)
            stack.push_async_callback(user.close)
            opened.append(await user.open())
        yield opened


async def _wait_finished(user: User, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    seen: list[str] = []
    while True:
        status, body = await user.get(f"/api/runs/{run_id}")
        assert status == 200, body
        seen.append(f"{body['progress']['documentsDone']}/{body['progress']['documents']}"
                    f" {body['progress']['judged']}/{body['progress']['citations']}")
        if body["state"] != "running":
            return dict(body)
        assert time.monotonic() < deadline, f"the run did not finish: {seen[-5:]}"
        await asyncio.sleep(1.0)


async def _counts(pool: asyncpg.Pool) -> tuple[int, int, int]:
    row = await pool.fetchrow("SELECT (SELECT count(*) FROM runs) AS runs, "
                              "(SELECT count(*) FROM documents) AS documents, "
                              "(SELECT count(*) FROM web_runs) AS owners")
    return row["runs"], row["documents"], row["owners"]


def _fake_pdf(size: int, tag: str) -> bytes:
    """Bytes that pass the magic check (the admission's type check) of a given size; no
    worker runs in the tests that send them."""
    head = f"%PDF-1.4\n% {tag}\n".encode()
    return head + b"0" * (size - len(head))


# -- the whole path, and a second user who can touch none of it -----------------------------

async def test_upload_run_report_and_a_second_user_sees_nothing(
        pool: asyncpg.Pool, spawn_worker: Callable[..., Any], tmp_path: Path) -> None:
    spawn_worker("web-w0", tasks="citerun.worker.tasks:registry",
                 env={"CITERUN_WORKER__CONCURRENCY": "2"})
    async with served(pool) as base, users(base, "alice", "bob") as (alice, bob):
        started = time.monotonic()
        status, body = await alice.upload()
        upload_s = time.monotonic() - started
        assert status == 202, body
        run_id = body["runId"]
        assert body["url"] == f"/runs/{run_id}"
        print(f"upload to 202: {upload_s * 1000:.0f} ms")

        status, mine = await alice.get("/api/runs")
        assert status == 200 and [r["runId"] for r in mine["runs"]] == [run_id]
        status, first = await alice.get(f"/api/runs/{run_id}")
        assert status == 200 and first["name"] == "thesis"
        thesis_digest = runs.digest_of(THESIS.read_bytes())
        assert {d["filename"] for d in first["documents"]} == {
            "thesis.pdf", *(p.name for p in SOURCES)}

        # Bob, a valid user with a valid session, tries every route of Alice's run (while
        # it runs, so a cancel would matter) and gets exactly what an unknown id gets.
        unknown = str(uuid.uuid4())
        for target in (run_id, unknown):
            for path in (f"/api/runs/{target}", f"/api/runs/{target}/report.json",
                         f"/api/runs/{target}/report.html", f"/runs/{target}"):
                status, answer = await bob.get(path)
                assert (status, answer) == (404, {"error": "no such run or document"}), path
            for path in (f"/api/runs/{target}/cancel", f"/runs/{target}/cancel"):
                status, answer = await bob.post(path)
                assert (status, answer) == (404, {"error": "no such run or document"}), path
        for digest in (thesis_digest, runs.digest_of(SOURCES[0].read_bytes()), "0" * 64, "x"):
            status, answer = await bob.get(f"/api/documents/{digest}")
            assert status == 404, digest
        status, listed = await bob.get("/api/runs")
        assert (status, listed) == (200, {"runs": []})
        async with bob.http.get("/runs", headers={"Accept": "text/html"}) as page:
            assert run_id not in await page.text()

        # Alice's document is hers.
        status, doc = await alice.get(f"/api/documents/{thesis_digest}")
        assert status == 200 and doc["filename"] == "thesis.pdf", doc

        # A report before the end is a clear 409 for her.
        status, early = await alice.get(f"/api/runs/{run_id}/report.json")
        if status != 200:
            assert status == 409 and "no report" in early["error"]

        final = await _wait_finished(alice, run_id)
        assert final["state"] == "succeeded", final
        assert final["progress"]["citations"] > 0
        assert final["progress"]["judged"] == final["progress"]["citations"]

        status, report = await alice.get(f"/api/runs/{run_id}/report.json")
        assert status == 200
        assert report["run_id"] == run_id
        assert len(report["citations"]) == final["progress"]["citations"]
        async with alice.http.get(f"/api/runs/{run_id}/report.html") as html:
            assert html.status == 200
            text = await html.text()
            csp = html.headers["Content-Security-Policy"]
            assert "Citation report" in text
            assert "unsafe-inline" not in csp and "'sha256-" in csp
            assert "frame-ancestors 'none'" in csp
            assert html.headers["X-Frame-Options"] == "DENY"
            assert ' style="' not in text  # moved into the hashed stylesheet
        async with alice.http.get(f"/runs/{run_id}", headers={"Accept": "text/html"}) as page:
            assert page.status == 200 and "Citation report" in await page.text()
        # After the end too, Bob gets nothing, and a finished run cannot be cancelled.
        status, _ = await bob.get(f"/api/runs/{run_id}/report.json")
        assert status == 404
        status, answer = await alice.post(f"/api/runs/{run_id}/cancel")
        assert status == 409 and "finished" in answer["error"]


# -- identity ------------------------------------------------------------------------------

async def test_a_forged_header_from_an_untrusted_peer_is_refused(pool: asyncpg.Pool) -> None:
    import ipaddress

    # This instance trusts only a proxy network the test client is not in.
    async with served(pool, trusted_proxies=(ipaddress.ip_network("10.99.0.0/16"),)) as base:
        forger = User(base, "alice")
        try:
            for path in ("/", "/runs", "/api/runs", f"/api/runs/{uuid.uuid4()}"):
                status, body = await forger.get(path)
                assert status == 403, (path, body)
                assert "trusted proxy" in body["error"]
            status, body = await forger.upload(headers={"Origin": base})
            assert status == 403
        finally:
            await forger.close()
        anonymous = User(base, None)
        try:
            async with anonymous.http.get("/api/runs") as response:
                assert response.status == 401
                assert response.headers["WWW-Authenticate"].startswith("Bearer")
            async with anonymous.http.get("/healthz") as response:
                assert response.status == 200  # the probe needs no identity
        finally:
            await anonymous.close()
    assert await _counts(pool) == (0, 0, 0)
    # The same client through a service that trusts loopback is Alice.
    async with served(pool) as base, users(base, "alice") as (alice,):
        assert await alice.get("/api/runs") == (200, {"runs": []})


async def test_bearer_tokens_name_users_and_skip_the_csrf_check(
        pool: asyncpg.Pool, tmp_path: Path) -> None:
    key = RSAKey.generate_key(2048, parameters={"kid": "test"})
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(KeySet([key]).as_dict(private=False)))
    issuer = "https://login.example.org"
    now = int(time.time())

    def token(sub: str, **claims: Any) -> str:
        return jwt.encode({"alg": "RS256", "kid": "test"},
                          {"iss": issuer, "aud": "citerun", "sub": sub, "exp": now + 300,
                           **claims}, key)

    async with served(pool, oidc_issuer=issuer, oidc_audience="citerun",
                      oidc_jwks_file=jwks) as base:
        api = User(base, None, bearer=token("carol"))
        other = User(base, None, bearer=token("dave"))
        expired = User(base, None, bearer=token("carol", exp=now - 600))
        try:
            # No Origin, no CSRF token, no cookie: a bearer call is no browser session.
            status, body = await api.upload(headers={"Accept": "application/json"})
            assert status == 202, body
            assert (await api.get("/api/runs"))[1]["runs"][0]["runId"] == body["runId"]
            assert (await other.get(f"/api/runs/{body['runId']}"))[0] == 404
            assert (await other.get("/api/runs")) == (200, {"runs": []})
            assert (await expired.get("/api/runs"))[0] == 401
            async with other.http.post(f"/api/runs/{body['runId']}/cancel") as response:
                assert response.status == 404
            async with api.http.post(f"/api/runs/{body['runId']}/cancel") as response:
                assert response.status == 200
                assert (await response.json())["state"] == "cancelled"
        finally:
            for user in (api, other, expired):
                await user.close()


# -- CSRF ----------------------------------------------------------------------------------

async def test_browser_posts_need_the_origin_and_the_session_token(pool: asyncpg.Pool) -> None:
    async with served(pool) as base, users(base, "alice", "bob") as (alice, bob):
        token = alice.csrf
        refusals = {
            "no token": {"Origin": base},
            "foreign origin": {"Origin": "https://evil.example", "X-CSRF-Token": token},
            "null origin": {"Origin": "null", "X-CSRF-Token": token},
            "no origin, no referer": {"X-CSRF-Token": token},
            "cross-site fetch metadata": {"Sec-Fetch-Site": "cross-site", "Origin": base,
                                          "X-CSRF-Token": token},
            "same-site fetch metadata": {"Sec-Fetch-Site": "same-site", "X-CSRF-Token": token},
            "same-origin metadata, foreign origin": {
                "Sec-Fetch-Site": "same-origin", "Origin": "https://evil.example",
                "X-CSRF-Token": token},
            "same-origin metadata, no token": {"Sec-Fetch-Site": "same-origin",
                                               "Origin": "null"},
            "foreign referer": {"Referer": "https://evil.example/x", "X-CSRF-Token": token},
            "another user's token": {"Origin": base, "X-CSRF-Token": bob.csrf},
            "a wrong token": {"Origin": base, "X-CSRF-Token": token[:-2] + "AA"},
        }
        for why, headers in refusals.items():
            status, body = await alice.upload(headers={**headers, "Accept": "application/json"})
            assert status == 403, why
            assert "CSRF" in body["error"] or "cross-site" in body["error"], why
        # The right token with no session cookie (a forged request from elsewhere).
        stranger = User(base, "alice")
        stranger.csrf = token
        try:
            status, body = await stranger.upload()
            assert status == 403 and "session" in body["error"]
        finally:
            await stranger.close()
        assert await _counts(pool) == (0, 0, 0)

        # The page's form without its script: the token is the first field, then 303.
        form = aiohttp.FormData()
        form.add_field("csrf_token", token)
        form.add_field("thesis", THESIS.read_bytes(), filename=THESIS.name)
        form.add_field("sources", SOURCES[0].read_bytes(), filename=SOURCES[0].name)
        async with alice.http.post("/api/runs", data=form, allow_redirects=False,
                                   headers={"Origin": base, "Accept": "text/html"}) as response:
            assert response.status == 303, await response.text()
            run_path = response.headers["Location"]
        forged = aiohttp.FormData()
        forged.add_field("csrf_token", bob.csrf)
        forged.add_field("thesis", THESIS.read_bytes(), filename=THESIS.name)
        async with alice.http.post("/api/runs", data=forged,
                                   headers={"Origin": base}) as response:
            assert response.status == 403
        # The cancel button: a urlencoded form with the token; a foreign origin is refused.
        async with alice.http.post(f"{run_path}/cancel", data={"csrf_token": token},
                                   allow_redirects=False,
                                   headers={"Origin": "https://evil.example"}) as response:
            assert response.status == 403
        async with alice.http.post(f"{run_path}/cancel", data={"csrf_token": token},
                                   allow_redirects=False, headers={"Origin": base}) as response:
            assert response.status == 303
        status, body = await alice.get(f"/api{run_path}")
        assert body["state"] == "cancelled"

        # A form as Chromium sends it from a page that suppresses the referrer ("Origin:
        # null") but says the request is its own (Sec-Fetch-Site): the token decides.
        status, body = await alice.upload()
        assert status == 202, body
        chromium = {"Origin": "null", "Sec-Fetch-Site": "same-origin"}
        async with alice.http.post(f"/runs/{body['runId']}/cancel",
                                   data={"csrf_token": bob.csrf}, allow_redirects=False,
                                   headers=chromium) as response:
            assert response.status == 403
        async with alice.http.post(f"/runs/{body['runId']}/cancel",
                                   data={"csrf_token": token, "next": "/runs"},
                                   allow_redirects=False, headers=chromium) as response:
            assert response.status == 303 and response.headers["Location"] == "/runs"
        assert (await alice.get(f"/api/runs/{body['runId']}"))[1]["state"] == "cancelled"


async def test_security_headers_on_every_answer(pool: asyncpg.Pool) -> None:
    async with served(pool) as base, users(base, "alice") as (alice,):
        for path in ("/", "/runs", "/api/runs", "/static/app.js", "/static/app.css",
                     f"/api/runs/{uuid.uuid4()}", "/no/such/page"):
            async with alice.http.get(path) as response:
                headers = response.headers
                assert headers["X-Frame-Options"] == "DENY", path
                assert headers["X-Content-Type-Options"] == "nosniff", path
                # same-origin: the browser sends this origin with the page's own forms
                # (under no-referrer Chromium sends "Origin: null"), and nothing outside.
                assert headers["Referrer-Policy"] == "same-origin", path
                csp = headers["Content-Security-Policy"]
                assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, path
        async with alice.http.get("/") as page:
            html = await page.text()
            assert "<script>" not in html and "<style>" not in html and " style=" not in html
            assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        # The session cookie is HttpOnly and SameSite=Strict.
        fresh = aiohttp.ClientSession(base, headers={"X-Forwarded-User": "erin"})
        try:
            async with fresh.get("/") as page:
                cookie = page.headers["Set-Cookie"]
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        finally:
            await fresh.close()


# -- caps and limits -----------------------------------------------------------------------

async def test_caps_per_user_are_429_and_413_and_leave_nothing(pool: asyncpg.Pool) -> None:
    demo_bytes = THESIS.stat().st_size + sum(p.stat().st_size for p in SOURCES)
    async with served(pool, max_active_runs=3, max_staged_bytes=demo_bytes + 20_000,
                      max_upload_bytes=400_000) as base, \
            users(base, "alice", "bob") as (alice, bob):
        ids = []
        for _ in range(3):  # the same files: staged once, counted once
            status, body = await alice.upload()
            assert status == 202, body
            ids.append(body["runId"])
        before = await _counts(pool)
        status, body = await alice.upload()
        assert status == 429, body
        assert "3 active run(s)" in body["error"] and "cap is 3" in body["error"]
        assert await _counts(pool) == before  # nothing staged, nothing recorded
        # Bob has caps of his own.
        status, body = await bob.upload(sources=SOURCES[:1])
        assert status == 202, body

        # Cancel one: Alice may start another, but not one over her staged-bytes cap.
        assert (await alice.post(f"/api/runs/{ids[0]}/cancel"))[0] == 200
        extra = [("sources", "big.pdf", _fake_pdf(30_000, "big"))]
        before = await _counts(pool)
        status, body = await alice.upload(extra=extra)
        assert status == 413, body
        cap = human_bytes(demo_bytes + 20_000)
        assert cap.endswith(" KiB")  # the demo's few PDFs: tens of KiB
        assert "staged" in body["error"] and f"the cap is {cap}:" in body["error"], body
        assert await _counts(pool) == before
        status, body = await alice.upload()
        assert status == 202, body

        # The request's own size limit: refused as it streams (413), nothing staged.
        await alice.post(f"/api/runs/{body['runId']}/cancel")
        before = await _counts(pool)
        huge = [("sources", "huge.pdf", _fake_pdf(500_000, "huge"))]
        status, body = await alice.upload(extra=huge)
        assert status == 413 and "larger than 390 KiB" in body["error"], body
        assert await _counts(pool) == before


async def test_types_are_checked_by_their_bytes(pool: asyncpg.Pool, tmp_path: Path) -> None:
    async with served(pool) as base, users(base, "alice") as (alice,):
        fake_thesis = tmp_path / "thesis.pdf"
        fake_thesis.write_bytes(b"MZ\x90\x00 an executable, named .pdf")
        status, body = await alice.upload(thesis=fake_thesis)
        assert (status, body["error"]) == (415, "thesis 'thesis.pdf' is not a PDF")
        script = tmp_path / "thesis.sh"
        script.write_bytes(b"#!/bin/sh\n")
        status, body = await alice.upload(thesis=script)
        assert status == 415 and ".docx" in body["error"]
        docx = tmp_path / "thesis.docx"
        docx.write_bytes(THESIS.read_bytes())  # a PDF named .docx
        status, body = await alice.upload(thesis=docx)
        assert status == 415 and "no zip" in body["error"]
        status, body = await alice.upload(extra=[("sources", "notes.pdf", b"plain text")])
        assert (status, body["error"]) == (415, "source 'notes.pdf' is not a PDF")
        status, body = await alice.upload(extra=[("library", "refs.bib", b"\x00\xff\xfe")])
        assert status == 415 and "UTF-8" in body["error"]
        status, body = await alice.upload(extra=[("library", "refs.exe", b"@book{x}")])
        assert status == 415
        status, body = await alice.upload(extra=[("attachment", "x.pdf", b"%PDF-1.4")])
        assert status == 400 and "unknown field" in body["error"]
        status, body = await alice.upload(sources=[])
        assert status == 400 and "no sources" in body["error"]
        dup = [("sources", SOURCES[0].name, _fake_pdf(100, "dup"))]
        status, body = await alice.upload(extra=dup)
        assert status == 400 and "two sources" in body["error"]
        async with alice.http.post("/api/runs", json={"thesis": "x"},
                                   headers=alice.post_headers()) as response:
            assert response.status == 415
        # A library with the thesis: staged as one bundle, accepted.
        bib = b"@article{wei2018, title={T}, author={Wei, Li}, year={2018}, file={wei2018.pdf}}\n"
        status, body = await alice.upload(extra=[("library", "refs.bib", bib)])
        assert status == 202, body
        assert await _counts(pool) == (1, 1 + len(SOURCES), 1)


async def test_upload_answers_in_words_and_pages(pool: asyncpg.Pool, tmp_path: Path) -> None:
    """Names too long are shortened, an empty file is called empty, and the form without
    its script gets pages (the form again with the error as an alert), never JSON."""
    async with served(pool, max_upload_bytes=400_000, max_active_runs=1) as base, \
            users(base, "alice") as (alice,):
        long_name = "Masterarbeit_" + "x" * 217 + ".pdf"
        assert len(long_name) == 234
        named = tmp_path / long_name
        named.write_bytes(THESIS.read_bytes())
        status, body = await alice.upload(thesis=named)
        assert status == 202, body
        status, run = await alice.get(f"/api/runs/{body['runId']}")
        stored = next(d["filename"] for d in run["documents"] if d["role"] == "thesis")
        assert len(stored) == 200 and stored.startswith("Masterarbeit_xxx")
        assert stored.endswith("\u2026.pdf"), stored
        assert (await alice.post(f"/api/runs/{body['runId']}/cancel"))[0] == 200

        empty = tmp_path / "thesis.pdf"
        empty.write_bytes(b"")
        status, body = await alice.upload(thesis=empty)
        assert status == 400 and "'thesis.pdf' is empty (0 bytes)" in body["error"], body
        status, body = await alice.upload(extra=[("sources", "blank.pdf", b"")])
        assert status == 400 and "source 'blank.pdf' is empty" in body["error"], body

        # The form as a browser sends it without the script: the token first, Accept
        # text/html. Errors come back as the form with the message as an alert.
        def form(*files: tuple[str, str, bytes]) -> aiohttp.FormData:
            data = aiohttp.FormData()
            data.add_field("csrf_token", alice.csrf)
            for field, name, content in files:
                data.add_field(field, content, filename=name, content_type="application/pdf")
            return data

        page_headers = {"Origin": base, "Accept": "text/html,application/xhtml+xml"}
        huge = form(("thesis", "thesis.pdf", THESIS.read_bytes()),
                    ("sources", "huge.pdf", _fake_pdf(500_000, "huge")))
        async with alice.http.post("/api/runs", data=huge, headers=page_headers) as response:
            text = await response.text()
            assert response.status == 413 and response.content_type == "text/html"
            assert '<p class="error" role="alert">the upload is larger than 390 KiB' in text
            assert '<form id="upload"' in text  # the form again, to try once more
        status, first = await alice.upload()
        assert status == 202
        again = form(("thesis", "thesis.pdf", THESIS.read_bytes()),
                     ("sources", SOURCES[0].name, SOURCES[0].read_bytes()))
        async with alice.http.post("/api/runs", data=again, headers=page_headers) as response:
            text = await response.text()
            assert response.status == 429 and response.content_type == "text/html"
            assert 'role="alert"' in text and "cancel one" in text
            assert '<a href="/runs">Open My runs to cancel a run.</a>' in text


async def test_a_shared_run_is_read_only_for_its_reader_and_hidden_from_others(
        pool: asyncpg.Pool) -> None:
    async with served(pool) as base, \
            users(base, "alice", "bob", "carol") as (alice, bob, carol):
        status, body = await alice.upload()
        assert status == 202
        run_id = body["runId"]
        paths = (f"/api/runs/{run_id}", f"/runs/{run_id}")
        for user in (bob, carol):
            for path in paths:
                assert (await user.get(path))[0] == 404, path

        # Only the owner shares: a would-be reader cannot share it with themselves.
        async with bob.http.post(f"/api/runs/{run_id}/shares", json={"reader": "bob"},
                                 headers=bob.post_headers()) as response:
            assert response.status == 404
        async with alice.http.post(f"/api/runs/{run_id}/shares", json={"reader": "bob"},
                                   headers=alice.post_headers()) as response:
            assert response.status == 200
            assert await response.json() == {"runId": run_id, "readers": ["bob"],
                                            "unknownReaders": []}  # bob has signed in
        async with alice.http.post(f"/api/runs/{run_id}/shares", json={"reader": " "},
                                   headers=alice.post_headers()) as response:
            assert response.status == 400

        # Bob reads it (status, page, "Shared with me"), read-only.
        status, seen = await bob.get(f"/api/runs/{run_id}")
        assert status == 200 and seen["runId"] == run_id
        # No worker runs here: what the run waits for is said, document by document.
        assert seen["stage"] == f"Reading the documents: 0 being read, {1 + len(SOURCES)} waiting."
        assert {d["stateLabel"] for d in seen["documents"]} == {"waiting to be read"}
        async with bob.http.get(f"/runs/{run_id}", headers={"Accept": "text/html"}) as page:
            text = await page.text()
            assert page.status == 200 and "Shared with you by alice" in text
            assert "/cancel" not in text and "Share with a supervisor" not in text
        status, shared = await bob.get("/api/shared")
        assert [(r["runId"], r["owner"]) for r in shared["runs"]] == [(run_id, "alice")]
        assert (await bob.get("/api/runs"))[1] == {"runs": []}  # not his own
        async with bob.http.get("/runs", headers={"Accept": "text/html"}) as page:
            text = await page.text()
            mine, theirs = text.split('id="shared"')
            assert run_id not in mine and run_id in theirs
        for path in (f"/api/runs/{run_id}/cancel", f"/runs/{run_id}/cancel"):
            assert (await bob.post(path))[0] == 404, path
        async with bob.http.delete(f"/api/runs/{run_id}/shares/bob",
                                   headers=bob.post_headers()) as response:
            assert response.status == 404
        async with bob.http.get(f"/api/runs/{run_id}/shares") as response:
            assert response.status == 404
        # Carol, valid and signed in, still gets exactly what an unknown id gets.
        for path in (*paths, f"/api/runs/{run_id}/report.json",
                     f"/api/runs/{run_id}/citations.csv", f"/api/runs/{run_id}/shares"):
            assert (await carol.get(path)) == (404, {"error": "no such run or document"}), path
        assert (await carol.get("/api/shared")) == (200, {"runs": []})

        # The page's form (no script): share with carol too, then take bob's back.
        async with alice.http.post(f"/runs/{run_id}/shares",
                                   data={"csrf_token": alice.csrf, "reader": "carol"},
                                   allow_redirects=False, headers={"Origin": base}) as response:
            assert response.status == 303, await response.text()
        async with alice.http.post(f"/runs/{run_id}/shares/remove",
                                   data={"csrf_token": alice.csrf, "reader": "bob"},
                                   allow_redirects=False, headers={"Origin": base}) as response:
            assert response.status == 303
        assert (await alice.get(f"/api/runs/{run_id}/shares"))[1]["readers"] == ["carol"]
        for path in paths:
            assert (await bob.get(path))[0] == 404, path
        assert (await bob.get("/api/shared")) == (200, {"runs": []})
        assert (await carol.get(f"/api/runs/{run_id}"))[0] == 200
        async with alice.http.delete(f"/api/runs/{run_id}/shares/carol",
                                     headers=alice.post_headers()) as response:
            assert (await response.json())["readers"] == []
        assert (await carol.get(f"/api/runs/{run_id}"))[0] == 404
        # At most MAX_READERS readers, each named once.
        for n in range(store.MAX_READERS + 1):
            async with alice.http.post(f"/api/runs/{run_id}/shares",
                                       json={"reader": f"reader{n}"},
                                       headers=alice.post_headers()) as response:
                assert response.status == (200 if n < store.MAX_READERS else 409), n
        async with alice.http.post(f"/api/runs/{run_id}/shares", json={"reader": "reader0"},
                                   headers=alice.post_headers()) as response:
            assert response.status == 200  # already a reader
        # The owner still cancels it; the grants go with the run.
        assert (await alice.post(f"/api/runs/{run_id}/cancel"))[0] == 200


# -- durability ----------------------------------------------------------------------------

async def test_a_restarted_service_shows_the_same_runs(database_url: str) -> None:
    pool = await db.create_pool(database_url, min_size=1, max_size=4)
    try:
        async with served(pool) as base, users(base, "alice") as (alice,):
            status, body = await alice.upload()
            assert status == 202
            run_id = body["runId"]
            page_token, cookies = alice.csrf, alice.http.cookie_jar
            listed = (await alice.get("/api/runs"))[1]
    finally:
        await pool.close()
    # A new process's pool and app: nothing was kept in the old one's memory.
    pool = await db.create_pool(database_url, min_size=1, max_size=4)
    try:
        async with served(pool) as base:
            alice = User(base, "alice")
            try:
                # The old page's session and token still hold (the key is in Postgres).
                for cookie in cookies:
                    alice.http.cookie_jar.update_cookies({cookie.key: cookie.value})
                alice.csrf = page_token
                assert (await alice.get("/api/runs"))[1] == listed
                status, body = await alice.get(f"/api/runs/{run_id}")
                assert status == 200 and body["state"] == "running"
                status, body = await alice.post(f"/api/runs/{run_id}/cancel")
                assert status == 200, body
            finally:
                await alice.close()
    finally:
        await pool.close()


# -- the command ---------------------------------------------------------------------------

def test_citerun_serve_answers_and_stops_on_sigterm(database_url: str, tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import urllib.request

    from citerun.core.settings import ENV_NESTED, ENV_PREFIX
    from tests.conftest import citerun_command
    from tests.support import serve_process

    # The web group's variables, spelled from the prefix and separator every setting uses.
    caps = f"{ENV_PREFIX}WEB{ENV_NESTED}MAX_ACTIVE_RUNS"

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")}
    env[caps] = "2"  # a setting of citerun serve: read, not refused
    log = tmp_path / "serve.log"
    with serve_process.running(citerun_command(), port, database_url, env, log):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/runs",
                                         headers={"X-Forwarded-User": "alice"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert json.loads(answer.read()) == {"runs": []}
    typo = subprocess.run([*citerun_command(), "serve", "--database-url", database_url],
                          env={**env, caps[:-1]: "2"}, text=True,
                          capture_output=True, timeout=60)
    assert typo.returncode == 2
    assert f"unknown setting {caps[:-1]} (did you mean {caps}?)" in typo.stderr
