"""Uploads on disk as they arrive, and one memory budget for them across all users.

Issue 48 (Medium): an upload was held about four times in memory (the parts as they were
read, their bytes, the thesis as staged, the database driver's buffers), with no bound
across users: six users uploading 110 MB at once took ``citerun serve`` from 177 to 1,206
MiB, past the chart's 1 GiB limit for the web pod. Now:

* **Spooled.** Each file of an upload is written to a temporary file as its chunks arrive
  (:class:`SpooledUpload`: on disk under ``$TMPDIR``, the chart's ``/tmp`` volume, from its
  first byte: a part kept in memory up to some size would let 200 files just under it
  take that much memory per request, across users without a bound), hashed on the way;
  its first :data:`HEAD_BYTES` are kept for the type check. Reading a body costs a chunk
  of memory per request, not the body.
* **One budget.** The files are read back into memory only to be checked as text, made
  the staged thesis and sent to Postgres, and only under :class:`MemoryBudget`
  (``web.upload_memory_bytes`` for the whole process, every user together), which an
  upload holds for :func:`memory_cost` bytes (its files once, its thesis once more if its
  libraries are bundled with it, and the database driver's copies of the piece being sent:
  a document goes to Postgres in pieces, ``runs.PIECE_BYTES`` each). An upload that does not fit
  waits its turn (first come, first served) up to ``web.upload_wait_s``, then is answered
  503 with ``Retry-After``. Waiting is what a student in a deadline rush wants: the file
  is already on the server, a refusal would make them send 110 MB again and race the
  others anew, and the uploads before them take a few seconds each.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import math
import tempfile
import time
from collections.abc import AsyncIterator, Sequence

from citerun.core import pdfmagic, runs

#: Bytes of a file's start kept for its type check (a PDF's magic is within 1,024).
HEAD_BYTES = 4096
#: The driver's copies of the piece being sent to Postgres (its argument buffer, the message
#: it is copied into, the socket's send buffer): a document goes in pieces of
#: ``runs.PIECE_BYTES`` (issue 48; measured before, as one parameter, a 105 MiB bytea
#: raised asyncpg's peak RSS by 315 MiB).
SEND_COPIES = 3
#: What sending one document in pieces holds besides the document.
SEND_COST = SEND_COPIES * runs.PIECE_BYTES


class SpooledUpload:
    """One file of an upload, on disk as it arrives: its name, size, sha256, first and
    last bytes. :meth:`read` gives its bytes (in a thread: a read from disk)."""

    def __init__(self, field: str, filename: str, directory: str | None = None) -> None:
        self.field = field
        self.filename = filename
        self.size = 0
        self.head = b""
        self.tail = b""
        self._sha = hashlib.sha256()
        self._file = tempfile.TemporaryFile(dir=directory, prefix="citerun-upload-")

    def write(self, chunk: bytes) -> None:
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[:HEAD_BYTES - len(self.head)]
        # Its last bytes too: a zip is one by its end of central directory (issue 48).
        self.tail = (self.tail + chunk)[-pdfmagic.ZIP_TAIL:]
        self._sha.update(chunk)
        self._file.write(chunk)
        self.size += len(chunk)

    @property
    def digest(self) -> str:
        return self._sha.hexdigest()

    def read(self) -> bytes:
        """The file's bytes (blocking: call it in a thread)."""
        self._file.seek(0)
        return self._file.read()

    def close(self) -> None:
        self._file.close()


def memory_cost(sizes: Sequence[int], thesis_with_libraries: int = 0) -> int:
    """What an upload of files of ``sizes`` holds in memory while it is staged: each file
    once, its thesis with its libraries once more (``thesis_with_libraries``: bundled into
    one, a zip appended to in a copy), and :data:`SEND_COPIES` of the piece being sent.
    At most twice the upload's bytes and :data:`SEND_COST`."""
    return sum(sizes) + thesis_with_libraries + SEND_COST



class BudgetBusy(Exception):
    """The budget did not free enough for an upload within the wait; ``retry_after_s``
    is a fair guess of when to send it again."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class MemoryBudget:
    """Bytes of uploads the process holds in memory at once, across all users, handed
    out first come, first served (a large upload is not passed by a stream of small ones).
    A request for more than the whole budget is refused at once (the settings keep one
    largest upload within it)."""

    def __init__(self, capacity: int, wait_s: float) -> None:
        self.capacity = capacity
        self.wait_s = wait_s
        self.in_use = 0
        self.peak = 0
        self._queue: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    def _grant(self) -> None:
        while self._queue:
            wanted, future = self._queue[0]
            if future.done():  # gave up waiting
                self._queue.popleft()
                continue
            if self.in_use + wanted > self.capacity:
                return
            self._queue.popleft()
            self.in_use += wanted
            self.peak = max(self.peak, self.in_use)
            future.set_result(None)

    @contextlib.asynccontextmanager
    async def hold(self, nbytes: int) -> AsyncIterator[float]:
        """Hold ``nbytes`` of the budget for the block (yields the seconds waited);
        :class:`BudgetBusy` when they are not free within ``wait_s``."""
        if nbytes > self.capacity:
            raise BudgetBusy(f"the upload needs {nbytes:,} bytes of memory to be staged, more "
                             f"than web.upload_memory_bytes ({self.capacity:,})", 60)
        started = time.monotonic()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((nbytes, future))
        self._grant()
        try:
            await asyncio.wait_for(asyncio.shield(future), self.wait_s)
        except BaseException as err:  # the wait ran out, or the request went away
            if future.done() and not future.cancelled():
                self.in_use -= nbytes  # granted just as the wait ended: give it back
            else:
                future.cancel()
            self._grant()
            if not isinstance(err, TimeoutError):
                raise
            ahead = sum(n for n, f in self._queue if not f.done())
            raise BudgetBusy("the service is staging other uploads: send this one again "
                             "in a minute", max(5, min(120, math.ceil(
                                 self.wait_s * (ahead + nbytes) / self.capacity)))) from None
        try:
            yield time.monotonic() - started
        finally:
            self.in_use -= nbytes
            self._grant()
