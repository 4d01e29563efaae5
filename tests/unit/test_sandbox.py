"""The child-process sandbox: real child processes, real rlimits, real signals."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from citerun.worker import sandbox
from citerun.pipeline import document
from citerun.pipeline.settings import LimitSettings, TaskLimits
from tests.support import loop, sandbox_jobs


async def test_result_comes_back_and_the_loop_keeps_running() -> None:
    limits = TaskLimits(cpu_s=20, address_space_mb=1024, wall_s=30)
    started = time.monotonic()
    result, ticks = await loop.ticks_while(sandbox.run(limits, sandbox_jobs.spin, 2.0))
    elapsed = time.monotonic() - started
    assert isinstance(result, int) and result > 0
    # The loop ticked throughout the 2 s of CPU work (at least half of the 50 ms slots).
    assert ticks >= elapsed / 0.05 / 2, (ticks, elapsed)


async def test_cpu_limit_kills_the_child() -> None:
    limits = TaskLimits(cpu_s=1, address_space_mb=1024, wall_s=60)
    started = time.monotonic()
    with pytest.raises(sandbox.DocumentTooComplex, match="CPU time limit of 1 s") as err:
        await sandbox.run(limits, sandbox_jobs.spin, 120.0)
    assert err.value.reason == "document_too_complex"
    assert time.monotonic() - started < 30


async def test_address_space_limit_fails_the_allocation() -> None:
    limits = TaskLimits(cpu_s=20, address_space_mb=512, wall_s=60)
    with pytest.raises(sandbox.DocumentTooComplex, match="address space limit of 512 MiB"):
        await sandbox.run(limits, sandbox_jobs.hog, 2048)


async def test_wall_clock_limit_kills_a_sleeping_child(tmp_path: Path) -> None:
    limits = TaskLimits(cpu_s=20, address_space_mb=1024, wall_s=1.5)
    pid_file = tmp_path / "pid"
    with pytest.raises(sandbox.DocumentTooComplex, match="wall-clock limit of 1.5 s"):
        await sandbox.run(limits, sandbox_jobs.sleep_then_pid, 600.0, str(pid_file))
    _assert_gone(int(pid_file.read_text()))


async def test_cancelling_the_task_kills_the_child(tmp_path: Path) -> None:
    limits = TaskLimits(cpu_s=20, address_space_mb=1024, wall_s=600)
    pid_file = tmp_path / "pid"
    task = asyncio.create_task(sandbox.run(limits, sandbox_jobs.sleep_then_pid, 600.0,
                                           str(pid_file)))
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _assert_gone(int(pid_file.read_text()))


async def test_an_error_in_the_child_is_a_permanent_error_with_its_text() -> None:
    limits = TaskLimits(cpu_s=20, address_space_mb=1024, wall_s=30)
    with pytest.raises(sandbox.SandboxError, match="ValueError: broken on purpose"):
        await sandbox.run(limits, sandbox_jobs.fail, "broken on purpose")


def test_text_caps_name_the_limit() -> None:
    limits = LimitSettings(max_pages=2, max_page_chars=1000, max_total_chars=1500)
    assert document.check_text([(1, "a" * 900)], limits) is None
    assert "3 pages" in (document.check_text([(1, ""), (2, ""), (3, "")], limits) or "")
    assert "page 2 has 1,001 characters" in (
        document.check_text([(1, "a"), (2, "a" * 1001)], limits) or "")
    assert "1,800 characters of text" in (
        document.check_text([(1, "a" * 900), (2, "a" * 900)], limits) or "")


def _assert_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"child {pid} still alive")


def test_a_large_result_comes_back_under_uvloop() -> None:
    # uvloop leaves a watched pipe non-blocking; a result larger than the pipe's buffer
    # then failed with EAGAIN and the task read "exited with status 0 without a result"
    # (every `citerun verify` of the demo lost a document this way).
    import uvloop

    limits = TaskLimits(cpu_s=20, address_space_mb=1024, wall_s=30)

    async def twice() -> list[bytes]:
        return [await sandbox.run(limits, sandbox_jobs.blob, 4 * 1024 * 1024)
                for _ in range(2)]

    results = uvloop.run(twice())
    assert [len(r) for r in results] == [4 * 1024 * 1024] * 2
