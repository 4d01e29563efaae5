"""Client commands for a cluster: submit a CitationRun, show its status, fetch its report.

They talk to the Kubernetes API (kubeconfig or in-cluster) and, for uploads and
reports, to the same Postgres as the operator (``CITERUN_DATABASE_URL``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from citerun.core import db, runs
from citerun.cli import verify, verify_run
from citerun.core.settings import Settings


def _name_from(path: Path) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", path.stem.lower()).strip("-")
    return (name or "thesis")[:50]


def submit(args: argparse.Namespace, settings: Settings) -> int:
    from citerun.core import runspec as specs

    url = settings.cluster_database_url("citerun submit")
    try:
        thesis, sources = verify.check_arguments(args.thesis, args.sources or [], 1,
                                                 fetch_sources=args.fetch_sources)
    except verify.UsageError as err:
        print(f"citerun submit: error: {err}", file=sys.stderr)
        return 2

    async def upload(url: str) -> list[runs.StagedDocument]:
        await db.migrate(url)
        pool = await db.create_pool(url, min_size=1, max_size=2)
        try:
            return [await runs.stage_document(pool, p.read_bytes(), p.name,
                                              tenant=args.namespace)
                    for p in [thesis, *sources]]
        finally:
            await pool.close()

    staged = asyncio.run(upload(url))
    name = args.name or _name_from(thesis)
    body = {
        "apiVersion": f"{specs.GROUP}/{specs.VERSION}", "kind": specs.KIND,
        "metadata": {"name": name, "namespace": args.namespace},
        "spec": {"thesis": {"name": staged[0].filename, "digest": staged[0].digest},
                 "sources": [{"name": d.filename, "digest": d.digest} for d in staged[1:]],
                 # Open-access copies of the works no source matches (issue 51).
                 **({specs.FETCH_SOURCES: True} if args.fetch_sources else {})}}
    from citerun.kube import client as kube
    asyncio.run(kube.create_run(args.namespace, body))
    print(f"citationrun.{specs.GROUP}/{name} created in {args.namespace}")
    return 0


def _get(args: argparse.Namespace) -> dict[str, Any] | None:
    from citerun.kube import client as kube

    obj = asyncio.run(kube.get_run(args.namespace, args.name))
    if obj is None:
        print(f"citerun: CitationRun {args.namespace}/{args.name} not found", file=sys.stderr)
    return obj


def status(args: argparse.Namespace) -> int:
    obj = _get(args)
    if obj is None:
        return 1
    s = obj.get("status") or {}
    print(f"{args.namespace}/{args.name}: {s.get('phase', 'Unknown')} "
          f"({s.get('progress', '-')} judged)")
    for key, value in (s.get("counts") or {}).items():
        print(f"  {key}: {value}")
    for c in s.get("conditions") or []:
        print(f"  {c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}")
    return 0


def report(args: argparse.Namespace, settings: Settings) -> int:
    fmt = args.format or "json"
    if args.out:
        try:
            fmt = verify.report_format(Path(args.out))
        except verify.UsageError as err:
            print(f"citerun report: error: {err}", file=sys.stderr)
            return 2
        if args.format and args.format != fmt:
            print(f"citerun report: error: --format {args.format} but --out "
                  f"{args.out!r} names a {fmt} file", file=sys.stderr)
            return 2
    obj = _get(args)
    if obj is None:
        return 1
    run_id = (obj.get("status") or {}).get("runId")
    if not run_id:
        print(f"citerun report: {args.name} has no run yet", file=sys.stderr)
        return 1

    async def fetch(url: str) -> Any:
        conn = await db.connect(url)
        try:
            return await runs.report(conn, uuid.UUID(run_id))
        finally:
            await conn.close()

    row = asyncio.run(fetch(settings.cluster_database_url("citerun report")))
    if row is None:
        print(f"citerun report: the report of {args.name} is not ready "
              f"({(obj.get('status') or {}).get('phase')})", file=sys.stderr)
        return 1
    text = row["html"] if fmt == "html" else json.dumps(row["json"], indent=2,
                                                         ensure_ascii=False)
    if args.out:
        verify_run.write_file(Path(args.out), text)
        print(f"report written to {args.out}")
    else:
        print(text)
    return 0
