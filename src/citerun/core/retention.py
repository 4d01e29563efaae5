"""What may be deleted, and deleting it in small batches: the SQL side of retention.

Finished tasks and finished runs older than the retention age, the staged bytes of
documents only finished runs use, workers rows long gone, and the open-access copies of
cited works fetched longer ago than the retention age (issue 51). Every statement deletes at
most one batch and skips locked rows (``FOR UPDATE SKIP LOCKED``), so retention never
waits on, or holds up, a claim: claims touch only queued rows through their partial
index. The service that calls this on a schedule is :mod:`citerun.operator.cleaner`;
see ``docs/architecture.md`` ("Retention").
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TypeAlias

import asyncpg

from citerun.core import sql

_Q = sql.load("citerun.core", "retention.sql")

Executor: TypeAlias = asyncpg.Connection | asyncpg.Pool


async def delete_finished_tasks(conn: Executor, *, older_than_s: float, limit: int) -> int:
    """Delete one batch of finished tasks of finished runs; return how many."""
    return len(await conn.fetch(_Q["task_delete_finished_batch"], older_than_s, limit))


async def finished_runs(conn: Executor, *, older_than_s: float,
                        limit: int) -> list[asyncpg.Record]:
    """One batch of runs finished over ``older_than_s`` ago (id, namespace, name,
    resource_uid), oldest first."""
    return list(await conn.fetch(_Q["run_finished_batch"], older_than_s, limit))


async def delete_runs(conn: Executor, run_ids: Sequence[uuid.UUID]) -> int:
    """Delete finished runs with everything that hangs off them; return how many."""
    if not run_ids:
        return 0
    return len(await conn.fetch(_Q["run_delete_many"], list(run_ids)))


async def drop_bytes_of_finished(conn: Executor, *, finished_before_s: float,
                                 limit: int) -> int:
    """Drop one batch of staged bytes whose runs all finished over ``finished_before_s``
    ago; return how many documents."""
    return len(await conn.fetch(_Q["document_drop_bytes_of_finished_batch"], limit,
                                finished_before_s))


async def delete_gone_workers(conn: Executor, *, older_than_s: float, limit: int) -> int:
    """Forget one batch of workers silent for ``older_than_s``; return how many."""
    return len(await conn.fetch(_Q["worker_delete_gone_batch"], older_than_s, limit))


async def delete_old_fetched_works(conn: Executor, *, older_than_s: float, limit: int) -> int:
    """Forget one batch of works fetched over ``older_than_s`` ago (issue 51); return how
    many. A later run that cites one asks the services again."""
    return len(await conn.fetch(_Q["fetched_work_delete_old_batch"], older_than_s, limit))


async def delete_unused_fetched_contents(conn: Executor, *, limit: int) -> int:
    """Delete one batch of fetched PDFs and abstracts no stored work names; return how many."""
    return len(await conn.fetch(_Q["fetched_content_delete_unused_batch"], limit))

