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
import collections
import dataclasses
import functools
import http.cookiejar
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import asyncpg
import httpx
import numpy as np
import pydantic

from citerun.core import errors, flow, queue, runs, runspec, sql
from citerun.core.flow import JudgePayload, ParsePayload, RunPayload
from citerun.worker import registry as registry_mod
from citerun.worker import dead, sandbox, steps
from citerun.pipeline import document, embed, fetched, judge, memory, recipe, report, retrieval
from citerun.pipeline.document import Document
from citerun.core.settings import Settings
from citerun.core.states import FINISHED_DOCUMENT, DocumentState, RunState
from citerun.pipeline.settings import PipelineSettings, RetrievalConfig

logger = logging.getLogger(__name__)

_Q = sql.load("citerun.worker", "tasks.sql")

registry = registry_mod.Registry()


# -- per-process caches (rebuilt from Postgres or the package on a miss) -----------------

@functools.lru_cache(maxsize=2)
def embedder(config: embed.EmbeddingConfig) -> embed.Embedder:
    """The process's embedder (one per configuration: the worker's settings have one)."""
    return embed.make_embedder(config)


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


#: Run specs parsed once per run in a process (a run's spec never changes: a new
#: generation is a new run), for the judge of each of its citations.
_specs: collections.OrderedDict[uuid.UUID, runspec.RunSpec | None] = collections.OrderedDict()


def _run_spec(run_id: uuid.UUID, spec: Any) -> runspec.RunSpec | None:
    if run_id not in _specs:
        _specs[run_id] = runspec.RunSpec.from_json(spec)
        while len(_specs) > 256:
            _specs.popitem(last=False)
    return _specs[run_id]


def _run_config(base: PipelineSettings, profiles: Mapping[str, runspec.JudgeProfile],
                run: runspec.RunSpec | None,
                api_key: str | None = None) -> tuple[judge.JudgeConfig, RetrievalConfig]:
    """The run's judge and retrieval settings: its typed spec over the process defaults.

    An openai judge takes its endpoint and model from the judge profile the run names
    among the worker's ``profiles`` (never from the spec), and the run's own key
    (``api_key``, read by the operator after the access check) or else the profile's key.
    """
    if run is None:
        return base.judge, base.retrieval
    judge_config = base.judge
    if run.judge is not None:
        judge_config = judge_config.model_copy(update={"kind": run.judge.kind})
        if run.judge.kind == "openai":
            chosen = run.judge.openai or runspec.OpenAISpec()
            profile = profiles.get(chosen.profile)
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
    try:  # in child processes under the parse (and OCR) limits (see worker/sandbox.py)
        outcome = await steps.read_source(bytes(row["raw"]), ctx.pipeline.limits,
                                          ctx.pipeline.documents)
    except sandbox.DocumentTooComplex as err:
        if err.transient and ctx.task.run_id is not None:
            # Over the wall clock on a busy node, killed from outside: this run's failure,
            # never the document's state (it stays staged; another run parses it again).
            async with ctx.fenced() as conn:
                await flow.of(ctx.settings).fail_for_run(conn, ctx.task.run_id, payload.digest,
                                                         err.reason, str(err))
            return
        outcome = steps.Rejected(err.reason, str(err))
    if isinstance(outcome, steps.Rejected):
        logger.info("document %s (%s) rejected: %s", row["filename"], payload.digest[:12],
                    outcome.message, extra={"action": "parse", "reason": outcome.reason})
        async with ctx.fenced() as conn:
            await runs.fail_document(conn, payload.digest, outcome.reason, outcome.message)
            await flow.of(ctx.settings).advance_for_documents(conn, [payload.digest])
        return
    store = await stored(ctx, payload.digest, outcome)
    async with ctx.fenced() as conn:
        await store(conn)
        await flow.of(ctx.settings).advance_for_documents(conn, [payload.digest])


async def stored(ctx: registry_mod.TaskContext, digest: str, parsed: steps.Parsed
                 ) -> Callable[[asyncpg.Connection], Awaitable[None]]:
    """A parsed document's chunks embedded (off the loop), and what stores its pages and
    chunks and marks it parsed, to call in the task's fenced transaction (parse_document,
    find_source)."""
    read, chunks = parsed.document, list(parsed.chunks)
    # A first load takes seconds: off the loop.
    the_embedder = await asyncio.to_thread(embedder, ctx.pipeline.embedding)
    vectors: Any = (await ctx.run_cpu(the_embedder.embed, [c.text for c in chunks])
                    if chunks else [])

    async def store(conn: asyncpg.Connection) -> None:
        await conn.executemany(_Q["document_page_insert"], [
            (digest, *document.page_row(p)) for p in read.pages])
        await conn.executemany(_Q["chunk_insert"], [
            (digest, c.ordinal, c.page_start, c.page_end, c.text,
             np.asarray(v, dtype=np.float32), the_embedder.name, the_embedder.dim)
            for c, v in zip(chunks, vectors)])
        await conn.execute(_Q["document_mark_parsed"], digest, read.title,
                           list(read.authors), read.year, read.page_count, read.doi,
                           read.arxiv_id, document.written_json(read))
    return store


# -- extract_citations -------------------------------------------------------------------

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
    stored = Document.from_rows({**thesis, "written": await ctx.pool.fetchval(
        _Q["document_written"], thesis["digest"])})
    # The pages are read by the rules of the page: not needed where the files state it all.
    pages = (() if stored.written is not None and stored.written.citations else
             await ctx.pool.fetch(_Q["document_pages_all"], thesis["digest"]))
    stored = dataclasses.replace(stored, pages=tuple(document.page_from_row(p) for p in pages))
    given = [document.Source(d["digest"], d["filename"], Document.from_rows(d),
                           keys=tuple(d["keys"] or ()), read=d["state"] == DocumentState.PARSED,
                           error=d["error"]) for d in docs if d["role"] == "source"]
    limits, action = ctx.pipeline.limits, "extract"
    try:  # in child processes under the extract and match limits (see worker/sandbox.py)
        extraction = await steps.extracted(stored, limits)
        action = "match"
        mapped = await steps.mapped(extraction, recipe.sources(stored, given),
                                    ctx.pipeline.match, limits)
    except sandbox.DocumentTooComplex as err:
        logger.info("thesis of run %s rejected: %s", payload.run_id, err,
                    extra={"action": action, "reason": err.reason})
        async with ctx.fenced() as conn:
            await runs.finish(conn, payload.run_id, RunState.FAILED,
                              f"the thesis {thesis['filename']} could not be "
                              f"{'read' if action == 'extract' else 'matched to its sources'}: "
                              f"{err}")
        return
    # A source that citations name by its work ("called Chubby [8]"): its first page.
    named = {m.document_id for m in mapped if m.citation.names_work and m.document_id}
    by_id = {s.id: dataclasses.replace(s, document=dataclasses.replace(s.document, pages=(
        document.Page(1, await ctx.pool.fetchval(_Q["document_first_page"], s.id) or ""),)))
        if s.id in named else s for s in given}
    judge_ids: list[int] = []
    verdicts = recipe.settle(mapped, by_id)
    # The works without a PDF a run that asked for them looks for (issue 51).
    wanted, not_looked_for = fetching.works_wanted(
        ctx.pipeline.openaccess.enabled, run["spec"], mapped, verdicts, stored.written)
    async with ctx.fenced() as conn:
        # Kept to a bound: a paper of equations may have thousands of "[0, 1]".
        await conn.execute(_Q["run_set_skipped"], payload.run_id, not_looked_for + [
            dataclasses.asdict(s) for s in extraction.skipped[:memory.MAX_SKIPPED]])
        # Identical (claim, source) work is done once per run (issue 41): the first citation
        # of a pair is judged, and its verdict is recorded for the others (judge_citation).
        for n, (m, settled) in enumerate(zip(mapped, verdicts)):
            c = m.citation
            citation_id = await conn.fetchval(
                _Q["citation_insert"], payload.run_id, c.ordinal, c.key, c.marker, c.claim,
                c.page, c.locator, m.document_id, m.reference.text if m.reference else None,
                m.method, m.score, m.reason, c.location,
                wanted[n].work_key if n in wanted else None)
            if n in wanted:  # its verdict waits for its work's find_source
                continue
            if isinstance(settled, judge.Judgement):
                await _record(conn, citation_id, payload.run_id, settled)
            elif settled:
                judge_ids.append(citation_id)
        await flow.of(ctx.settings).judge(
            conn, payload.run_id, judge_ids, priority=run["priority"],
            works=await fetching.want(conn, payload.run_id, wanted.values()))
        await runs.touch(conn, payload.run_id)


async def _record(conn: asyncpg.Connection, citation_id: int, run_id: uuid.UUID,
                  verdict: judge.Judgement, judge_name: str = "citerun") -> None:
    await conn.execute(_Q["verdict_insert"], citation_id, run_id, str(verdict.verdict),
                       float(verdict.confidence), verdict.rationale,
                       memory.evidence_rows(verdict), judge_name)


# -- judge_citation ----------------------------------------------------------------------

class JudgeSpendExhausted(registry_mod.PermanentError):
    """The run's namespace has spent its judge profile's tokens for the period."""


class RunBudgetExhausted(registry_mod.PermanentError):
    """The run has spent its judge's token budget."""



async def _namespace_tokens_left(pool: asyncpg.Pool,
                                 profiles: Mapping[str, runspec.JudgeProfile],
                                 run: runspec.RunSpec | None, tenant: str) -> int | None:
    """Tokens the namespace ``tenant`` may still spend this period on the judge profile the
    run names (one of ``profiles``, ``maxTokensPerNamespace`` per ``budgetPeriod``); None
    for a run without one (the embedded judge, a local run). Raises
    :class:`JudgeSpendExhausted` when none are left. Spend is charged to the day it is
    recorded (``run_add_tokens``), not to the run's creation (issue 48). Judges of the
    namespace in flight when its spend reaches the budget may each finish the citation
    they started: the overshoot in a period is at most the workers' concurrency times one
    citation's answers (one, two when the first was invalid), wherever midnight falls."""
    if run is None or run.judge is None or run.judge.kind != "openai":
        return None
    name = (run.judge.openai or runspec.OpenAISpec()).profile
    profile = profiles.get(name)
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
    spec = _run_spec(row["run_id"], row["spec"] or {})
    judge_config, retrieval_config = _run_config(
        ctx.pipeline, ctx.judge_profiles, spec,
        await ctx.pool.fetchval(_Q["run_judge_key"], row["run_id"]))
    # A first load takes seconds: off the loop.
    the_embedder = await asyncio.to_thread(embedder, ctx.pipeline.embedding)
    finder = retrieval.Retriever(the_embedder, retrieval_config, _bm25_cache)
    scope = judge_scope(row["tenant"], row["web_owner"])
    limit = judge_config.openai.token_budget
    left = await _namespace_tokens_left(ctx.pool, ctx.judge_profiles, spec, row["tenant"])
    if left is not None:  # the namespace's budget for the period, on top of the run's
        limit = min(limit if limit is not None else left + row["tokens_spent"],
                    left + row["tokens_spent"])
    the_judge = judge.make_judge(judge_config, the_embedder, client=_http_client(scope),
                                 budget=judge.TokenBudget(limit, row["tokens_spent"]),
                                 cache=judge.PostgresAnswerCache(ctx.pool, scope))
    try:
        verdict = await recipe.judge(the_judge, row["claim"], lambda claim: finder.search(
            ctx.pool, claim, [row["digest"]]), ctx.pipeline.limits)
    except judge.BudgetExhausted as err:
        raise RunBudgetExhausted(str(err)) from err
    verdict = fetched.modest(verdict, row["fetched"])  # an abstract alone: issue 51
    async with ctx.fenced() as conn:
        run = await runs.lock(conn, row["run_id"])
        await _record(conn, payload.citation_id, row["run_id"], verdict,
                      judge_name=judge_config.kind)
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
    fetches = await ctx.pool.fetch(_Q["run_fetches"], payload.run_id)  # issue 51
    built = await ctx.run_cpu(report.build, run, docs, rows, pages, source_pages, fetches)
    html = await ctx.run_cpu(report.render_html, built, report.page_images(pages))
    async with ctx.fenced() as conn:
        await conn.execute(_Q["report_insert"], payload.run_id,
                           json.loads(built.model_dump_json()), html)
        await runs.finish(conn, payload.run_id, RunState.SUCCEEDED)


# -- dead-lettered tasks -----------------------------------------------------------------

async def _judge_not_checked(pool: asyncpg.Pool, settings: Settings, row: asyncpg.Record) -> bool:
    """A judge task that died: its citation (and the run's others of the same claim and
    source) get ``not_checked`` naming the file and the reason, and the run goes on to
    its report. False where the task stops the run instead (a budget, an unknown
    citation)."""
    code = errors.code_of(row["last_error"])
    citation_id = (row["payload"] or {}).get("citation_id")
    if code in dead.RUN_WIDE_CODES or not isinstance(citation_id, int):
        return False
    async with pool.acquire() as conn, conn.transaction():
        run = await runs.lock(conn, row["run_id"])
        citation = await conn.fetchrow(_Q["citation_source_file"], citation_id)
        if run is None or citation is None or run["state"] != RunState.RUNNING:
            return citation is not None
        await conn.execute(_Q["verdict_insert"], citation_id, row["run_id"],
                           str(judge.Verdict.NOT_CHECKED), 1.0,
                           dead.not_checked_reason(citation["filename"], code), [], "citerun")
        await conn.execute(_Q["verdict_copy_same_pair"], citation_id)
        logger.warning("citation %s of run %s not checked against %s (%s)", citation_id,
                       row["run_id"], citation["filename"], code,
                       extra={"action": "not_checked", "reason": code})
        if await conn.fetchval(_Q["run_unjudged_count"], row["run_id"]) == 0:
            await flow.of(settings).finalize(conn, row["run_id"], priority=run["priority"])
        await runs.touch(conn, row["run_id"])
    return True


async def on_dead(pool: asyncpg.Pool, task_ids: list[int], settings: Settings) -> None:
    """A pipeline task ran out of attempts. A judge task costs only its citation
    (``not_checked``, issue 46); for the others the flow decides what it means for the
    run (a dead parse fails its document for the run; extract and finalize fail it)."""
    rest: list[int] = []
    for task_id in task_ids:
        row = await queue.get(pool, task_id)
        if (row is not None and row["run_id"] is not None and row["kind"] == flow.JUDGE_CITATION
                and await _judge_not_checked(pool, settings, row)):
            continue
        if (row is not None and row["run_id"] is not None and row["kind"] == flow.FIND_SOURCE
                and await fetching.find_dead(pool, settings, row)):
            continue  # a work not looked up costs only its citations (issue 51)
        rest.append(task_id)
    if rest:
        await flow.of(settings).on_dead(pool, rest)


registry.on_dead = on_dead

# The handlers of fetch_document and find_source, on this registry (they use its helpers).
from citerun.worker import fetching  # noqa: E402
