"""The web service's routes and middlewares (aiohttp).

Every request but the static files and ``/healthz`` first gets an identity
(:mod:`citerun.web.identity`); a POST from a browser session (the proxy's header, which
comes with the browser's cookies) must also come from this service's origin and carry
the session's CSRF token; a bearer-token call is exempt (a browser never adds the
header by itself). Every read takes the user: another user's run or document is 404,
exactly like an id nobody used. Nothing that matters is kept in memory: runs, owners and
the CSRF key live in Postgres, so a restarted (or second) replica answers the same.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import hmac
import logging
import re
import secrets
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

import asyncpg
import pydantic
from aiohttp import BodyPartReader, web

from citerun.core import pdfmagic, runs
from citerun.pipeline import report as report_model
from citerun.core.states import FINISHED_DOCUMENT, RunState
from citerun.web import identity, intake, pages, store
from citerun.web.backend import Backend, Upload
from citerun.web.settings import WebSettings
from citerun.web.units import human_bytes

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SESSION_COOKIE = "citerun_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
#: The body of a form POST (a cancel button); uploads are streamed under their own cap.
MAX_FORM_BYTES = 64 * 1024
CHUNK = 256 * 1024

THESIS_SUFFIXES = pdfmagic.THESIS_SUFFIXES
LIBRARY_SUFFIXES = pdfmagic.LIBRARY_SUFFIXES
MAX_FILENAME_CHARS = 200

JSON_CSP = "default-src 'none'; frame-ancestors 'none'"
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_SESSION = re.compile(r"^[A-Za-z0-9_-]{43}$")

KEY_POOL: web.AppKey[asyncpg.Pool] = web.AppKey("pool", asyncpg.Pool)
KEY_BACKEND: web.AppKey[Any] = web.AppKey("backend", object)
KEY_SETTINGS: web.AppKey[WebSettings] = web.AppKey("settings", WebSettings)
KEY_AUTH: web.AppKey[identity.Authenticator] = web.AppKey("auth", identity.Authenticator)
KEY_CSRF: web.AppKey[bytes] = web.AppKey("csrf_key", bytes)
KEY_INTAKE: web.AppKey[intake.Intake] = web.AppKey("intake", intake.Intake)


@dataclass
class Caller:
    """Who sent the request being handled, and their session's CSRF token ("" for a
    bearer call). Kept in a context variable: the handler runs in the middleware's task."""

    identity: identity.Identity
    csrf: str
    csrf_in_body: bool = False


_CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "citerun_web_caller", default=None)


def caller() -> Caller:
    found = _CALLER.get()
    assert found is not None, "a route behind the identity middleware"
    return found


class UploadRefused(Exception):
    """An upload that is refused as a whole; ``status`` is its HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _api(request: web.Request) -> bool:
    return request.path.startswith("/api/")


def _error(request: web.Request, status: int, message: str) -> web.Response:
    """An error as JSON for the API, as a small page otherwise."""
    if _api(request) or "text/html" not in request.headers.get("Accept", ""):
        return web.json_response({"error": message}, status=status)
    who = _CALLER.get()
    return web.Response(
        status=status, content_type="text/html",
        text=pages.message_page(f"Error {status}", message,
                                user=who.identity.user if who else "",
                                csrf=who.csrf if who else ""))


def _not_found(request: web.Request) -> web.Response:
    return _error(request, 404, "no such run or document")


# -- middlewares ---------------------------------------------------------------------------

@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's own errors (404 of an unknown path, 405, 413) in the API's words."""
    try:
        return await handler(request)
    except web.HTTPException as err:
        if err.status < 400 or err.empty_body:
            raise
        return _error(request, err.status, err.reason)


@web.middleware
async def identity_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/static/") or request.path in ("/healthz", "/favicon.ico"):
        return await handler(request)
    auth = request.app[KEY_AUTH]
    try:
        who = await auth.identify(request.remote, request.headers)
    except identity.IdentityError as err:
        logger.info("refused %s %s from %s: %s", request.method, request.path,
                    request.remote, err)
        refusal = _error(request, err.status, str(err))
        if err.status == 401:
            refusal.headers["WWW-Authenticate"] = 'Bearer realm="citerun"'
        return refusal
    new_session = None
    token = ""
    if who.via == "proxy":
        session = request.cookies.get(SESSION_COOKIE, "")
        if not _SESSION.match(session):
            if request.method not in ("GET", "HEAD"):
                return _error(request, 403, "no browser session: reload the page first")
            session = new_session = secrets.token_urlsafe(32)
        token = csrf_token(request.app[KEY_CSRF], who.user, session)
    reset = _CALLER.set(Caller(who, token))
    try:
        if request.method not in ("GET", "HEAD", "OPTIONS") and who.via == "proxy":
            refused = await _csrf_refusal(request)
            if refused is not None:
                logger.info("refused %s %s of %s: %s", request.method, request.path,
                            who.user, refused)
                return _error(request, 403, refused)
        response = await handler(request)
    finally:
        _CALLER.reset(reset)
    if new_session is not None:
        response.set_cookie(SESSION_COOKIE, new_session, httponly=True, samesite="Strict",
                            path="/", secure=_secure(request))
    return response


def _secure(request: web.Request) -> bool:
    origin = request.app[KEY_SETTINGS].public_origin
    return request.secure or (origin is not None and origin.startswith("https://"))


def csrf_token(key: bytes, user: str, session: str) -> str:
    """The token of one user's browser session: an HMAC, so nothing is stored per session
    and every replica checks it with the key in ``web_keys``."""
    mac = hmac.new(key, b"csrf\0" + user.encode() + b"\0" + session.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


def _same_origin(request: web.Request, origin: str) -> bool:
    wanted = request.app[KEY_SETTINGS].public_origin
    if wanted is not None:
        return origin.lower() == wanted.lower()
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == request.host.lower()


async def _csrf_refusal(request: web.Request) -> str | None:
    """Why a browser session's POST is refused (None: it is not).

    The defence is the session's token (a hidden field of every form, or the script's
    header), bound to the session cookie (``SameSite=Strict``); the browser's own word on
    where the request comes from is checked on top, never instead: ``Sec-Fetch-Site``
    when the browser sends it (every current one does), else ``Origin``, else
    ``Referer``. A form's ``Origin: null`` (a page under ``Referrer-Policy:
    no-referrer``) counts as this origin only when ``Sec-Fetch-Site`` says
    ``same-origin``; a request that carries none of the three is refused.
    """
    site = request.headers.get("Sec-Fetch-Site")
    origin = request.headers.get("Origin")
    if site is not None:
        if site.strip().lower() != "same-origin":
            return "cross-site request refused: it does not come from this service's pages"
        if origin is not None and origin != "null" and not _same_origin(request, origin):
            return "cross-site request refused: it does not come from this service's pages"
    else:
        if origin is None:
            referer = request.headers.get("Referer")
            if referer:
                parts = urlsplit(referer)
                origin = f"{parts.scheme}://{parts.netloc}"
        if origin is None or not _same_origin(request, origin):
            return "cross-site request refused: it does not come from this service's pages"
    given = request.headers.get(CSRF_HEADER)
    if given is None and request.content_type == "application/x-www-form-urlencoded":
        form = await request.post()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if given is None and request.content_type == "multipart/form-data":
        caller().csrf_in_body = True  # the upload's first field, checked as it streams
        return None
    if given is None or not hmac.compare_digest(given.encode(), caller().csrf.encode()):
        return "the form's CSRF token is missing or wrong: reload the page"
    return None


async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """The security headers of every answer."""
    headers = response.headers
    if "Content-Security-Policy" not in headers:
        html = response.content_type == "text/html"
        headers["Content-Security-Policy"] = pages.PAGE_CSP if html else JSON_CSP
    headers["X-Frame-Options"] = "DENY"
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "same-origin"
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    headers.setdefault("Cache-Control", "no-store")


# -- helpers -------------------------------------------------------------------------------

def _user(request: web.Request) -> str:
    return caller().identity.user


def _run_id(request: web.Request) -> uuid.UUID | None:
    try:
        return uuid.UUID(request.match_info["run_id"])
    except ValueError:
        return None


async def _owned_run(request: web.Request) -> asyncpg.Record | None:
    run_id = _run_id(request)
    if run_id is None:
        return None
    return await store.run_of(request.app[KEY_POOL], run_id, _user(request))


async def _readable_run(request: web.Request) -> asyncpg.Record | None:
    """A run the user owns or that its owner shared with them (``owner`` says whose)."""
    run_id = _run_id(request)
    if run_id is None:
        return None
    return await store.run_readable(request.app[KEY_POOL], run_id, _user(request))


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


async def run_status(pool: asyncpg.Pool, run: asyncpg.Record,
                     waiting: str | None = None) -> dict[str, Any]:
    """A run's state and progress as the API and the page show it; ``waiting``: what it
    waits for before it exists (a CitationRun the operator has not admitted)."""
    progress = await runs.progress(pool, run["id"])
    documents = await store.run_documents(pool, run["id"])
    state = progress["state"] if progress is not None else run["state"]
    # Each document's state for this run: read, could not be read (its own failure or
    # this run's reason), or waiting; "read" counts what is no longer waiting.
    shown = [{"digest": d["digest"], "role": d["role"], "filename": d["filename"],
              "state": d["state"], "error_reason": d["error_reason"],
              "stateLabel": pages.document_label(d, state)} for d in documents]
    done = sum(1 for d in documents if d["state"] in FINISHED_DOCUMENT
               or d["error_reason"] is not None or d["read_for_run"])
    judged = progress["judged"] if progress else 0
    stage = None
    if state == RunState.RUNNING:
        stage = (waiting if progress is None else
                 pages.stage_label(await store.run_stage(pool, run["id"]), judged))
    thesis = next((d for d in documents if d["role"] == "thesis"), None)
    return {
        "runId": str(run["id"]), "name": run["name"], "state": state,
        "title": pages.run_title({"title": await store.thesis_title(pool, run["id"]),
                                  "filename": thesis["filename"] if thesis else None,
                                  "name": run["name"]}),
        "stateLabel": pages.STATE_LABELS.get(state, state),
        "stage": stage,
        "waiting": waiting if progress is None else None,
        "error": progress["error"] if progress is not None else run["error"],
        "createdAt": _iso(run["created_at"]), "finishedAt": _iso(run["finished_at"]),
        "progress": {
            "documents": len(documents),
            "documentsDone": done,
            "citations": progress["citations"] if progress else 0,
            "judged": judged},
        "verdicts": dict(progress["verdicts"] or {}) if progress else {},
        "documents": shown,
        "reportUrl": f"/runs/{run['id']}" if state == RunState.SUCCEEDED else None,
    }


# -- the API -------------------------------------------------------------------------------

def _wants_page(request: web.Request) -> bool:
    """The page's form sent without its script (a browser navigation): it is answered
    with pages (a redirect, the form again with the error), not JSON."""
    accept = request.headers.get("Accept", "")
    return "application/json" not in accept and "text/html" in accept


def _upload_refusal(request: web.Request, status: int, message: str) -> web.Response:
    if not _wants_page(request):
        return _error(request, status, message)
    who = caller()
    return web.Response(status=status, content_type="text/html", text=pages.upload_page(
        user=who.identity.user, csrf=who.csrf,
        max_bytes=request.app[KEY_SETTINGS].max_upload_bytes, error=message,
        error_links_runs=status == 429 or "cancel one" in message))


async def api_submit(request: web.Request) -> web.StreamResponse:
    settings = request.app[KEY_SETTINGS]
    if request.content_type != "multipart/form-data":
        return _upload_refusal(request, 415,
                               "send multipart/form-data: thesis, sources, library")
    if request.content_length is not None and request.content_length > settings.max_upload_bytes:
        return _upload_refusal(request, 413, _too_large(settings))
    backend: Backend = request.app[KEY_BACKEND]
    user = _user(request)
    caps = store.UserCaps(settings.max_active_runs, settings.max_staged_bytes)
    try:  # the caps before any work, the work off the loop (web/intake.py, issue 41)
        async with request.app[KEY_INTAKE].admit(request.app[KEY_POOL], user, caps) as left:
            thesis, sources = await _read_upload(request, settings, left)
            run_id = await backend.submit(user, thesis, sources)
    except (UploadRefused, intake.IntakeRefused) as err:
        return _upload_refusal(request, err.status, str(err))
    except store.OverCap as err:
        logger.info("refused the upload of %s: %s", user, err)
        return _upload_refusal(request, err.status, str(err))
    logger.info("run %s of %s: %s against %d source(s)", run_id, user, thesis.filename,
                len(sources))
    location = f"/runs/{run_id}"
    if _wants_page(request):
        raise web.HTTPSeeOther(location)  # the page's form without its script
    return web.json_response({"runId": str(run_id), "url": location}, status=202,
                             headers={"Location": location})


def _too_large(settings: WebSettings) -> str:
    return (f"the upload is larger than {human_bytes(settings.max_upload_bytes)}, the most "
            "one upload may hold: leave out sources no citation needs, or ask the service's "
            "operator to raise web.max_upload_bytes")


def _filename(raw: str | None, field: str) -> str:
    """The file's own name, as it will be stored and shown: no directory, characters
    that do not print replaced by "_", and a name over MAX_FILENAME_CHARS shortened in
    its middle (its start and its suffix kept), never refused for its length."""
    name = PurePosixPath((raw or "").replace("\\", "/")).name.strip()
    name = "".join(c if c.isprintable() else "_" for c in name)
    if not name.strip("._ "):
        raise UploadRefused(400, f"a file of {field!r} has no usable file name: rename it "
                            "and choose it again")
    if len(name) > MAX_FILENAME_CHARS:
        suffix = PurePosixPath(name).suffix
        suffix = suffix if len(suffix) <= 16 else ""
        name = name[:MAX_FILENAME_CHARS - len(suffix) - 1].rstrip() + "…" + suffix
    return name


async def _read_upload(request: web.Request, settings: WebSettings,
                       left: int) -> tuple[Upload, list[Upload]]:
    """The thesis and its sources, streamed under the size caps and checked by type."""
    reader = await request.multipart()
    total = 0
    files = 0
    thesis: Upload | None = None
    sources: list[Upload] = []
    libraries: list[tuple[str, bytes]] = []
    csrf_pending = caller().csrf_in_body
    while True:
        part = await reader.next()
        if part is None:
            break
        if not isinstance(part, BodyPartReader):
            raise UploadRefused(400, "nested multipart bodies are not accepted")
        field = part.name or ""
        if csrf_pending:  # a form without the script: its first field is the token
            value = (await part.read(decode=False)).decode("utf-8", "replace") \
                if field == CSRF_FIELD else ""
            if not hmac.compare_digest(value[:200].encode(), caller().csrf.encode()):
                raise UploadRefused(403, "the form's CSRF token is missing or wrong: "
                                    "reload the page")
            csrf_pending = False
            continue
        if field == CSRF_FIELD:
            await part.read(decode=False)
            continue
        if field not in ("thesis", "sources", "library"):
            raise UploadRefused(400, f"unknown field {field!r}: send thesis, sources, library")
        data = bytearray()
        while chunk := await part.read_chunk(CHUNK):
            total += len(chunk)
            if total > settings.max_upload_bytes:
                raise UploadRefused(413, _too_large(settings))
            data += chunk
        if not part.filename and not data:
            continue  # a file input left empty
        files += 1
        if files > settings.max_files:
            raise UploadRefused(413, f"more than {settings.max_files} files in one upload")
        name = _filename(part.filename, field)
        if not data:
            what = {"thesis": "the thesis", "sources": "source",
                    "library": "library"}[field]
            raise UploadRefused(400, f"{what} {name!r} is empty (0 bytes): choose the file "
                                "again, or export it again from where it was written")
        if field == "thesis":
            if thesis is not None:
                raise UploadRefused(400, "one thesis per upload")
            thesis = _check_thesis(name, bytes(data))
        elif field == "sources":
            if not pdfmagic.is_pdf(bytes(data[:pdfmagic.MAGIC_WINDOW])):
                raise UploadRefused(415, f"source {name!r} is not a PDF")
            if any(s.filename == name for s in sources):
                raise UploadRefused(400, f"two sources are named {name!r}")
            sources.append(Upload(name, bytes(data)))
        else:
            libraries.append((name, _check_library(name, bytes(data))))
    if csrf_pending:
        raise UploadRefused(403, "the form's CSRF token is missing or wrong: reload the page")
    if thesis is None:
        raise UploadRefused(400, "no thesis: send one file as 'thesis'")
    if not sources:
        raise UploadRefused(400, "no sources: send the cited PDFs as 'sources'")
    staged = await request.app[KEY_INTAKE].thesis(
        thesis.filename, thesis.data, libraries, left, settings.max_staged_bytes)
    return Upload(thesis.filename, staged), sources


def _check_thesis(name: str, data: bytes) -> Upload:
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in THESIS_SUFFIXES:
        raise UploadRefused(415, f"thesis {name!r}: send a .pdf, a .docx, a .zip holding a "
                            "LaTeX thesis, or a .tex")
    if suffix == ".pdf" and not pdfmagic.is_pdf(data):
        raise UploadRefused(415, f"thesis {name!r} is not a PDF")
    if suffix in (".docx", ".zip") and not pdfmagic.is_zip(data):
        raise UploadRefused(415, f"thesis {name!r} is not a {suffix} (no zip archive)")
    if suffix == ".tex":
        _text(name, data)
    return Upload(name, data)


def _check_library(name: str, data: bytes) -> bytes:
    if PurePosixPath(name).suffix.lower() not in LIBRARY_SUFFIXES:
        raise UploadRefused(415, f"library {name!r}: send BibTeX (.bib) or CSL-JSON (.json)")
    _text(name, data)
    return data


def _text(name: str, data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UploadRefused(415, f"{name!r} is not UTF-8 text") from None
    if "\0" in text:
        raise UploadRefused(415, f"{name!r} is not text")


def _listed(r: asyncpg.Record) -> dict[str, Any]:
    return {"runId": str(r["id"]), "name": r["name"], "title": pages.run_title(r),
            "state": r["state"], "error": r["error"],
            "waiting": bool(r["pending"]) and r["state"] == RunState.RUNNING,
            "createdAt": _iso(r["created_at"]), "finishedAt": _iso(r["finished_at"]),
            "documents": r["documents"], "citations": r["citations"], "judged": r["judged"]}


async def api_list(request: web.Request) -> web.StreamResponse:
    rows = await store.runs_of(request.app[KEY_POOL], _user(request),
                               request.app[KEY_SETTINGS].list_limit)
    return web.json_response({"runs": [_listed(r) for r in rows]})


async def api_shared(request: web.Request) -> web.StreamResponse:
    """The runs other users shared with this one (read-only)."""
    rows = await store.shared_with(request.app[KEY_POOL], _user(request),
                                   request.app[KEY_SETTINGS].list_limit)
    return web.json_response({"runs": [{**_listed(r), "owner": r["owner"]} for r in rows]})


async def _waiting(request: web.Request,
                   run: asyncpg.Record) -> tuple[asyncpg.Record, str | None]:
    """The run as it stands after the backend looked at what it waits for (a submission
    refused for good is closed by that look), and that message."""
    backend: Backend = request.app[KEY_BACKEND]
    message = await backend.waiting(run)
    if message is not None:
        run = await _readable_run(request) or run
    return run, message


async def api_status(request: web.Request) -> web.StreamResponse:
    run = await _readable_run(request)
    if run is None:
        return _not_found(request)
    run, waiting = await _waiting(request, run)
    return web.json_response(await run_status(request.app[KEY_POOL], run, waiting))


async def _report(request: web.Request) -> tuple[asyncpg.Record | None, web.Response | None]:
    run = await _readable_run(request)
    if run is None:
        return None, _not_found(request)
    row = await runs.report(request.app[KEY_POOL], run["id"])
    if row is None:
        return None, _error(request, 409, f"the run has no report (it is {run['state']})")
    return row, None


def _download_name(name: str, suffix: str) -> str:
    """A Content-Disposition value: an ASCII name any browser takes, and the UTF-8 one."""
    ascii_name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "thesis"
    return (f'attachment; filename="{ascii_name}-{suffix}"; '
            f"filename*=UTF-8''{quote(name[:80], safe='')}-{suffix}")


def _downloaded(request: web.Request) -> bool:
    return request.query.get("download") not in (None, "", "0")


async def api_report_json(request: web.Request) -> web.StreamResponse:
    row, refusal = await _report(request)
    if refusal is not None:
        return refusal
    assert row is not None
    headers = ({"Content-Disposition": _download_name(str(row["json"].get("name", "")),
                                                      "report.json")}
               if _downloaded(request) else None)
    return web.json_response(row["json"], headers=headers)


async def api_report_html(request: web.Request) -> web.StreamResponse:
    row, refusal = await _report(request)
    if refusal is not None:
        return refusal
    assert row is not None
    if _downloaded(request):
        # The stored, self-contained page (its inline script and styles work offline);
        # as an attachment it is saved, not shown here.
        return web.Response(text=row["html"], content_type="text/html", headers={
            "Content-Disposition": _download_name(str(row["json"].get("name", "")),
                                                  "report.html"),
            "Content-Security-Policy": "sandbox; default-src 'none'"})
    return _report_response(row["html"])


async def api_citations_csv(request: web.Request) -> web.StreamResponse:
    """The citations to fix, one row each, for a spreadsheet: the report's own rows
    (``report.to_fix_csv``: every citation but a supported one without problems, most
    doubtful first, with where it stands, the claim, the verdict, the problems, why and
    what to do), from the stored JSON read back into the report's model."""
    row, refusal = await _report(request)
    if refusal is not None:
        return refusal
    assert row is not None
    try:
        stored = report_model.Report.model_validate(row["json"])
    except pydantic.ValidationError:
        logger.warning("run %s: its stored report does not read as this version's model",
                       row["json"].get("run_id"))
        return _error(request, 409, "this report was written by another version of "
                      "citerun and has no list of citations to fix: download its JSON")
    return web.Response(
        body=report_model.to_fix_csv(stored).encode("utf-8-sig"),
        content_type="text/csv", charset="utf-8",
        headers={"Content-Disposition": _download_name(stored.name, "citations-to-fix.csv")})


def _report_response(document: str, bar: str = "") -> web.Response:
    text, csp = pages.report_page(document, bar)
    return web.Response(text=text, content_type="text/html",
                        headers={"Content-Security-Policy": csp})


async def _cancel(request: web.Request) -> tuple[asyncpg.Record | None, web.Response | None]:
    run = await _owned_run(request)
    if run is None:
        return None, _not_found(request)
    if run["state"] != RunState.RUNNING:
        return run, _error(request, 409, f"the run has finished ({run['state']})")
    backend: Backend = request.app[KEY_BACKEND]
    await backend.cancel(run["id"])
    logger.info("run %s cancelled by %s", run["id"], _user(request))
    return run, None


async def api_cancel(request: web.Request) -> web.StreamResponse:
    run, refusal = await _cancel(request)
    if refusal is not None:
        return refusal
    assert run is not None
    return web.json_response({"runId": str(run["id"]), "state": RunState.CANCELLED})


async def api_document(request: web.Request) -> web.StreamResponse:
    digest = request.match_info["digest"]
    row = None
    if _DIGEST.match(digest):
        row = await store.document_of(request.app[KEY_POOL], digest, _user(request))
    if row is None:
        return _not_found(request)
    return web.json_response({
        "digest": row["digest"], "filename": row["filename"], "sizeBytes": row["size_bytes"],
        "state": row["state"], "errorReason": row["error_reason"], "title": row["title"],
        "year": row["year"], "pages": row["page_count"]})


# -- the pages -----------------------------------------------------------------------------

async def page_upload(request: web.Request) -> web.StreamResponse:
    return web.Response(content_type="text/html", text=pages.upload_page(
        user=_user(request), csrf=caller().csrf,
        max_bytes=request.app[KEY_SETTINGS].max_upload_bytes))


async def page_runs(request: web.Request) -> web.StreamResponse:
    pool = request.app[KEY_POOL]
    limit = request.app[KEY_SETTINGS].list_limit
    rows = await store.runs_of(pool, _user(request), limit)
    shared = await store.shared_with(pool, _user(request), limit)
    return web.Response(content_type="text/html", text=pages.runs_page(
        [dict(r) for r in rows], shared=[dict(r) for r in shared], user=_user(request),
        csrf=caller().csrf))


async def page_run(request: web.Request) -> web.StreamResponse:
    run = await _readable_run(request)
    if run is None:
        return _not_found(request)
    pool = request.app[KEY_POOL]
    user = _user(request)
    owner = run["owner"] == user
    readers = await store.readers_of(pool, run["id"]) if owner else []
    if run["state"] == RunState.SUCCEEDED:
        row = await runs.report(pool, run["id"])
        if row is not None:
            return _report_response(row["html"], pages.report_bar(
                str(run["id"]), csrf=caller().csrf, owner=owner, owner_name=run["owner"],
                readers=readers))
    run, waiting = await _waiting(request, run)
    status = await run_status(pool, run, waiting)
    shown = dict(run)
    if status["waiting"] and not shown["error"] and not status["stage"]:
        shown["error"] = status["waiting"]
    return web.Response(content_type="text/html", text=pages.run_page(
        shown, status, user=user, csrf=caller().csrf, owner=owner, readers=readers))


def _back(request: web.Request, form: Any, run_id: str) -> str:
    """Where a page's form returns to: "My runs" or the run's page, nothing else."""
    wanted = form.get("next") if form is not None else None
    return wanted if wanted in ("/runs", f"/runs/{run_id}") else f"/runs/{run_id}"


async def page_cancel(request: web.Request) -> web.StreamResponse:
    run, refusal = await _cancel(request)
    if refusal is not None and run is None:
        return refusal
    form = await request.post() if request.content_type == \
        "application/x-www-form-urlencoded" else None
    raise web.HTTPSeeOther(_back(request, form, request.match_info["run_id"]))


async def static_css(request: web.Request) -> web.StreamResponse:
    return web.Response(text=pages.APP_CSS, content_type="text/css",
                        headers={"Cache-Control": "no-cache"})


async def static_js(request: web.Request) -> web.StreamResponse:
    return web.Response(text=pages.APP_JS, content_type="text/javascript",
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
                authenticator: identity.Authenticator | None = None) -> web.Application:
    """The application over ``pool`` (migrated), creating runs through ``backend``."""
    app = web.Application(middlewares=[errors_middleware, identity_middleware],
                          client_max_size=MAX_FORM_BYTES)
    app[KEY_POOL] = pool
    app[KEY_BACKEND] = backend
    app[KEY_SETTINGS] = settings
    app[KEY_AUTH] = authenticator or identity.Authenticator(settings)
    app[KEY_CSRF] = await store.secret_key(pool, store.CSRF_KEY)
    app[KEY_INTAKE] = intake.Intake()
    app.on_cleanup.append(_close_intake)
    app.on_response_prepare.append(on_prepare)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/static/app.css", static_css)
    app.router.add_get("/static/app.js", static_js)
    app.router.add_get("/", page_upload)
    app.router.add_get("/runs", page_runs)
    app.router.add_get("/runs/{run_id}", page_run)
    app.router.add_post("/runs/{run_id}/cancel", page_cancel)
    app.router.add_post("/api/runs", api_submit)
    app.router.add_get("/api/runs", api_list)
    app.router.add_get("/api/shared", api_shared)
    from citerun.web import shares  # its handlers use this module's helpers
    shares.add_routes(app.router)
    app.router.add_get("/api/runs/{run_id}/citations.csv", api_citations_csv)
    app.router.add_get("/api/runs/{run_id}", api_status)
    app.router.add_get("/api/runs/{run_id}/report.json", api_report_json)
    app.router.add_get("/api/runs/{run_id}/report.html", api_report_html)
    app.router.add_post("/api/runs/{run_id}/cancel", api_cancel)
    app.router.add_get("/api/documents/{digest}", api_document)
    return app

