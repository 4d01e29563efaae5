"""``POST /api/runs``: an upload becomes a run. The form's page (``GET /``) too.

The user's caps are asked before the body is read and the work is done off the loop
(:mod:`citerun.web.intake`); the body is streamed to disk under the size caps, each
file's type checked by :mod:`citerun.pipeline.intake` as it arrives; the files are read
back into memory only under the service's memory budget for uploads
(:mod:`citerun.web.spool`), and the backend then creates the run
(:mod:`citerun.web.backend`). A browser's form without its script is answered with
pages (a redirect, the form again with the error), the script and API clients with JSON.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from pathlib import PurePosixPath

from aiohttp import BodyPartReader, web

from citerun.core import runs
from citerun.pipeline import intake as file_types
from citerun.web import intake, pages, spool, store
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
from citerun.web.middleware import CSRF_FIELD, csrf_checked_in_body
from citerun.web.settings import WebSettings
from citerun.web.units import human_bytes

logger = logging.getLogger(__name__)

CHUNK = 256 * 1024
#: The form's text field that names a LaTeX zip's main .tex (issue 47).
MAIN_FIELD = "main"
MAX_FILENAME_CHARS = 200


class UploadRefused(Exception):
    """An upload that is refused as a whole; ``status`` is its HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def page_upload(request: web.Request) -> web.StreamResponse:
    return web.Response(content_type="text/html", text=pages.upload_page(
        user=user(request), csrf=caller().csrf,
        max_bytes=request.app[KEY_SETTINGS].max_upload_bytes,
        keep_days=request.app[KEY_SETTINGS].keep_days,
        fetch_offered=request.app[KEY_SETTINGS].fetch_sources))


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
        error_links_runs=status == 429 or "cancel one" in message,
        keep_days=request.app[KEY_SETTINGS].keep_days,
        fetch_offered=request.app[KEY_SETTINGS].fetch_sources))


@csrf_checked_in_body  # the token is the body's first field (_read_upload)
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
    the_intake = request.app[KEY_INTAKE]
    files: list[spool.SpooledUpload] = []
    try:  # the caps before any work, the work off the loop (web/intake.py, issue 41)
        async with the_intake.admit(request.app[KEY_POOL], who, caps) as left:
            named: dict[str, str] = {}
            await _read_upload(request, settings, files, named)  # on disk (web/spool.py)
            thesis_with_libraries = sum(f.size for f in files if f.field != "sources")
            async with the_intake.memory.hold(spool.memory_cost(
                    [f.size for f in files], thesis_with_libraries)):
                thesis, sources = await _staged(request, settings, left, files,
                                                named.get(MAIN_FIELD) or None)
                # Open-access copies only where the operator offers them (issue 51).
                fetch = settings.fetch_sources and named.get(pages.FETCH_FIELD) == "1"
                run_id = await backend.submit(who, thesis, sources, fetch_sources=fetch)
                thesis_name, source_count = thesis.filename, len(sources)
                del thesis, sources  # within the budget
    except (UploadRefused, intake.IntakeRefused) as err:
        return _upload_refusal(request, err.status, str(err))
    except spool.BudgetBusy as err:
        logger.info("refused the upload of %s: %s", who, err)
        refusal = _upload_refusal(request, 503, str(err))
        refusal.headers["Retry-After"] = str(err.retry_after_s)
        return refusal
    except store.OverCap as err:
        logger.info("refused the upload of %s: %s", who, err)
        return _upload_refusal(request, err.status, str(err))
    finally:
        for f in files:
            f.close()
    logger.info("run %s of %s: %s against %d source(s)", run_id, who, thesis_name,
                source_count)
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
                       files: list[spool.SpooledUpload], named: dict[str, str]) -> None:
    """The thesis, sources and libraries into ``files``, spooled to disk as they arrive
    (web/spool.py) under the size caps, each file's type checked by its first bytes; a
    text file (a .tex thesis, a library) is checked as text when it is read back. The
    form's text fields (the main .tex) go into ``named``."""
    reader = await request.multipart()
    total = 0
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
        if field == pages.FETCH_FIELD:  # the checkbox of open-access copies (issue 51)
            ticked = b""
            while chunk := await part.read_chunk(1024):
                ticked += chunk
                if len(ticked) > 16:
                    raise UploadRefused(400, f"the field {field!r} is a checkbox: send 1")
            named[field] = ticked.decode("utf-8", "replace").strip()
            continue
        if field == MAIN_FIELD:  # a LaTeX zip's main file, named (issue 47)
            typed = b""
            while chunk := await part.read_chunk(1024):
                typed += chunk
                if len(typed) > MAX_FILENAME_CHARS * 4:
                    raise UploadRefused(400, "the main .tex file's name is too long")
            named[MAIN_FIELD] = typed.decode("utf-8", "replace").strip()
            continue
        if field not in ("thesis", "sources", "library"):
            raise UploadRefused(400, f"unknown field {field!r}: send thesis, sources, library")
        spooled = spool.SpooledUpload(field, part.filename or "")
        files.append(spooled)
        while chunk := await part.read_chunk(CHUNK):
            total += len(chunk)
            if total > settings.max_upload_bytes:
                raise UploadRefused(413, _too_large(settings))
            spooled.write(chunk)
        if not part.filename and not spooled.size:
            files.pop().close()
            continue  # a file input left empty
        if len(files) > settings.max_files:
            raise UploadRefused(413, f"more than {settings.max_files} files in one upload")
        name = spooled.filename = _filename(part.filename, field)
        if not spooled.size:
            what = {"thesis": "the thesis", "sources": "source",
                    "library": "library"}[field]
            raise UploadRefused(400, f"{what} {name!r} is empty (0 bytes): choose the file "
                                "again, or export it again from where it was written")
        try:
            if field == "thesis":
                if sum(f.field == "thesis" for f in files) > 1:
                    raise UploadRefused(400, "one thesis per upload")
                if file_types.suffix(name) != ".tex":  # text: checked when read back
                    file_types.check_thesis(name, spooled.head, tail=spooled.tail,
                                            size=spooled.size)
            elif field == "sources":
                file_types.check_source(name, spooled.head, tail=spooled.tail,
                                        size=spooled.size)
                if any(f.filename == name for f in files[:-1] if f.field == "sources"):
                    raise UploadRefused(400, f"two sources are named {name!r}")
            elif not file_types.is_library_name(name):
                file_types.check_library(name, b"")  # its refusal for the name
        except file_types.FileRefused as err:
            raise UploadRefused(415, str(err)) from None
    if csrf_pending:
        raise UploadRefused(403, "the form's CSRF token is missing or wrong: reload the page")
    if not any(f.field == "thesis" for f in files):
        raise UploadRefused(400, "no thesis: send one file as 'thesis'")
    thesis = next(f for f in files if f.field == "thesis")
    if not any(f.field == "sources" for f in files) and \
            file_types.suffix(thesis.filename) not in file_types.WRITER_SUFFIXES:
        raise UploadRefused(400, "no sources: send the cited PDFs as 'sources' (a Word or "
                            "LaTeX thesis with its library may come without them: its "
                            "report lists the sources to add)")


async def _staged(request: web.Request, settings: WebSettings, left: int,
                  files: list[spool.SpooledUpload],
                  main: str | None = None) -> tuple[Upload, list[Upload]]:
    """The spooled files read back (under the memory budget the caller holds): the thesis
    as a run stages it (its libraries added, its ``main`` .tex named), and the sources."""
    loaded = [(f, await asyncio.to_thread(f.read)) for f in files]
    for f, _ in loaded:
        f.close()  # its disk space goes now
    try:  # in a thread: a 100 MB library is decoded
        for f, data in loaded:
            if f.field == "library":
                await asyncio.to_thread(file_types.check_library, f.filename, data)
            elif f.field == "thesis" and file_types.suffix(f.filename) in (".tex", ".docx"):
                # a .tex's text, a .docx's parts: read back whole
                await asyncio.to_thread(file_types.check_thesis, f.filename, data)
    except file_types.FileRefused as err:
        raise UploadRefused(415, str(err)) from None
    thesis_file, thesis_data = next((f, d) for f, d in loaded if f.field == "thesis")
    libraries = [(f.filename, d) for f, d in loaded if f.field == "library"]
    sources = [Upload(f.filename, d, f.digest) for f, d in loaded if f.field == "sources"]
    del loaded
    staged = await request.app[KEY_INTAKE].thesis(
        thesis_file.filename, thesis_data, libraries, left, settings.max_staged_bytes, main)
    digest = (thesis_file.digest if staged is thesis_data else  # else a bundle made of it
              await asyncio.to_thread(runs.digest_of, staged))
    return Upload(thesis_file.filename, staged, digest), sources
