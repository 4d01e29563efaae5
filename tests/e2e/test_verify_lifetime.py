"""Attack 7 of issue 12: ``kill -9`` of ``citerun verify`` leaves nothing behind.

The real CLI in a subprocess with the embedded Postgres, killed with SIGKILL while its
workers are busy. Afterwards no process of that verify is left (workers, their parser
children, the Postgres it started), its run is not ``running`` but ``cancelled``, and the
next ``verify`` in the same data directory neither finds a running run nor claims a
leftover task of another run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from citerun.core import db, queue
from citerun.local import embedded, localdb
from citerun.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")}
    env.update(CITERUN_DATA_DIR=str(data_dir), COLUMNS="200")
    return env


def processes_of(verify_pid: int) -> list[int]:
    """Live processes started for this verify: its workers (their worker id names the
    verify's pid in their environment) and anything they started (inherited env)."""
    marker = f"CITERUN_WORKER__ID=local-{verify_pid}-".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def postgres_running(data_dir: Path) -> bool:
    return embedded.EmbeddedPostgres(data_dir / "postgres").is_running()


def _wait(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _query(data_dir: Path, statement: str, *args: object) -> list[dict[str, object]]:
    async def run(url: str) -> list[dict[str, object]]:
        conn = await db.connect(url)
        try:
            return [dict(r) for r in await conn.fetch(statement, *args)]
        finally:
            await conn.close()

    with localdb.database(Settings(data_dir=data_dir)) as url:
        return asyncio.run(run(url))


def test_kill_9_of_verify_leaves_no_process_and_no_running_run(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    log = open(tmp_path / "verify.log", "wb")
    # One task at a time per worker: the run's 18 tasks cannot all be in flight when the
    # verify dies, so the drain cannot finish the run (on a quiet machine the demo takes
    # about 4 s once the workers are up, and with the default concurrency a kill 3 s in
    # could find its last tasks claimed and the run then succeeded during the drain).
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "citerun", "verify", str(EXAMPLES / "thesis.pdf"),
         "--sources", str(EXAMPLES / "sources"), "--out", str(tmp_path / "r.html"),
         "--concurrency", "1"],
        cwd=tmp_path, env=_env(data_dir), stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: len(processes_of(proc.pid)) >= 2 or proc.poll() is not None, 120,
              "the verify's two workers")
        assert proc.poll() is None, (tmp_path / "verify.log").read_text()
        # The workers claim and start parsing. 1 s, not 3: on a quiet machine the whole
        # demo ran in the 3 s and its drain (the run found `succeeded` in a rehearsal).
        time.sleep(1)
        workers = processes_of(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    try:
        # Generous on a loaded machine: a worker killed while importing the pipeline
        # leaves once its imports and the run's cancellation are done.
        _wait(lambda: not processes_of(proc.pid), 90, f"the workers {workers} to exit")
        _wait(lambda: not postgres_running(data_dir), 60, "the embedded Postgres to stop")
    finally:
        for pid in processes_of(proc.pid):
            os.kill(pid, signal.SIGKILL)

    rows = _query(data_dir, "SELECT id, state, error FROM runs")
    assert len(rows) == 1 and rows[0]["state"] == "cancelled", rows
    assert "interrupted" in str(rows[0]["error"]), rows
    open_tasks = _query(data_dir, "SELECT id, kind, state FROM tasks "
                        "WHERE state IN ('queued', 'running')")
    assert open_tasks == [], open_tasks

    # A leftover task of some other run (a poison task of a run that is not a local
    # verify's, e.g. a cluster's in a shared database): the next verify must not touch it.
    other_run = uuid.uuid4()

    async def leave_task(url: str) -> None:
        conn = await db.connect(url)
        try:
            await conn.execute("INSERT INTO runs (id, name, spec, state) "
                               "VALUES ($1, 'other', '{}', 'running')", other_run)
            await queue.enqueue(conn, [queue.NewTask("parse_document", {"digest": "0" * 64},
                                                     run_id=other_run)])
        finally:
            await conn.close()

    with localdb.database(Settings(data_dir=data_dir)) as url:
        asyncio.run(leave_task(url))
    done = subprocess.run(
        [sys.executable, "-P", "-m", "citerun", "verify", str(EXAMPLES / "thesis.pdf"),
         "--sources", str(EXAMPLES / "sources"), "--out", str(tmp_path / "r2.html")],
        cwd=tmp_path, env=_env(data_dir), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    left = _query(data_dir, "SELECT state, attempt FROM tasks WHERE run_id = $1", other_run)
    assert left == [{"state": "queued", "attempt": 0}], left
    assert _query(data_dir, "SELECT name FROM runs WHERE state IN ('pending', 'running')"
                  ) == [{"name": "other"}]
    assert not postgres_running(data_dir)
