"""A streaming replica of an embedded Postgres, promoted in a switchover (issue 27).

The embedded server listens on its Unix socket only; the replica is a base backup of
it (``pg_basebackup -R``: it starts as a hot standby that streams the primary's WAL) in
its own data directory on its own port. A switchover stops the primary with a fast
shutdown (which sends every WAL record to the connected standby before it ends) and
promotes the standby. Clients name both servers in one URL with
``target_session_attrs=read-write``, so they find whichever is the primary: the URL
"moves" without anyone editing it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

from citerun.local import embedded
from citerun.local.embedded import pgbin

_REPLICATION_HBA = "local replication all scram-sha-256\n"


def _bin(name: str) -> str:
    return str(Path(getattr(pgbin, "POSTGRES_BIN_PATH")) / name)


def standby_of(primary: embedded.EmbeddedPostgres, data_dir: Path) -> embedded.EmbeddedPostgres:
    """Base-backup ``primary`` into ``data_dir`` and start it there as a streaming standby."""
    run_as = primary._run_as
    as_server = primary._as_server_user()  # its user, its group and no other (not root's)
    # Replication connections need their own pg_hba line; the primary reloads it.
    hba = primary.pgdata / "pg_hba.conf"
    original = hba.read_text()
    if _REPLICATION_HBA not in original:
        hba.write_text(original + _REPLICATION_HBA)
        subprocess.run([_bin("pg_ctl"), "-D", str(primary.pgdata), "reload"], check=True,
                       capture_output=True, timeout=60, **as_server)  # type: ignore[call-overload]
    data_dir.mkdir(parents=True, exist_ok=True)
    for secret in primary.data_dir.glob("*.password"):
        shutil.copy2(secret, data_dir / secret.name)
    if run_as is not None:
        shutil.chown(data_dir, run_as)
        for path in data_dir.iterdir():
            shutil.chown(path, run_as)
    env = {**os.environ, "PGPASSWORD": primary._password(embedded.SUPERUSER)}
    subprocess.run([_bin("pg_basebackup"), "-h", str(primary.socket_dir), "-p", str(primary.port),
                    "-U", embedded.SUPERUSER, "-D", str(data_dir / "pgdata"), "-R",
                    "-X", "stream", "-c", "fast"],
                   check=True, capture_output=True, env=env, timeout=120, **as_server)  # type: ignore[call-overload]
    # The standby's own access rules are the embedded server's (socket, passwords).
    (data_dir / "pgdata" / "pg_hba.conf").write_text(original)
    standby = embedded.EmbeddedPostgres(data_dir)
    standby.start()
    return standby


def promote(standby: embedded.EmbeddedPostgres) -> None:
    """End recovery: the standby becomes a primary (waits until it accepts writes)."""
    subprocess.run([_bin("pg_ctl"), "-D", str(standby.pgdata), "-w", "-t", "60", "promote"],
                   check=True, capture_output=True, timeout=90,
                   **standby._as_server_user())  # type: ignore[call-overload]


def either_url(*servers: embedded.EmbeddedPostgres, database: str = "postgres") -> str:
    """One URL naming every server; a client connects to whichever accepts writes."""
    first = servers[0]
    password = quote(first._password(embedded.SUPERUSER), safe="")
    hosts = ",".join(quote(str(s.socket_dir), safe="") for s in servers)
    ports = ",".join(str(s.port) for s in servers)
    return (f"postgresql://{embedded.SUPERUSER}:{password}@/{database}?host={hosts}"
            f"&port={ports}&target_session_attrs=read-write")
