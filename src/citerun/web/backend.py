"""Where an accepted upload goes: the backend behind ``POST /api/runs``.

The service checks who the user is and what they uploaded; a backend turns that into a
run. :class:`LocalBackend` creates the run in the service's own database (the embedded
one, or a shared one with workers of its own): the bytes are staged, the run created,
its first tasks enqueued and the ownership row written in one transaction, so a crash
or a refusal by the caps leaves nothing behind. The cluster backend
(:class:`citerun.web.cluster.KubeBackend`) creates a CitationRun instead and lets the
operator admit it; reads (status, report) come from Postgres either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Protocol

import asyncpg

from citerun.core import flow, runs, runspec
from citerun.core.settings import Settings
from citerun.web import store


@dataclass(frozen=True)
class Upload:
    """One uploaded file: its name (no directory) and its bytes, already type-checked,
    and their sha256 (hex; the upload's spool hashed them as they arrived, issue 48:
    hashing 110 MB again on the event loop held every other request up; computed here
    when not given)."""

    filename: str
    data: bytes
    digest: str = ""

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", runs.digest_of(self.data))


class Backend(Protocol):
    async def submit(self, user: str, thesis: Upload, sources: Sequence[Upload], *,
                     fetch_sources: bool = False) -> uuid.UUID:
        """Create ``user``'s run of ``thesis`` against ``sources``; its id. Raises
        :class:`citerun.web.store.OverCap` when the user's caps refuse it.
        ``fetch_sources``: the run looks for open-access copies of the works without a PDF
        (issue 51)."""
        ...

    async def cancel(self, run_id: uuid.UUID) -> None:
        """Cancel a run (the caller checked it is the user's)."""
        ...

    async def delete(self, run_id: uuid.UUID) -> None:
        """Before an ended run's rows are deleted: what the backend holds of it outside
        the database goes (a cluster's CitationRun); the caller checked it is the
        user's."""
        ...

    async def waiting(self, run: asyncpg.Record) -> str | None:
        """Why a run of the user's (a ``store.run_of`` row) has not started yet, or None
        when it has: a cluster's run exists only once the operator admits it."""
        ...


class LocalBackend:
    """Runs created in this database, for workers that serve it."""

    def __init__(self, pool: asyncpg.Pool, settings: Settings, caps: store.UserCaps, *,
                 tenant: str = "default", tenant_caps: runs.Caps | None = None) -> None:
        self.pool = pool
        self.flow = flow.of(settings)
        self.caps = caps
        self.tenant = tenant
        self.tenant_caps = tenant_caps

    async def submit(self, user: str, thesis: Upload, sources: Sequence[Upload], *,
                     fetch_sources: bool = False) -> uuid.UUID:
        run_id = uuid.uuid4()
        staged = [s for s in sources if s.digest != thesis.digest]
        request = runs.RunRequest(
            id=run_id, name=PurePath(thesis.filename).stem or "thesis",
            thesis=runs.StagedDocument(thesis.digest, thesis.filename),
            sources=tuple(runs.StagedDocument(s.digest, s.filename) for s in staged),
            spec={"thesis": thesis.filename, "sources": [s.filename for s in staged],
                  "web": {"owner": user},
                  **({runspec.FETCH_SOURCES: True} if fetch_sources else {})},
            tenant=self.tenant,
            # Staged inside the create transaction, owned for the run: the bytes go when
            # the run no longer needs them.
            payloads=((thesis.data, thesis.filename), *((s.data, s.filename) for s in staged)))

        async def start(conn: asyncpg.Connection, req: runs.RunRequest) -> None:
            await store.admit(conn, user, req.id, self.caps)
            await self.flow.start(conn, req)

        admission = await runs.create(self.pool, request, start=start, caps=self.tenant_caps)
        if admission.over_capacity is not None:
            raise store.OverCap(429, admission.over_capacity)
        if not admission.created:
            raise runs.RunError(f"run {run_id} was not created")
        return run_id

    async def cancel(self, run_id: uuid.UUID) -> None:
        await runs.cancel(self.pool, run_id, "cancelled by its owner on the web page")

    async def delete(self, run_id: uuid.UUID) -> None:
        return None  # all of it is in the database

    async def waiting(self, run: asyncpg.Record) -> str | None:
        return None  # created with its row: never waiting for anyone
