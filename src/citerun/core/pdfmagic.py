"""Whether bytes are a PDF at all: the one check the operator, the worker and the
parser make before anything dearer (hashing, storing, opening the document).

It lives in the core, next to no other module, so that the operator and the worker
(which may not import each other) and the pipeline share the one rule.
"""

from __future__ import annotations

import io
import struct
import zipfile

# A PDF reader accepts the header anywhere in the first 1024 bytes (ISO 32000-1, 7.5.2
# implementation note), and some producers do write junk before it.
MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024

# A writer's file (a Word .docx, or a bundle holding a LaTeX thesis) is a zip: a local
# file header first (APPNOTE 4.3.7). Only a thesis may be one (citerun.pipeline.writer).
ZIP_MAGIC = b"PK\x03\x04"
#: The end of central directory record (APPNOTE 4.3.16): 22 bytes and a comment of at most
#: 65,535, so it lies within the last :data:`ZIP_TAIL` bytes; ZIP64's record and locator
#: (4.3.14, 4.3.15) just before it.
_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
ZIP_TAIL = 22 + 0xFFFF + 20 + 56
#: The part that makes a zip a Word document (ECMA-376 Part 2: Open Packaging Conventions).
CONTENT_TYPES = "[Content_Types].xml"


#: The suffixes a thesis file may have (CLI, web and the worker's parse take the same):
#: a PDF, a Word document, a LaTeX file, a zip holding a LaTeX thesis.
THESIS_SUFFIXES: tuple[str, ...] = (".pdf", ".docx", ".tex", ".zip")
#: The suffixes of a library file: BibTeX/BibLaTeX and CSL-JSON.
LIBRARY_SUFFIXES: tuple[str, ...] = (".bib", ".json")


def zip_end(head: bytes, tail: bytes, size: int) -> bool:
    """Whether a file of ``size`` bytes, opening with ``head`` and ending with ``tail``
    (its last :data:`ZIP_TAIL` bytes, or all of it), is a zip by its structure (issue 48):
    a local file header first, and an end of central directory record whose central
    directory ends where the record (or ZIP64's) begins, on one disk. A text opening with
    ``PK\\x03\\x04`` is not one; neither is a file with a zip's record but not at its
    start."""
    if head[:4] != ZIP_MAGIC:
        return False
    at = tail.rfind(_EOCD)
    while at >= 0:
        if _record_fits(tail, at, size - len(tail)):
            return True
        at = tail.rfind(_EOCD, 0, at)
    return False


def _record_fits(tail: bytes, at: int, tail_start: int) -> bool:
    record = tail[at:at + 22]
    if len(record) < 22:
        return False
    (_, disk, cd_disk, here, total, cd_size, cd_offset,
     comment) = struct.unpack("<4sHHHHIIH", record)
    if at + 22 + comment != len(tail) or disk != cd_disk or here != total:
        return False
    end = tail_start + at
    if cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF or total == 0xFFFF:
        locator = at - 20
        if locator < 56 or tail[locator:locator + 4] != _ZIP64_LOCATOR:
            return False
        zip64_at = int(struct.unpack("<Q", tail[locator + 8:locator + 16])[0])
        record64 = zip64_at - tail_start
        if record64 < 0 or tail[record64:record64 + 4] != _ZIP64_EOCD:
            return False
        cd_size, cd_offset = (int(v) for v in struct.unpack(
            "<QQ", tail[record64 + 40:record64 + 56]))
        end = zip64_at
    return bool(cd_offset + cd_size == end)


def is_zip(data: bytes) -> bool:
    """Whether ``data`` is a zip archive by its structure (:func:`zip_end`)."""
    return zip_end(data[:4], data[-ZIP_TAIL:], len(data))


def is_pdf(data: bytes) -> bool:
    """Whether ``data`` is a PDF: ``%PDF-`` within the first 1024 bytes, in a file that
    does not open as a zip does (a zip whose first member's name is ``%PDF-1.7.tex`` was
    taken for a PDF, issue 48). Its trailer is not required: mupdf repairs a PDF whose end
    was cut off, and reads it."""
    return MAGIC in data[:MAGIC_WINDOW] and data[:4] != ZIP_MAGIC


def is_docx(data: bytes) -> bool:
    """Whether ``data`` is a Word document's package: a zip with ``[Content_Types].xml``
    (its central directory read, nothing inflated)."""
    if not is_zip(data):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return any(info.filename == CONTENT_TYPES for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, struct.error, NotImplementedError, IndexError,
            OSError, EOFError):
        return False


def is_thesis(data: bytes) -> bool:
    """Whether ``data`` may be a run's thesis: a PDF, or a writer's file."""
    return is_pdf(data) or is_zip(data)
