"""Issue 27 (low finding): the embedded Postgres restarting under ``citerun verify``.

The real CLI in a subprocess with the embedded database; the test restarts (or stops)
that database while the run is in flight. A restart is waited out: the verify reconnects
(as its workers do) and finishes the run. A database that stays away longer than the
verify waits (``verify_run.FOLLOW_RECONNECT_S``) ends it with one clear line, exit 1, and the
run is cancelled once the database is back (by the next verify). Never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from citerun.core import db
from citerun.local import embedded, localdb
from citerun.cli import verify_run
from citerun.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _start_verify(tmp_path: Path, data_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """One worker serving one task at a time: the demo run lasts long enough to be
    caught in flight."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")}
    env.update(CITERUN_DATA_DIR=str(data_dir), COLUMNS="200")
    stderr = tmp_path / "verify.stderr"
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "citerun", "verify", str(EXAMPLES / "thesis.pdf"),
         "--sources", str(EXAMPLES / "sources"), "--out", str(tmp_path / "r.html"),
         "--workers", "1", "--concurrency", "1"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=open(stderr, "wb"))
    return proc, stderr


async def _fetch(url: str, statement: str, *args: Any) -> list[dict[str, Any]]:
    conn = await db.connect(url)
    try:
        return [dict(r) for r in await conn.fetch(statement, *args)]
    finally:
        await conn.close()


def _run_in_flight(url: str, proc: subprocess.Popen[bytes], stderr: Path) -> uuid.UUID:
    """The verify's run once its worker has done some of it (a document parsed)."""
    asyncio.run(db.migrate(url))  # the verify migrates too; the test's query needs the tables
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, stderr.read_text()
        rows = asyncio.run(_fetch(url, """
            SELECT r.id FROM runs r WHERE r.state = 'running' AND EXISTS (
              SELECT 1 FROM tasks t WHERE t.run_id = r.id AND t.state = 'succeeded')"""))
        if rows:
            return uuid.UUID(str(rows[0]["id"]))
        time.sleep(0.2)
    raise AssertionError(f"no run in flight after 180s:\n{stderr.read_text()}")


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.strip() and " INFO " not in line and " WARNING " not in line]


def test_a_postgres_restart_mid_run_is_waited_out_and_the_run_finishes(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with localdb.database(Settings(data_dir=data_dir)) as url:
        proc, stderr = _start_verify(tmp_path, data_dir)
        try:
            run_id = _run_in_flight(url, proc, stderr)
            # Down for longer than the verify's poll interval, so that it must notice.
            embedded.EmbeddedPostgres(data_dir / "postgres").restart(down_s=3.0)
            code = proc.wait(300)
        finally:
            if proc.poll() is None:
                proc.kill()
        text = stderr.read_text()
        assert "Traceback" not in text, text
        assert code == 0, text
        assert _error_lines(text) == [], text
        # It did lose the database and wait for it (the restart was not missed).
        assert f"following run {run_id} failed" in text and "retrying" in text, text
        state = asyncio.run(_fetch(url, "SELECT state FROM runs WHERE id = $1", run_id))
        assert state == [{"state": "succeeded"}], state


def test_a_database_that_stays_away_ends_the_verify_in_one_line_and_the_run_is_cancelled(
        tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = embedded.EmbeddedPostgres(data_dir / "postgres")
    with localdb.database(Settings(data_dir=data_dir)) as url:
        proc, stderr = _start_verify(tmp_path, data_dir)
        try:
            run_id = _run_in_flight(url, proc, stderr)
            started = time.monotonic()
            server.stop("fast")
            code = proc.wait(verify_run.FOLLOW_RECONNECT_S + 120)
            waited = time.monotonic() - started
        finally:
            if proc.poll() is None:
                proc.kill()
    text = stderr.read_text()
    assert "Traceback" not in text, text
    assert code == 1, text
    lines = _error_lines(text)
    assert len(lines) == 1 and lines[0].startswith("citerun: error:"), lines
    assert str(run_id) in lines[0] and "database" in lines[0], lines
    assert waited >= verify_run.FOLLOW_RECONNECT_S * 0.75, waited  # it did wait (jitter aside)

    async def next_verify(url: str) -> list[dict[str, Any]]:
        pool = await db.create_pool(url, min_size=1, max_size=1)
        try:
            await verify_run.cancel_orphans(pool)  # what the next verify does first
        finally:
            await pool.close()
        return await _fetch(url, "SELECT state, error FROM runs WHERE id = $1", run_id)

    with localdb.database(Settings(data_dir=data_dir)) as url:
        rows = asyncio.run(next_verify(url))
    assert [r["state"] for r in rows] == ["cancelled"], rows
