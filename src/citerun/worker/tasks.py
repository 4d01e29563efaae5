"""The handlers of the pipeline's task kinds (the order of the stages, their dedupe keys
and what a dead task does are :mod:`citerun.core.flow`'s; see docs/architecture.md).

Each handler does its slow work first (parsing, embedding, retrieval, judging), then
records its results and enqueues the next stage in ONE fenced transaction, so a worker
that lost its lease writes nothing and a crash between stages loses nothing. Stage
transitions that depend on several tasks (the last document parsed, the last citation
judged) lock the run's row, so exactly one task takes them. A per-document problem (a
corrupt or scanned PDF) is a result, not a task failure: the run goes on and the
citations that need the document get ``source_unavailable``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import http.cookiejar
import json
import logging
import uuid
from typing import Any

import asyncpg
import httpx
import numpy as np
import pydantic

from citerun.core import flow, pdfmagic, runs, runspec, sql
from citerun.core.flow import FetchPayload, JudgePayload, ParsePayload, RunPayload
from citerun.worker import registry as registry_mod
from citerun.worker import sandbox
from citerun.pipeline import (citations, embed, fetch, judge, layout, pdf, report,
                              retrieval, writer)
from citerun.pipeline.writer import formats
from citerun.core.settings import Settings
from citerun.core.states import FINISHED_DOCUMENT, DocumentState, RunState
from citerun.pipeline.settings import PipelineSettings, RetrievalConfig

logger = logging.getLogger(__name__)

_Q = sql.load("citerun.worker", "tasks.sql")

registry = registry_mod.Registry()


# -- per-process caches (rebuilt from Postgres or the package on a miss) -----------------

@functools.cache
def pipeline_settings() -> PipelineSettings:
    return PipelineSettings()


@functools.cache
def embedder() -> embed.Embedder:
    return embed.make_embedder(pipeline_settings().embedding)


_bm25_cache = retrieval.Bm25Cache()


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """A judge endpoint's cookies are kept by no one (they would ride on the next run's
    requests, another tenant's among them)."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False


@functools.lru_cache(maxsize=256)
def _http_client(tenant: str) -> httpx.AsyncClient:
    """One HTTP client per tenant in a worker process for the OpenAI-compatible judge
    (pooled connections, never another tenant's; no cookies kept; the worker runs one
    event loop for its whole life)."""
    return httpx.AsyncClient(cookies=http.cookiejar.CookieJar(policy=_NoCookies()))


def _run_config(spec: Any, api_key: str | None = None) -> tuple[judge.JudgeConfig,
                                                                 RetrievalConfig]:
    """The run's judge and retrieval settings: its typed spec over the process defaults.

    An openai judge takes its endpoint and model from the judge profile the run names
    (never from the spec), and the run's own key (``api_key``, read by the operator after
    the access check) or else the profile's key.
    """
    base = pipeline_settings()
    run = runspec.RunSpec.from_json(spec)
    if run is None:
        return base.judge, base.retrieval
    judge_config = base.judge
    if run.judge is not None:
        judge_config = judge_config.model_copy(update={"kind": run.judge.kind})
        if run.judge.kind == "openai":
            chosen = run.judge.openai or runspec.OpenAISpec()
            profile = runspec.judge_profiles().get(chosen.profile)
            if profile is None:
                raise registry_mod.PermanentError(
                    f"judge profile {chosen.profile!r} is not configured on the workers")
            update: dict[str, Any] = {
                "base_url": profile.base_url, "model": profile.model,
                "api_key_env": profile.api_key_env, "api_key_file": None,
                "api_key": pydantic.SecretStr(api_key) if api_key else None}
            # Within the profile's cap, never unlimited (a run's 0 is the cap).
            update["token_budget"] = profile.budget(chosen.token_budget)
            if chosen.timeout_seconds is not None:
                update["timeout_s"] = chosen.timeout_seconds
            judge_config = judge_config.model_copy(
                update={"openai": judge_config.openai.model_copy(update=update)})
    retrieval_config = base.retrieval
    if run.retrieval is not None:
        overrides = run.retrieval.model_dump(exclude_none=True)
        retrieval_config = RetrievalConfig.model_validate(
            {**base.retrieval.model_dump(), **overrides})
    return judge_config, retrieval_config


# -- parse_document ----------------------------------------------------------------------

@registry.task(flow.PARSE_DOCUMENT, payload=ParsePayload)
async def parse_document(ctx: registry_mod.TaskContext, payload: ParsePayload) -> None:
    """Parse, chunk and embed one document; store pages and chunks; advance its runs."""
    row = await ctx.pool.fetchrow(_Q["document_claim_bytes"], payload.digest)
    if row is None:
        raise registry_mod.PermanentError(f"document {payload.digest} does not exist")
    if row["state"] in FINISHED_DOCUMENT:
        async with ctx.fenced() as conn:  # parsed for another run meanwhile
            await flow.of(ctx.settings).advance_for_documents(conn, [payload.digest])
        return
    if row["raw"] is None:
        async with ctx.fenced() as conn:
            await runs.fail_document(conn, payload.digest, "missing",
                                     "the document's bytes are gone (staging expired or dropped)")
            await flow.of(ctx.settings).advance_for_documents(conn, [payload.digest])
        return
    settings = pipeline_settings().documents
    limits = pipeline_settings().limits
    try:  # in a child process under the parse limits (see src/citerun/worker/sandbox.py)
        outcome = await sandbox.run(limits.parse, sandbox.parse_job, bytes(row["raw"]),
                                    settings.max_bytes, settings.chunk_chars,
                                    settings.overlap_chars, limits,
                                    slots=limits.max_children)
    except sandbox.DocumentTooComplex as err:
        if err.transient and ctx.task.run_id is not None:
            # Over the wall clock on a busy node, killed from outside: this run's failure,
            # never the document's state (it stays staged; another run parses it again).
            async with ctx.fenced() as conn:
                await flow.of(ctx.settings).fail_for_run(conn, ctx.task.run_id, payload.digest,
                                                         err.reason, str(err))
            return
        outcome = sandbox.Rejected(err.reason, str(err))
    if isinstance(outcome, sandbox.Rejected):
        logger.info("document %s (%s) rejected: %s", row["filename"], payload.digest[:12],
                    outcome.message, extra={"action": "parse", "reason": outcome.reason})
        async with ctx.fenced() as conn:
            await runs.fail_document(conn, payload.digest, outcome.reason, outcome.message)
            await flow.of(ctx.settings).advance_for_documents(conn, [payload.digest])
        return
    parsed, chunks = outcome.document, list(outcome.chunks)
    the_embedder = await asyncio.to_thread(embedder)  # a first load takes seconds: off the loop
    vectors: Any = (await ctx.run_cpu(the_embedder.embed, [c.text for c in chunks])
                    if chunks else [])
    async with ctx.fenced() as conn:
        await conn.executemany(_Q["document_page_insert"], [
            (payload.digest, p.number, p.text, p.width, p.height, layout.line_rows(p.lines),
             p.image, p.label)
            for p in parsed.pages])
        await conn.executemany(_Q["chunk_insert"], [
            (payload.digest, c.ordinal, c.page_start, c.page_end, c.text,
             np.asarray(v, dtype=np.float32), the_embedder.name, the_embedder.dim)
            for c, v in zip(chunks, vectors)])
        await conn.execute(_Q["document_mark_parsed"], payload.digest, parsed.title,
                           list(parsed.authors), parsed.year, parsed.page_count, parsed.doi,
                           parsed.arxiv_id, outcome.written)
        await flow.of(ctx.settings).advance_for_documents(conn, [payload.digest])


# -- fetch_document ----------------------------------------------------------------------

class FetchError(registry_mod.PermanentError):
    """The document cannot be downloaded."""


@registry.task(flow.FETCH_DOCUMENT, payload=FetchPayload)
async def fetch_document(ctx: registry_mod.TaskContext, payload: FetchPayload) -> None:
    """Download a document of a run (http/https, size and time caps), then stage it.

    A download that cannot succeed (bad scheme, too large, a 4xx) or that failed on its
    last attempt is recorded as a failed document, so the run goes on and its citations
    get ``source_unavailable``; a transient failure is retried with backoff.
    """
    settings = pipeline_settings().documents
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


# -- extract_citations -------------------------------------------------------------------

#: What a report lists of the markers not taken (the first ones, in reading order).
MAX_SKIPPED = 1000

@registry.task(flow.EXTRACT_CITATIONS, payload=RunPayload)
async def extract_citations(ctx: registry_mod.TaskContext, payload: RunPayload) -> None:
    """Find the thesis's cited claims, map them to sources, enqueue one judge each."""
    docs = await ctx.pool.fetch(_Q["run_documents"], payload.run_id)
    thesis = next((d for d in docs if d["role"] == "thesis"), None)
    if thesis is None:
        raise registry_mod.PermanentError(f"run {payload.run_id} has no thesis")
    run = await runs.get(ctx.pool, payload.run_id)
    assert run is not None
    if thesis["state"] != DocumentState.PARSED:
        async with ctx.fenced() as conn:
            await runs.finish(conn, payload.run_id, RunState.FAILED,
                              f"the thesis {thesis['filename']} could not be read: "
                              f"{thesis['error']}")
        return
    sources = [d for d in docs if d["role"] == "source"]
    stored = await ctx.pool.fetchval(_Q["document_written"], thesis["digest"])
    written = formats.loads(stored) if stored is not None else None
    # The writer's library says which PDF is which item (its file fields): the source
    # takes the item's key and the metadata the library has for it.
    library = (formats.attached(written.library, [d["filename"] for d in sources])
               if written is not None else {})
    infos = [_source_info(d, library.get(d["filename"], ())) for d in sources]
    action = "extract"
    try:  # in child processes under the extract and match limits (see worker/sandbox.py)
        if written is not None and written.citations:  # what the files state: linear
            extraction = writer.to_extraction(written)
        else:  # a PDF, or a writer's file without citation fields: the rules of the page
            pages = await ctx.pool.fetch(_Q["document_pages_all"], thesis["digest"])
            extraction = await sandbox.extract([(p["number"], p["text"]) for p in pages],
                                               pipeline_settings().limits)
            if written is not None:  # located by the writer's paragraphs ("paragraph 34")
                extraction = formats.locate(dataclasses.replace(
                    extraction, skipped=written.skipped + extraction.skipped), written)
        # A claim is bounded where claims are made, the rest reported (issue 41).
        extraction = citations.bound_claims(extraction, pipeline_settings().limits.max_claim_chars)
        over = citations.claims_over((c.claim for c in extraction.citations),
                                     pipeline_settings().limits.max_claims_chars)
        if over is not None:
            raise sandbox.DocumentTooComplex(over)
        action = "match"
        mapped = await sandbox.map_citations(extraction, infos, pipeline_settings().match,
                                             pipeline_settings().limits)
    except sandbox.DocumentTooComplex as err:
        logger.info("thesis of run %s rejected: %s", payload.run_id, err,
                    extra={"action": action, "reason": err.reason})
        async with ctx.fenced() as conn:
            await runs.finish(conn, payload.run_id, RunState.FAILED,
                              f"the thesis {thesis['filename']} could not be "
                              f"{'read' if action == 'extract' else 'matched to its sources'}: "
                              f"{err}")
        return
    state = {d["digest"]: d for d in sources}
    judge_ids: list[int] = []
    # Identical (claim, source) work is done once per run (issue 41): the first citation
    # of a pair is judged, and its verdict is recorded for the others (judge_citation).
    leaders: set[tuple[str, str]] = set()
    first_pages: dict[str, str] = {}  # a source several naming citations name: read once

    async def first_page(conn: asyncpg.Connection, digest: str) -> str:
        if digest not in first_pages:
            first_pages[digest] = await conn.fetchval(_Q["document_first_page"], digest) or ""
        return first_pages[digest]

    async with ctx.fenced() as conn:
        # Kept to a bound: a paper of equations may have thousands of "[0, 1]".
        await conn.execute(_Q["run_set_skipped"], payload.run_id,
                           [dataclasses.asdict(s) for s in extraction.skipped[:MAX_SKIPPED]])
        for m in mapped:
            c = m.citation
            citation_id = await conn.fetchval(
                _Q["citation_insert"], payload.run_id, c.ordinal, c.key, c.marker, c.claim,
                c.page, c.locator, m.document_id, m.reference.text if m.reference else None,
                m.method, m.score, m.reason, c.location)
            if m.document_id is None:
                await _record(conn, citation_id, payload.run_id, judge.Verdict.UNRESOLVED_CITATION,
                              f"no source document matches the citation {c.marker!r}"
                              + (f" (reference: {m.reference.text[:200]})" if m.reference else
                                 " and the reference list has no entry for it"))
            elif state[m.document_id]["state"] != DocumentState.PARSED:
                doc = state[m.document_id]
                await _record(conn, citation_id, payload.run_id, judge.Verdict.SOURCE_UNAVAILABLE,
                              f"the source {doc['filename']} could not be read: {doc['error']}")
            elif c.names_work and (named := judge.judge_named(
                    c.names_work, state[m.document_id]["title"],
                    state[m.document_id]["authors"] or (),
                    await first_page(conn, m.document_id))):
                # It names its source ("called Chubby [8]") and the source is that work.
                await _record(conn, citation_id, payload.run_id, named.verdict, named.rationale,
                              confidence=named.confidence, evidence=_evidence_rows(named))
            elif (c.claim, m.document_id) not in leaders:
                leaders.add((c.claim, m.document_id))
                judge_ids.append(citation_id)
        await flow.of(ctx.settings).judge(conn, payload.run_id, judge_ids,
                                          priority=run["priority"])
        await runs.touch(conn, payload.run_id)


def _source_info(doc: asyncpg.Record, items: tuple[writer.LibraryItem, ...]
                 ) -> citations.SourceInfo:
    """A source as the mapping sees it: the parsed metadata, or the writer's library's
    where one item attaches the file (exact, as the reference manager holds it)."""
    item = items[0] if len(items) == 1 else None
    return citations.SourceInfo(
        document_id=doc["digest"], filename=doc["filename"],
        title=(item.title if item and item.title else doc["title"]),
        authors=(item.authors if item and item.authors else tuple(doc["authors"] or ())),
        year=(item.year if item and item.year else doc["year"]),
        explicit_keys=tuple(dict.fromkeys([*(doc["keys"] or ()), *(i.key for i in items)])),
        doi=(item.doi if item and item.doi else doc["doi"]), arxiv_id=doc["arxiv_id"])


async def _record(conn: asyncpg.Connection, citation_id: int, run_id: uuid.UUID,
                  verdict: judge.Verdict, rationale: str, *, confidence: float = 1.0,
                  evidence: list[dict[str, Any]] | None = None, judge_name: str = "citerun") -> None:
    await conn.execute(_Q["verdict_insert"], citation_id, run_id, str(verdict), confidence,
                       rationale, evidence or [], judge_name)


def _evidence_rows(judgement: judge.Judgement) -> list[dict[str, Any]]:
    """A judgement's evidence as the ``verdicts.evidence`` column stores it."""
    return [{"quote": e.quote, "page_start": e.page_start, "page_end": e.page_end,
             "score": round(float(e.score), 4), "chunk_id": e.chunk_id}
            for e in judgement.evidence]


# -- judge_citation ----------------------------------------------------------------------

class JudgeSpendExhausted(registry_mod.PermanentError):
    """The run's namespace has spent its judge profile's tokens for the period."""


async def _namespace_tokens_left(pool: asyncpg.Pool, spec: Any, tenant: str) -> int | None:
    """Tokens the namespace ``tenant`` may still spend this period on the judge profile the
    run names (``maxTokensPerNamespace`` per ``budgetPeriod``); None for a run without one
    (the embedded judge, a local run). Raises :class:`JudgeSpendExhausted` when none are
    left. Runs judging at once may each finish the request they started (the overshoot
    is at most the worker's concurrency times one answer), as with a run's own cap."""
    run = runspec.RunSpec.from_json(spec)
    if run is None or run.judge is None or run.judge.kind != "openai":
        return None
    name = (run.judge.openai or runspec.OpenAISpec()).profile
    profile = runspec.judge_profiles().get(name)
    if profile is None:
        return None  # _run_config refuses the run
    spent = int(await pool.fetchval(_Q["tenant_profile_tokens"], tenant, name,
                                    profile.budget_period))
    left = profile.max_tokens_per_namespace - spent
    if left <= 0:
        raise JudgeSpendExhausted(
            f"namespace {tenant!r} has spent {spent:,} tokens on judge profile {name!r} "
            f"this {profile.budget_period}, its budget of {profile.max_tokens_per_namespace:,}")
    return left


def judge_scope(tenant: str, web_owner: str | None) -> str:
    """Whose the judge's answers and HTTP client are: the run's tenant (its namespace on a
    cluster), and within it the web user whose run it is: the web service files every
    user under one tenant (``web.tenant``, or ``web.namespace`` on a cluster), and a user
    who got another's cached answers at zero tokens learnt what they had asked (issue 41)."""
    return tenant if web_owner is None else f"{tenant}\0web-user\0{web_owner}"


@registry.task(flow.JUDGE_CITATION, payload=JudgePayload)
async def judge_citation(ctx: registry_mod.TaskContext, payload: JudgePayload) -> None:
    """Retrieve the cited source's passages for the claim and judge the citation."""
    row = await ctx.pool.fetchrow(_Q["citation_get"], payload.citation_id)
    if row is None:
        raise registry_mod.PermanentError(f"citation {payload.citation_id} does not exist")
    judge_config, retrieval_config = _run_config(
        row["spec"] or {}, await ctx.pool.fetchval(_Q["run_judge_key"], row["run_id"]))
    # Bounded again here (a claim stored before the extraction bounded it): what the
    # judge holds grows with the claim's length (issue 41).
    claim = citations.cut_claim(row["claim"], pipeline_settings().limits.max_claim_chars)
    the_embedder = await asyncio.to_thread(embedder)  # a first load takes seconds: off the loop
    finder = retrieval.Retriever(the_embedder, retrieval_config, _bm25_cache)
    passages = await finder.search(ctx.pool, claim, [row["digest"]])
    scope = judge_scope(row["tenant"], row["web_owner"])
    limit = judge_config.openai.token_budget
    left = await _namespace_tokens_left(ctx.pool, row["spec"] or {}, row["tenant"])
    if left is not None:  # the namespace's budget for the period, on top of the run's
        limit = min(limit if limit is not None else left + row["tokens_spent"],
                    left + row["tokens_spent"])
    the_judge = judge.make_judge(judge_config, the_embedder, client=_http_client(scope),
                                 budget=judge.TokenBudget(limit, row["tokens_spent"]),
                                 cache=judge.PostgresAnswerCache(ctx.pool, scope))
    try:
        verdict = await the_judge.judge(claim, passages)
    except judge.BudgetExhausted as err:
        raise registry_mod.PermanentError(str(err)) from err
    evidence = _evidence_rows(verdict)
    async with ctx.fenced() as conn:
        run = await runs.lock(conn, row["run_id"])
        await _record(conn, payload.citation_id, row["run_id"], verdict.verdict,
                      verdict.rationale, confidence=float(verdict.confidence),
                      evidence=evidence, judge_name=judge_config.kind)
        # The run's other citations of the same claim and source take this verdict: they
        # were not given a judge task of their own (extract_citations).
        await conn.execute(_Q["verdict_copy_same_pair"], payload.citation_id)
        if verdict.tokens_used:
            await conn.execute(_Q["run_add_tokens"], row["run_id"], verdict.tokens_used)
        if await conn.fetchval(_Q["run_unjudged_count"], row["run_id"]) == 0:
            await flow.of(ctx.settings).finalize(conn, row["run_id"],
                                                 priority=run["priority"] if run else 0)
        await runs.touch(conn, row["run_id"])


# -- finalize_run ------------------------------------------------------------------------

@registry.task(flow.FINALIZE_RUN, payload=RunPayload)
async def finalize_run(ctx: registry_mod.TaskContext, payload: RunPayload) -> None:
    """Build the report (JSON and HTML, see :mod:`citerun.pipeline.report`), store it,
    and mark the run succeeded."""
    run = await runs.get(ctx.pool, payload.run_id)
    if run is None:
        raise registry_mod.PermanentError(f"run {payload.run_id} does not exist")
    docs = await ctx.pool.fetch(_Q["run_documents"], payload.run_id)
    rows = await ctx.pool.fetch(_Q["run_report_rows"], payload.run_id)
    pages: dict[tuple[str, int], asyncpg.Record] = {}
    for digest, numbers in report.evidence_pages(rows).items():
        for page in await ctx.pool.fetch(_Q["document_pages_evidence"], digest, numbers):
            pages[(digest, page["number"])] = page
    # The whole text of the sources a quoting claim cites: each quotation is searched for.
    source_pages = {digest: [(p["label"], p["text"]) for p in
                             await ctx.pool.fetch(_Q["document_pages_labelled"], digest)]
                    for digest in report.quoting_sources(rows)}
    built = await ctx.run_cpu(report.build, run, docs, rows, pages, source_pages)
    html = await ctx.run_cpu(report.render_html, built, report.page_images(pages))
    async with ctx.fenced() as conn:
        await conn.execute(_Q["report_insert"], payload.run_id,
                           json.loads(built.model_dump_json()), html)
        await runs.finish(conn, payload.run_id, RunState.SUCCEEDED)


# -- dead-lettered tasks -----------------------------------------------------------------

async def on_dead(pool: asyncpg.Pool, task_ids: list[int]) -> None:
    """A pipeline task ran out of attempts: the flow decides what that means for its run."""
    await flow.of(core_settings()).on_dead(pool, task_ids)


@functools.cache
def core_settings() -> Settings:
    """The process's core settings (queue attempts), read once."""
    return Settings()


registry.on_dead = on_dead
