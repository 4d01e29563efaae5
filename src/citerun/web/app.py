"""The web service's application (aiohttp): its middlewares, its routes, and what they
share.

Every request but the static files and ``/healthz`` first gets an identity and, for a
browser session's POST, a CSRF check (:mod:`citerun.web.middleware`). Every read takes
the user: another user's run or document is 404, exactly like an id nobody used
(:mod:`citerun.web.context`). Nothing that matters is kept in memory: runs, owners and
the CSRF key live in Postgres, so a restarted (or second) replica answers the same.

The routes, by concern: the upload (:mod:`.upload`), a user's runs (:mod:`.run_routes`),
the report and its downloads (:mod:`.reports`), sharing (:mod:`.shares`), deleting a
run (:mod:`.deletion`, and the runs past ``web.keep_days``); the static
files and ``/healthz`` are here.
"""

from __future__ import annotations

import asyncpg
from aiohttp import web

from citerun.pipeline.writer import archive
from citerun.web import (
    assets,
    deletion,
    identity,
    intake,
    middleware,
    reports,
    run_routes,
    shares,
    spool,
    store,
    upload,
)
from citerun.web.backend import Backend
from citerun.web.context import (
    KEY_AUTH,
    KEY_BACKEND,
    KEY_CSRF,
    KEY_INTAKE,
    KEY_POOL,
    KEY_SEEN,
    KEY_SETTINGS,
)
from citerun.web.settings import WebSettings

#: The body of a form POST (a cancel button); uploads are streamed under their own cap.
MAX_FORM_BYTES = 64 * 1024


async def static_css(request: web.Request) -> web.StreamResponse:
    return web.Response(text=assets.APP_CSS, content_type="text/css",
                        headers={"Cache-Control": "no-cache"})


async def static_js(request: web.Request) -> web.StreamResponse:
    return web.Response(text=assets.APP_JS, content_type="text/javascript",
                        headers={"Cache-Control": "no-cache"})


async def favicon(request: web.Request) -> web.StreamResponse:
    """No icon (browsers ask for one on every page)."""
    return web.Response(status=204, headers={"Cache-Control": "max-age=86400"})


async def healthz(request: web.Request) -> web.StreamResponse:
    """Liveness: the process answers (the database is not asked)."""
    return web.Response(text="ok")


async def _close_intake(app: web.Application) -> None:
    app[KEY_INTAKE].close()


async def build(pool: asyncpg.Pool, backend: Backend, settings: WebSettings,
                authenticator: identity.Authenticator | None = None, *,
                bundle_limits: archive.BundleLimits) -> web.Application:
    """The application over ``pool`` (migrated), creating runs through ``backend``, with
    the service's ``settings`` (read once, at start); the upload intake holds a zip
    thesis to ``bundle_limits``, the ones the pipeline's parse stage reads."""
    app = web.Application(
        middlewares=[middleware.errors_middleware, middleware.identity_middleware],
        client_max_size=MAX_FORM_BYTES)
    app[KEY_POOL] = pool
    app[KEY_BACKEND] = backend
    app[KEY_SETTINGS] = settings
    app[KEY_AUTH] = authenticator or identity.Authenticator(settings)
    app[KEY_CSRF] = await store.secret_key(pool, store.CSRF_KEY)
    app[KEY_SEEN] = {}
    app[KEY_INTAKE] = intake.Intake(bundle_limits, spool.MemoryBudget(
        settings.upload_memory_bytes, settings.upload_wait_s))
    app.on_cleanup.append(_close_intake)
    app.cleanup_ctx.append(deletion.expiry)  # web.keep_days
    app.on_response_prepare.append(middleware.on_prepare)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/static/app.css", static_css)
    app.router.add_get("/static/app.js", static_js)
    app.router.add_get("/", upload.page_upload)
    app.router.add_post("/api/runs", upload.api_submit)
    run_routes.add_routes(app.router)
    shares.add_routes(app.router)
    deletion.add_routes(app.router)
    reports.add_routes(app.router)
    return app
