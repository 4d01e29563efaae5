"""Whether bytes are a PDF at all: the one check the operator, the worker and the
parser make before anything dearer (hashing, storing, opening the document).

It lives in the core, next to no other module, so that the operator and the worker
(which may not import each other) and the pipeline share the one rule.
"""

from __future__ import annotations

# A PDF reader accepts the header anywhere in the first 1024 bytes (ISO 32000-1, 7.5.2
# implementation note), and some producers do write junk before it.
MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024


def is_pdf(data: bytes) -> bool:
    """Whether ``data`` starts like a PDF: ``%PDF-`` within the first 1024 bytes."""
    return MAGIC in data[:MAGIC_WINDOW]
