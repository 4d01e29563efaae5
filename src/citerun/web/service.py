"""``citerun serve``: the web service on this machine.

With a database URL the service serves that database (its workers run elsewhere, or
``--workers`` start some here); without one it starts the embedded Postgres and local
workers as ``citerun verify`` does (:func:`citerun.local.localdb.database`,
:class:`citerun.local.workers.LocalWorkers`), which serve every run and die with the service.
A restart loses nothing: the runs, their owners and the CSRF key are in Postgres, and a
run still running when the service stopped is picked up by the next service's workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
from collections.abc import AsyncIterator

import asyncpg
from aiohttp import web

from citerun.core import db, runs
from citerun.core.settings import Settings
from citerun.local import localdb
from citerun.local.workers import LocalWorkers
from citerun.pipeline.writer import archive
from citerun.web import app as web_app
from citerun.web import backend, store
from citerun.web.settings import WebSettings

logger = logging.getLogger(__name__)


def local_backend(pool: asyncpg.Pool, settings: Settings,
                  web_settings: WebSettings) -> backend.LocalBackend:
    return backend.LocalBackend(
        pool, settings, store.UserCaps(web_settings.max_active_runs,
                                       web_settings.max_staged_bytes),
        tenant=web_settings.tenant, tenant_caps=runs.Caps())


def backend_of(pool: asyncpg.Pool, settings: Settings,
               web_settings: WebSettings) -> backend.Backend:
    """The backend ``web.backend`` names: this database's own runs, or CitationRuns."""
    if web_settings.backend == "kubernetes":
        from citerun.web import cluster
        return cluster.KubeBackend(pool, web_settings)
    return local_backend(pool, settings, web_settings)


@contextlib.asynccontextmanager
async def running(pool: asyncpg.Pool, settings: Settings, web_settings: WebSettings, *,
                  host: str = "127.0.0.1", port: int = 0,
                  bundle_limits: archive.BundleLimits = archive.BundleLimits()
                  ) -> AsyncIterator[str]:
    """The service listening on ``host:port`` (0: any free port) until the block ends;
    yields its base URL. ``bundle_limits`` are the pipeline's (:func:`serve` passes the
    configured ones), which the upload intake holds a zip thesis to. ``web.local_user``
    listens on a loopback address only."""
    _check_local(web_settings, host)
    application = await web_app.build(pool, backend_of(pool, settings, web_settings),
                                      web_settings, bundle_limits=bundle_limits)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        address = runner.addresses[0]
        shown = f"[{address[0]}]" if ":" in address[0] else address[0]
        yield f"http://{shown}:{address[1]}"
    finally:
        await runner.cleanup()


def _check_local(web_settings: WebSettings, host: str) -> None:
    """``web.local_user`` listens on a loopback address only."""
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if web_settings.local_user is not None and not loopback:
        raise runs.RunError(f"web.local_user signs everyone who reaches the service in as "
                            f"{web_settings.local_user!r}: it listens on loopback only "
                            f"(--host 127.0.0.1 or ::1), not {host!r}")


async def _serve(url: str, settings: Settings, web_settings: WebSettings,
                 bundle_limits: archive.BundleLimits, host: str, port: int) -> None:
    await db.migrate(url)
    pool = await db.create_pool(url, min_size=1, max_size=settings.pool_max)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with running(pool, settings, web_settings, host=host, port=port,
                           bundle_limits=bundle_limits) as base:
            if web_settings.local_user is not None:
                print(f"citerun serve: LOCAL MODE: every request from this machine to {base}/ "
                      f"is user {web_settings.local_user!r}, with no sign-in (anyone with a "
                      "login here can reach it). For one person's machine only: behind a "
                      "proxy, unset CITERUN_WEB__LOCAL_USER.", flush=True)
                logger.warning("local mode: every loopback request is %r, with no sign-in",
                               web_settings.local_user)
            print(f"citerun serve: listening on {base}/", flush=True)
            await stop.wait()
    finally:
        await pool.close()


def serve(settings: Settings, web_settings: WebSettings, bundle_limits: archive.BundleLimits,
          *, host: str, port: int, workers: int | None, concurrency: int) -> int:
    """Serve until SIGINT or SIGTERM. ``workers`` None: two local workers with the
    embedded database, none with a configured URL. The kubernetes backend needs the
    cluster's database (its workers and operator are the cluster's). ``bundle_limits``
    are the pipeline's, as its workers read them (``CITERUN_LIMITS__BUNDLE__*``): the
    upload intake refuses a zip thesis the parse stage would."""
    _check_local(web_settings, host)
    if web_settings.backend == "kubernetes":
        if not settings.database_url:
            raise runs.RunError("web.backend 'kubernetes' needs CITERUN_DATABASE_URL: the "
                                "database the cluster's operator and workers use")
        workers = 0
    count = workers if workers is not None else (0 if settings.database_url else 2)
    with localdb.database(settings) as url:
        asyncio.run(db.migrate(url))
        # The form's open-access copies (web.fetch_sources) are fetched by these workers.
        local = (LocalWorkers(settings.database_url, count,
                              settings.data_dir / "logs" / "serve", concurrency, None,
                              settings.data_dir,
                              extra_env={"CITERUN_OPENACCESS__ENABLED": "true"}
                              if web_settings.fetch_sources else None) if count else None)
        try:
            asyncio.run(_serve(url, settings, web_settings, bundle_limits, host, port))
        finally:
            if local is not None:
                local.stop()
    return 0
