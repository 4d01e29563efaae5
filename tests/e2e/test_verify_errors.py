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

from citerun.core import db
from citerun.local import localdb
from citerun.core.settings import Settings

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


def test_out_that_cannot_be_written_is_one_line_and_a_timeout_cancels_the_run(
        tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    done = citerun("verify", THESIS, "--sources", SOURCES, "--timeout", "0.5",
                   data_dir=data_dir)
    assert_one_error_line(done, 1, "did not finish within")
    # A directory where the report would go: the write fails once the run has succeeded
    # (a symlink to /dev/full was the full disk before issue 48; --out refuses links now,
    # and a full disk fails the same write with the same one line).
    taken = tmp_path / "taken.html"
    taken.mkdir()
    done = citerun("verify", THESIS, "--sources", SOURCES, "--out", str(taken),
                   data_dir=data_dir)
    assert_one_error_line(done, 1, "taken.html", "Is a directory")
    assert list(tmp_path.glob(".taken.html.*")) == []  # no half-written report left

    async def states(url: str) -> list[str]:
        conn = await db.connect(url)
        try:
            return [r["state"] for r in await conn.fetch(
                "SELECT state FROM runs ORDER BY created_at")]
        finally:
            await conn.close()

    with localdb.database(Settings(data_dir=data_dir)) as url:
        assert asyncio.run(states(url)) == ["cancelled", "succeeded"]


# Issue 27: --out never overwrites an input, and its suffix sets the format.

@pytest.mark.parametrize("case", ["the thesis", "the json beside names a source", "a .pdf",
                                  "no report suffix"])
def test_verify_out_that_would_overwrite_an_input_or_has_no_report_suffix_is_refused(
        tmp_path: Path, case: str) -> None:
    thesis = tmp_path / "mythesis.pdf"
    thesis.write_bytes((EXAMPLES / "thesis.pdf").read_bytes())
    sources = tmp_path / "sources"
    sources.mkdir()
    source = sources / "notes.json"  # named directly, any file is a source
    source.write_bytes(b"not a pdf")
    out, needle = {
        "the thesis": (thesis, "mythesis.pdf"),
        "the json beside names a source": (sources / "notes.html", "notes.json"),
        "a .pdf": (tmp_path / "report.pdf", ".pdf"),
        "no report suffix": (tmp_path / "report.txt", ".html, .htm or .json"),
    }[case]
    before = {p: p.read_bytes() for p in (thesis, source)}
    done = citerun("verify", str(thesis), "--sources", SOURCES, str(source), "--out", str(out),
                   data_dir=tmp_path / "data", timeout=120)
    assert_one_error_line(done, 2, "--out", needle)
    assert {p: p.read_bytes() for p in before} == before
    assert not (tmp_path / "data" / "postgres").exists()  # refused before any work


def test_report_out_follows_the_same_suffix_rule(tmp_path: Path) -> None:
    env = {"CITERUN_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
           "KUBECONFIG": str(tmp_path / "no-kubeconfig")}
    done = citerun("report", "some-run", "--out", str(tmp_path / "r.txt"),
                   data_dir=tmp_path / "data", env_extra=env, timeout=60)
    assert_one_error_line(done, 2, "--out", ".html, .htm or .json")
    done = citerun("report", "some-run", "--format", "html", "--out", str(tmp_path / "r.json"),
                   data_dir=tmp_path / "data", env_extra=env, timeout=60)
    assert_one_error_line(done, 2, "--format html")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's server runs as another user")
def test_verify_as_root_changes_no_permission_outside_its_data_dir(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    locked.chmod(0o700)
    data_dir = locked / "data"
    above = [locked, *locked.parents]
    modes = {p: p.stat().st_mode for p in above}
    done = citerun("verify", THESIS, "--sources", SOURCES, "--timeout", "20",
                   data_dir=data_dir, timeout=300)
    assert {p: p.stat().st_mode for p in above} == modes
    assert_one_error_line(done, 1, "cannot pass", "chmod o+x")


# Issue 27 (low finding): --key follows the spec's rule (citerun.core.citekeys): keys of two
# files that fold to one key, or a key that folds to nothing, are a usage error before
# any work, not a failed run after the extraction's retries.

@pytest.mark.parametrize("keys, needles", [
    (["Wei-2018=wei2018.pdf", "wei2018=okafor2020.pdf"],
     ["'Wei-2018'", "'wei2018'", "wei2018.pdf", "okafor2020.pdf"]),
    (["12=wei2018.pdf", "--=okafor2020.pdf"], ["'--'", "okafor2020.pdf", "no letter or digit"]),
])
def test_verify_keys_that_fold_to_one_or_no_key_are_usage_errors(
        tmp_path: Path, keys: list[str], needles: list[str]) -> None:
    args = [f"--key={key}" for key in keys]  # "--key --=x" would read "--=x" as an option
    done = citerun("verify", THESIS, "--sources", SOURCES, *args, data_dir=tmp_path / "data",
                   timeout=120)
    assert_one_error_line(done, 2, "--key", *needles)
    assert not (tmp_path / "data" / "postgres").exists()  # refused before any work
