"""Task kinds and their handlers.

A :class:`Registry` maps a task kind to an async handler and the pydantic model its
payload must satisfy. The worker runtime looks kinds up here; the CLI loads a registry
by import path (``package.module:attribute``), so tests and benchmarks can run the same
runtime with handlers of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import asyncpg
import pydantic

from citerun.core import errors, queue, runspec
from citerun.core.settings import Settings

if TYPE_CHECKING:
    from citerun.pipeline.settings import PipelineSettings

P = TypeVar("P", bound=pydantic.BaseModel)
T = TypeVar("T")


class PermanentError(errors.CiterunError):
    """The task cannot succeed however often it is retried."""


class RegistryError(errors.CiterunError):
    """A task registry could not be loaded."""


@dataclass
class TaskContext:
    """What a handler gets besides its payload: the task, the pool, and the process's
    settings, read once when the worker started."""

    task: queue.ClaimedTask
    worker_id: str
    pool: asyncpg.Pool
    settings: Settings
    pipeline: PipelineSettings
    judge_profiles: Mapping[str, runspec.JudgeProfile]
    completed: bool = field(default=False, init=False)

    @contextlib.asynccontextmanager
    async def fenced(self, result: Any = None) -> AsyncIterator[asyncpg.Connection]:
        """A transaction that completes this task before the handler writes its results.

        Write every result of the task inside it (and enqueue the next stage with
        ``queue.enqueue(conn, ...)``): if the lease was lost, :class:`queue.LeaseLost` is
        raised and nothing is written.
        """
        async with self.pool.acquire() as conn:
            async with queue.fenced(conn, self.task, worker_id=self.worker_id, result=result):
                yield conn
        self.completed = True

    async def run_cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound work in a thread, off the event loop."""
        return await asyncio.to_thread(fn, *args)


Handler = Callable[[TaskContext, Any], Awaitable[Any]]
DeadHook = Callable[[asyncpg.Pool, list[int], Settings], Awaitable[None]]


@dataclass(frozen=True)
class TaskSpec(Generic[P]):
    kind: str
    handler: Handler
    payload_model: type[P]


class Registry:
    """The task kinds one worker can run."""

    def __init__(self) -> None:
        self._specs: dict[str, TaskSpec[Any]] = {}
        #: Called with the ids of tasks that were dead-lettered (out of attempts) and the
        #: worker's settings.
        self.on_dead: DeadHook | None = None

    def task(self, kind: str, *, payload: type[P]) -> Callable[[Handler], Handler]:
        """Register ``handler(ctx, payload)`` for ``kind`` (its attempts are the settings'
        ``queue.max_attempts_by_kind``, decided when a task is enqueued)."""
        def register(handler: Handler) -> Handler:
            if kind in self._specs:
                raise RegistryError(f"task kind {kind!r} registered twice")
            self._specs[kind] = TaskSpec(kind, handler, payload)
            return handler
        return register

    def get(self, kind: str) -> TaskSpec[Any] | None:
        return self._specs.get(kind)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted(self._specs))

    def include(self, other: Registry) -> None:
        for spec in other._specs.values():
            if spec.kind in self._specs:
                raise RegistryError(f"task kind {spec.kind!r} registered twice")
            self._specs[spec.kind] = spec


def load(path: str) -> Registry:
    """Import a registry from ``package.module:attribute``."""
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        registry = getattr(module, attribute or "registry")
    except (ImportError, AttributeError) as err:
        raise RegistryError(f"cannot load task registry {path!r}: {err}") from err
    if not isinstance(registry, Registry):
        raise RegistryError(f"{path!r} is a {type(registry).__name__}, not a Registry")
    return registry
