"""Turn PDF bytes into clean page texts, and page texts into overlapping chunks.

This is the first half of the ``parse_document`` stage, kept free of any database so that
it is a pure function of the bytes: the task that calls it stores the result, and a task
that is retried on another pod gets exactly the same pages and chunks again.

One job a module:

- :mod:`.limits`: :class:`DocumentError` and its fixed set of reasons, and the checks
  that open nothing (size, magic bytes); a bad document is an expected input.
- :mod:`.parse`: :func:`parse_pdf`, pymupdf's pages into :class:`Page` texts that keep
  their page numbers and line boxes (the lines come from :mod:`citerun.pipeline.layout`),
  as a :class:`citerun.pipeline.document.Document`.
- :mod:`.render`: the small grey page images the report highlights evidence on.
- :mod:`.identity`: title, authors, year, DOI and arXiv id from the first page.
- :mod:`.splitting`: :func:`sentence_spans` and :func:`sentences`, the one set of
  sentence rules for the sources, the thesis's claims and the judge.
- :mod:`.joined`: :func:`join_pages`, page texts as one text that knows each offset's page.
- :mod:`.chunks`: :func:`chunk_pages`, whole sentences packed into overlapping chunks.

The names other modules use are re-exported here (``pdf.parse_pdf``, ``pdf.Page``, ...).
"""

from __future__ import annotations

from citerun.pipeline.pdf.chunks import Chunk, chunk_pages
from citerun.pipeline.pdf.identity import Identity, identify
from citerun.pipeline.pdf.joined import JoinedPages, join_pages
from citerun.pipeline.pdf.limits import DocumentError, DocumentErrorReason
from citerun.pipeline.pdf.parse import Page, parse_pdf
from citerun.pipeline.pdf.render import RENDER_MAX_PAGES, render_pages
from citerun.pipeline.pdf.splitting import ABBREVIATIONS, sentence_spans, sentences

__all__ = [
    "ABBREVIATIONS",
    "RENDER_MAX_PAGES",
    "Chunk",
    "DocumentError",
    "DocumentErrorReason",
    "Identity",
    "JoinedPages",
    "Page",
    "chunk_pages",
    "identify",
    "join_pages",
    "parse_pdf",
    "render_pages",
    "sentence_spans",
    "sentences",
]
