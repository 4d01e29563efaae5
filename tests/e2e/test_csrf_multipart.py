"""Issue 48, low finding: the CSRF token was checked on a multipart body only by the
upload, which reads it as the body's first field; the middleware let every other
multipart POST through for the handler to check, and cancel, share and unshare never did.
A browser session's cancel, share or unshare sent as ``multipart/form-data`` without a
token (from this service's origin, past the other checks) cancelled the run and changed
its readers.

The real service on loopback (``citerun serve``'s application, the real Postgres); each
state-changing route but the upload gets a multipart body without a token, and one with
another session's token: 403 and nothing changed; with the session's own token in the
body the same form is taken, as it is urlencoded.
"""

from __future__ import annotations

import aiohttp
import asyncpg

from tests.e2e.test_web_service import served, users


def _form(**fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, value in fields.items():
        form.add_field(name, value)
    # A file part makes it multipart whatever the client would choose otherwise.
    form.add_field("note", b"x", filename="note.txt", content_type="text/plain")
    return form


async def test_cancel_share_and_unshare_sent_as_multipart_need_the_token(
        pool: asyncpg.Pool) -> None:
    async with served(pool) as base, users(base, "alice", "bob") as (alice, bob):
        status, body = await alice.upload()
        assert status == 202, body
        run = body["runId"]
        async with alice.http.post(f"/api/runs/{run}/shares", json={"reader": "bob"},
                                   headers=alice.post_headers()) as response:
            assert response.status == 200, await response.text()
        readers = ["bob"]
        same_origin = {"Origin": base, "Accept": "application/json"}
        attempts = [
            ("POST", f"/api/runs/{run}/cancel", {}),
            ("POST", f"/runs/{run}/cancel", {}),
            ("POST", f"/api/runs/{run}/shares", {"reader": "mallory"}),
            ("POST", f"/runs/{run}/shares", {"reader": "mallory"}),
            ("POST", f"/runs/{run}/shares/remove", {"reader": "bob"}),
            ("DELETE", f"/api/runs/{run}/shares/bob", {}),
        ]
        answers = {}
        for method, path, fields in attempts:
            for why, token in (("no token", None), ("another session's token", bob.csrf)):
                form = _form(**fields, **({"csrf_token": token} if token else {}))
                async with alice.http.request(method, path, data=form, headers=same_origin,
                                              allow_redirects=False) as response:
                    answers[(method, path, why)] = response.status
                    assert response.content_type != "text/html" or response.status == 403
        print(answers)
        # (before: 200/303 for each "no token", the run cancelled and mallory a reader)
        assert all(status == 403 for status in answers.values()), answers
        state = (await alice.get(f"/api/runs/{run}"))[1]["state"]
        assert state != "cancelled"
        assert (await alice.get(f"/api/runs/{run}/shares"))[1]["readers"] == readers

        # The session's own token in a multipart body is taken like a urlencoded one.
        async with alice.http.post(f"/runs/{run}/shares", data=_form(
                csrf_token=alice.csrf, reader="carol"), headers={"Origin": base},
                allow_redirects=False) as response:
            assert response.status == 303, await response.text()
        async with alice.http.post(f"/runs/{run}/cancel", data=_form(csrf_token=alice.csrf),
                                   headers={"Origin": base},
                                   allow_redirects=False) as response:
            assert response.status == 303, await response.text()
        assert (await alice.get(f"/api/runs/{run}/shares"))[1]["readers"] == ["bob", "carol"]
        assert (await alice.get(f"/api/runs/{run}"))[1]["state"] == "cancelled"
