"""A writer's bundle (a .zip holding a LaTeX thesis, a .docx) read within bounds.

Archives come from users: a member may name a path outside the bundle (``../../etc``,
``/abs``, ``C:\\x``), be a symbolic link, claim one size and inflate to another, or be
one of a million empty files. :func:`read_bundle` reads members into memory only up to
the limits of :class:`BundleLimits`, decompressing in chunks and stopping at the first
byte over a limit, so a zip bomb costs at most the limit; anything else it refuses with
a :class:`~citerun.pipeline.writer.model.WriterFileError` that says what and which member.
Nothing is written to disk and nothing inside is executed or opened recursively.
"""

from __future__ import annotations

import io
import lzma
import posixpath
import stat
import struct
import zipfile
import zlib

import pydantic

from citerun.pipeline.writer.model import WriterFileError

_CHUNK = 1 << 16

#: What :mod:`zipfile` raises on a zip it cannot read, besides :class:`zipfile.BadZipFile`
#: (issue 48's fuzzing: a zip of version 10.1 is NotImplementedError, members placed before
#: the archive's start a negative seek's ValueError, appending to it struct.error).
UNREADABLE: tuple[type[Exception], ...] = (
    zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError,
    NotImplementedError, RuntimeError, struct.error, zlib.error, lzma.LZMAError)


class BundleLimits(pydantic.BaseModel):
    """How much of a bundle is read. The defaults hold a thesis with its figures; the
    worker's parse child reads them from ``CITERUN_LIMITS__BUNDLE__*``
    (:class:`citerun.pipeline.settings.LimitSettings`)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    max_archive_bytes: int = pydantic.Field(
        200 * 1024 * 1024, ge=1, description="Bytes of a writer's zip (a .docx or a LaTeX "
        "bundle) as stored: a thesis with its figures is well under 200 MiB.")
    max_members: int = pydantic.Field(
        5_000, ge=1, description="Files in one bundle: a LaTeX thesis has tens to hundreds.")
    max_member_bytes: int = pydantic.Field(
        100 * 1024 * 1024, ge=1, description="Bytes of one file of a bundle, inflated.")
    max_total_bytes: int = pydantic.Field(
        300 * 1024 * 1024, ge=1, description="Bytes of all the files of a bundle, inflated: "
        "reading stops at the first byte over it, so a zip bomb costs at most this.")
    max_ratio: float = pydantic.Field(
        200.0, gt=1, description="Inflation ratio of a file over 1 MiB beyond which it is a "
        "zip bomb (text compresses 5-20 fold).")


def _member_path(info: zipfile.ZipInfo) -> str:
    """The member's path inside the bundle, refused if it could leave it."""
    name = info.filename
    if "\\" in name or "\x00" in name:
        raise WriterFileError(f"archive member {name!r}: backslash or NUL in its name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise WriterFileError(f"archive member {name!r}: an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise WriterFileError(f"archive member {name!r}: a path leaving the archive")
    return posixpath.join(*parts) if parts else ""


def read_bundle(data: bytes, limits: BundleLimits = BundleLimits()) -> dict[str, bytes]:
    """Every regular file of the zip ``data`` by its path inside the bundle.

    Directories are skipped; links, encrypted members, duplicate paths and members over
    the limits are refused.
    """
    if len(data) > limits.max_archive_bytes:
        raise WriterFileError(
            f"archive of {len(data)} bytes is over the limit of {limits.max_archive_bytes}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except UNREADABLE as err:
        raise WriterFileError(f"not a readable zip archive: {err}") from None
    if len(infos) > limits.max_members:
        raise WriterFileError(
            f"archive has {len(infos)} members, over the limit of {limits.max_members}")
    files: dict[str, bytes] = {}
    total = 0
    with archive:
        for info in infos:
            path = _member_path(info)
            mode = info.external_attr >> 16
            if not path or info.is_dir():  # an empty name has no last character
                continue
            if stat.S_ISLNK(mode):
                raise WriterFileError(f"archive member {info.filename!r}: a symbolic link")
            if info.flag_bits & 0x1:
                raise WriterFileError(f"archive member {info.filename!r}: encrypted")
            if path in files:
                raise WriterFileError(f"archive member {info.filename!r}: its path is there twice")
            budget = min(limits.max_member_bytes, limits.max_total_bytes - total)
            if info.file_size > budget:
                raise WriterFileError(
                    f"archive member {info.filename!r} of {info.file_size} bytes is over the "
                    "limits on a member and on the archive")
            files[path] = _read_member(archive, info, budget, limits)
            total += len(files[path])
    return files


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int,
                 limits: BundleLimits) -> bytes:
    """The member's bytes, decompressed in chunks; stops at the first byte over a limit."""
    out = bytearray()
    compressed = max(info.compress_size, 1)
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                out += chunk
                if len(out) > budget:
                    raise WriterFileError(
                        f"archive member {info.filename!r} inflates beyond the limits "
                        f"(declared {info.file_size} bytes)")
                if len(out) > (1 << 20) and len(out) / compressed > limits.max_ratio:
                    raise WriterFileError(
                        f"archive member {info.filename!r} inflates more than "
                        f"{limits.max_ratio:.0f}-fold: a zip bomb")
    except UNREADABLE as err:
        raise WriterFileError(f"archive member {info.filename!r} is unreadable: {err}") from None
    return bytes(out)
