"""Small PDFs whose text is hostile to a parser: written as raw PDF bytes + zlib.

* :func:`regex_bomb` - about 1.4 KB on disk, 120 KB of ``"Aa, "`` as text (many lines of
  1 pt type), the input that made claim extraction and sentence splitting quadratic.
* :func:`operator_bomb` - about 51 KB on disk, one ``Tj`` operator of 50 MB, the input that
  made the parser allocate gigabytes.

:func:`raw_pdf` writes any such file object by object; ``tests/unit/pdf_fixtures.py``
uses it too, for a PDF pymupdf refuses to save.
"""

from __future__ import annotations

import zlib


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF of the given objects (numbered from 1, the first is the catalog), with its
    cross-reference table and trailer, written byte by byte."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += (b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n"
            % (len(objects) + 1, xref))
    return bytes(out)


def _pdf(content: bytes) -> bytes:
    """A one-page PDF whose page shows ``content`` (a content stream) in Helvetica."""
    stream = zlib.compress(content, 9)
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
        + b"\nendstream",
    ])


def regex_bomb(text_bytes: int = 120 * 1024) -> bytes:
    """A one-page PDF whose text is ``"Aa, "`` repeated to ``text_bytes`` characters."""
    per_line = 1200  # 1 pt Helvetica: a 1200-character line of "Aa, " fits the page width
    lines = [b"(" + b"Aa, " * (per_line // 4) + b") Tj T*"
             for _ in range(text_bytes // per_line)]
    content = b"BT /F1 1 Tf 1 TL 6 780 Td\n" + b"\n".join(lines) + b"\nET"
    return _pdf(content)


def operator_bomb(text_bytes: int = 50 * 1024 * 1024) -> bytes:
    """A one-page PDF with one text-showing operator of ``text_bytes`` characters."""
    content = b"BT /F1 10 Tf 72 720 Td (" + b"Aa, " * (text_bytes // 4) + b") Tj ET"
    return _pdf(content)
