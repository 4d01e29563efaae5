"""The embedded server's commands run as its own user with its own group and no other.

Before the fix a command ran with ``user=`` alone: the child kept root's groups, so the
group bits of a folder owned by root decided what it could reach, and ``initdb`` under a
``/root`` of mode 0701 (others may pass, root's group may not) failed with "Permission
denied" although :func:`citerun.local.embedded.unreachable` had found the way open."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

from citerun.local import embedded


@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as its own user only under root")
def test_a_server_command_has_the_server_users_groups_only(tmp_path: pathlib.Path) -> None:
    server = embedded.EmbeddedPostgres(tmp_path / "data")
    kwargs = server._as_server_user()  # noqa: SLF001 - what every server command is run with
    shown = subprocess.run(["id", "-G"], capture_output=True, text=True, check=True,
                           **kwargs).stdout.split()  # type: ignore[call-overload]
    expected = subprocess.run(["id", "-g", str(kwargs["user"])], capture_output=True, text=True,
                              check=True).stdout.split()
    assert shown == expected and "0" not in shown
    # A folder only root's group may not pass, others may (like /root at 0701): reachable.
    gate = tmp_path / "gate"
    inner = gate / "inner"
    inner.mkdir(parents=True)
    gate.chmod(0o701)
    tmp_path.chmod(0o755)
    assert subprocess.run(["ls", str(inner)], capture_output=True, **kwargs).returncode == 0  # type: ignore[call-overload]
    assert embedded.unreachable(inner, str(kwargs["user"])) is None
