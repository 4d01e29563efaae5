"""A ``citerun verify`` run in Postgres: started (a run whose verify died first is
cancelled), followed to its end with a progress bar (reconnecting while the database
restarts), cancelled, its report saved where ``--out`` says, and summed up."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from citerun.cli import gate
from citerun.core import db, errors, flow, retry, runs, runspec, sql
from citerun.core.settings import Settings
from citerun.core.states import RunState

if TYPE_CHECKING:  # the types of the verify's inputs; citerun.cli.verify imports this module
    from citerun.cli.verify import ReportPaths, ThesisInput
    from citerun.local.workers import LocalWorkers

_Q = sql.load("citerun.cli", "verify_run.sql")


def process_identity(pid: int) -> str | None:
    """``pid`` plus its start time (so a reused pid is another process), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return f"{pid}:{fields[19]}"


async def cancel_orphans(pool: asyncpg.Pool) -> list[uuid.UUID]:
    """Cancel unfinished local runs whose verify process is gone (all of its processes
    were killed at once, so none could cancel the run)."""
    cancelled = []
    for row in await pool.fetch(_Q["local_runs_open"]):
        owner = row["local"] or {}
        pid = int(owner.get("pid", 0))
        if pid and process_identity(pid) == owner.get("process"):
            continue  # that verify is still running
        await runs.cancel(pool, row["id"], f"interrupted: citerun verify (pid {pid}) is gone")
        cancelled.append(row["id"])
    return cancelled


async def cancel_run(url: str, run_id: uuid.UUID, reason: str) -> None:
    """Cancel the run (its open tasks and its state); a finished run stays as it is."""
    pool = await db.create_pool(url, min_size=1, max_size=1)
    try:
        await runs.cancel(pool, run_id, reason)
    finally:
        await pool.close()


async def start_run(url: str, thesis: ThesisInput, sources: list[Path],
                    keys: dict[str, list[str]], *, settings: Settings,
                    fetch_sources: bool = False) -> uuid.UUID:
    await db.migrate(url)
    pool = await db.create_pool(url, min_size=1, max_size=2)
    try:
        await cancel_orphans(pool)
        staged_thesis = await runs.stage_document(pool, thesis.data, thesis.filename)
        staged_sources = []
        for path in sources:
            doc = await runs.stage_document(pool, path.read_bytes(), path.name)
            staged_sources.append(runs.StagedDocument(doc.digest, doc.filename,
                                                      tuple(keys.get(path.name, ()))))
        run_id = uuid.uuid4()
        await flow.create(pool, runs.RunRequest(
            id=run_id, name=thesis.path.stem, thesis=staged_thesis,
            sources=tuple(staged_sources),
            spec={"thesis": thesis.filename, "sources": [s.name for s in sources],
                  "local": {"pid": os.getpid(),
                            "process": process_identity(os.getpid())},
                  **({runspec.FETCH_SOURCES: True} if fetch_sources else {})}),
            settings=settings)
        return run_id
    finally:
        await pool.close()

#: How long ``citerun verify`` waits for its database to come back (a restart) while it
#: follows the run, reconnecting under :data:`citerun.core.db.RECONNECT` as the workers do.
FOLLOW_RECONNECT_S = 30.0


async def follow(url: str, run_id: uuid.UUID, workers: LocalWorkers, console: Console,
                 timeout_s: float, *, reconnect_s: float = FOLLOW_RECONNECT_S) -> asyncpg.Record:
    """Show a progress bar until the run ends; return its final progress row.

    A database that goes away (a restart) is waited for up to ``reconnect_s``: the
    workers reconnect too, so the run goes on. Longer than that ends the verify with one
    line (the run is then cancelled on the way out, or by the next verify once the
    database is back).
    """
    conn: asyncpg.Connection | None = None

    async def drop() -> None:
        nonlocal conn
        if conn is not None:
            try:
                await conn.close(timeout=2)
            except (*db.UNAVAILABLE, asyncpg.PostgresError):
                conn.terminate()
            conn = None

    async def poll() -> asyncpg.Record | None:
        nonlocal conn
        try:
            if conn is None or conn.is_closed():
                conn = await db.connect(url)
            return await runs.progress(conn, run_id)
        except db.UNAVAILABLE:
            await drop()
            raise

    deadline = time.monotonic() + timeout_s
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, transient=False) as bar:
            docs = bar.add_task("parsing documents", total=None)
            judged = bar.add_task("judging citations", total=None)
            while True:
                try:
                    row = await retry.retrying(db.RECONNECT, f"following run {run_id}", poll,
                                               errors=db.UNAVAILABLE,
                                               give_up_after_s=reconnect_s)
                except db.UNAVAILABLE as err:
                    problem = " ".join(str(err).split()) or type(err).__name__
                    raise errors.CiterunError(
                        f"the database did not come back within {reconnect_s:.0f}s while "
                        f"following run {run_id} ({problem}); the run is cancelled when the "
                        "database is back (by the next citerun verify)") from err
                if row is None:
                    raise errors.CiterunError(f"run {run_id} is gone from the database")
                bar.update(docs, total=row["documents"], completed=row["documents_done"])
                bar.update(judged, total=row["citations"] or None, completed=row["judged"])
                if row["state"] != RunState.RUNNING:
                    return row
                if len(workers.dead()) == len(workers.procs):
                    raise errors.CiterunError(
                        f"every local worker exited; their logs end with:\n{workers.tails()}")
                if time.monotonic() > deadline:
                    raise errors.CiterunError(f"the run did not finish within {timeout_s:.0f}s")
                await asyncio.sleep(0.3)
    finally:
        await drop()


async def save_report(url: str, run_id: uuid.UUID, paths: ReportPaths) -> None:
    conn = await db.connect(url)
    try:
        row = await runs.report(conn, run_id)
    finally:
        await conn.close()
    if row is None:
        raise errors.CiterunError(f"run {run_id} finished without a report")
    import json
    try:
        paths.html.parent.mkdir(parents=True, exist_ok=True)
        write_file(paths.html, row["html"])
        write_file(paths.json, json.dumps(row["json"], indent=2, ensure_ascii=False))
    except OSError as err:
        raise errors.CiterunError(
            f"run {run_id} succeeded, but its report could not be written to {paths.html}: "
            f"{err.strerror or err}") from err


def write_file(path: Path, text: str) -> None:
    """``text`` at ``path``, never written through what is there (issue 48).

    A new file is made in ``path``'s directory (``O_CREAT | O_EXCL``: never an existing
    file or a link) and renamed over ``path``: a symbolic or hard link at ``path`` is
    replaced, the file it leads to untouched. The file has the mode a plain ``open`` would
    give it (0666 less the umask); a write that fails leaves nothing behind.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            mask = os.umask(0)
            os.umask(mask)
            os.fchmod(file.fileno(), 0o666 & ~mask)
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def print_summary(console: Console, report_json: dict[str, object]) -> None:
    citations = report_json.get("citations", [])
    assert isinstance(citations, list)
    table = Table(title="Citations", show_lines=False)
    for column in ("#", "marker", "where", "verdict", "source"):
        table.add_column(column)
    for c in citations[:100]:
        source = c.get("source") or {}  # null for an unresolved citation
        table.add_row(str(c.get("ordinal")), str(c.get("marker")), gate.where(c),
                      str(c.get("verdict")), str(source.get("filename", "-")))
    console.print(table)


def skipped_lines(report_json: dict[str, Any]) -> list[str]:
    """What the run did not take as citations, one line per reason (for stderr)."""
    skipped = (report_json.get("thesis") or {}).get("skipped") or []
    counts = collections.Counter(str(s.get("reason")) for s in skipped)
    return [f"citerun verify: not taken as citations: {n} x {reason}" for reason, n in
            counts.most_common()]


def fetched_lines(report_json: dict[str, Any]) -> list[str]:
    """The cited works without a PDF the run looked for (``--fetch-sources``): how many
    were found as a PDF, as an abstract only, or not at all, one line each (for stderr)."""
    works = report_json.get("fetched") or []
    if not works:
        return []
    counts = collections.Counter(str(w.get("status")) for w in works)
    lines = [f"citerun verify: looked for {len(works)} cited work(s) without a PDF: "
             f"{counts['pdf']} found as an open-access PDF, {counts['abstract']} as an "
             f"abstract only, {counts['not_found']} not found"]
    for w in works:
        source = w.get("source") or {}
        if w.get("status") == "not_found":
            what = f"not found (tried: {'; '.join(w.get('tried') or []) or 'nothing to look up'})"
        else:
            kind = "open-access PDF" if w.get("status") == "pdf" else "abstract only"
            about = ", ".join(str(v) for v in (source.get("service"), source.get("licence"))
                              if v)
            what = f"{kind}" + (f" ({about})" if about else "") + (
                f" {source['url']}" if source.get("url") else "")
        lines.append(f"  {w.get('key')}: {what}")
    return lines

