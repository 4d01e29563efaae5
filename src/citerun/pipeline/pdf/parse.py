"""PDF bytes into cleaned pages and what the document says about itself.

Page numbers are the evidence the report shows, so they survive every step. The page's
lines come from :mod:`citerun.pipeline.layout` in reading order (columns, no running
heads, page numbers or margin stamps) with their boxes; the text keeps line starts and
joins words hyphenated at line ends.
"""

from __future__ import annotations

import dataclasses
import re
import typing

import pymupdf

from citerun.pipeline import layout, layout_reading
from citerun.pipeline.pdf import identity, limits, ocr as ocr_mod, render
from citerun.pipeline.pdf.labels import page_labels

if typing.TYPE_CHECKING:
    from citerun.pipeline.document import Document


@dataclasses.dataclass(frozen=True)
class Page:
    """The cleaned text of one page; ``number`` is 1-based, as printed in a report.

    ``text`` keeps line starts (one line per line of the page, in reading order) and
    separates paragraphs by a blank line; ``lines`` are the same lines with their boxes
    (points, origin at the page's top-left), ``width`` and ``height`` the page's size;
    ``image`` a small grey JPEG of the page (see :data:`~citerun.pipeline.pdf.render.RENDER_MAX_PAGES`),
    which the report shows with the evidence highlighted.
    """

    number: int
    text: str
    lines: tuple[layout.Line, ...] = ()
    width: float = 0.0
    height: float = 0.0
    image: bytes | None = None
    # The page's printed label ("273", "xii"; see :mod:`.labels`), which a locator cites.
    label: str | None = None
    # The text was read by OCR (:mod:`.ocr`): its words may be misread.
    ocr: bool = False


def parse_pdf(data: bytes, *, max_bytes: int, ocr: ocr_mod.OcrSettings | None = None,
              max_page_chars: int | None = None) -> Document:
    """Parse a PDF into cleaned pages and what it says about itself: title, authors (as
    printed, "Given Surname"), year, DOI and arXiv id, read from the first page's layout
    (the PDF's info fields only where they agree with the page; see
    :func:`~citerun.pipeline.pdf.identity.identify`).

    A page whose text layer is not text (U+FFFD, glyph ids) counts as a page without one.
    With ``ocr``, pages without a usable text layer are read by OCR (:mod:`.ocr`), at most
    ``ocr.max_pages`` of them. A page over ``max_page_chars`` is never taken for one
    without a text layer: the caller's page cap refuses it.

    Raises :class:`~citerun.pipeline.pdf.limits.DocumentError` with the matching
    ``reason`` when the document is too large, not a PDF, damaged, password-protected,
    has no pages or has no text layer.
    """
    limits.check_bytes(data, max_bytes=max_bytes)
    try:
        # pymupdf's annotations are partial: these calls are untyped upstream.
        doc = pymupdf.open(stream=data, filetype="pdf")  # type: ignore[no-untyped-call]
    except (pymupdf.FileDataError, RuntimeError) as err:
        raise limits.DocumentError(
            "corrupt", f"the PDF is damaged and cannot be opened: {err}") from err
    with doc:
        if doc.needs_pass:
            raise limits.DocumentError("encrypted")
        if doc.page_count == 0:
            raise limits.DocumentError("empty")
        try:
            layouts = layout_reading.read_document(doc, _page_ocr(ocr) if ocr else None,
                                                   max_page_chars)
            first_page_raw = doc[0].get_text(flags=layout.TEXT_FLAGS)  # type: ignore[no-untyped-call]
            images = render.render_pages(doc) if doc.page_count <= render.RENDER_MAX_PAGES else {}
            printed = page_labels(doc)
        except (pymupdf.FileDataError, RuntimeError) as err:
            raise limits.DocumentError(
                "corrupt", f"the PDF has an unreadable page: {err}") from err
        metadata = doc.metadata or {}

    if not any(page.lines for page in layouts):
        raise limits.DocumentError("no_text", _no_text(layouts, ocr))
    pages = tuple(
        Page(number=p.number, text=_clean(p.text()), lines=p.lines, width=p.width, height=p.height,
             image=images.get(p.number), label=printed[p.number - 1], ocr=p.ocr and bool(p.lines))
        for p in layouts
    )
    found = identity.identify(layouts[0], str(first_page_raw), metadata)
    from citerun.pipeline.document import Document  # the model imports this module's Page

    return Document(
        title=found.title,
        authors=found.authors,
        year=found.year,
        pages=pages,
        doi=found.doi,
        arxiv_id=found.arxiv_id,
    )


def _page_ocr(settings: ocr_mod.OcrSettings) -> layout_reading.PageOcr:
    """Reads a page by OCR, at most ``settings.max_pages`` pages."""
    done = 0

    def read(page: pymupdf.Page) -> pymupdf.TextPage:
        nonlocal done
        done += 1
        if done > settings.max_pages:
            raise limits.DocumentError(
                limits.TOO_COMPLEX, f"{limits.TOO_COMPLEX}: more than {settings.max_pages} "
                "pages to read by OCR (CITERUN_LIMITS__OCR__MAX_PAGES)")
        try:
            return ocr_mod.read_page(page, settings, layout.TEXT_FLAGS)
        except ocr_mod.OcrUnavailable as err:
            raise limits.DocumentError("no_text", f"the PDF needs OCR, and {err}") from err

    return read


def _no_text(layouts: typing.Sequence[layout.PageLayout], ocr: ocr_mod.OcrSettings | None) -> str:
    """Why no page gave text, in the writer's words."""
    garbled = sum(p.not_text for p in layouts)
    if garbled:
        what = (f"the text layer of {garbled} of the {len(layouts)} pages is not text "
                "(replacement characters or glyph codes, no words)")
    else:
        what = f"none of the {len(layouts)} pages has a text layer (probably a scan)"
    if ocr is None:
        return f"{what}; run OCR on it first"
    if any(p.ocr for p in layouts):
        return f"{what}, and OCR found no words on it"
    return f"{what}, and no page shows an image to read by OCR"


# --- page text ----------------------------------------------------------------------

_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=[^\W_])")


def _join_hyphenated(match: re.Match[str]) -> str:
    """ "exam-" + "ple" is one word; "post-" + "Soviet" and "Covid-" + "19" keep the hyphen."""
    following = match.string[match.end()]
    return "" if following.islower() else "-"


def _clean(text: str) -> str:
    """Words hyphenated at a line end are joined; line starts and paragraphs stay."""
    return _LINE_END_HYPHEN.sub(_join_hyphenated, text)
