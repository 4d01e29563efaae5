"""A source as the mapping sees it: the writer's library item that attaches its file (the
item's ``file`` field) gives its key and its metadata, exact as the library holds it;
else what the source's own pages say (title, authors, year, DOI, arXiv id)."""

from __future__ import annotations

from collections.abc import Sequence

from citerun.pipeline import citations
from citerun.pipeline.document import Document, Source
from citerun.pipeline.writer import formats


def source_infos(thesis: Document, given: Sequence[Source]) -> list[citations.SourceInfo]:
    """The sources as the mapping sees them: the writer's library item attaching a file
    (its ``file`` field) gives its key and its metadata, exact as the library holds it."""
    library = (formats.attached(thesis.written.library, [s.filename for s in given])
               if thesis.written is not None else {})
    infos = []
    for s in given:
        items = library.get(s.filename, ())
        item, doc = (items[0] if len(items) == 1 else None), s.document
        infos.append(citations.SourceInfo(
            document_id=s.id, filename=s.filename,
            title=item.title if item and item.title else doc.title,
            authors=item.authors if item and item.authors else doc.authors,
            year=item.year if item and item.year else doc.year,
            explicit_keys=tuple(dict.fromkeys([*s.keys, *(i.key for i in items)])),
            doi=item.doi if item and item.doi else doc.doi, arxiv_id=doc.arxiv_id))
    return infos
