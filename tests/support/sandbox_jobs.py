"""Module-level functions for the sandbox tests (a child process imports them by name)."""

from __future__ import annotations

import os
import time


def spin(seconds: float) -> int:
    """Burn CPU for ``seconds`` of wall-clock time (or until killed)."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def hog(megabytes: int) -> int:
    """Allocate ``megabytes`` MiB and touch it."""
    block = bytearray(megabytes * 1024 * 1024)
    return len(block)


def sleep_then_pid(seconds: float, pid_file: str) -> int:
    with open(pid_file, "w") as out:
        out.write(str(os.getpid()))
    time.sleep(seconds)
    return os.getpid()


def fail(message: str) -> None:
    raise ValueError(message)


def blob(size: int) -> bytes:
    """A result of ``size`` bytes: larger than a pipe's buffer, it arrives in pieces."""
    return bytes(range(256)) * (size // 256)
