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


# A writer's file (a Word .docx, or a bundle holding a LaTeX thesis) is a zip: a local
# file header first (APPNOTE 4.3.7). Only a thesis may be one (citerun.pipeline.writer).
ZIP_MAGIC = b"PK\x03\x04"


#: The suffixes a thesis file may have (CLI, web and the worker's parse take the same):
#: a PDF, a Word document, a LaTeX file, a zip holding a LaTeX thesis.
THESIS_SUFFIXES: tuple[str, ...] = (".pdf", ".docx", ".tex", ".zip")
#: The suffixes of a library file: BibTeX/BibLaTeX and CSL-JSON.
LIBRARY_SUFFIXES: tuple[str, ...] = (".bib", ".json")


def is_zip(data: bytes) -> bool:
    """Whether ``data`` starts like a zip archive (a .docx, a LaTeX bundle)."""
    return data[:4] == ZIP_MAGIC


def is_thesis(data: bytes) -> bool:
    """Whether ``data`` may be a run's thesis: a PDF, or a writer's file."""
    return is_pdf(data) or is_zip(data)
