"""Issue 48, low finding: concurrent staging and cancels deadlocked in Postgres and the web
answered 500. Users upload the same sources (a class's reading list): an upload stages
each document (its ``documents`` row, then its ``document_owners`` row), while a cancel
lets go of the same documents the other way round (the run's ownership rows, then the
documents' bytes); Postgres broke the cycle by aborting one, and nobody retried it.

The real service on loopback and the real Postgres, six users (each with their own files),
25 rounds (the finding's five, five times over: the cycle is a matter of timing): in each
round every user, holding two running runs, uploads one more and cancels those two at
once, all users at the same time (1 upload and 2 cancels each). No answer is a 500:
every upload is 202, every cancel 200, and the runs end as asked. Before, three of four
such tests saw an upload answer 500 ("deadlock detected"); ``tests/db/test_deadlock_retry.py``
makes each cycle happen every time.
"""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

from tests.e2e.test_web_service import served, users
from tests.support.web_user import SOURCES, THESIS, User

USERS = 6
ROUNDS = 25
COPIES = 1  # of each demo source


def _files_of(user: str, folder: Path) -> tuple[Path, list[Path]]:
    """The demo thesis and sources as one student's own files (other bytes than anyone
    else's: a comment after the end), as the same files again in each of their runs."""
    own = []
    for copy, path in [(0, THESIS)] + [(n, p) for n in range(COPIES) for p in SOURCES]:
        mine = folder / user / f"{copy}-{path.name}"
        mine.parent.mkdir(parents=True, exist_ok=True)
        mine.write_bytes(path.read_bytes() + f"\n% {user} {copy}\n".encode())
        own.append(mine)
    return own[0], own[1:]


async def _upload(user: User, files: tuple[Path, list[Path]]) -> tuple[str, int, Any]:
    try:
        status, body = await user.upload(*files)
    except aiohttp.ContentTypeError as err:  # a 500 is text
        return "upload", err.status, str(err)
    return "upload", status, body


async def _cancel(user: User, run_id: str) -> tuple[str, int, Any]:
    async with user.http.post(f"/api/runs/{run_id}/cancel",
                              headers=user.post_headers()) as response:
        return "cancel", response.status, await response.text()


async def test_uploads_and_cancels_at_once_never_answer_500(pool: asyncpg.Pool,
                                                            tmp_path: Path) -> None:
    names = [f"student{n}" for n in range(USERS)]
    async with served(pool) as base, users(base, *names) as people:
        files = {user.csrf: _files_of(name, tmp_path) for name, user in zip(names, people)}
        running: dict[str, list[str]] = {user.csrf: [] for user in people}
        cancelled: dict[str, list[str]] = {user.csrf: [] for user in people}
        answers: collections.Counter[tuple[str, int]] = collections.Counter()
        failures = []
        for _ in range(ROUNDS):
            for user in people:  # each user holds two running runs
                while len(running[user.csrf]) < 2:
                    status, body = await user.upload(*files[user.csrf])
                    assert status == 202, body
                    running[user.csrf].append(body["runId"])
            calls = []
            for user in people:
                calls.append(_upload(user, files[user.csrf]))
                calls += [_cancel(user, run_id) for run_id in running[user.csrf]]
                cancelled[user.csrf] += running[user.csrf]
            for what, status, body in await asyncio.gather(*calls):
                answers[(what, status)] += 1
                if status != (202 if what == "upload" else 200):
                    failures.append((what, status, body))
            for user in people:
                states = {r["runId"]: r["state"]
                          for r in (await user.get("/api/runs"))[1]["runs"]}
                running[user.csrf] = [run_id for run_id, state in states.items()
                                      if state == "running"]
        print(dict(answers))
        # (before, in three of four: {('upload', 202): 149, ('upload', 500): 1, ...})
        assert failures == [], failures
        assert answers == {("upload", 202): USERS * ROUNDS, ("cancel", 200): 2 * USERS * ROUNDS}
        for user in people:
            states = {r["runId"]: r["state"] for r in (await user.get("/api/runs"))[1]["runs"]}
            assert {states[run_id] for run_id in cancelled[user.csrf]} == {"cancelled"}
            assert len(running[user.csrf]) == 1
