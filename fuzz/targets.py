"""The fuzz targets (issue 48, item 4): each reader called as the worker calls it, with the
configured limits, on bytes a fuzzer makes.

A target returns normally when the reader read the input or refused it with one of its
documented refusals (:data:`REFUSALS`: the error classes the worker turns into a clear
``corrupt`` / ``document_too_complex`` answer or an upload's 4xx). Anything else it raises
(any other exception: a crash), or an input that runs past the harness's time bound (a
hang) or memory bound (a blow-up), is a finding (:mod:`fuzz.harness`).

The targets, by name (:data:`TARGETS`):

- ``bib``: a .bib library, decoded as the worker decodes it (UTF-8, errors replaced), read
  through :func:`formats.read_library` under ``limits.library`` / ``limits.writer.bib``.
- ``csl``: a CSL-JSON library, the same way (as a library the writer gave, ``library/``).
- ``latex``: a LaTeX thesis of one or more files (:func:`members`), read by
  :func:`formats.read_files` (the worker's path after the unzip) and bounded as
  :func:`formats.read_document` bounds it.
- ``docx``: the XML parts of a Word document (:func:`members`; the first is
  ``word/document.xml``), the same way.
- ``references``: a PDF's text (pages cut at form feeds) through the page caps and the
  reference-list reader, as extraction and a source's reading use it.
- ``zip``: the bytes of an uploaded ``.zip`` thesis: the intake's checks and staging
  (:func:`citerun.web.intake.prepare`, with and without a library), then the worker's
  :func:`formats.read_document` of what was staged.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Mapping

from citerun.pipeline import document
from citerun.pipeline.citations import references
from citerun.pipeline.document import TooComplex
from citerun.pipeline.intake import FileRefused, check_thesis
from citerun.pipeline.pdf.limits import DocumentError
from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.pipeline.writer import archive, formats
from citerun.pipeline.writer.model import WriterFileError

#: The limits a worker reads with when nothing is configured (the chart sets none).
LIMITS = LimitSettings()
MAX_BYTES = DocumentSettings().max_bytes

#: The refusals each target's reader documents: a target's input ending in one of these
#: was read as designed. ``DocumentError`` covers ``TooComplex`` (a cap named).
REFUSALS: dict[str, tuple[type[BaseException], ...]] = {
    "bib": (WriterFileError,),
    "csl": (WriterFileError,),
    "latex": (WriterFileError, DocumentError),
    "docx": (WriterFileError, DocumentError),
    "references": (DocumentError,),
    "zip": (FileRefused, WriterFileError, DocumentError),  # + IntakeRefused, added below
}

#: What separates the files of a ``latex`` or ``docx`` input: ``%%FILE path`` on a line.
FILE_MARK = b"%%FILE "
#: The first file's path when the input does not name it.
FIRST_FILE = {"latex": "thesis.tex", "docx": "word/document.xml"}


def members(data: bytes, first: str) -> dict[str, bytes]:
    """The files of a multi-file input: what precedes the first ``%%FILE path`` line is
    ``first``; each mark starts the next file (its path the rest of the line). A path the
    bundle reader refuses (``..``, absolute, a backslash) is left out, as a zip holding it
    never reaches the reader; a path given twice keeps its first file."""
    files: dict[str, bytes] = {}
    chunks = data.split(b"\n" + FILE_MARK)
    head = chunks[0]
    if head.startswith(FILE_MARK):
        chunks[0] = head[len(FILE_MARK):]
    else:
        files[first] = head
        chunks = chunks[1:]
    for chunk in chunks:
        name, _, body = chunk.partition(b"\n")
        try:
            path = archive._member_path(zipfile.ZipInfo(name.decode("utf-8", "replace").strip()))
        except (WriterFileError, ValueError):
            continue
        if path and path not in files:
            files[path] = body
    return files


def encode_members(files: Mapping[str, bytes], first: str) -> bytes:
    """The input :func:`members` reads back as ``files`` (``first`` leads, unmarked)."""
    out = bytearray(files.get(first, b""))
    for path in sorted(files):
        if path != first:
            out += b"\n" + FILE_MARK + path.encode() + b"\n" + files[path]
    return bytes(out)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")  # as formats.read_library decodes


def bib(data: bytes) -> None:
    formats.read_library({"thesis.bib": data}, LIMITS.library, LIMITS.writer.bib)


def csl(data: bytes) -> None:
    from citerun.pipeline.writer import csl as csl_reader

    formats.read_library({formats.LIBRARY_DIR + "0-library.json": data}, LIMITS.library,
                         LIMITS.writer.bib)
    csl_reader.is_csl_json(_text(data), LIMITS.library)  # a .json beside a thesis


def _written(files: dict[str, bytes]) -> None:
    """:func:`formats.read_document` after its unzip: read, capped, bounded."""
    thesis = formats.read_files(files, LIMITS.bundle, LIMITS.library, LIMITS.writer)
    total = sum(len(text) for _, text in thesis.pages)
    if total > LIMITS.max_total_chars:
        raise TooComplex(f"{total:,} characters")
    thesis, over = formats.bound_written(thesis, LIMITS)
    if over is not None:
        raise TooComplex(over)
    thesis.stated()


def latex(data: bytes) -> None:
    _written(members(data, FIRST_FILE["latex"]))


def docx(data: bytes) -> None:
    files = members(data, FIRST_FILE["docx"])
    _written(files)


def pdf_references(data: bytes) -> None:
    pages = [(number, page) for number, page in enumerate(_text(data).split("\f"), 1)]
    over = document.check_text(pages, LIMITS)
    if over is not None:
        raise TooComplex(over)
    _, listed, _ = references.find_reference_section(pages)
    if listed:
        references.parse_reference_list(listed)


#: The library an upload may carry beside its thesis (the intake appends it to the zip).
_LIBRARY = (b"@article{alvarez2019, title = {Nocturnal Heat}, author = {Alvarez, Maria},"
            b" year = {2019}}\n")


def zip_intake(data: bytes) -> None:
    from citerun.web import intake

    check_thesis("thesis.zip", data)
    cap = 10 * LIMITS.bundle.max_total_bytes
    for libraries in ([], [("refs.bib", _LIBRARY)]):
        try:
            staged = intake.prepare("thesis.zip", data, libraries, cap, cap, LIMITS.bundle)
        except intake.IntakeRefused:
            return
    # What the worker's parse child does with the staged bundle (issue 41's read_document).
    formats.read_document(staged, LIMITS, MAX_BYTES)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "bib": bib,
    "csl": csl,
    "latex": latex,
    "docx": docx,
    "references": pdf_references,
    "zip": zip_intake,
}


def refusals(target: str) -> tuple[type[BaseException], ...]:
    """:data:`REFUSALS` of ``target``; the web intake's refusal loads with it."""
    if target == "zip":
        from citerun.web.intake import IntakeRefused

        return (*REFUSALS["zip"], IntakeRefused)
    return REFUSALS[target]


def run(target: str, data: bytes) -> BaseException | None:
    """``target`` on ``data``; the documented refusal it ended in, if any. Anything else
    raises."""
    try:
        TARGETS[target](data)
    except refusals(target) as err:
        return err
    return None
