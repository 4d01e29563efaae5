"""Which of the writer's formats a thesis document is, and reading it whatever it is.

A run's thesis document is stored as bytes like any other (content-addressed, parsed
once). A PDF is read from the printed page; a zip is a writer's file: a Word document
itself, or a bundle the CLI (or the user) made holding a LaTeX thesis with its chapters
and .bib, or a Word document with a library beside it (``--bib``). :func:`read_document`
reads either, unzipped once, into a :class:`~citerun.pipeline.document.Document` whose
``written`` is what the files state (:func:`read_thesis` gives the reader's own
:class:`~.model.WrittenThesis`).
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import posixpath
import re
import zipfile
from collections.abc import Iterable, Mapping

from citerun.core import pdfmagic
from citerun.pipeline import citations, document
from citerun.pipeline.document import Document, Page, TooComplex
from citerun.pipeline.pdf.limits import DocumentError
from citerun.pipeline.settings import LimitSettings
from citerun.pipeline.writer import archive, thesis_title
from citerun.pipeline.writer.limits import BibLimits, WriterLimits
from citerun.pipeline.writer.model import (
    LibraryItem,
    LibraryLimits,
    Skipped,
    WriterFileError,
    Written,
    WrittenCitation,
    WrittenThesis,
)

#: A bundle member naming the main .tex (the CLI writes it for ``verify thesis.tex``).
MAIN_MEMBER = ".citerun-main"
#: Where the CLI puts the ``--bib`` libraries in a bundle: read whatever the .tex names.
LIBRARY_DIR = "library/"
#: Suffixes of a library file in a bundle: BibTeX/BibLaTeX and CSL-JSON (pdfmagic owns them).
LIBRARY_SUFFIXES = pdfmagic.LIBRARY_SUFFIXES
#: What the CLI puts in a bundle from a LaTeX thesis's folder (text only: no figures).
BUNDLE_SUFFIXES = (".tex", ".bib", ".json", ".ltx", ".sty", ".cls", ".bbx", ".cbx", ".def",
                   ".cfg", ".clo")  # a class's own files beside it (tufte-common.def)


def is_writer_file(data: bytes) -> bool:
    """Whether ``data`` is a zip (a .docx, or a bundle): the one check before reading."""
    return pdfmagic.is_zip(data)


def library_name(path: str, bundle: Mapping[str, bytes]) -> str:
    """How a library file of the bundle is named to the writer: a ``--bib`` staged as
    ``library/0-literature.bib`` by the thesis's own file of the same bytes
    (``thesis/literature.bib``), else by the name it was given (``literature.bib``);
    any other by its path in the bundle (issue 46)."""
    if not path.startswith(LIBRARY_DIR):
        return path
    data = bundle.get(path)
    same = sorted(p for p, d in bundle.items() if not p.startswith(LIBRARY_DIR) and d == data)
    return same[0] if same else re.sub(r"^\d+-", "", path[len(LIBRARY_DIR):])


def read_library(files: Mapping[str, bytes], limits: LibraryLimits = LibraryLimits(),
                 bib_limits: BibLimits = BibLimits(), bundle: Mapping[str, bytes] | None = None
                 ) -> tuple[tuple[LibraryItem, ...], tuple[Skipped, ...]]:
    """Every library item of the bundle's .bib and CSL-JSON files, in path order.

    A ``.json`` is read as a library only where it is one: one the writer gave as the
    library (under :data:`LIBRARY_DIR`), or a JSON list of CSL items (objects with an
    ``id`` and a ``type``, ``title``, ``author`` or ``issued``). Any other ``.json`` of a
    thesis's folder (an experiment's config, a code sample) is not a library and is left
    alone. An error in a library names its file (and the line, where the reader knows it),
    as :func:`library_name` names it among ``bundle`` (all the bundle's files; ``files``
    by default). ``limits`` bound each file, ``bib_limits`` each entry of a .bib.
    """
    from citerun.pipeline.writer import bib, csl  # readers load when a writer's file is read

    items: list[LibraryItem] = []
    skipped: list[Skipped] = []
    for path in sorted(files):
        if not path.lower().endswith(LIBRARY_SUFFIXES):
            continue
        text = files[path].decode("utf-8", errors="replace")
        given = path.startswith(LIBRARY_DIR)
        shown = library_name(path, files if bundle is None else bundle)
        try:
            if path.lower().endswith(".bib"):
                found, skips = bib.read_bibtex(text, limits, bib_limits)
                items.extend(found)
                skipped.extend(dataclasses.replace(s, where=f"{shown}, {s.where}")
                               for s in skips)
            elif given or csl.is_csl_json(text, limits):
                items.extend(csl.read_csl_json(text, limits))
        except WriterFileError as err:
            raise WriterFileError(f"the library {shown}: {err}") from None
    return tuple(items), tuple(skipped)


def pdf_with_library(files: Mapping[str, bytes]) -> str | None:
    """The PDF of a bundle that holds a PDF thesis and its library (``--bib``), if it is one."""
    pdfs = [p for p in files if p.lower().endswith(".pdf") and "/" not in p]
    others = [p for p in files if p.lower().endswith((".tex", ".docx"))]
    return pdfs[0] if len(pdfs) == 1 and not others else None


#: Characters of one unit of a writer's text (see :func:`in_units`): about four printed
#: pages, well under the per-page cap a PDF's page is held to (``max_page_chars``).
UNIT_CHARS = 10_000


def in_units(pages: Iterable[tuple[int, str]],
             size: int = UNIT_CHARS) -> tuple[tuple[int, str], ...]:
    """The text as pages of at most ``size`` characters, cut between paragraphs.

    A writer's file has no printed pages: its text comes as one page. Where its
    citations are not recognised the text is read by the rules of the page (typed
    citations, a typed reference list), which hold a page to ``max_page_chars``; a
    thesis is read in units of whole paragraphs (a paragraph longer than ``size`` is cut
    at a line, else a space), so that its length counts only against the document's
    total. Units are numbered from 1 in reading order.
    """
    units: list[str] = []
    current: list[str] = []
    length = 0
    for _, text in pages:
        for paragraph in _pieces(text, size):
            if current and length + len(paragraph) + 2 > size:
                units.append("\n\n".join(current))
                current, length = [], 0
            current.append(paragraph)
            length += len(paragraph) + 2
    if current:
        units.append("\n\n".join(current))
    return tuple((number, text) for number, text in enumerate(units, 1))


def _pieces(text: str, size: int) -> Iterable[str]:
    """The paragraphs of ``text``, each at most ``size`` characters."""
    for paragraph in text.split("\n\n"):
        while len(paragraph) > size:
            cut = paragraph.rfind("\n", 0, size)
            if cut <= 0:
                cut = paragraph.rfind(" ", 0, size)
            if cut <= 0:
                cut = size
            yield paragraph[:cut]
            paragraph = paragraph[cut:].lstrip("\n ")
        if paragraph.strip():
            yield paragraph


def read_document(data: bytes, limits: LimitSettings, max_bytes: int) -> Document:
    """A thesis from the writer's files (a .docx, a LaTeX bundle, a PDF with its library),
    the zip read once within ``limits.bundle``, its text in units of paragraphs
    (:func:`in_units`; it has no printed pages, so only the document's total is capped,
    not a page's), each claim bounded (:func:`bound_written`).

    Raises :class:`~citerun.pipeline.pdf.limits.DocumentError` (``too_large``, ``corrupt``)
    and :class:`~citerun.pipeline.document.TooComplex` for one over a cap.
    """
    if len(data) > max_bytes:
        raise DocumentError("too_large", f"the document is {len(data):,} bytes, over the "
                            f"limit of {max_bytes:,} bytes")
    try:
        files = archive.read_bundle(data, limits.bundle)
        pdf_name = pdf_with_library(files)
        if pdf_name is not None:  # a PDF thesis with its library (--bib)
            library, skipped = read_library(files, limits.library, limits.writer.bib)
            read = document.read_pdf(files[pdf_name], limits, max_bytes)
            return dataclasses.replace(read, written=Written("pdf", library=library,
                                                             skipped=skipped))
        thesis = read_files(files, limits.bundle, limits.library, limits.writer)
    except WriterFileError as err:
        raise DocumentError("corrupt", f"the writer's file cannot be read: {err}") from None
    total = sum(len(text) for _, text in thesis.pages)
    if total > limits.max_total_chars:
        raise TooComplex(f"{total:,} characters of text, over the limit of "
                         f"{limits.max_total_chars:,} characters per document")
    thesis, over = bound_written(thesis, limits)
    if over is not None:
        raise TooComplex(over)
    main = files.get(MAIN_MEMBER)
    title = thesis_title.of_bundle(
        files, main.decode("utf-8", errors="replace") if main else None, limits.writer)
    return Document(pages=tuple(Page(number=n, text=t) for n, t in thesis.pages),
                    title=title, written=thesis.stated())


def bound_written(thesis: WrittenThesis, limits: LimitSettings
                  ) -> tuple[WrittenThesis, str | None]:
    """The writer's thesis with each claim cut at ``max_claim_chars`` (each cut claim
    reported once), and why its claims are too many characters together, if they are
    (issue 41: one sentence with 8,192 \\cite's made 194 MB of parsed JSON), or why it has
    too many citations (``limits.max_citations``; issue 48: a 339-byte .tex made 100,000).
    Runs in the parse child, before the thesis is sent back to the worker."""
    if len(thesis.citations) > limits.max_citations:
        return thesis, (f"{len(thesis.citations):,} citations, over the limit of "
                        f"{limits.max_citations:,} citations per thesis (limits.max_citations)")
    cut: list[WrittenCitation] = []
    noted: dict[str, Skipped] = {}
    for written in thesis.citations:
        if len(written.claim) > limits.max_claim_chars:
            if written.claim not in noted:
                noted[written.claim] = citations.long_claim_note(
                    written.where or f"page {written.page}", written.claim,
                    limits.max_claim_chars)
            written = dataclasses.replace(
                written, claim=citations.cut_claim(written.claim, limits.max_claim_chars))
        cut.append(written)
    over = citations.claims_over((c.claim for c in cut for _ in c.keys or ("",)),
                                 limits.max_claims_chars)
    if noted:
        thesis = dataclasses.replace(thesis, citations=tuple(cut),
                                     skipped=tuple(noted.values()) + thesis.skipped)
    return thesis, over


def read_thesis(data: bytes, limits: archive.BundleLimits = archive.BundleLimits(),
                library: LibraryLimits = LibraryLimits(),
                writer: WriterLimits = WriterLimits()) -> WrittenThesis:
    """The thesis in a writer's file: a .docx, or a bundle with a .tex (or a .docx) in it;
    its text in units of paragraphs (:func:`in_units`). ``limits`` bound the zip,
    ``library`` its library files, ``writer`` the readers."""
    if not is_writer_file(data):
        raise WriterFileError("not a Word document or a zip bundle")
    return read_files(archive.read_bundle(data, limits), limits, library, writer)


def read_files(files: Mapping[str, bytes], limits: archive.BundleLimits,
               library: LibraryLimits, writer: WriterLimits = WriterLimits()) -> WrittenThesis:
    """:func:`read_thesis` of a zip already read (its files by path); ``writer`` bounds
    the readers."""
    thesis = _read_thesis(dict(files), limits, library, writer)
    return dataclasses.replace(thesis, pages=in_units(thesis.pages))


def _read_thesis(files: dict[str, bytes], limits: archive.BundleLimits,
                 library_limits: LibraryLimits, writer: WriterLimits) -> WrittenThesis:
    # The readers load only when a writer's file is read: a worker parsing PDFs never does.
    from citerun.pipeline.writer import docx, latex

    if "word/document.xml" in files:
        return docx.read_docx_files(files, writer.docx)
    documents = sorted(p for p in files if p.lower().endswith(".docx"))
    if len(documents) > 1:
        raise WriterFileError(f"the bundle holds {len(documents)} Word documents "
                              f"({', '.join(documents[:5])}); give one thesis")
    if documents:
        library, skipped = read_library(files, library_limits, writer.bib)
        thesis = docx.read_docx(files[documents[0]], limits, writer.docx)
        return dataclasses.replace(thesis, library=_merged(thesis.library, library),
                                   skipped=thesis.skipped + skipped)
    if not any(p.lower().endswith(".tex") for p in files):
        raise WriterFileError("the bundle holds neither a .tex file nor a Word document")
    main = files.pop(MAIN_MEMBER, None)
    # The .tex names its .bib (\addbibresource, \bibliography); the --bib libraries and
    # a CSL-JSON beside it are the library too.
    extra, skipped = read_library({p: b for p, b in files.items()
                                   if p.startswith(LIBRARY_DIR) or p.lower().endswith(".json")},
                                  library_limits, writer.bib, bundle=files)
    thesis = latex.read_latex(files, main=main.decode("utf-8", errors="replace") if main else None,
                              bib=extra, limits=library_limits, latex_limits=writer.latex,
                              bib_limits=writer.bib)
    return dataclasses.replace(thesis, skipped=thesis.skipped + skipped)


def _merged(first: Iterable[LibraryItem], second: Iterable[LibraryItem]) -> tuple[LibraryItem, ...]:
    """Library items by key, the first seen kept."""
    items: dict[str, LibraryItem] = {}
    for item in (*first, *second):
        items.setdefault(item.key, item)
    return tuple(items.values())


def bundle(files: Mapping[str, bytes]) -> bytes:
    """A zip of ``files`` (path inside the bundle -> bytes), the same bytes for the same
    files: sorted, fixed timestamps, so staging it twice gives one document."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for path in sorted(files):
            clean = posixpath.normpath(path)
            if clean.startswith(("../", "/")) or clean == "..":
                raise WriterFileError(f"{path!r} would leave the bundle")
            info = zipfile.ZipInfo(clean, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            out.writestr(info, files[path])
    return buf.getvalue()


def attached(library: Iterable[LibraryItem],
             filenames: Iterable[str]) -> dict[str, tuple[LibraryItem, ...]]:
    """Source file name -> the library items that attach that file.

    A reference manager's ``file`` field states which PDF is which item, so the source of
    the run with that file name gets the item's key as an explicit key and the item's
    metadata (title, authors, year, DOI as the writer's library has them). An item that
    attaches several of the run's sources (the paper and its supplement) names none of
    them: which one is cited is not stated, so the fuzzy match decides.
    """
    names = set(filenames)
    items: dict[str, dict[str, LibraryItem]] = {}
    for item in library:
        files = {path.replace("\\", "/").rsplit("/", 1)[-1] for path in item.files} & names
        if len(files) == 1:
            items.setdefault(files.pop(), {}).setdefault(item.key, item)
    return {name: tuple(found.values()) for name, found in items.items()}


def locate(extraction: citations.Extraction, thesis: Document) -> citations.Extraction:
    """The citations the rules of the page found in a writer's text, each with where it
    stands ("paragraph 34", "footnote 3"; :attr:`WrittenThesis.blocks`): its marker
    searched in its unit from where the unit's previous citation stood. A citation whose
    marker is not found, or a text whose paragraphs do not line up with the blocks (a
    paragraph cut for its length), keeps no location."""
    pages = thesis.numbered()
    blocks = thesis.written.blocks if thesis.written is not None else ()
    units = dict(pages)
    starts, offset = [], 0
    for _, text in pages:
        for paragraph in text.split("\n\n"):
            starts.append(offset)
            offset += len(paragraph) + 2
    if not blocks or len(starts) != len(blocks):
        return extraction
    unit_start, offset = {}, 0
    for number, text in pages:
        unit_start[number] = offset
        offset += len(text) + 2
    cursor: dict[int, int] = {}
    located = []
    for citation in extraction.citations:
        text = units.get(citation.page, "")
        at = text.find(citation.marker, cursor.get(citation.page, 0))
        if at < 0:
            at = text.find(citation.marker)
        if at < 0 or citation.location:
            located.append(citation)
            continue
        cursor[citation.page] = at
        block = bisect.bisect_right(starts, unit_start[citation.page] + at) - 1
        located.append(dataclasses.replace(citation, location=blocks[block]))
    # What the rules of the page did not take says where it stands the same way: a
    # Word thesis has paragraphs, not the "page 5" of a unit of its text (issue 46).
    skipped = []
    for skip in extraction.skipped:
        unit = _UNIT_WHERE.fullmatch(skip.where)
        number = int(unit.group(1)) if unit else 0
        text = units.get(number, "")
        at = text.find(skip.text[:80]) if unit and text and skip.text else -1
        if unit and at >= 0:
            block = bisect.bisect_right(starts, unit_start[number] + at) - 1
            skip = dataclasses.replace(skip, where=blocks[block] + unit.group(2))
        skipped.append(skip)
    return dataclasses.replace(extraction, citations=tuple(located), skipped=tuple(skipped))


# Where the rules of the page say a thing stands: "page 5", "page 5, footnote 2".
_UNIT_WHERE = re.compile(r"page (\d+)(.*)", re.DOTALL)
