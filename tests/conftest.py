"""Shared fixtures: one embedded Postgres per test session, a fresh database per test.

Each test database is cloned from a template that already holds every migration, so a
test starts in milliseconds from the real schema.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import asyncpg
import pytest

from citerun.core import db
from citerun.local import embedded

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = "citerun_template"

# `tests` is importable in every child process the tests start (e.g. `worker --tasks
# tests.support.tasks:registry`): the repository root goes on their PYTHONPATH. The
# package itself lives under src/, so nothing at the root shadows a module.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in dict.fromkeys((str(REPO), *os.environ.get("PYTHONPATH", "").split(os.pathsep))) if p)
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def citerun_command() -> list[str]:
    """How tests start citerun: its console script, beside this interpreter."""
    script = Path(sys.executable).with_name("citerun")
    if not script.is_file():
        raise RuntimeError(f"the citerun console script is not installed beside {sys.executable}")
    return [str(script)]


def pytest_configure(config: pytest.Config) -> None:
    """As root, the embedded server runs as another user that must pass every directory
    above its data dir, and citerun no longer opens them (issue 27). pytest keeps its
    tmp root 0700 (and resets it), so as root this session's tmp dirs live under a root
    of its own, made passable (0711, no listing) by the ``tmp_path`` fixture below."""
    if os.geteuid() == 0 and not config.option.basetemp:
        root = Path(tempfile.mkdtemp(prefix="citerun-pytest-"))
        root.chmod(0o711)
        config.option.basetemp = str(root / "tmp")


def passable(path: Path, config: pytest.Config) -> Path:
    """As root, make ``path`` passable (0711, no listing) for the embedded server's user,
    up to this session's own root (only directories this session made; never pytest's
    shared root)."""
    if os.geteuid() == 0 and config.option.basetemp:
        root = Path(config.option.basetemp).parent
        if root.name.startswith("citerun-pytest-") and path.is_relative_to(root):
            step = path
            while step != root:
                step.chmod(0o711)
                step = step.parent
    return path


@pytest.fixture
def tmp_path(tmp_path: Path, pytestconfig: pytest.Config) -> Path:
    """pytest's ``tmp_path``, passable as root (see ``passable``)."""
    return passable(tmp_path, pytestconfig)


@pytest.fixture(scope="session")
def server_tmp(tmp_path_factory: pytest.TempPathFactory,
               pytestconfig: pytest.Config) -> Callable[[str], Path]:
    """``tmp_path_factory.mktemp`` for a session-scoped directory a citerun run keeps its
    data under: passable as root (see ``passable``)."""
    return lambda name: passable(tmp_path_factory.mktemp(name), pytestconfig)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[embedded.EmbeddedPostgres]:
    # Not under pytest's tmp root: pytest resets that to mode 0700 (another pytest run
    # on the machine does too), which would lock out the unprivileged postgres user.
    data_dir = Path(tempfile.mkdtemp(prefix="citerun-test-pg-"))
    server = embedded.EmbeddedPostgres(data_dir)
    server.start()

    async def make_template() -> None:
        conn = await asyncpg.connect(server.url())
        try:
            await conn.execute("CREATE DATABASE citerun_template")
        finally:
            await conn.close()
        await db.migrate(server.url(TEMPLATE))

    asyncio.run(make_template())
    yield server
    server.stop("immediate")
    shutil.rmtree(data_dir, ignore_errors=True)


def _admin(server: embedded.EmbeddedPostgres, statement: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(server.url())
        try:
            await conn.execute(statement)
        finally:
            await conn.close()
    asyncio.run(run())


def _database(server: embedded.EmbeddedPostgres, template: str | None) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    _admin(server, f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    yield server.url(name)
    _admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def fresh_database_url(pg_server: embedded.EmbeddedPostgres) -> Iterator[str]:
    """An empty database (no migrations)."""
    yield from _database(pg_server, None)


@pytest.fixture
def database_url(pg_server: embedded.EmbeddedPostgres) -> Iterator[str]:
    """A database with every migration applied (cloned from the template)."""
    yield from _database(pg_server, TEMPLATE)


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    p = await db.create_pool(database_url, min_size=1, max_size=10)
    yield p
    await p.close()


FAST_QUEUE_ENV = {
    "CITERUN_QUEUE__LEASE_S": "2",
    "CITERUN_QUEUE__HEARTBEAT_S": "0.5",
    "CITERUN_QUEUE__BACKOFF_BASE_S": "0.1",
    "CITERUN_QUEUE__BACKOFF_CAP_S": "0.5",
    "CITERUN_WORKER__SWEEP_S": "0.5",
    "CITERUN_WORKER__POLL_S": "2",
    "CITERUN_WORKER__DRAIN_TIMEOUT_S": "3",
    "CITERUN_WORKER__LISTEN_RECONNECT_S": "0.2",
}


class WorkerProcess:
    """A real ``citerun worker`` process serving the test task registry."""

    def __init__(self, url: str, log_dir: Path, name: str, env: dict[str, str] | None = None,
                 tasks: str = "tests.support.tasks:registry") -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        full_env = {**os.environ, **FAST_QUEUE_ENV, "CITERUN_DATABASE_URL": url,
                    "CITERUN_WORKER__ID": name, **(env or {})}
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [*citerun_command(), "--log-level", "INFO", "worker", "--tasks", tasks],
            cwd=REPO, env=full_env, stdout=self._log, stderr=subprocess.STDOUT)

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


@pytest.fixture
def spawn_worker(database_url: str, tmp_path: Path) -> Iterator[object]:
    """Start worker processes against the test database; all are killed at the end."""
    started: list[WorkerProcess] = []

    def spawn(name: str | None = None, env: dict[str, str] | None = None,
              url: str | None = None,
              tasks: str = "tests.support.tasks:registry") -> WorkerProcess:
        w = WorkerProcess(url or database_url, tmp_path, name or f"w{len(started)}", env,
                          tasks=tasks)
        started.append(w)
        return w

    yield spawn
    for w in started:
        w.stop()
