"""Bounded work: parsing and claim extraction run in a child process under hard limits.

A hostile document (a 1.4 KB PDF with 120 KB of ``"Aa, "``, a 51 KB PDF with one 50 MB
text operator) must cost a worker seconds, not hours or an OOM kill. So the CPU-bound
stages do not run in the worker's process at all:

- Each call forks a fresh child from a ``forkserver`` that has the parser imported
  (a fork costs milliseconds; the server is single-threaded, so forking it is safe).
- The child sets ``RLIMIT_CPU`` (the kernel sends SIGXCPU on excess) and ``RLIMIT_AS``
  (an allocation beyond it fails: MemoryError, not the pod's OOM killer) and asks for
  SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so it cannot outlive the worker.
- The worker waits on the child's pipe and process sentinel from its event loop (no
  thread is held, the GIL is free): heartbeats keep beating while the child computes,
  and the worker's other tasks go on. After ``wall_s`` it kills the child.
- A child over a limit fails the task permanently with :class:`DocumentTooComplex`
  (reason ``document_too_complex``, the limit named), so the task is not retried on
  every worker in turn. A cancelled task (lease lost, drain) kills its child.

Caps on pages and characters (:class:`citerun.pipeline.settings.LimitSettings`)
are checked in the child as soon as the numbers are known, before the expensive stages.
Mapping the citations to the sources runs in a child too, under the ``match`` limits,
after the caps on reference entries and citations (:class:`citations.MatchConfig`) are
checked here (issue 27: the mapping once ran on the worker's loop for minutes).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import pickle
import re
import resource
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from citerun.worker import registry
from citerun.pipeline import citations, pdf
from citerun.pipeline.citations import references
from citerun.pipeline.writer import archive, formats
from citerun.pipeline.writer.model import Skipped, WriterFileError, WrittenCitation, WrittenThesis
from citerun.pipeline.settings import LimitSettings, TaskLimits

T = TypeVar("T")

REASON = "document_too_complex"

_PR_SET_PDEATHSIG = 1
_ALLOCATION_FAILED = re.compile(r"\b(?:m|re|c)alloc\b.{0,40}\bfailed|out of memory",
                                re.IGNORECASE)
_context: Any = None


class DocumentTooComplex(registry.PermanentError):
    """The document needs more than a task may spend on it.

    ``transient``: the limit met may depend on the machine, not the document (the wall
    clock on a busy node, a kill from outside such as the pod's OOM killer): the failure
    belongs to the run that met it, never to the document (issue 27).
    """

    reason = REASON

    def __init__(self, limit: str, *, transient: bool = False) -> None:
        self.limit = limit
        self.transient = transient
        super().__init__(f"{REASON}: {limit}")


class SandboxError(registry.PermanentError):
    """The sandboxed function raised; the message carries its type and text."""


def _mp_context() -> Any:
    global _context
    if _context is None:
        ctx = multiprocessing.get_context("forkserver")
        # Not '__main__': the worker's main module is the CLI. Importing this module
        # imports the parser and the citation extractor, so a fork starts warm.
        ctx.set_forkserver_preload([__name__])
        _context = ctx
    return _context


def _child(conn: multiprocessing.connection.Connection, limits: TaskLimits,
           fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    cpu = limits.cpu_s
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    space = limits.address_space_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (space, space))
    try:
        message: tuple[str, Any] = ("ok", fn(*args))
    except MemoryError:
        message = ("memory", None)
    except Exception as err:  # noqa: BLE001 - any error goes back to the worker
        message = ("error", "".join(traceback.format_exception_only(type(err), err)).strip())
    try:
        conn.send(message)
    except MemoryError:
        conn.send(("memory", None))
    except pickle.PicklingError as err:
        conn.send(("error", f"the result cannot be sent back: {err}"))
    conn.close()


def _describe_death(exitcode: int | None, limits: TaskLimits,
                    elapsed_s: float) -> DocumentTooComplex:
    if exitcode is not None and exitcode < 0:
        sig = signal.Signals(-exitcode)
        # SIGXCPU at the soft CPU limit; SIGKILL at the hard one (2 s later) if it was caught.
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and elapsed_s >= limits.cpu_s):
            return DocumentTooComplex(f"the CPU time limit of {limits.cpu_s} s was exceeded")
        # Killed from outside (the OOM killer of the pod's cgroup): not the document's doing.
        return DocumentTooComplex(
            f"the parser process was killed by {sig.name} (limits: "
            f"{limits.address_space_mb} MiB address space, {limits.cpu_s} s CPU)",
            transient=True)
    return DocumentTooComplex(
        f"the parser process exited with status {exitcode} without a result (limits: "
        f"{limits.address_space_mb} MiB address space, {limits.cpu_s} s CPU)")


async def _readable(fds: list[int], timeout: float) -> set[int]:
    """Wait until one of ``fds`` is readable or ``timeout`` passes, on the event loop."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    found: set[int] = set()

    def on_ready(fd: int) -> None:
        found.add(fd)
        if not ready.done():
            ready.set_result(None)

    for fd in fds:
        loop.add_reader(fd, on_ready, fd)
    try:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(ready, timeout)
    finally:
        for fd in fds:
            loop.remove_reader(fd)
    return found


_slots: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}


def _slot(size: int) -> asyncio.Semaphore:
    """The event loop's semaphore of ``size`` children (one per loop: tests run several)."""
    loop = asyncio.get_running_loop()
    entry = _slots.get(id(loop))
    if entry is None or entry[0] is not loop:
        entry = _slots[id(loop)] = (loop, asyncio.Semaphore(size))
    return entry[1]


async def run(limits: TaskLimits, fn: Callable[..., T], *args: Any, slots: int = 2) -> T:
    """``fn(*args)`` in a child process under ``limits``; raise on excess.

    ``fn`` and its arguments must be picklable (a module-level function). At most
    ``slots`` children run at once per event loop (the size of the first call's wins).
    Raises :class:`DocumentTooComplex` when a limit is exceeded and
    :class:`SandboxError` when ``fn`` raised.
    """
    async with _slot(slots):
        return await _run(limits, fn, *args)


async def _run(limits: TaskLimits, fn: Callable[..., T], *args: Any) -> T:
    ctx = _mp_context()
    receiver, sender = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(sender, limits, fn, args), daemon=True)
    # Starting sends the pickled arguments (up to the document's size) down a pipe:
    # off the event loop, so a 100 MB PDF does not pause the heartbeats.
    starting = asyncio.ensure_future(asyncio.to_thread(proc.start))
    try:
        await asyncio.shield(starting)
        sender.close()
        started = time.monotonic()
        ready = await _readable([receiver.fileno(), proc.sentinel], limits.wall_s)
        message: tuple[str, Any] | None = None
        if receiver.fileno() in ready:
            # An event loop may leave the pipe non-blocking once it has watched it (uvloop
            # does): a result larger than the pipe's buffer would then end in EAGAIN.
            os.set_blocking(receiver.fileno(), True)
            with contextlib.suppress(EOFError, OSError):
                message = await asyncio.to_thread(receiver.recv)
        if message is None and not ready:
            raise DocumentTooComplex(
                f"the wall-clock limit of {limits.wall_s:g} s was exceeded", transient=True)
        if message is None:
            await asyncio.to_thread(proc.join, 5)
            raise _describe_death(proc.exitcode, limits, time.monotonic() - started)
    finally:
        # Also on cancellation (lease lost, drain): a started child never outlives its task.
        if not starting.done():
            with contextlib.suppress(BaseException):
                await starting
        if proc.pid is not None and proc.exitcode is None:
            proc.kill()
            await asyncio.to_thread(proc.join, 5)
        sender.close()
        receiver.close()
        with contextlib.suppress(ValueError):
            proc.close()
    status, value = message
    if status == "memory":
        raise DocumentTooComplex(
            f"the address space limit of {limits.address_space_mb} MiB was exceeded")
    if status == "error":
        raise SandboxError(str(value))
    result: T = value
    return result


# -- the sandboxed jobs -------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Parsed:
    document: pdf.ParsedDocument
    chunks: tuple[pdf.Chunk, ...]
    # A thesis from the writer's files: what they state (formats.dumps), else None.
    written: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class Rejected:
    """A document the parser refused (:class:`pdf.DocumentError`) or one over a cap."""

    reason: str
    message: str


def check_pages(pages: list[tuple[int, str]] | tuple[pdf.Page, ...],
                limits: LimitSettings) -> str | None:
    """Which text cap the pages exceed (a message), or None."""
    numbered = [(p.number, p.text) if isinstance(p, pdf.Page) else p for p in pages]
    if len(numbered) > limits.max_pages:
        return (f"{len(numbered):,} pages, over the limit of {limits.max_pages:,} pages")
    total = 0
    for number, text in numbered:
        if len(text) > limits.max_page_chars:
            return (f"page {number} has {len(text):,} characters of text, over the limit of "
                    f"{limits.max_page_chars:,} characters per page")
        total += len(text)
    if total > limits.max_total_chars:
        return (f"{total:,} characters of text, over the limit of "
                f"{limits.max_total_chars:,} characters per document")
    return None


def parse_job(data: bytes, max_bytes: int, chunk_chars: int, overlap_chars: int,
              limits: LimitSettings) -> Parsed | Rejected:
    """Parse and chunk a PDF, or read a writer's file (runs in the child)."""
    if formats.is_writer_file(data):
        return written_job(data, max_bytes, chunk_chars, overlap_chars, limits)
    return pdf_job(data, max_bytes, chunk_chars, overlap_chars, limits)


def pdf_job(data: bytes, max_bytes: int, chunk_chars: int, overlap_chars: int,
            limits: LimitSettings) -> Parsed | Rejected:
    """Parse and chunk a PDF (runs in the child)."""
    import pymupdf

    with contextlib.suppress(Exception):
        with pymupdf.open(stream=data, filetype="pdf") as doc:  # type: ignore[no-untyped-call]
            if doc.page_count > limits.max_pages:
                return Rejected(REASON, f"{REASON}: {doc.page_count:,} pages, over the limit "
                                f"of {limits.max_pages:,} pages")
    try:
        parsed = pdf.parse_pdf(data, max_bytes=max_bytes)
    except pdf.DocumentError as err:
        if _ALLOCATION_FAILED.search(str(err)):  # MuPDF reports a failed malloc as an error
            return Rejected(REASON, f"{REASON}: the address space limit of "
                            f"{limits.parse.address_space_mb} MiB was exceeded ({err})")
        return Rejected(err.reason, str(err))
    over = check_pages(parsed.pages, limits)
    if over is not None:
        return Rejected(REASON, f"{REASON}: {over}")
    chunks = pdf.chunk_pages(without_reference_list(parsed.pages), target_chars=chunk_chars,
                             overlap_chars=overlap_chars)
    return Parsed(parsed, tuple(chunks))


def without_reference_list(pages: tuple[pdf.Page, ...]) -> list[pdf.Page]:
    """The pages without the document's own reference list (issue 40): passages are
    retrieved from the chunks, and a bibliography line is never evidence for a claim.
    The list is found as in a thesis (:func:`references.find_reference_section`: its
    heading, ended by an appendix); a document without one is kept whole."""
    body, reference_text, _ = references.find_reference_section(
        [(page.number, page.text) for page in pages])
    if not reference_text:
        return list(pages)
    by_number = {page.number: page for page in pages}
    return [dataclasses.replace(by_number[number], text=text) for number, text in body]


def written_job(data: bytes, max_bytes: int, chunk_chars: int, overlap_chars: int,
                limits: LimitSettings) -> Parsed | Rejected:
    """Read a thesis from the writer's files (a .docx, a LaTeX bundle) (runs in the child).

    Its text has no printed pages, so only the document's total is capped, not a page's.
    """
    if len(data) > max_bytes:
        return Rejected("too_large", f"the document is {len(data):,} bytes, over the limit "
                        f"of {max_bytes:,} bytes")
    try:
        files = archive.read_bundle(data, limits.bundle)
        pdf_name = formats.pdf_with_library(files)
        if pdf_name is not None:  # a PDF thesis with its library (--bib)
            library, skipped = formats.read_library(files, limits.library)
            outcome = pdf_job(files[pdf_name], max_bytes, chunk_chars, overlap_chars, limits)
            if isinstance(outcome, Rejected):
                return outcome
            return dataclasses.replace(outcome, written=formats.dumps(WrittenThesis(
                format="pdf", pages=(), citations=(), library=library, skipped=skipped)))
        thesis = formats.read_thesis(data, limits.bundle, limits.library)
    except WriterFileError as err:
        return Rejected("corrupt", f"the writer's file cannot be read: {err}")
    total = sum(len(text) for _, text in thesis.pages)
    if total > limits.max_total_chars:
        return Rejected(REASON, f"{REASON}: {total:,} characters of text, over the limit of "
                        f"{limits.max_total_chars:,} characters per document")
    thesis, over = bound_written(thesis, limits)
    if over is not None:
        return Rejected(REASON, f"{REASON}: {over}")
    pages = tuple(pdf.Page(number=number, text=text) for number, text in thesis.pages)
    document = pdf.ParsedDocument(title=None, authors=(), year=None, pages=pages)
    chunks = pdf.chunk_pages(pages, target_chars=chunk_chars, overlap_chars=overlap_chars)
    return Parsed(document, tuple(chunks), formats.dumps(thesis))


def bound_written(thesis: WrittenThesis, limits: LimitSettings) -> tuple[WrittenThesis, str | None]:
    """The writer's thesis with each claim cut at ``max_claim_chars`` (each cut claim
    reported once), and why its claims are too many characters together, if they are
    (issue 41: one sentence with 8,192 \\cite's made 194 MB of parsed JSON). Runs in the
    child, before the thesis is sent back to the worker."""
    cut: list[WrittenCitation] = []
    noted: dict[str, Skipped] = {}
    for written in thesis.citations:
        if len(written.claim) > limits.max_claim_chars:
            if written.claim not in noted:
                noted[written.claim] = citations.long_claim_note(
                    written.where or f"page {written.page}", written.claim,
                    limits.max_claim_chars)
            written = dataclasses.replace(
                written, claim=citations.cut_claim(written.claim, limits.max_claim_chars))
        cut.append(written)
    over = citations.claims_over((c.claim for c in cut for _ in c.keys or ("",)),
                                 limits.max_claims_chars)
    if noted:
        thesis = dataclasses.replace(thesis, citations=tuple(cut),
                                     skipped=tuple(noted.values()) + thesis.skipped)
    return thesis, over


async def extract(pages: list[tuple[int, str]], limits: LimitSettings) -> citations.Extraction:
    """:func:`citations.extract` under the ``extract`` limits and the text caps."""
    over = check_pages(pages, limits)
    if over is not None:
        raise DocumentTooComplex(over)
    return await run(limits.extract, citations.extract, pages, slots=limits.max_children)



def map_job(extraction: citations.Extraction, sources: tuple[citations.SourceInfo, ...],
            config: citations.MatchConfig) -> tuple[citations.MappedCitation, ...] | citations.DuplicateKeyError:
    """:func:`citations.map_citations` (runs in the child); a duplicate key comes back as
    a value, so the worker raises it as the unsandboxed call did."""
    try:
        return citations.map_citations(extraction, sources, config)
    except citations.DuplicateKeyError as err:
        return err


async def map_citations(extraction: citations.Extraction,
                        sources: list[citations.SourceInfo] | tuple[citations.SourceInfo, ...],
                        config: citations.MatchConfig,
                        limits: LimitSettings) -> tuple[citations.MappedCitation, ...]:
    """:func:`citations.map_citations` under the ``match`` limits, off the event loop.

    A thesis over the caps on entries or citations raises :class:`DocumentTooComplex`
    before a child is started.
    """
    try:
        citations.check_size(extraction, config)
    except citations.TooLargeToMatch as err:
        raise DocumentTooComplex(str(err)) from err
    result = await run(limits.match, map_job, extraction, tuple(sources), config,
                       slots=limits.max_children)
    if isinstance(result, citations.DuplicateKeyError):
        raise result
    return result
