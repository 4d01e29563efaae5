"""Attack 7 of issue 12: bad arguments and OS/database errors are one clear line.

The real CLI in a subprocess: a usage error exits 2, any other failure exits 1 with one
``citerun: error:`` line on stderr and no traceback; a run that times out is cancelled.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from citerun import db, localdb
from citerun.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def citerun(*args: str, data_dir: Path, env_extra: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITERUN_")}
    env.update(CITERUN_DATA_DIR=str(data_dir), COLUMNS="200", **(env_extra or {}))
    return subprocess.run([sys.executable, "-P", "-m", "citerun", *args], cwd=data_dir.parent,
                          env=env, capture_output=True, text=True, timeout=timeout)


def assert_one_error_line(done: subprocess.CompletedProcess[str], code: int,
                          *needles: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and " INFO " not in line and " WARNING " not in line]
    assert len(lines) == 1 or code == 2, lines  # argparse prints its usage line too
    for needle in needles:
        assert needle in lines[-1], lines


THESIS = str(EXAMPLES / "thesis.pdf")
SOURCES = str(EXAMPLES / "sources")


@pytest.mark.parametrize("args, needle", [
    (["verify", THESIS, "--sources", SOURCES, "--concurrency", "0"], "--concurrency"),
    (["verify", THESIS, "--sources", SOURCES, "--workers", "0"], "--workers"),
    (["verify", THESIS, "--sources", SOURCES, "--timeout", "0"], "--timeout"),
    (["verify", THESIS, "--sources", SOURCES, "--timeout", "nan"], "--timeout"),
    (["worker", "--concurrency", "0"], "--concurrency"),
])
def test_bad_arguments_are_usage_errors(tmp_path: Path, args: list[str], needle: str) -> None:
    done = citerun(*args, data_dir=tmp_path / "data", timeout=60)
    assert_one_error_line(done, 2, needle)
    assert not (tmp_path / "data" / "postgres").exists()  # refused before any work


def test_invalid_settings_from_the_environment_are_one_line(tmp_path: Path) -> None:
    done = citerun("migrate", data_dir=tmp_path / "data",
                   env_extra={"CITERUN_QUEUE__LEASE_S": "-1"}, timeout=60)
    assert_one_error_line(done, 1, "invalid settings", "lease_s")


def test_database_down_is_one_line(tmp_path: Path) -> None:
    # Nothing listens on port 1 of loopback: the database is down.
    done = citerun("verify", THESIS, "--sources", SOURCES, data_dir=tmp_path / "data",
                   env_extra={"CITERUN_DATABASE_URL": "postgresql://citerun@127.0.0.1:1/citerun"},
                   timeout=120)
    assert_one_error_line(done, 1, "citerun: error:")


def test_out_on_a_full_disk_is_one_line_and_a_timeout_cancels_the_run(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    done = citerun("verify", THESIS, "--sources", SOURCES, "--timeout", "0.5",
                   data_dir=data_dir)
    assert_one_error_line(done, 1, "did not finish within")
    done = citerun("verify", THESIS, "--sources", SOURCES, "--out", "/dev/full",
                   data_dir=data_dir)
    assert_one_error_line(done, 1, "/dev/full", "No space left on device")

    async def states(url: str) -> list[str]:
        conn = await db.connect(url)
        try:
            return [r["state"] for r in await conn.fetch(
                "SELECT state FROM runs ORDER BY created_at")]
        finally:
            await conn.close()

    with localdb.database(Settings(data_dir=data_dir)) as url:
        assert asyncio.run(states(url)) == ["cancelled", "succeeded"]
