"""One document model for every thesis and source, PDF or writer's file.

A read (:func:`citerun.pipeline.recipe.read`) gives a :class:`Document`: its pages (number,
text, size, printed label, lines with their boxes and font sizes, a small rendering where
there is one), what it says about itself (title, authors, year, DOI, arXiv id) and, for a
thesis from the writer's files, what those state (:class:`~.writer.model.Written`: its
citations, library, the notes of what was not taken). Every later stage takes it.

The parse stage stores a document as rows (``documents`` and ``document_pages``): this
module owns that form both ways, :func:`page_row`/:func:`page_from_row` for a page and
:func:`written_json`/:meth:`Document.from_rows` (a pydantic adapter over the dataclasses)
for the rest, so a stored document reads back as the one that was read.
"""

from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import re
from typing import Any

import pydantic

from citerun.pipeline import layout
from citerun.pipeline.citations import references
from citerun.pipeline.pdf import limits as pdf_limits
from citerun.pipeline.pdf.parse import Page, parse_pdf
from citerun.pipeline.settings import LimitSettings
from citerun.pipeline.writer.model import Written

__all__ = ["Document", "Page", "Row", "Source", "TooComplex", "Written", "check_text", "page_from_row",
           "page_row", "read_pdf", "without_reference_list", "written_json"]

#: A stored row read by column name (an ``asyncpg.Record``, a dict).
Row = collections.abc.Mapping[str, Any]

_ALLOCATION_FAILED = re.compile(r"\b(?:m|re|c)alloc\b.{0,40}\bfailed|out of memory",
                                re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Document:
    """A thesis or a source as read: pages in reading order, what it says about itself
    (``title``, ``authors`` as printed, ``year``, ``doi``, ``arxiv_id``; see
    :func:`~citerun.pipeline.pdf.identity.identify`), and what a writer's file states."""

    pages: tuple[Page, ...]
    title: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    written: Written | None = None

    @property
    def page_count(self) -> int:
        return len(self.pages)

    def numbered(self) -> list[tuple[int, str]]:
        """The pages as ``(number, text)``, what the citation rules read."""
        return [(page.number, page.text) for page in self.pages]

    @classmethod
    def from_rows(cls, row: Row, pages: collections.abc.Iterable[Row] = ()) -> Document:
        """The document back from its stored row (``title``, ``authors``, ``year``,
        ``doi``, ``arxiv_id``, ``written``; a column the query left out stays empty) and
        page rows (:func:`page_from_row`)."""
        written = _get(row, "written")
        return cls(pages=tuple(page_from_row(p) for p in pages), title=_get(row, "title"),
                   authors=tuple(_get(row, "authors") or ()), year=_get(row, "year"),
                   doi=_get(row, "doi"), arxiv_id=_get(row, "arxiv_id"),
                   written=_WRITTEN.validate_python(written) if written is not None else None)


@dataclasses.dataclass(frozen=True)
class Source:
    """A source of a run: its id (a digest), the name the run gave it, what was read (its
    first page where a citation names a work), the keys the run assigns it, and why it
    could not be read (``read`` false)."""

    id: str
    filename: str
    document: Document
    keys: tuple[str, ...] = ()
    read: bool = True
    error: str | None = None


_WRITTEN: pydantic.TypeAdapter[Written] = pydantic.TypeAdapter(Written)


def written_json(document: Document) -> dict[str, Any] | None:
    """What the writer's file states, as ``documents.written`` stores it (None for a PDF)."""
    if document.written is None:
        return None
    stored: dict[str, Any] = _WRITTEN.dump_python(document.written, mode="json")
    return stored


def page_row(page: Page) -> tuple[int, str, float, float, list[layout.LineRow], bytes | None,
                                  str | None, bool]:
    """A page as ``document_pages`` stores it: number, text, width, height, lines, image,
    label, read by OCR."""
    return (page.number, page.text, page.width, page.height, layout.line_rows(page.lines),
            page.image, page.label, page.ocr)


def page_from_row(row: Row) -> Page:
    """A page back from its row; columns a query left out stay empty."""
    image = _get(row, "image")
    return Page(number=int(row["number"]), text=str(row["text"]),
                lines=layout.lines_of(_get(row, "lines") or ()),
                width=float(_get(row, "width") or 0.0), height=float(_get(row, "height") or 0.0),
                image=bytes(image) if image is not None else None, label=_get(row, "label"),
                ocr=bool(_get(row, "ocr")))


def _get(row: Row, key: str) -> Any:
    try:
        return row[key]
    except (KeyError, IndexError):
        return None


# -- reading a PDF within the limits -------------------------------------------------------

class TooComplex(pdf_limits.DocumentError):
    """The document needs more than a task may spend on it; the message names the limit."""

    def __init__(self, limit: str) -> None:
        self.limit = limit
        super().__init__(pdf_limits.TOO_COMPLEX, f"{pdf_limits.TOO_COMPLEX}: {limit}")

    def __reduce__(self) -> tuple[type[TooComplex], tuple[str]]:
        return TooComplex, (self.limit,)  # sent back from a sandboxed child as a value


def check_text(pages: collections.abc.Sequence[tuple[int, str]] | collections.abc.Sequence[Page],
               limits: LimitSettings) -> str | None:
    """Which text cap the pages exceed (a message), or None."""
    numbered = [(p.number, p.text) if isinstance(p, Page) else p for p in pages]
    if len(numbered) > limits.max_pages:
        return f"{len(numbered):,} pages, over the limit of {limits.max_pages:,} pages"
    total = 0
    for number, text in numbered:
        if len(text) > limits.max_page_chars:
            return (f"page {number} has {len(text):,} characters of text, over the limit of "
                    f"{limits.max_page_chars:,} characters per page")
        total += len(text)
    if total > limits.max_total_chars:
        return (f"{total:,} characters of text, over the limit of "
                f"{limits.max_total_chars:,} characters per document")
    return None


def page_count_of(data: bytes) -> int:
    """A PDF's page count, without parsing its pages (0 where it cannot be opened)."""
    import pymupdf

    with contextlib.suppress(Exception):
        with pymupdf.open(stream=data, filetype="pdf") as doc:  # type: ignore[no-untyped-call]
            return int(doc.page_count)
    return 0


def read_pdf(data: bytes, limits: LimitSettings, max_bytes: int, *, ocr: bool = False) -> Document:
    """A PDF's pages and what it says about itself, within the page and text caps; with
    ``ocr`` (and ``limits.ocr.enabled``), pages without a usable text layer read by OCR.

    Raises :class:`~citerun.pipeline.pdf.limits.DocumentError` for a document that cannot
    be used (its reason says why) and :class:`TooComplex` for one over a cap.
    """
    count = page_count_of(data)  # first: it costs no parsing
    if count > limits.max_pages:
        raise TooComplex(f"{count:,} pages, over the limit of {limits.max_pages:,} pages")
    try:
        document = parse_pdf(data, max_bytes=max_bytes,
                             ocr=limits.ocr if ocr and limits.ocr.enabled else None,
                             max_page_chars=limits.max_page_chars)
    except pdf_limits.DocumentError as err:
        if _ALLOCATION_FAILED.search(str(err)):  # MuPDF reports a failed malloc as an error
            raise TooComplex(f"the address space limit of {limits.parse.address_space_mb} "
                             f"MiB was exceeded ({err})") from err
        raise
    over = check_text(document.pages, limits)
    if over is not None:
        raise TooComplex(over)
    return document


def without_reference_list(pages: collections.abc.Sequence[Page]) -> list[Page]:
    """The pages without the document's own reference list (issue 40): passages are
    retrieved from the chunks, and a bibliography line is never evidence for a claim.
    The list is found as in a thesis (:func:`references.find_reference_section`: its
    heading, ended by an appendix); a document without one is kept whole."""
    body, reference_text, _ = references.find_reference_section(
        [(page.number, page.text) for page in pages])
    if not reference_text:
        return list(pages)
    by_number = {page.number: page for page in pages}
    return [dataclasses.replace(by_number[number], text=text) for number, text in body]
