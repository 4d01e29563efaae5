"""``citerun serve`` as a test starts it: a real process on a loopback port, its output in a
log file, returned once it says it is listening (or failing the test with its log)."""

from __future__ import annotations

import contextlib
import pathlib
import signal
import subprocess
import time
from collections.abc import Iterator


def start(command: list[str], port: int, database_url: str, env: dict[str, str],
          log: pathlib.Path, timeout_s: float = 60) -> subprocess.Popen[bytes]:
    """``command serve --port PORT --database-url URL``, listening on 127.0.0.1:PORT."""
    with open(log, "wb") as out:
        proc = subprocess.Popen([*command, "serve", "--port", str(port), "--database-url",
                                 database_url], env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    while f"listening on http://127.0.0.1:{port}/" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raise AssertionError(f"citerun serve did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)
    return proc


@contextlib.contextmanager
def running(command: list[str], port: int, database_url: str, env: dict[str, str],
            log: pathlib.Path) -> Iterator[subprocess.Popen[bytes]]:
    """:func:`start`, then on leaving a SIGTERM that must end it with status 0 (its log
    is the failure's message); killed if the test failed before."""
    proc = start(command, port, database_url, env, log)
    try:
        yield proc
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
