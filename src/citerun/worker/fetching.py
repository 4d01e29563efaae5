"""Sources from the network: ``fetch_document`` (a URL a run's spec names) and
``find_source`` (issue 51: an open-access copy of a cited work no source given matches).

``find_source`` runs once per (run, work) (:func:`citerun.core.flow.find_key`) in a run
that asked for it (``fetchSources``) on workers that allow it (``openaccess.enabled``).
It takes what the services had for the work from the shared store (``fetched_works``,
``fetched_contents``: no run or user in them), or asks them
(:func:`citerun.pipeline.openaccess.find_source`) and stores the answer there for later
runs; reads the PDF in the same parse child as an upload (:func:`steps.read_source`), else
the abstract as a one-page document; and in one fenced transaction stages the document for
the run's tenant, maps the work's waiting citations to it and enqueues their judges (the
first citation of each claim), or gives them ``unresolved_citation`` with the identifiers
tried. A find that dies on every attempt does the same (:func:`find_dead`): it never stops
the run. The last one of a run with nothing left to judge enqueues its finalize.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import asyncpg

from citerun.core import errors, flow, pdfmagic, runs, runspec, sql
from citerun.core.flow import FetchPayload, FindPayload
from citerun.core.settings import Settings
from citerun.core.states import RunState
from citerun.pipeline import citations, document, fetch, fetched, judge, openaccess, recipe
from citerun.pipeline.writer.model import Written
from citerun.worker import registry as registry_mod
from citerun.worker import sandbox, steps, tasks

logger = logging.getLogger(__name__)

_Q = sql.load("citerun.worker", "fetching.sql")

registry = tasks.registry


class FetchError(registry_mod.PermanentError):
    """The document cannot be downloaded."""


@registry.task(flow.FETCH_DOCUMENT, payload=FetchPayload)
async def fetch_document(ctx: registry_mod.TaskContext, payload: FetchPayload) -> None:
    """Download a document of a run (http/https, size and time caps), then stage it.

    A download that cannot succeed (bad scheme, too large, a 4xx) or that failed on its
    last attempt is recorded as a failed document, so the run goes on and its citations
    get ``source_unavailable``; a transient failure is retried with backoff.
    """
    settings = ctx.pipeline.documents
    policy = fetch.AddressPolicy.from_strings(settings.fetch_allow_networks,
                                              settings.fetch_deny_networks)
    try:
        data = await fetch.download(payload.url, max_bytes=settings.max_bytes,
                                    timeout_s=settings.fetch_timeout_s, policy=policy)
        # Rejected before hashing or storing; a thesis may be a writer's file (a zip).
        if not (pdfmagic.is_thesis(data) if payload.role == "thesis" else pdfmagic.is_pdf(data)):
            raise fetch.DownloadError("not_pdf", "the URL did not return a PDF", permanent=True)
    except fetch.DownloadError as err:
        if not err.permanent and not ctx.task.last_attempt:
            raise
        logger.info("fetch of a document of run %s failed: %s", payload.run_id, err.reason)
        await _record_fetch_failure(ctx, payload, err)
        return
    digest = runs.digest_of(data)
    async with ctx.fenced() as conn:
        run = await runs.lock(conn, payload.run_id)
        if await conn.fetchval(_Q["tenant_over_byte_cap"], payload.run_id, len(data), digest):
            await _record_fetch_failure(ctx, payload, fetch.DownloadError(
                "over_quota", "the run's namespace is over its byte cap", permanent=True),
                conn=conn)
            return
        if run is None:  # the run is gone: nothing to attach the download to
            return
        await runs.stage_document(conn, data, payload.filename, tenant=run["tenant"], via="run")
        await conn.execute(_Q["run_source_attach"], payload.run_id, digest, payload.role,
                           payload.filename, payload.keys)
        await flow.of(ctx.settings).advance(conn, payload.run_id,
                                            priority=run["priority"] if run else 0,
                                            parse_pending=True)


async def _record_fetch_failure(ctx: registry_mod.TaskContext, payload: FetchPayload,
                                err: fetch.DownloadError,
                                conn: asyncpg.Connection | None = None) -> None:
    """The document failed: the run goes on, its citations get source_unavailable. The
    user sees one generic reason (a stable code) and message, never the server's answer."""
    failed = runs.digest_of(b"url:" + payload.url.encode())
    reason = err.reason if err.reason in ("too_large", "over_quota", "not_pdf") else "download_failed"

    async def record(conn: asyncpg.Connection) -> None:
        run = await runs.lock(conn, payload.run_id)
        await conn.execute(_Q["document_record_failure"], failed, payload.filename,
                           reason, str(err), payload.run_id)
        await conn.execute(_Q["run_source_attach"], payload.run_id, failed, payload.role,
                           payload.filename, payload.keys)
        await flow.of(ctx.settings).advance(conn, payload.run_id,
                                            priority=run["priority"] if run else 0)

    if conn is not None:
        await record(conn)
        return
    async with ctx.fenced() as fenced:
        await record(fenced)



# -- find_source (issue 51) --------------------------------------------------------------

#: A work no service had is looked up again by a run this long after (a service may add
#: it, or have been down); one found is reused until retention deletes it.
NONE_REUSED_S = 86_400.0
#: Characters of an abstract read (a service's "abstract" may be a whole text).
MAX_ABSTRACT_CHARS = 20_000


def works_wanted(pipeline_enabled: bool, spec: Any, mapped: Sequence[citations.MappedCitation],
                 settled: Sequence[judge.Judgement | bool], written: Written | None
                 ) -> tuple[dict[int, fetched.Wanted], list[dict[str, str]]]:
    """The citations (by position) whose work a run looks for, and what the report says it
    left out: a run that asked (``fetchSources``) on workers that do not fetch."""
    if not runspec.fetches_sources(spec):
        return {}, []
    found = fetched.wanted(mapped, settled, written)
    if found and not pipeline_enabled:
        works = len({w.work_key for w in found.values()})
        return {}, [{"where": "run", "text": f"{works} cited work(s) without a PDF",
                     "reason": "not looked for: the workers do not fetch sources "
                               "(openaccess.enabled is off)"}]
    return found, []


async def want(conn: asyncpg.Connection, run_id: uuid.UUID,
               wanted: Iterable[fetched.Wanted]) -> list[str]:
    """Record the works a run looks for (one row each); their keys, for the find tasks."""
    works: dict[str, fetched.Wanted] = {}
    for w in wanted:
        works.setdefault(w.work_key, w)
    await conn.executemany(_Q["run_fetch_want"], [
        (run_id, w.work_key, w.label, w.reference, fetched.ids_to_json(w.ids))
        for w in works.values()])
    return list(works)


_sessions: dict[tuple[openaccess.OpenAccessSettings, int], openaccess.Session] = {}


async def _session(settings: openaccess.OpenAccessSettings) -> openaccess.Session:
    """The process's session with the services (its per-host gates shared by every find
    of the worker; the worker runs one event loop for its whole life)."""
    key = (settings, id(asyncio.get_running_loop()))
    if key not in _sessions:
        session = openaccess.Session(settings)
        await session.__aenter__()
        _sessions[key] = session
    return _sessions[key]


async def _found(ctx: registry_mod.TaskContext, work_key: str,
                 ids: openaccess.WorkIds) -> openaccess.Found:
    """What the services have for a work: the shared copy where there is one (a work not
    found, only for :data:`NONE_REUSED_S`), else asked now and stored for later runs."""
    row = await ctx.pool.fetchrow(_Q["fetched_work_get"], work_key, NONE_REUSED_S)
    if row is not None and (row["kind"] != "none" or row["fresh"]):
        data = dict(row["found"])
        if row["abstract"] is not None:
            data["abstract"] = bytes(row["abstract"]).decode("utf-8")
        return openaccess.Found.from_json(data, pdf=None if row["pdf"] is None
                                          else bytes(row["pdf"]))
    found = await openaccess.find_source(ids, await _session(ctx.pipeline.openaccess))
    logger.info("work looked up: %s", found.kind, extra={"action": "find", "reason": found.kind})
    await _remember(ctx.pool, work_key, found)
    return found


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _remember(pool: asyncpg.Pool, work_key: str, found: openaccess.Found) -> None:
    """Store what the services had, once by content: shared by every later run."""
    pdf_sha = _sha(found.pdf) if found.pdf is not None else None
    abstract = found.abstract.encode("utf-8") if found.abstract else None
    abstract_sha = _sha(abstract) if abstract is not None else None
    data = {k: v for k, v in found.to_json().items() if k != "abstract"}
    async with pool.acquire() as conn, conn.transaction():
        for sha, kind, content in ((pdf_sha, "pdf", found.pdf),
                                   (abstract_sha, "abstract", abstract)):
            if sha is not None and content is not None:
                await conn.execute(_Q["fetched_content_put"], sha, kind, content, len(content))
        await conn.execute(_Q["fetched_work_put"], work_key, found.kind, pdf_sha,
                           abstract_sha, data)


@dataclasses.dataclass(frozen=True)
class _Read:
    """A fetched PDF or abstract ready to store for the run: its status ("pdf",
    "abstract"), bytes, digest, name, and what stores its pages (None: parsed before)."""

    status: str
    data: bytes
    digest: str
    filename: str
    store: Callable[[asyncpg.Connection], Awaitable[None]] | None


async def _parsed(ctx: registry_mod.TaskContext, data: bytes,
                  parsed: steps.Parsed | None, status: str, label: str) -> _Read:
    digest = _sha(data)
    done = await ctx.pool.fetchval(_Q["document_state"], digest) == "parsed"
    if parsed is None and not done:
        try:  # the same children as an upload's parse_document
            outcome = await steps.read_source(data, ctx.pipeline.limits, ctx.pipeline.documents)
        except sandbox.DocumentTooComplex as err:
            outcome = steps.Rejected(err.reason, str(err))
        if isinstance(outcome, steps.Rejected):
            raise _Unreadable(outcome.message)
        parsed = outcome
    store = None if done or parsed is None else await tasks.stored(ctx, digest, parsed)
    return _Read(status, data, digest, fetched.source_name(label, status), store)


class _Unreadable(Exception):
    """A fetched PDF that the parse child refused."""


class DocumentLetGo(errors.CiterunError):
    """A document found parsed lost its pages before the find stored its result (the
    last run owning it ended): the attempt fails and the next one reads it again."""


async def _read(ctx: registry_mod.TaskContext, found: openaccess.Found, label: str,
                ids: openaccess.WorkIds) -> tuple[_Read | None, str | None]:
    """The document a work's citations are judged on: the PDF found, else its abstract
    (a one-page document); and why a PDF found could not be read."""
    problem = None
    if found.pdf is not None and pdfmagic.is_pdf(found.pdf):
        try:
            return await _parsed(ctx, found.pdf, None, "pdf", label), None
        except _Unreadable as err:
            problem = f"the PDF found could not be read: {err}"
    if found.abstract:
        text = " ".join(found.abstract.split())[:MAX_ABSTRACT_CHARS]
        doc = document.Document((document.Page(1, text),), title=ids.title,
                                authors=(ids.first_author,) if ids.first_author else (),
                                year=ids.year, doi=ids.doi, arxiv_id=ids.arxiv)
        parsed = steps.Parsed(doc, recipe.passages(doc, ctx.pipeline.documents))
        return await _parsed(ctx, text.encode("utf-8"), parsed, "abstract", label), problem
    return None, problem


def _how(found: openaccess.Found, status: str, ids: openaccess.WorkIds) -> str:
    """The mapping's reason for a fetched source: "DOI 10.1/x: open-access PDF (Unpaywall)"."""
    what = ("open-access PDF" if status == "pdf" else "abstract only")
    service = found.service if status == "pdf" else (found.abstract_service or found.service)
    return f"{'; '.join(ids.tried()[:2]) or 'its title'}: {what}" + (
        f" ({service})" if service else "")


async def _settle(conn: asyncpg.Connection, settings: Settings, run: asyncpg.Record,
                  run_id: uuid.UUID) -> None:
    """After a find: the run's finalize once every citation has its verdict."""
    if await conn.fetchval(_Q["run_unjudged_count"], run_id) == 0:
        await flow.of(settings).finalize(conn, run_id, priority=run["priority"])
    await runs.touch(conn, run_id)


async def _not_found(conn: asyncpg.Connection, run_id: uuid.UUID, work_key: str,
                     ids: openaccess.WorkIds, *, status: str, found: dict[str, Any] | None,
                     error: str | None) -> None:
    """The work's waiting citations get ``unresolved_citation`` with the ids tried."""
    if await conn.fetchval(_Q["run_fetch_done"], run_id, work_key, status, None, found,
                           error) is None:
        return  # ended before (a retried attempt)
    for c in await conn.fetch(_Q["citations_waiting"], run_id, work_key):
        await conn.execute(_Q["verdict_insert"], c["id"], run_id,
                           str(judge.Verdict.UNRESOLVED_CITATION), 1.0,
                           fetched.not_found_reason(c["marker"], c["reference"] or "",
                                                    ids.tried(), error if status == "failed"
                                                    else None), [], "citerun")


@registry.task(flow.FIND_SOURCE, payload=FindPayload)
async def find_source(ctx: registry_mod.TaskContext, payload: FindPayload) -> None:
    """Find, fetch and read one cited work of a run; map its citations to it."""
    want = await ctx.pool.fetchrow(_Q["run_fetch_get"], payload.run_id, payload.work_key)
    if want is None or want["status"] != "pending" or want["run_state"] != RunState.RUNNING:
        async with ctx.fenced():  # done before, or the run ended: nothing to do
            return
    ids = fetched.ids_from_json(want["ids"])
    found = await _found(ctx, payload.work_key, ids)
    read, problem = await _read(ctx, found, want["label"], ids)
    async with ctx.fenced() as conn:
        run = await runs.lock(conn, payload.run_id)
        if run is None or run["state"] != RunState.RUNNING:
            return
        if read is not None and await conn.fetchval(_Q["tenant_over_byte_cap"], payload.run_id,
                                                    len(read.data), read.digest):
            read, problem = None, "the run's namespace is over its byte cap"
        if read is None:
            await _not_found(conn, payload.run_id, payload.work_key, ids, status="none",
                             found=found.to_json(), error=problem)
            await _settle(conn, ctx.settings, run, payload.run_id)
            return
        await runs.stage_document(conn, read.data, read.filename, tenant=run["tenant"],
                                  via="run")
        if read.store is not None:
            await read.store(conn)
        elif await conn.fetchval(_Q["document_state"], read.digest) != "parsed":
            # Its pages were let go of since it was looked at: read it on the next attempt.
            raise DocumentLetGo(f"document {read.digest[:12]} is no longer parsed")
        await conn.execute(_Q["run_source_attach"], payload.run_id, read.digest, "source",
                           read.filename, [])
        await conn.execute(_Q["run_fetch_done"], payload.run_id, payload.work_key, read.status,
                           read.digest, found.to_json(), problem)
        leaders: dict[str, tuple[int, int]] = {}
        for c in await conn.fetch(_Q["citations_found"], payload.run_id, payload.work_key,
                                  read.digest, _how(found, read.status, ids)):
            if c["claim"] not in leaders or c["ordinal"] < leaders[c["claim"]][1]:
                leaders[c["claim"]] = (c["id"], c["ordinal"])
        await flow.of(ctx.settings).judge_found(conn, payload.run_id,
                                                [i for i, _ in leaders.values()],
                                                priority=run["priority"])
        await _settle(conn, ctx.settings, run, payload.run_id)


async def find_dead(pool: asyncpg.Pool, settings: Settings, row: asyncpg.Record) -> bool:
    """A find task that ran out of attempts costs only its work: the work's citations get
    ``unresolved_citation`` naming the failure and the identifiers tried, and the run goes
    on (False: not a find this can settle)."""
    key = (row["payload"] or {}).get("work_key")
    if not isinstance(key, str):
        return False
    code = errors.code_of(row["last_error"])
    async with pool.acquire() as conn, conn.transaction():
        run = await runs.lock(conn, row["run_id"])
        want = await conn.fetchrow(_Q["run_fetch_get"], row["run_id"], key)
        if run is None or want is None or run["state"] != RunState.RUNNING:
            return True
        await _not_found(conn, row["run_id"], key, fetched.ids_from_json(want["ids"]),
                         status="failed", found=None, error=code)
        logger.warning("work %s of run %s not looked up (%s)", want["label"], row["run_id"],
                       code, extra={"action": "find", "reason": code})
        await _settle(conn, settings, run, row["run_id"])
    return True
