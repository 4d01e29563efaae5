"""What several benches share: where the repository and the evaluation data lie, the
load average they report, an embedded Postgres that is always stopped, per-class F1."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import tempfile
import typing
from collections.abc import Iterator


if typing.TYPE_CHECKING:
    from citerun.local import embedded

from evalsets import REPO, evaldata  # noqa: F401 - the benches' names for them
from evalsets.metrics import f1_per_class, macro_f1  # noqa: F401
from evalsets.scifact import gold_label  # noqa: F401


def load_average() -> str:
    """The 1/5/15 min load average, as the benches print it next to their figures."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def was_busy(*loads: str) -> bool:
    """Whether a 1-minute load of ``load_average()`` readings exceeded 3/4 of the cores:
    the run shared the machine, and its figures say so."""
    return max(float(load.split(" / ")[0]) for load in loads) > 0.75 * (os.cpu_count() or 1)


def workdir(prefix: str) -> pathlib.Path:
    """A fresh temporary directory for a bench's server and logs, passable (0711, no
    listing) so the embedded server's own user reaches its data dir inside when the
    bench runs as root: citerun opens no directory it did not make (issue 27), the
    bench made this one."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    tmp.chmod(0o711)
    return tmp


@contextlib.contextmanager
def postgres(prefix: str, *, stop: str = "fast", keep: bool = False, keep_on_error: bool = False
             ) -> Iterator[tuple[pathlib.Path, embedded.EmbeddedPostgres]]:
    """A started embedded Postgres in a fresh temporary directory (yielded too: worker
    logs go beside it), stopped on the way out, also on an error or Ctrl-C; the directory
    is removed unless ``keep``, or ``keep_on_error`` and an exception left the block."""
    from citerun.local import embedded  # noqa: PLC0415 - the F1 helpers run where no server can

    tmp = workdir(prefix)
    server = embedded.EmbeddedPostgres(tmp / "pg")
    failed = False
    try:
        server.start()
        yield tmp, server
    except Exception:
        failed = True
        raise
    finally:
        server.stop(stop)
        if not (keep or (keep_on_error and failed)):
            shutil.rmtree(tmp, ignore_errors=True)
