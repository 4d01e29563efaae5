"""``POST /api/runs``: an upload becomes a run. The form's page (``GET /``) too.

The user's caps are asked before the body is read and the work is done off the loop
(:mod:`citerun.web.intake`); the body is streamed under the size caps, each file's type
checked by :mod:`citerun.pipeline.intake` as it arrives; the backend then creates the
run (:mod:`citerun.web.backend`). A browser's form without its script is answered with
pages (a redirect, the form again with the error), the script and API clients with JSON.
"""

from __future__ import annotations

import hmac
import logging
from pathlib import PurePosixPath

from aiohttp import BodyPartReader, web

from citerun.pipeline import intake as file_types
from citerun.web import intake, pages, store
from citerun.web.backend import Backend, Upload
from citerun.web.context import (
    KEY_BACKEND,
    KEY_INTAKE,
    KEY_POOL,
    KEY_SETTINGS,
    caller,
    error,
    user,
)
from citerun.web.middleware import CSRF_FIELD
from citerun.web.settings import WebSettings
from citerun.web.units import human_bytes

logger = logging.getLogger(__name__)

CHUNK = 256 * 1024
MAX_FILENAME_CHARS = 200


class UploadRefused(Exception):
    """An upload that is refused as a whole; ``status`` is its HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def page_upload(request: web.Request) -> web.StreamResponse:
    return web.Response(content_type="text/html", text=pages.upload_page(
        user=user(request), csrf=caller().csrf,
        max_bytes=request.app[KEY_SETTINGS].max_upload_bytes))


def wants_page(request: web.Request) -> bool:
    """The page's form sent without its script (a browser navigation): it is answered
    with pages (a redirect, the form again with the error), not JSON."""
    accept = request.headers.get("Accept", "")
    return "application/json" not in accept and "text/html" in accept


def _upload_refusal(request: web.Request, status: int, message: str) -> web.Response:
    if not wants_page(request):
        return error(request, status, message)
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
    who = user(request)
    caps = store.UserCaps(settings.max_active_runs, settings.max_staged_bytes)
    try:  # the caps before any work, the work off the loop (web/intake.py, issue 41)
        async with request.app[KEY_INTAKE].admit(request.app[KEY_POOL], who, caps) as left:
            thesis, sources = await _read_upload(request, settings, left)
            run_id = await backend.submit(who, thesis, sources)
    except (UploadRefused, intake.IntakeRefused) as err:
        return _upload_refusal(request, err.status, str(err))
    except store.OverCap as err:
        logger.info("refused the upload of %s: %s", who, err)
        return _upload_refusal(request, err.status, str(err))
    logger.info("run %s of %s: %s against %d source(s)", run_id, who, thesis.filename,
                len(sources))
    location = f"/runs/{run_id}"
    if wants_page(request):
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
    count = 0
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
        count += 1
        if count > settings.max_files:
            raise UploadRefused(413, f"more than {settings.max_files} files in one upload")
        name = _filename(part.filename, field)
        if not data:
            what = {"thesis": "the thesis", "sources": "source",
                    "library": "library"}[field]
            raise UploadRefused(400, f"{what} {name!r} is empty (0 bytes): choose the file "
                                "again, or export it again from where it was written")
        content = bytes(data)
        try:
            if field == "thesis":
                if thesis is not None:
                    raise UploadRefused(400, "one thesis per upload")
                file_types.check_thesis(name, content)
                thesis = Upload(name, content)
            elif field == "sources":
                file_types.check_source(name, content)
                if any(s.filename == name for s in sources):
                    raise UploadRefused(400, f"two sources are named {name!r}")
                sources.append(Upload(name, content))
            else:
                file_types.check_library(name, content)
                libraries.append((name, content))
        except file_types.FileRefused as err:
            raise UploadRefused(415, str(err)) from None
    if csrf_pending:
        raise UploadRefused(403, "the form's CSRF token is missing or wrong: reload the page")
    if thesis is None:
        raise UploadRefused(400, "no thesis: send one file as 'thesis'")
    if not sources:
        raise UploadRefused(400, "no sources: send the cited PDFs as 'sources'")
    staged = await request.app[KEY_INTAKE].thesis(
        thesis.filename, thesis.data, libraries, left, settings.max_staged_bytes)
    return Upload(thesis.filename, staged), sources
