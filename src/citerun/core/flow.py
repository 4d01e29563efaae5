"""The pipeline's flow: its task kinds, which stage follows which, the dedupe keys that make
every transition idempotent, and what a dead-lettered task does to its run.

This is the one module that knows the stage names. The core (:mod:`citerun.core.queue`,
:mod:`citerun.core.runs`) moves tasks and runs without knowing what they mean; the worker's
handlers (:mod:`citerun.worker.tasks`) do each stage's work and call this module to
enqueue the next one; the operator and the CLI create runs through :func:`create`, which
hands the core the first tasks. It sits between the core and the worker/operator so that
both can use it (they may not import each other). See ``docs/architecture.md``
("The flow of one run").

The flow::

    fetch_document* -> parse_document* -> extract_citations -> [find_source*] -> judge_citation*
        -> finalize_run

``*``: one task per document (fetch: per URL in the spec), per cited work without a PDF
(find: only in a run that asked for sources to be fetched, issue 51) or per citation. The transitions
that wait for several tasks (every document parsed -> extract; every citation judged ->
finalize) are taken under the run's row lock, so exactly one task takes them, and the
dedupe keys make a repeated transition a no-op.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
import pydantic

from citerun.core import errors, queue, runs
from citerun.core.states import RunState
from citerun.core.settings import QueueSettings, Settings

logger = logging.getLogger(__name__)

FETCH_DOCUMENT = "fetch_document"
PARSE_DOCUMENT = "parse_document"
EXTRACT_CITATIONS = "extract_citations"
FIND_SOURCE = "find_source"
JUDGE_CITATION = "judge_citation"
FINALIZE_RUN = "finalize_run"

#: Every kind of the pipeline, in stage order.
KINDS: tuple[str, ...] = (FETCH_DOCUMENT, PARSE_DOCUMENT, EXTRACT_CITATIONS, FIND_SOURCE,
                          JUDGE_CITATION, FINALIZE_RUN)


# -- payloads: what each kind's task carries (the worker's handlers import these) ---------

class FetchPayload(pydantic.BaseModel):
    """Download one document named by URL in a run's spec."""

    run_id: uuid.UUID
    url: str
    filename: str
    role: str = pydantic.Field(pattern="^(thesis|source)$")
    keys: list[str] = []


class ParsePayload(pydantic.BaseModel):
    """Parse one staged document (for every run that uses it)."""

    digest: str = pydantic.Field(pattern=r"^[0-9a-f]{64}$")


class RunPayload(pydantic.BaseModel):
    """A stage of one whole run (extract its citations, finalize it)."""

    run_id: uuid.UUID


class FindPayload(pydantic.BaseModel):
    """Find, fetch and read one cited work of a run that has no source PDF (its
    identifiers are the run's ``run_fetches`` row)."""

    run_id: uuid.UUID
    work_key: str = pydantic.Field(min_length=1, max_length=1000)


class JudgePayload(pydantic.BaseModel):
    """Judge one citation."""

    citation_id: int


#: The payload model of each kind: the flow builds its tasks' payloads with it, the
#: worker registers its handlers with it (tests/unit/test_facts_owned.py).
PAYLOADS: dict[str, type[pydantic.BaseModel]] = {
    FETCH_DOCUMENT: FetchPayload, PARSE_DOCUMENT: ParsePayload, EXTRACT_CITATIONS: RunPayload,
    FIND_SOURCE: FindPayload, JUDGE_CITATION: JudgePayload, FINALIZE_RUN: RunPayload}


# -- dedupe keys: one task per (stage, subject) ------------------------------------------

def fetch_key(run_id: uuid.UUID, role: str, filename: str) -> str:
    return f"fetch:{run_id}:{role}:{filename}"


def parse_key(digest: str, run_id: uuid.UUID) -> str:
    return f"parse:{digest}:{run_id}"


def extract_key(run_id: uuid.UUID) -> str:
    return f"extract:{run_id}"


def find_key(run_id: uuid.UUID, work_key: str) -> str:
    """One find per (run, work); the work's key hashed (a title key may be long)."""
    return f"find:{run_id}:{hashlib.sha256(work_key.encode()).hexdigest()[:32]}"


def judge_key(citation_id: int) -> str:
    return f"judge:{citation_id}"


def finalize_key(run_id: uuid.UUID) -> str:
    return f"finalize:{run_id}"


# -- transitions -------------------------------------------------------------------------

@dataclass(frozen=True)
class Flow:
    """The transitions of the pipeline, with the attempts each kind gets from settings."""

    settings: QueueSettings

    def task(self, kind: str, payload: pydantic.BaseModel, *, run_id: uuid.UUID,
             priority: int, dedupe_key: str) -> queue.NewTask:
        """A task of ``kind`` for ``run_id`` with the attempts the settings give it; its
        payload is the kind's model (:data:`PAYLOADS`), stored as JSON."""
        if type(payload) is not PAYLOADS[kind]:
            raise TypeError(f"a {kind} task carries a {PAYLOADS[kind].__name__}, "
                            f"not a {type(payload).__name__}")
        return queue.NewTask(kind, payload.model_dump(mode="json"), priority=priority,
                             run_id=run_id,
                             dedupe_key=dedupe_key,
                             max_attempts=self.settings.attempts_for(kind))

    async def start(self, conn: asyncpg.Connection, request: runs.RunRequest) -> None:
        """The first tasks of a new run (the run's row is locked): its downloads, the
        parses of its documents, or its extraction if every document is parsed."""
        await queue.enqueue(conn, [
            self.task(FETCH_DOCUMENT, FetchPayload(run_id=request.id, url=f.url,
                                                   filename=f.filename, role=f.role,
                                                   keys=list(f.keys)),
                      run_id=request.id, priority=request.priority,
                      dedupe_key=fetch_key(request.id, f.role, f.filename))
            for f in request.fetches])
        await self.advance(conn, request.id, priority=request.priority, parse_pending=True)

    async def advance(self, conn: asyncpg.Connection, run_id: uuid.UUID, *, priority: int,
                      parse_pending: bool = False) -> None:
        """Enqueue what a run needs next; call with the run's row locked.

        With ``parse_pending`` (when the run is created or a download staged a document),
        every document not parsed yet gets a ``parse_document`` task of this run. Once no
        document is pending and no download is open, the run gets its
        ``extract_citations`` task.

        A finishing parse task must not re-enqueue parse tasks here: its insert would wait
        on the sibling parse tasks' rows (ON CONFLICT on their dedupe keys) while they
        wait on this run's row lock, a deadlock.
        """
        pending = await runs.documents_pending(conn, run_id)
        if pending and parse_pending:
            await queue.enqueue(conn, [
                self.task(PARSE_DOCUMENT, ParsePayload(digest=digest), run_id=run_id,
                          priority=priority, dedupe_key=parse_key(digest, run_id))
                for digest in pending])
        if pending or await runs.tasks_open(conn, run_id, [FETCH_DOCUMENT]):
            return
        await queue.enqueue(conn, [self.task(
            EXTRACT_CITATIONS, RunPayload(run_id=run_id), run_id=run_id, priority=priority,
            dedupe_key=extract_key(run_id))])

    async def advance_for_documents(self, conn: asyncpg.Connection,
                                    digests: Sequence[str]) -> None:
        """After documents reached a terminal state: advance every running run using them."""
        for run_id, priority in await runs.lock_by_documents(conn, digests):
            await self.advance(conn, run_id, priority=priority)

    async def judge(self, conn: asyncpg.Connection, run_id: uuid.UUID,
                    citation_ids: Sequence[int], *, priority: int,
                    works: Sequence[str] = ()) -> None:
        """After extraction: one judge task per citation and one find task per cited work
        to look for (``works``, their keys), or the finalize if none."""
        await queue.enqueue(conn, [
            self.task(FIND_SOURCE, FindPayload(run_id=run_id, work_key=w), run_id=run_id,
                      priority=priority, dedupe_key=find_key(run_id, w)) for w in works])
        await self.judge_found(conn, run_id, citation_ids, priority=priority)
        if not citation_ids and not works:
            await self.finalize(conn, run_id, priority=priority)

    async def judge_found(self, conn: asyncpg.Connection, run_id: uuid.UUID,
                          citation_ids: Sequence[int], *, priority: int) -> None:
        """One judge task per citation (after extraction, or after a find read the work
        they cite); the caller finalizes a run left with no citation to judge."""
        await queue.enqueue(conn, [
            self.task(JUDGE_CITATION, JudgePayload(citation_id=i), run_id=run_id, priority=priority,
                      dedupe_key=judge_key(i)) for i in citation_ids])

    async def finalize(self, conn: asyncpg.Connection, run_id: uuid.UUID, *,
                       priority: int) -> None:
        """Every citation has its verdict: build the report."""
        await queue.enqueue(conn, [self.task(
            FINALIZE_RUN, RunPayload(run_id=run_id), run_id=run_id, priority=priority,
            dedupe_key=finalize_key(run_id))])

    async def fail_for_run(self, conn: asyncpg.Connection, run_id: uuid.UUID, digest: str,
                           reason: str, error: str) -> None:
        """The run cannot use the document for a reason of the moment: record it for the
        run only (the document stays staged for others) and advance the run."""
        run = await runs.lock(conn, run_id)
        await runs.fail_for_run(conn, run_id, digest, reason, error)
        if run is not None:
            await self.advance(conn, run_id, priority=run["priority"])

    async def on_dead(self, pool: asyncpg.Pool, task_ids: list[int]) -> None:
        """Tasks ran out of attempts. A dead parse fails its document for its run (the run
        goes on, the citations that need it get ``source_unavailable``; the document stays
        staged for other runs); any other dead task of a run fails the run with the task's
        error."""
        for task_id in task_ids:
            row = await queue.get(pool, task_id)
            if row is None or row["run_id"] is None:
                continue
            async with pool.acquire() as conn, conn.transaction():
                if row["kind"] == PARSE_DOCUMENT:
                    # Lost leases, a worker killed on every attempt: this run's failure,
                    # not the document's (another run parses it again).
                    await self.fail_for_run(
                        conn, row["run_id"], str(row["payload"].get("digest", "")), "crashed",
                        f"parsing failed on every attempt ({errors.code_of(row['last_error'])})")
                    continue
                await runs.lock(conn, row["run_id"])
                # A stable code and a short message, never the task's stored error (it
                # may hold a traceback or a server's response body).
                await runs.finish(conn, row["run_id"], RunState.FAILED,
                                  f"{row['kind']} task {row['id']} failed on every attempt "
                                  f"({errors.code_of(row['last_error'])})")


def of(settings: Settings | QueueSettings) -> Flow:
    """The flow with the attempts of ``settings`` (the process's, read once at its entry)."""
    return Flow(settings.queue if isinstance(settings, Settings) else settings)


async def create(pool: asyncpg.Pool, request: runs.RunRequest, *,
                 settings: Settings | QueueSettings,
                 caps: runs.Caps | None = None) -> runs.Admission:
    """Admit and create a run with its first tasks, in one transaction (see
    :func:`citerun.core.runs.create`)."""
    return await runs.create(pool, request, start=of(settings).start, caps=caps)
