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

What runs in a child is a stage of the recipe (:mod:`citerun.worker.steps`); its caps
on pages and characters (:class:`citerun.pipeline.settings.LimitSettings`) and on
reference entries and citations (:class:`citations.MatchConfig`) are checked in the
child as soon as the numbers are known, before the expensive work (issue 27: the mapping
once ran on the worker's loop for minutes).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import pickle
import resource
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from citerun.pipeline.pdf.limits import TOO_COMPLEX
from citerun.pipeline.settings import TaskLimits
from citerun.worker import registry

T = TypeVar("T")

REASON = TOO_COMPLEX

_PR_SET_PDEATHSIG = 1
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
        # Not '__main__': the worker's main module is the CLI. The steps import the
        # recipe (the parser, the citation extractor), so a fork starts warm.
        ctx.set_forkserver_preload([__name__, "citerun.worker.steps"])
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


async def run(limits: TaskLimits, fn: Callable[..., T], *args: Any, slots: int = 2,
              spawn: bool = False) -> T:
    """``fn(*args)`` in a child process under ``limits``; raise on excess.

    ``fn`` and its arguments must be picklable (a module-level function). At most
    ``slots`` children run at once per event loop (the size of the first call's wins).
    ``spawn``: a fresh interpreter that imports ``fn``'s module, for a process that runs
    one child (``citerun verify``'s library) and should keep no fork server beside it.
    Raises :class:`DocumentTooComplex` when a limit is exceeded and
    :class:`SandboxError` when ``fn`` raised.
    """
    async with _slot(slots):
        return await _run(multiprocessing.get_context("spawn") if spawn else _mp_context(),
                          limits, fn, *args)


async def _run(ctx: Any, limits: TaskLimits, fn: Callable[..., T], *args: Any) -> T:
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
