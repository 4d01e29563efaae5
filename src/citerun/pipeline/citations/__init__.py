"""Find the cited claims of a thesis and map each one to a source document.

This is the pure half of the ``extract_citations`` stage: pages in, plain data out, no
database, so a retried task gets exactly the same citations again. It is cut in the
order a reader works, one job a module:

- :mod:`.model`: the frozen dataclasses handed on (:class:`ReferenceEntry`,
  :class:`ExtractedCitation`, :class:`Extraction`, :class:`SourceInfo`,
  :class:`MappedCitation`), :class:`MatchConfig` (part of a run's spec, so pydantic)
  and :class:`DuplicateKeyError`, :class:`TooLargeToMatch`.
- :mod:`.patterns`: the regex fragments and word sets names and years are read with
  (a surname and its particles, "et al.", a year, a page locator).
- :mod:`.references`: the reference list, found by its heading, and its entries, split
  by their labels or by the layout's paragraphs; :mod:`.entries` parses one entry into
  surnames, year, title, DOI and arXiv id.
- :mod:`.authors` and :mod:`.markers`: the markers of the body (numeric, superscript,
  alpha, author-year in brackets, narrative, ``ibid.``, bare author-year where the
  list names them), every pattern linear in the text.
- :mod:`.claims`: the sentence each marker stands in, markers cut out, is its claim.
- :mod:`.footnotes`: citations in footnotes (German humanities and law: full reference
  first, then short forms, Ebd., a.a.O., ders./dies.), each tied to the body sentence
  its raised mark stands in.
- :mod:`.quotations` and :mod:`.locators`: a quoted passage searched for verbatim in a
  source, a page locator checked against the source's printed page labels (the report's
  checks).
- :mod:`.extraction`: :func:`extract`, which markers count in a given paper.
- :mod:`.mapping`: :func:`map_citations`, each citation to a source (explicit key, DOI
  or arXiv id, fuzzy title, authors and year), the reason recorded; an unmapped
  citation is kept, never dropped.

How text is folded for comparison and what a DOI looks like belong to
:mod:`citerun.pipeline.normalize`, shared with the parser and the layout. The names
other modules use are re-exported here (``citations.extract``, ``citations.MatchConfig``).
"""

from __future__ import annotations

from citerun.pipeline.citations.claims import bound_claims, claims_over, cut_claim, long_claim_note
from citerun.pipeline.citations.entries import parse_entry
from citerun.pipeline.citations.extraction import extract
from citerun.pipeline.citations.mapping import check_size, map_citations
from citerun.pipeline.citations.mapping_score import match, match_score
from citerun.pipeline.citations.model import (
    DuplicateKeyError,
    ExtractedCitation,
    Extraction,
    MappedCitation,
    MatchConfig,
    MatchMethod,
    ReferenceEntry,
    SourceInfo,
    TooLargeToMatch,
    normalize_key,
)
from citerun.pipeline.citations.references import REFERENCE_HEADINGS, parse_reference_list
from citerun.pipeline.normalize import fold

__all__ = [
    "REFERENCE_HEADINGS",
    "DuplicateKeyError",
    "ExtractedCitation",
    "Extraction",
    "MappedCitation",
    "MatchConfig",
    "MatchMethod",
    "ReferenceEntry",
    "SourceInfo",
    "TooLargeToMatch",
    "bound_claims",
    "check_size",
    "claims_over",
    "cut_claim",
    "extract",
    "fold",
    "long_claim_note",
    "map_citations",
    "match",
    "match_score",
    "normalize_key",
    "parse_entry",
    "parse_reference_list",
]
