"""What makes a document unusable as a PDF source, and the cheap checks made first.

A bad document is an expected input, not a crash. :class:`DocumentError` carries a
``reason`` from a small fixed set, checked from cheapest to dearest (size, magic bytes,
open, password, pages, text layer), so that the run can report the document as
unavailable and go on with the rest. :func:`check_bytes` makes the two checks that need
no parser; :func:`citerun.pipeline.pdf.parse.parse_pdf` makes the others as it opens
the document.
"""

from __future__ import annotations

import typing

from citerun.core import errors, pdfmagic

#: A document over a limit of the work a task may spend (the limit named in the message).
TOO_COMPLEX: typing.Final = "document_too_complex"

DocumentErrorReason = typing.Literal[
    "too_large", "not_pdf", "corrupt", "encrypted", "empty", "no_text", "document_too_complex"
]

_DEFAULT_MESSAGES: dict[DocumentErrorReason, str] = {
    "too_large": "the document is larger than the size limit",
    "not_pdf": "the document is not a PDF file (it does not start with %PDF-)",
    "corrupt": "the PDF is damaged and cannot be read",
    "encrypted": "the PDF is protected by a password",
    "empty": "the PDF has no pages",
    "no_text": (
        "the PDF has no text layer on any page (probably a scan); run OCR on it first"
    ),
    "document_too_complex": "the document needs more than a task may spend on it",
}


class DocumentError(errors.CiterunError):
    """The document cannot be used as a PDF source."""

    reason: DocumentErrorReason

    def __init__(self, reason: DocumentErrorReason, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or _DEFAULT_MESSAGES[reason])


def check_bytes(data: bytes, *, max_bytes: int) -> None:
    """Raise :class:`DocumentError` when ``data`` is over ``max_bytes`` (``too_large``)
    or does not start like a PDF (``not_pdf``): the checks that open nothing."""
    if len(data) > max_bytes:
        raise DocumentError(
            "too_large",
            f"the document is {len(data):,} bytes, over the limit of {max_bytes:,} bytes",
        )
    if not pdfmagic.is_pdf(data):
        raise DocumentError("not_pdf")
