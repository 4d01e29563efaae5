"""The processes and connections of the queue benches: workers started and always
stopped by pid, each connected under an application_name the bench can wait for."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any

import asyncpg

from bench.common import REPO
from citerun.local import embedded


@dataclasses.dataclass
class Worker:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path


class Processes:
    """Every worker process this run started; :meth:`stop_all` ends them by pid."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: list[Worker] = []

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> Worker:
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, **env}, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        worker = Worker(name, proc, log)
        self.running.append(worker)
        return worker

    def check(self) -> None:
        """Fail loudly if a worker died."""
        for w in self.running:
            if w.proc.poll() is not None:
                raise RuntimeError(f"worker {w.name} exited with {w.proc.returncode}:\n"
                                   + tail(w.log))

    def stop_all(self, grace_s: float = 20.0) -> None:
        for w in self.running:
            if w.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for w in self.running:
            try:
                w.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
        self.running.clear()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def with_application_name(url: str, name: str) -> str:
    """``url`` with ``application_name=bench-NAME`` in its query, whatever the query holds
    already (an embedded server's URL carries its socket directory and port there): asyncpg
    passes unknown query parameters on as server settings, libpq reads it itself."""
    parts = urllib.parse.urlsplit(url)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
             if k != "application_name"]
    query.append(("application_name", f"bench-{name}"))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


async def admin(server: embedded.EmbeddedPostgres, statement: str) -> Any:
    conn = await asyncpg.connect(server.url("postgres"))
    try:
        return await conn.fetch(statement)
    finally:
        await conn.close()


async def wait_connected(server: embedded.EmbeddedPostgres, workers: list[Worker],
                         procs: Processes, timeout_s: float = 60.0) -> None:
    """Wait until every worker has a backend (its application_name) on the server."""
    names = {f"bench-{w.name}" for w in workers}
    conn = await asyncpg.connect(server.url("postgres"))
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            procs.check()
            seen = {r["application_name"] for r in await conn.fetch(
                "SELECT DISTINCT application_name FROM pg_stat_activity "
                "WHERE application_name = ANY($1::text[])", list(names))}
            if seen == names:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"workers never connected: {sorted(names - seen)}")
            await asyncio.sleep(0.1)
    finally:
        await conn.close()


async def stop_workers(procs: Processes) -> None:
    await asyncio.to_thread(procs.stop_all)

