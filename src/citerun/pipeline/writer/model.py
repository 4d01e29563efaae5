"""What the writer's files say, in one shape whatever the format.

:class:`WrittenThesis` is what :mod:`.latex` and :mod:`.docx` return; :class:`Written` is
what it states beside its text (a :class:`citerun.pipeline.document.Document` holds it);
:func:`to_extraction` turns either into the :class:`~citerun.pipeline.citations.Extraction` the rest of a run reads,
the citation keys kept as the reference entries' labels so that mapping is by key.
"""

from __future__ import annotations

import dataclasses
import re
import typing

import pydantic

from citerun.core import errors
from citerun.pipeline import normalize
from citerun.pipeline.citations import model as citations
from citerun.pipeline.citations.model import Skipped

__all__ = ["Format", "LibraryFormat", "LibraryItem", "Skipped", "WriterFileError", "Written",
           "WrittenCitation", "WrittenThesis", "entry_for", "to_extraction"]

# "pdf": a PDF thesis bundled with the writer's library (--bib): its citations are read
# from the pages, the library gives the sources' metadata and keys.
Format = typing.Literal["latex", "docx", "pdf"]
# "bibitem": an entry of a LaTeX thesis's hand-made reference list (thebibliography).
LibraryFormat = typing.Literal["bibtex", "csl-json", "field", "bibitem"]


class LibraryLimits(pydantic.BaseModel):
    """How large a library file (.bib, CSL-JSON) may be. The worker's parse child reads
    them from ``CITERUN_LIMITS__LIBRARY__*`` (:class:`citerun.pipeline.settings.LimitSettings`)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    max_bytes: int = pydantic.Field(
        20 * 1024 * 1024, ge=1, description="Bytes of one library file: 50,000 entries "
        "with abstracts are about 15 MB. A file over it is refused before parsing.")
    max_items: int = pydantic.Field(
        50_000, ge=1, description="Entries (.bib, counted before parsing) or items "
        "(CSL-JSON) of one library file.")


# A reference manager's own id for an item (Citavi's and Mendeley's GUIDs), not a key a
# writer chose.
_MACHINE_KEY = re.compile(r"\{?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}\}?", re.IGNORECASE)


class WriterFileError(errors.CiterunError):
    """A writer's file that cannot be read: malformed, hostile, or over the limits."""


@dataclasses.dataclass(frozen=True)
class LibraryItem:
    """One item of the writer's library: a .bib entry, a CSL-JSON item, a field's item.

    ``key`` is the citation key the thesis uses (``smith2020``, or a reference manager's
    item id); ``authors`` are surnames as written (an institution as a whole name);
    ``files`` are the attached file paths exactly as the library gives them (a .bib's
    ``file`` field in Zotero's/JabRef's/Mendeley's forms, split into paths). ``arxiv``,
    ``pmid``, ``pmcid``, ``isbn`` and ``url`` are the other identifiers it states, as
    written (the open-access lookup of issue 51 normalises them).
    """

    key: str
    title: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    doi: str | None = None
    files: tuple[str, ...] = ()
    kind: str | None = None  # "article", "book", ... as the library names it
    origin: LibraryFormat = "bibtex"
    arxiv: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    isbn: str | None = None
    url: str | None = None

    def reference_text(self) -> str:
        """A readable one-line reference for the report: "Smith, Jones (2020). Title.";
        without authors, the key where a writer chose it ("smith2020"), else the title: a
        reference manager's id (Citavi's or Mendeley's GUID) names nothing to the writer."""
        year = f" ({self.year})" if self.year else ""
        doi = f" doi:{self.doi}" if self.doi else ""
        if not self.authors and self.title and _MACHINE_KEY.fullmatch(self.key):
            return f"{self.title}{year}.{doi}"
        title = f" {self.title}." if self.title else ""
        return f"{', '.join(self.authors) or self.key}{year}.{title}{doi}"


@dataclasses.dataclass(frozen=True)
class WrittenCitation:
    """One citation as the writer wrote it: the keys it names, where, and its claim.

    ``claim`` is the sentence the citation stands in, as plain text (macros resolved,
    the citation itself cut out); for a citation in a footnote, the sentence of the
    body the footnote mark stands in. ``keys`` are the library keys in the order
    written. ``locator`` is the page locator without its prefix ("45", "45-47",
    "45 f.", "Rn. 12" keeps its prefix), ``prenote`` the text before the keys
    ("vgl.", "see"). ``marker`` is the citation as written ("\\parencite[45]{smith2020}",
    a field's displayed text). ``where`` says where it stands ("chapter2.tex:118",
    "paragraph 34", "footnote 3"; the report shows it for the writer to find the
    citation), ``page`` the page where one is known, else 1.
    """

    keys: tuple[str, ...]
    claim: str
    marker: str
    where: str
    locator: str | None = None
    prenote: str | None = None
    in_footnote: bool = False
    page: int = 1


@dataclasses.dataclass(frozen=True)
class WrittenThesis:
    """A thesis read from the writer's files.

    ``pages`` is its plain text as ``(page, text)`` (one page where the format has none);
    ``library`` every item the thesis's library holds (cited or not); ``skipped`` what
    was not taken and why. ``blocks`` says where each paragraph of the text stands
    ("paragraph 3", "footnote 1"), in the order of the text, its paragraphs separated by
    a blank line: a citation the rules of the page find in the text is located by it
    (empty where the format does not say).
    """

    format: Format
    pages: tuple[tuple[int, str], ...]
    citations: tuple[WrittenCitation, ...]
    library: tuple[LibraryItem, ...]
    skipped: tuple[Skipped, ...] = ()
    blocks: tuple[str, ...] = ()

    def stated(self) -> Written:
        """What the thesis states beside its text."""
        return Written(self.format, self.citations, self.library, self.skipped, self.blocks)


@dataclasses.dataclass(frozen=True)
class Written:
    """What a thesis from the writer's files states beside its text (its pages are the
    document's): its citations, every item of its library, what was not taken, and
    where each paragraph of its text stands (see :attr:`WrittenThesis.blocks`). A PDF
    thesis bundled with its library (``format`` "pdf") states only the library."""

    format: Format
    citations: tuple[WrittenCitation, ...] = ()
    library: tuple[LibraryItem, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    blocks: tuple[str, ...] = ()


def entry_for(index: int, item: LibraryItem) -> citations.ReferenceEntry:
    """The reference entry a library item stands for; its label is the citation key."""
    return citations.ReferenceEntry(
        index=index, text=item.reference_text(), label=item.key, authors=item.authors,
        year=item.year, year_suffix="", title=item.title, doi=item.doi)


def to_extraction(thesis: Written | WrittenThesis) -> citations.Extraction:
    """The extraction a run reads: one citation per (citation, key), keys as labels.

    A key no library item holds stays a citation (it is reported unresolved, never
    dropped). One judgement per (claim, key, locator), as for a PDF.
    """
    entries = tuple(entry_for(i, item) for i, item in enumerate(thesis.library))
    found: list[citations.ExtractedCitation] = []
    seen: dict[tuple[str, str, str | None], int] = {}
    for written in thesis.citations:
        for key in written.keys:
            same = (written.claim, key, written.locator)
            if same in seen:
                first = seen[same]
                found[first] = dataclasses.replace(found[first], markers=found[first].markers + 1)
                continue
            seen[same] = len(found)
            found.append(citations.ExtractedCitation(
                ordinal=len(found) + 1, key=key, claim=written.claim, page=written.page,
                marker=written.marker, locator=written.locator, location=written.where or None))
    return citations.Extraction(tuple(found), entries, None, thesis.skipped)


def typed_references(thesis: Written, extraction: citations.Extraction
                     ) -> citations.Extraction:
    """A typed thesis's reference list where the rules of the page found none: the
    writer's library items its author-year citations name (first surname and year), as
    entries. A LaTeX thesis's hand-made ``thebibliography`` is its library, not its text,
    and a ``--bib`` library is on no page (issue 46: 0 of 101 typed citations had an
    entry). Only the items named are taken: a library of 50,000 items costs the matching
    no more than the citations do."""
    if extraction.references or not thesis.library:
        return extraction
    named: set[tuple[str, int]] = set()
    for citation in extraction.citations:
        if citation.authors and citation.year is not None:
            named.update((word, citation.year)
                         for word in normalize.fold_words(citation.authors[0]).split())
    items = [item for item in thesis.library
             if item.authors and item.year is not None and any(
                 (word, item.year) in named
                 for word in normalize.fold_words(item.authors[0]).split())]
    return dataclasses.replace(extraction, references=tuple(
        entry_for(index, item) for index, item in enumerate(items)))
