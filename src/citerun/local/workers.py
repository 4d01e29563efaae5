"""Worker processes on this machine: ``citerun verify``'s, serving its one run, and
``citerun serve``'s, serving every run of the embedded (or configured) database.

Each is an ordinary ``citerun worker`` process started here with the settings it needs in
its environment. It lives and dies with the process that started it: it asks the kernel for
SIGTERM when that process dies (``PR_SET_PDEATHSIG``, :data:`VERIFY_PID_ENV` names it; see
:func:`citerun.cli.main.cmd_worker`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

#: Set for the local workers: the pid they must die with (see cli.main.cmd_worker).
VERIFY_PID_ENV = "CITERUN_VERIFY_PID"


class LocalWorkers:
    """``n`` worker processes on this machine serving one run (every run: ``run_id``
    None, for ``citerun serve``), logging to ``log_dir``.

    With the embedded database (``url`` None) the workers find it in ``data_dir`` as
    users of their own, so the last process to leave stops it, even when that is a
    worker whose verify was killed.
    """

    def __init__(self, url: str | None, n: int, log_dir: Path, concurrency: int,
                 run_id: uuid.UUID | None, data_dir: Path,
                 extra_env: Mapping[str, str] | None = None) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.logs = [log_dir / f"worker-{i}.log" for i in range(n)]
        # ``extra_env``: settings of this run's workers beside the environment's (citerun verify
        # --fetch-sources turns on CITERUN_OPENACCESS__ENABLED for its own workers).
        env = {k: v for k, v in os.environ.items()
               if k not in ("CITERUN_DATABASE_URL", "CITERUN_WORKER__RUN_ID")} | dict(extra_env or {})
        env.update({"CITERUN_DATA_DIR": str(data_dir),
                    "CITERUN_WORKER__CONCURRENCY": str(concurrency),
                    # Nothing of another run is in flight: a stop need not wait long.
                    "CITERUN_WORKER__DRAIN_TIMEOUT_S": "3",
                    VERIFY_PID_ENV: str(os.getpid())})
        if run_id is not None:
            env["CITERUN_WORKER__RUN_ID"] = str(run_id)
        if url is not None:
            env["CITERUN_DATABASE_URL"] = url
        self.procs = []
        for i, log in enumerate(self.logs):
            with open(log, "wb") as out:
                self.procs.append(subprocess.Popen(
                    # -P: the caller's working directory stays off the workers' sys.path (a
                    # file there named like a module citerun imports would shadow it).
                    [sys.executable, "-P", "-m", "citerun", "--log-level", "WARNING", "worker"],
                    env={**env, "CITERUN_WORKER__ID": f"local-{os.getpid()}-{i}"},
                    stdout=out, stderr=subprocess.STDOUT))

    def dead(self) -> list[int]:
        return [p.returncode for p in self.procs if p.poll() is not None]

    def tails(self, lines: int = 20) -> str:
        return "\n".join(f"--- {log}\n" + "\n".join(
            log.read_text(errors="replace").splitlines()[-lines:]) for log in self.logs)

    def stop(self, timeout: float = 30) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
