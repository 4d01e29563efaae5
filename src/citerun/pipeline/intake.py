"""The files a run takes, and what it stages for a thesis: the one intake of ``citerun
verify`` and ``citerun serve``.

Pure bytes, no Postgres and no file system. A thesis is a PDF, a Word ``.docx``, a ``.zip``
holding a LaTeX thesis, or a lone ``.tex``; a library is BibTeX (``.bib``) or CSL-JSON
(``.json``); a source is a PDF. The type is the name's suffix, checked against the file's
first bytes (the suffixes and the magic numbers are :mod:`citerun.core.pdfmagic`'s). A
thesis sent with the writer's libraries is staged as one bundle holding both, each library
a ``library/N-name`` member (:data:`~citerun.pipeline.writer.formats.LIBRARY_DIR`).
"""

from __future__ import annotations

import codecs
import io
import stat
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from citerun.core import errors, pdfmagic
from citerun.pipeline.writer import archive, formats, latex_main
from citerun.pipeline.writer.model import WriterFileError

#: The suffixes of a thesis file and of a library file (the owner is core.pdfmagic).
THESIS_SUFFIXES = pdfmagic.THESIS_SUFFIXES
LIBRARY_SUFFIXES = pdfmagic.LIBRARY_SUFFIXES
#: The thesis suffixes whose files are zip archives: a Word document, a LaTeX bundle.
ZIP_SUFFIXES: tuple[str, ...] = (".docx", ".zip")
#: The one suffix of a source.
SOURCE_SUFFIX = ".pdf"
#: The thesis suffixes a writer's file has (its citations have keys a library resolves):
#: such a thesis may come without sources, and its report lists the ones to add.
WRITER_SUFFIXES: tuple[str, ...] = (".docx", ".zip", ".tex")


class FileRefused(errors.CiterunError):
    """A file of no type a run takes, or whose bytes are not of the type its name says."""


def suffix(name: str) -> str:
    """``name``'s suffix in lower case ("" when it has none)."""
    return PurePosixPath(name).suffix.lower()


def is_thesis_name(name: str) -> bool:
    return suffix(name) in THESIS_SUFFIXES


def is_library_name(name: str) -> bool:
    return suffix(name) in LIBRARY_SUFFIXES


def is_zip_thesis(name: str) -> bool:
    """Whether the thesis ``name`` is read from a zip (so its size is what it expands to)."""
    return suffix(name) in ZIP_SUFFIXES


def check_thesis(name: str, data: bytes, *, tail: bytes | None = None,
                 size: int | None = None) -> None:
    """Refuse (:class:`FileRefused`) a thesis of another type, or whose bytes are not what
    its suffix says, by their structure (:mod:`citerun.core.pdfmagic`, issue 48): a PDF
    (not a zip), a zip for a .docx or a .zip (its end of central directory), a Word
    document for a .docx (its ``[Content_Types].xml``), UTF-8 text for a .tex.

    ``data`` is the whole file, or only its start while it is received, with its last
    bytes (``tail``, :data:`~citerun.core.pdfmagic.ZIP_TAIL` of them) and its ``size``:
    then a .docx's parts are left for the check of the whole file."""
    kind = suffix(name)
    if kind not in THESIS_SUFFIXES:
        raise FileRefused(f"thesis {name!r}: send a .pdf, a .docx, a .zip holding a LaTeX "
                          "thesis, or a .tex")
    whole = tail is None
    zipped = _zipped(data, tail, size)
    if kind == ".pdf" and not pdfmagic.is_pdf(data):
        raise FileRefused(f"thesis {name!r} is not a PDF{_what(zipped)}")
    if kind in ZIP_SUFFIXES and not zipped:
        raise FileRefused(f"thesis {name!r} is not a {kind} (no zip archive: "
                          f"{_no_zip(data)})")
    if kind == ".docx" and whole and not pdfmagic.is_docx(data):
        raise FileRefused(f"thesis {name!r} is not a .docx (no Word document: the zip "
                          f"has no {pdfmagic.CONTENT_TYPES})")
    if kind == ".tex":
        check_text(name, data)


def _zipped(data: bytes, tail: bytes | None, size: int | None) -> bool:
    if tail is None:
        return pdfmagic.is_zip(data)
    return pdfmagic.zip_end(data, tail, len(data) if size is None else size)


def _what(zipped: bool) -> str:
    return " (it is a zip archive)" if zipped else ""


def _no_zip(data: bytes) -> str:
    if data[:4] != pdfmagic.ZIP_MAGIC:
        return "it does not open with a zip's local file header"
    return "it opens like one but has no end of central directory that fits it"


def check_library(name: str, data: bytes) -> None:
    """Refuse a library that is neither BibTeX nor CSL-JSON by its name, or is no text."""
    if not is_library_name(name):
        raise FileRefused(f"library {name!r}: send BibTeX (.bib) or CSL-JSON (.json)")
    check_text(name, data)


def check_source(name: str, data: bytes, *, tail: bytes | None = None,
                 size: int | None = None) -> None:
    """Refuse a source that is not a PDF by its bytes (a zip that puts ``%PDF-`` in its
    first 1,024 bytes is a zip); ``tail`` and ``size`` as :func:`check_thesis` takes them."""
    if not pdfmagic.is_pdf(data):
        raise FileRefused(f"source {name!r} is not a PDF{_what(_zipped(data, tail, size))}")


#: Bytes of a text file decoded at a time when it is checked (the whole file is never
#: one string: a 100 MB library would be up to 400 MB of it, issue 48).
TEXT_CHECK_CHUNK = 1 << 20


def check_text(name: str, data: bytes) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(data), TEXT_CHECK_CHUNK):
            decoder.decode(data[start:start + TEXT_CHECK_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise FileRefused(f"{name!r} is not UTF-8 text") from None
    if b"\0" in data:  # in UTF-8 only U+0000 has a zero byte
        raise FileRefused(f"{name!r} is not text")


def library_member(index: int, name: str) -> str:
    """The bundle member the ``index``-th library ``name`` is staged as."""
    return f"{formats.LIBRARY_DIR}{index}-{name}"


def bundle(files: Mapping[str, bytes], libraries: Sequence[tuple[str, bytes]],
           main: str | None = None) -> bytes:
    """A bundle of a LaTeX thesis's ``files`` (by path) with the ``libraries`` added;
    ``main`` names its main .tex (None: the reader finds it)."""
    named = {formats.MAIN_MEMBER: main.encode()} if main is not None else {}
    library = {library_member(i, name): data for i, (name, data) in enumerate(libraries)}
    return formats.bundle({**files, **named, **library})


def thesis_bytes(name: str, data: bytes, libraries: Sequence[tuple[str, bytes]]) -> bytes:
    """What a run stages for a thesis file ``name`` (.pdf, .docx, .zip, or a lone .tex)
    with the writer's libraries (``(file name, bytes)``): the file itself when there is
    no library, else a bundle holding both. Raises
    :class:`~citerun.pipeline.writer.model.WriterFileError` for a .zip that is no readable
    bundle."""
    kind = suffix(name)
    if kind == ".tex":
        return bundle({name: data}, libraries, main=name)
    if not libraries:
        return data
    if kind == ".zip":
        return bundle(archive.read_bundle(data), libraries)
    return bundle({name: data}, libraries)


def zip_main(data: bytes, main: str | None = None) -> str | None:
    """The main .tex of a zipped LaTeX thesis: the one the writer named (``main``, a path
    in the zip or a file name only one .tex has), else the one
    :func:`~citerun.pipeline.writer.latex_main.find_main` finds, from the first
    :data:`~citerun.pipeline.writer.latex_main.HEAD_BYTES` of each .tex member (nothing
    else is inflated). None: no LaTeX zip (a Word document in it, no .tex, no readable
    zip: its reader says why). Raises
    :class:`~citerun.pipeline.writer.model.WriterFileError` for a named file not in the
    zip, :class:`~citerun.pipeline.writer.latex_main.AmbiguousMain` when several files
    could be the main one and none is named."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as bundle:
            members = {}
            for info in bundle.infolist():
                try:
                    path = archive._member_path(info)
                except WriterFileError:
                    return None  # the reader refuses it, saying why
                if path and not info.is_dir() and not stat.S_ISLNK(info.external_attr >> 16):
                    members[path] = info
            if any(p.lower().endswith(".docx") for p in members):
                return None
            tex = [p for p in members if latex_main.is_tex(p)]
            if not tex:
                return None
            if main is not None and main.strip():
                found = latex_main.named(main, tex)
                if found is None:
                    raise WriterFileError(f"the main file {main.strip()!r} is not in the zip; "
                                          f"its .tex files: {latex_main.listed(sorted(tex))}")
                return found
            heads: dict[str, str] = {}
            for path in tex:
                if members[path].flag_bits & 0x1:
                    continue  # encrypted: the reader refuses it
                with bundle.open(members[path]) as stream:
                    heads[path] = stream.read(latex_main.HEAD_BYTES).decode(
                        "utf-8", errors="replace")
    except archive.UNREADABLE:  # a head that does not inflate too (issue 48's fuzzing)
        return None
    return latex_main.find_main_in(heads)
