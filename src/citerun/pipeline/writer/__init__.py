"""The writer's own files: a thesis as LaTeX or Word, its library as BibTeX or CSL-JSON.

A PDF thesis is read back from the printed page (:mod:`citerun.pipeline.citations`);
the writer's files state exactly what the page only shows: which library item each
citation names, the locator it gives, and which PDF belongs to which item. This package
reads them, never executing anything they hold, within the bounds of
:mod:`.archive`, into :class:`~.model.WrittenThesis` and hands on the same
:class:`~citerun.pipeline.citations.Extraction` a PDF gives (:func:`~.model.to_extraction`),
so mapping, retrieval and judging are one code path for every format.

- :mod:`.model`: :class:`LibraryItem`, :class:`WrittenCitation`, :class:`WrittenThesis`,
  :class:`Skipped` (what was not taken, and why: nothing is dropped silently) and the
  conversion to an extraction.
- :mod:`.bib`: a BibTeX/BibLaTeX file (Better BibTeX, JabRef, Mendeley) or CSL-JSON into
  library items, with their ``file`` attachments.
- :mod:`.latex`: a ``.tex`` file or a bundle holding one; cite commands of natbib and
  biblatex with their pre- and postnotes.
- :mod:`.docx`: a Word document with the citation fields of Zotero, Mendeley, Citavi and
  EndNote; footnotes.
"""

from citerun.pipeline.writer.model import (
    LibraryItem,
    Skipped,
    WriterFileError,
    WrittenCitation,
    WrittenThesis,
    to_extraction,
)

__all__ = ["LibraryItem", "Skipped", "WriterFileError", "WrittenCitation", "WrittenThesis",
           "to_extraction"]
