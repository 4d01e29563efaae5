"""The web service's upload intake: the caps first, then any work, and never on the loop.

Issue 41 (High): a ``.zip`` thesis sent with a library was unzipped and zipped again (up
to 300 MiB) inside the event loop, before the user's caps were asked; six uploads of a
335 KB zip kept ``/healthz`` silent for 48.5 s. Now:

* **Caps before work.** :meth:`Intake.admit` is entered before the body is read: one
  upload of a user is read at a time (a second one meanwhile is 429), and a user already
  at ``web.max_active_runs`` running runs, or at ``web.max_staged_bytes``, is refused
  (429/413) before a byte of the body is looked at. The admission in the staging
  transaction (:func:`citerun.web.store.admit`) still counts under the per-user lock.
* **Parsed size counts.** A zip thesis (``.zip``, ``.docx``) counts with the size its
  members expand to (as its central directory declares them; the parse stage refuses a
  member that inflates to more than it declares), not its compressed bytes: an upload
  whose expanded size does not fit in what the user's cap leaves is 413, before it is
  unzipped. Its members and expanded size are held to the bundle limits the parse stage
  reads (``CITERUN_LIMITS__BUNDLE__*``, which ``citerun serve`` passes to :class:`Intake`),
  so the web never takes a zip its workers refuse.
* **On disk, then within one memory budget** (issue 48, :mod:`citerun.web.spool`): the
  body is spooled to disk as it arrives, and read back into memory only while the upload
  holds its part of ``web.upload_memory_bytes`` (:attr:`Intake.memory`).
* **Off the loop, bounded.** What remains (a library added to the thesis's bundle) runs
  in a pool of ``WORKERS`` threads, at most ``MAX_WAITING`` uploads waiting for one (more
  is 503, "busy"); a library is appended to a ``.zip`` without inflating its members.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import zipfile
from collections.abc import AsyncIterator

import asyncpg

from citerun.pipeline import intake as file_types
from citerun.pipeline.writer import archive, formats, latex_main
from citerun.pipeline.writer.model import WriterFileError
from citerun.web import spool, store
from citerun.web.units import human_bytes

#: Threads that prepare uploads (a library added to a bundle); the loop never does.
WORKERS = 2
#: Uploads waiting for a thread beyond which the service answers 503.
MAX_WAITING = 16


class IntakeRefused(Exception):
    """An upload refused by the intake; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Intake:
    """One per application: who is uploading, and the threads that do the work."""

    def __init__(self, limits: archive.BundleLimits, memory: spool.MemoryBudget,
                 workers: int = WORKERS, max_waiting: int = MAX_WAITING) -> None:
        self._limits = limits  # the pipeline's, as its parse stage reads a zip
        #: The bytes of uploads held in memory at once, all users together (issue 48).
        self.memory = memory
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="citerun-intake")
        self._slots = asyncio.Semaphore(workers + max_waiting)
        self._uploading: set[str] = set()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    @contextlib.asynccontextmanager
    async def admit(self, pool: asyncpg.Pool, user: str,
                    caps: store.UserCaps) -> AsyncIterator[int]:
        """Enter before reading an upload of ``user``: refused (:class:`IntakeRefused`)
        while another upload of theirs is read, or when they are at a cap; yields the
        bytes their staged cap leaves."""
        if user in self._uploading:
            raise IntakeRefused(429, "another upload of yours is still being read: wait for "
                                "it to finish, then send this one again")
        self._uploading.add(user)
        try:
            usage = await store.usage(pool, user)
            if usage.active_runs >= caps.max_active_runs:
                raise IntakeRefused(429, f"you have {usage.active_runs} active run(s); the "
                                    f"cap is {caps.max_active_runs}: wait for one to finish or "
                                    "cancel one under My runs (/runs)")
            left = caps.max_staged_bytes - usage.staged_bytes
            if left <= 0:
                raise IntakeRefused(413, f"your running runs hold "
                                    f"{human_bytes(usage.staged_bytes)} of staged "
                                    f"files; the cap is {human_bytes(caps.max_staged_bytes)}: "
                                    "wait for a run to finish or cancel one under My runs (/runs)")
            yield left
        finally:
            self._uploading.discard(user)

    async def thesis(self, name: str, data: bytes, libraries: list[tuple[str, bytes]],
                     left: int, cap: int, main: str | None = None) -> bytes:
        """The thesis's bytes as a run stages them (its libraries added, the main file
        the writer named), prepared in a thread; refused when its expanded size does not
        fit in ``left`` bytes of the user's staged cap ``cap``, and a LaTeX zip whose main
        file is not named where two could be (issue 47)."""
        if self._slots.locked():
            raise IntakeRefused(503, "the service is busy reading other uploads: send this "
                                "one again in a minute")
        async with self._slots:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, prepare, name, data, libraries,
                                              left, cap, self._limits, main)


def expanded_size(name: str, data: bytes, limits: archive.BundleLimits) -> int:
    """What the parse stage will read of a thesis: a zip's members as its central
    directory declares them (``.zip``, ``.docx``), else its bytes; a zip of more members
    than ``limits`` allow is refused. Reads the directory only, never a member."""
    if not file_types.is_zip_thesis(name):
        return len(data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as bundle:
            infos = bundle.infolist()
    except archive.UNREADABLE as err:
        raise IntakeRefused(400, f"thesis {name!r} is no readable zip archive ({err})") from None
    if len(infos) > limits.max_members:
        raise IntakeRefused(413, f"thesis {name!r} holds {len(infos):,} files, over the limit "
                            f"of {limits.max_members:,}")
    return sum(max(info.file_size, 0) for info in infos)


def prepare(name: str, data: bytes, libraries: list[tuple[str, bytes]], left: int,
            cap: int, limits: archive.BundleLimits, main: str | None = None) -> bytes:
    """:meth:`Intake.thesis`'s work, in a thread; ``limits`` are the parse stage's. A
    LaTeX zip's main file is looked for (each .tex's head only): one the writer named
    (``main``) must be there and is staged with it; where two could be and none is
    named, the upload is refused with their names."""
    size = expanded_size(name, data, limits)
    limit = limits.max_total_bytes
    if size > limit:
        raise IntakeRefused(413, f"thesis {name!r} expands to {human_bytes(size)}, over the "
                            f"limit of {human_bytes(limit)}")
    if size > left:
        raise IntakeRefused(413, f"thesis {name!r} expands to {human_bytes(size)} when read, "
                            f"more than the {human_bytes(max(left, 0))} your staged files' cap "
                            f"leaves (the cap is {human_bytes(cap)}): wait for a run to finish "
                            "or cancel one under My runs (/runs)")
    named = None
    if file_types.suffix(name) == ".zip":
        try:
            found = file_types.zip_main(data, main)
        except latex_main.AmbiguousMain as err:
            raise IntakeRefused(400, f"thesis {name!r}: {len(err.candidates)} .tex files "
                                f"could be its main file ({latex_main.listed(err.candidates)})"
                                ": type the one to read under 'Main .tex file' and upload "
                                "again") from None
        except WriterFileError as err:
            raise IntakeRefused(400, f"thesis {name!r}: {err}") from None
        named = found if main and main.strip() else None
    if (libraries or named) and file_types.suffix(name) == ".zip":
        return _append(name, data, libraries, named)
    try:
        return file_types.thesis_bytes(name, data, libraries)
    except WriterFileError as err:
        raise IntakeRefused(400, f"thesis {name!r}: {err}") from None


def _append(name: str, data: bytes, libraries: list[tuple[str, bytes]],
            main: str | None = None) -> bytes:
    """The zip ``data`` with the libraries added as ``library/N-name`` members
    (:func:`citerun.pipeline.intake.library_member`, the next free N), and the ``main``
    file's name as the bundle's main-file member, its own members copied as they are
    (never inflated)."""
    out = io.BytesIO(data)
    try:
        with zipfile.ZipFile(out, "a", compression=zipfile.ZIP_DEFLATED) as bundle:
            taken = set(bundle.namelist())
            index = 0
            for library, text in libraries:
                while file_types.library_member(index, library) in taken:
                    index += 1
                member = file_types.library_member(index, library)
                taken.add(member)
                bundle.writestr(member, text)
            if main is not None and formats.MAIN_MEMBER not in taken:
                bundle.writestr(formats.MAIN_MEMBER, main.encode())
    except archive.UNREADABLE as err:
        raise IntakeRefused(400, f"thesis {name!r} is no readable zip archive ({err})") from None
    return out.getvalue()
