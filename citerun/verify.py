"""``citerun verify``: one thesis, its sources, local workers, one report.

The same pipeline as on a cluster: the CLI stages the PDFs in Postgres, creates a run,
starts ``--workers`` ordinary ``citerun worker`` processes against the same database and
follows the run's progress until it ends. Documents are content-addressed, so verifying
the same files again reuses what was parsed before.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from citerun import db, errors, flow, runs
from citerun.settings import Settings


class UsageError(errors.CiterunError):
    """The command line is not usable."""


@dataclass(frozen=True)
class VerifyResult:
    run_id: uuid.UUID
    state: str
    html_path: Path | None
    json_path: Path | None
    verdicts: dict[str, int]
    error: str | None


def collect_sources(items: list[str]) -> list[Path]:
    """PDF files named directly or found in named directories (sorted, no duplicates)."""
    found: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir()
                                if p.is_file() and p.suffix.lower() == ".pdf"))
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"source {item!r} is neither a file nor a directory")
    unique = list(dict.fromkeys(p.resolve() for p in found))
    if not unique:
        raise UsageError(f"no PDF sources found in {', '.join(items)}")
    return unique


def check_arguments(thesis: str, sources: list[str], workers: int) -> tuple[Path, list[Path]]:
    thesis_path = Path(thesis)
    if not thesis_path.is_file():
        raise UsageError(f"thesis {thesis!r} is not a file")
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    source_paths = [p for p in collect_sources(sources) if p != thesis_path.resolve()]
    return thesis_path, source_paths


def parse_keys(pairs: list[str]) -> dict[str, list[str]]:
    """``KEY=FILE`` pairs -> {file name: [keys]} (explicit citation keys)."""
    keys: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, name = pair.partition("=")
        if not sep or not key or not name:
            raise UsageError(f"--key expects KEY=FILE, got {pair!r}")
        keys.setdefault(Path(name).name, []).append(key)
    return keys


async def start_run(url: str, thesis: Path, sources: list[Path],
                    keys: dict[str, list[str]]) -> uuid.UUID:
    await db.migrate(url)
    pool = await db.create_pool(url, min_size=1, max_size=2)
    try:
        staged_thesis = await runs.stage_document(pool, thesis.read_bytes(), thesis.name)
        staged_sources = []
        for path in sources:
            doc = await runs.stage_document(pool, path.read_bytes(), path.name)
            staged_sources.append(runs.StagedDocument(doc.digest, doc.filename,
                                                      tuple(keys.get(path.name, ()))))
        run_id = uuid.uuid4()
        await flow.create(pool, runs.RunRequest(
            id=run_id, name=thesis.stem, thesis=staged_thesis, sources=tuple(staged_sources),
            spec={"thesis": thesis.name, "sources": [s.name for s in sources]}))
        return run_id
    finally:
        await pool.close()


class LocalWorkers:
    """``n`` worker processes on this machine, logging to ``log_dir``."""

    def __init__(self, url: str, n: int, log_dir: Path, concurrency: int) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.logs = [log_dir / f"worker-{i}.log" for i in range(n)]
        env = {**os.environ, "CITERUN_DATABASE_URL": url,
               "CITERUN_WORKER__CONCURRENCY": str(concurrency)}
        self.procs = []
        for i, log in enumerate(self.logs):
            with open(log, "wb") as out:
                self.procs.append(subprocess.Popen(
                    # -P: the caller's directory (perhaps citerun's own checkout, whose
                    # operator/ folder would shadow the standard library) stays off sys.path.
                    [sys.executable, "-P", "-m", "citerun", "--log-level", "WARNING", "worker"],
                    env={**env, "CITERUN_WORKER__ID": f"local-{os.getpid()}-{i}"},
                    stdout=out, stderr=subprocess.STDOUT))

    def dead(self) -> list[int]:
        return [p.returncode for p in self.procs if p.poll() is not None]

    def tails(self, lines: int = 20) -> str:
        return "\n".join(f"--- {log}\n" + "\n".join(
            log.read_text(errors="replace").splitlines()[-lines:]) for log in self.logs)

    def stop(self, timeout: float = 30) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


async def follow(url: str, run_id: uuid.UUID, workers: LocalWorkers, console: Console,
                 timeout_s: float) -> asyncpg.Record:
    """Show a progress bar until the run ends; return its final progress row."""
    conn = await db.connect(url)
    deadline = time.monotonic() + timeout_s
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, transient=False) as bar:
            docs = bar.add_task("parsing documents", total=None)
            judged = bar.add_task("judging citations", total=None)
            while True:
                row = await runs.progress(conn, run_id)
                assert row is not None
                bar.update(docs, total=row["documents"], completed=row["documents_done"])
                bar.update(judged, total=row["citations"] or None, completed=row["judged"])
                if row["state"] not in ("pending", "running"):
                    return row
                if len(workers.dead()) == len(workers.procs):
                    raise errors.CiterunError(
                        f"every local worker exited; their logs end with:\n{workers.tails()}")
                if time.monotonic() > deadline:
                    raise errors.CiterunError(f"the run did not finish within {timeout_s:.0f}s")
                await asyncio.sleep(0.3)
    finally:
        await conn.close()


async def save_report(url: str, run_id: uuid.UUID, html_path: Path) -> Path:
    conn = await db.connect(url)
    try:
        row = await runs.report(conn, run_id)
    finally:
        await conn.close()
    if row is None:
        raise errors.CiterunError(f"run {run_id} finished without a report")
    import json
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(row["html"], encoding="utf-8")
    json_path = html_path.with_suffix(".json")
    json_path.write_text(json.dumps(row["json"], indent=2, ensure_ascii=False), encoding="utf-8")
    return json_path


def print_summary(console: Console, report_json: dict[str, object]) -> None:
    citations = report_json.get("citations", [])
    assert isinstance(citations, list)
    table = Table(title="Citations", show_lines=False)
    for column in ("#", "marker", "page", "verdict", "source"):
        table.add_column(column)
    for c in citations[:100]:
        source = c.get("source") or {}  # null for an unresolved citation
        table.add_row(str(c.get("ordinal")), str(c.get("marker")), str(c.get("page")),
                      str(c.get("verdict")), str(source.get("filename", "-")))
    console.print(table)


def verify(settings: Settings, url: str, thesis: Path, sources: list[Path], *,
           keys: dict[str, list[str]], out: Path, workers: int, concurrency: int,
           timeout_s: float, console: Console) -> VerifyResult:
    run_id = asyncio.run(start_run(url, thesis, sources, keys))
    console.print(f"run {run_id}: {thesis.name} against {len(sources)} source(s), "
                  f"{workers} worker(s)")
    local = LocalWorkers(url, workers, settings.data_dir / "logs", concurrency)
    try:
        row = asyncio.run(follow(url, run_id, local, console, timeout_s))
    finally:
        local.stop()
    verdicts = dict(row["verdicts"] or {})
    if row["state"] != "succeeded":
        return VerifyResult(run_id, row["state"], None, None, verdicts, row["error"])
    json_path = asyncio.run(save_report(url, run_id, out))
    return VerifyResult(run_id, row["state"], out, json_path, verdicts, None)
