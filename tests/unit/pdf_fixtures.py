"""PDFs built at test time, good and bad, so that no binary test data is checked in.

Each builder returns bytes and is deterministic; the bad ones are the inputs that
:func:`citerun.pipeline.pdf.parse_pdf` must turn into a ``DocumentError`` with
the right ``reason``.
"""

# pymupdf's annotations are partial; its untyped calls are fine in test helpers.
# mypy: disable-error-code="no-untyped-call,attr-defined"

from __future__ import annotations

import random
import re
import typing

import pymupdf

from tests.support import hostile_pdfs

A4_WIDTH, A4_HEIGHT = pymupdf.paper_size("a4")
_MARGIN = 72.0


def _save(doc: pymupdf.Document, **options: typing.Any) -> bytes:
    data: bytes = doc.tobytes(garbage=3, deflate=True, no_new_id=True, **options)
    doc.close()
    return data


def text_pdf(
    pages: typing.Sequence[typing.Sequence[str]],
    *,
    header: str | None = None,
    page_numbers: bool = False,
    metadata: dict[str, str] | None = None,
    title_line: str | None = None,
    fontsize: float = 11.0,
) -> bytes:
    """A PDF whose page ``i`` shows the lines ``pages[i]``, one text line each.

    ``header`` is printed at the top of every page and ``page_numbers`` puts a bare page
    number at the bottom; ``title_line`` goes on top of the first page in a big font.
    An empty string in a page's lines leaves a blank line (a paragraph break); a line
    that starts with a tab is indented by 18 points (a hanging indent).
    """
    doc = pymupdf.open()
    for index, lines in enumerate(pages):
        page = doc.new_page(width=A4_WIDTH, height=A4_HEIGHT)
        if header:
            page.insert_text((_MARGIN, _MARGIN - 30), header, fontsize=9)
        if page_numbers:
            page.insert_text((A4_WIDTH / 2, A4_HEIGHT - _MARGIN + 30), str(index + 1), fontsize=9)
        y = _MARGIN
        if index == 0 and title_line:
            y += 24
            page.insert_text((_MARGIN, y), title_line, fontsize=22)
            y += 12
        for line in lines:
            y += fontsize * 1.4
            if line:
                indent = 18.0 if line.startswith("\t") else 0.0
                page.insert_text((_MARGIN + indent, y), line.lstrip("\t"), fontsize=fontsize)
    if metadata is not None:
        doc.set_metadata(metadata)
    return _save(doc)


def corrupt_pdf() -> bytes:
    """Starts like a PDF, then garbage: no xref, no objects a reader could repair."""
    rng = random.Random(7)
    return b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(4096))


def truncated_pdf() -> bytes:
    """A real PDF cut off after its header line."""
    return text_pdf([["Some text that is lost."]])[:40]


def not_pdf() -> bytes:
    """A zip archive (what a .docx is) handed in as a PDF."""
    return b"PK\x03\x04\x14\x00\x06\x00" + b"word/document.xml" + bytes(200)


def encrypted_pdf() -> bytes:
    """A PDF that needs a user password to open (AES-256)."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Secret text.")
    return _save(
        doc, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner"
    )


def zero_page_pdf() -> bytes:
    """A well-formed PDF whose page tree is empty (pymupdf refuses to save one)."""
    return hostile_pdfs.raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ])


def scanned_pdf(pages: int = 2, *, text_on_last: str | None = None) -> bytes:
    """Pages that carry only an image, as a scanner writes them: no text layer.

    ``text_on_last`` adds a text layer to the last page only (a typed appendix).
    """
    pixmap = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 64, 64), False)
    pixmap.set_rect(pixmap.irect, (200,))
    png = pixmap.tobytes("png")
    doc = pymupdf.open()
    for _ in range(pages):
        page = doc.new_page(width=A4_WIDTH, height=A4_HEIGHT)
        page.insert_image(pymupdf.Rect(72, 72, A4_WIDTH - 72, A4_HEIGHT - 72), stream=png)
    if text_on_last:
        page.insert_text((72, 60), text_on_last)
    return _save(doc)


def oversized_pdf(min_bytes: int) -> bytes:
    """A valid PDF with text, padded with an incompressible attachment to ``min_bytes``."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "A perfectly fine page.")
    filler = random.Random(3).randbytes(min_bytes)
    doc.embfile_add("filler.bin", filler)
    data = _save(doc)
    assert len(data) > min_bytes
    return data


Placed = tuple[float, float, str]  # x, baseline y, text


def placed_pdf(
    pages: typing.Sequence[typing.Sequence[Placed]],
    *,
    fontsize: float = 10.0,
    bold_lines: typing.Collection[str] = (),
    stamp: str | None = None,
    big: typing.Collection[str] = (),
    superscripts: typing.Sequence[tuple[float, float, str]] = (),
) -> bytes:
    """A PDF with each text line placed where a real layout puts it (Letter size).

    ``stamp`` is printed rotated by 90 degrees up the left margin of the first page in
    a large font, as arXiv stamps its preprints; lines in ``big`` are set at 20 pt (a
    title), lines in ``bold_lines`` in bold; ``superscripts`` are raised small digits
    placed at (x, baseline y) on the first page.
    """
    doc = pymupdf.open()
    for index, lines in enumerate(pages):
        page = doc.new_page(width=612, height=792)
        if index == 0 and stamp:
            page.insert_text((30, 600), stamp, fontsize=20, rotate=90)
        for x, y, text in lines:
            size = 20.0 if text in big else fontsize
            font = "helvetica-bold" if text in bold_lines else "helvetica"
            page.insert_text((x, y), text, fontsize=size, fontname=font)
        if index == 0:
            for x, y, digits in superscripts:
                page.insert_text((x, y - 4), digits, fontsize=fontsize * 0.6)
    return _save(doc)


def column(x: float, top: float, lines: typing.Sequence[str], *, leading: float = 12.0,
           indent: float = 0.0) -> list[Placed]:
    """Lines set one below the other from ``top``; a line starting with a tab is
    indented by ``indent`` points (hanging-indent continuation lines)."""
    placed: list[Placed] = []
    y = top
    for line in lines:
        if line:
            shift = indent if line.startswith("\t") else 0.0
            placed.append((x + shift, y, line.lstrip("\t")))
        y += leading
    return placed


def scan_of(data: bytes, *, dpi: int = 300) -> bytes:
    """Each page of ``data`` as a scanner gives it back: a grey image of the page at
    ``dpi``, no text layer."""
    source = pymupdf.open(stream=data, filetype="pdf")
    doc = pymupdf.open()
    for page in source:
        image = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png")
        scanned = doc.new_page(width=page.rect.width, height=page.rect.height)
        scanned.insert_image(scanned.rect, stream=image)
    source.close()
    return _save(doc)


def garbled_layer_pdf(pages: typing.Sequence[typing.Sequence[str]], *, visible: bool = True) -> bytes:
    """:func:`garble` of a :func:`text_pdf` of ``pages``."""
    return garble(text_pdf(pages), visible=visible)


def garble(data: bytes, *, visible: bool = True) -> bytes:
    """``data`` with a text layer of glyph codes, no words: every font's ToUnicode map
    sends each character to the private use area (as a PDF whose fonts lost their encoding
    reads; MuPDF gives U+FFFD for others), while the page still shows the words.
    ``visible`` false draws the text invisibly (render mode 3): nothing on the page for
    OCR to read either."""
    doc = pymupdf.open(stream=data, filetype="pdf")
    if not visible:
        for page in doc:
            page.clean_contents()
            for xref in page.get_contents():
                stream = re.sub(rb"\b[0-7] Tr\b", b"3 Tr", doc.xref_stream(xref))
                doc.update_stream(xref, re.sub(rb"\bBT\b", b"BT 3 Tr", stream))
    cmap = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Garbled def "
            "/CMapType 2 def\n1 begincodespacerange <00> <FF> endcodespacerange\n"
            "1 beginbfrange\n<00> <FF> <E000>\nendbfrange\nendcmap CMapName currentdict /CMap "
            "defineresource pop end end").encode()
    to_unicode = doc.get_new_xref()
    doc.update_object(to_unicode, "<<>>")
    doc.update_stream(to_unicode, cmap)
    for page in doc:
        for font in page.get_fonts():
            doc.xref_set_key(font[0], "ToUnicode", f"{to_unicode} 0 R")
    return _save(doc)
