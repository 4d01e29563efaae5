"""Map each citation to a source document, and say why.

A key the user gave explicitly always wins; then a DOI or arXiv id equal on both sides;
otherwise each reference entry is scored (rapidfuzz) against every source's title,
first author or surnames, and year (one apart still counts: preprint and publication),
and one source goes to at most one entry, best scores first. A file name that opens
with the first author's surname and a year ("Hammer_LithoprobeCrossSections2010.pdf",
"hammer2010.pdf", "Hammer et al 2010 - Title.pdf") is that author's work of that year;
a parsed title that names no work ("1 Introduction", a journal's name) gives way to the
file name's words; of several sources by a marker's first author in its year, the one
whose file name gives that year and whose author count fits the marker ("et al.": three
or more) wins (issue 46). The decision records its
reason. A citation that maps to nothing is kept with ``document_id=None``: it is
reported as ``unresolved_citation`` with its reference entry, never silently dropped.

The work is bounded (issue 27: 3,000 references and 500 sources took 16 minutes of
CPU). The answers are those of scoring every pair, but only the pairs that can reach
the threshold are scored: a DOI, arXiv id or file-name key is a dictionary look-up; a
source's surnames are found in the entries' words by rapidfuzz's ``cdist`` (C, with a
score cutoff just under ``surname_similarity``, every hit confirmed in Python); the
title needed for the rest (given the authors' and year's share, known exactly) is
searched for with ``cdist`` over the entries of a source's year and its neighbours, or
over all of them only where a year apart could still reach the threshold. A citation
finds its entry through an index of first-author surnames by year. A source's first
``max_source_authors`` authors are read, and a thesis over ``max_references`` or
``max_citations`` is refused (:class:`model.TooLargeToMatch`).

This module decides; the pieces it uses are cut along their seams: :mod:`.mapping_score`
(how well one entry describes one source), :mod:`.mapping_candidates` (the pairs worth
scoring) and :mod:`.mapping_lookup` (surnames found in C, a citation's entry, a marker's
source).
"""

from __future__ import annotations

import collections.abc

from citerun.pipeline.citations import model
from citerun.pipeline.citations.mapping_candidates import _Candidates
from citerun.pipeline.citations.mapping_lookup import _Entries, _entry_for, _Markers
from citerun.pipeline.citations.mapping_score import match


def _explicit_sources(sources: collections.abc.Sequence[model.SourceInfo]) -> dict[str, model.SourceInfo]:
    explicit: dict[str, model.SourceInfo] = {}
    for source in sources:
        for key in source.explicit_keys:
            normalized = model.normalize_key(key)
            other = explicit.get(normalized)
            if other is not None and other.document_id != source.document_id:
                raise model.DuplicateKeyError(
                    f"the citation key {key!r} is given for both {other.filename!r} "
                    f"and {source.filename!r}"
                )
            explicit[normalized] = source
    return explicit



def check_size(extraction: model.Extraction, config: model.MatchConfig) -> None:
    """Raise :class:`model.TooLargeToMatch` for a thesis over the matching caps."""
    if len(extraction.references) > config.max_references:
        raise model.TooLargeToMatch(
            f"{len(extraction.references):,} reference entries, over the limit of "
            f"{config.max_references:,} entries per thesis")
    if len(extraction.citations) > config.max_citations:
        raise model.TooLargeToMatch(
            f"{len(extraction.citations):,} citations, over the limit of "
            f"{config.max_citations:,} citations per thesis")


def map_citations(
    extraction: model.Extraction,
    sources: collections.abc.Sequence[model.SourceInfo],
    config: model.MatchConfig | None = None,
) -> tuple[model.MappedCitation, ...]:
    """Map every citation to a source document, keeping the unmapped ones.

    Order of precedence: an explicit key of a source equal to the citation's key or to
    one of its reference entry's keys; the reference entry's best fuzzy match (one
    source to at most one entry, greedily from the best score down, at or above
    ``config.threshold``); for an author-year marker without an entry, its surname and
    year matched directly against the sources. Raises :class:`model.DuplicateKeyError` when
    two sources claim the same explicit key, :class:`model.TooLargeToMatch` when the
    thesis has more entries or citations than the config's caps.
    """
    config = config or model.MatchConfig()
    check_size(extraction, config)
    explicit = _explicit_sources(sources)

    entry_source: dict[int, tuple[model.SourceInfo, model.MatchMethod, float | None, str]] = {}
    for entry in extraction.references:
        for key in entry.keys:
            if key in explicit:
                entry_source[entry.index] = (explicit[key], "explicit", None, f"explicit key {key}")
                break
    taken = {source.document_id for source, _, _, _ in entry_source.values()}
    open_entries = [e for e in extraction.references if e.index not in entry_source]
    open_numbers = [n for n, source in enumerate(sources) if source.document_id not in taken]
    candidates = _Candidates(open_entries, [sources[n] for n in open_numbers], config).pairs()
    scored = sorted(
        (
            (*match(entry, sources[open_numbers[number]], config), entry.index,
             open_numbers[number])
            for position, entry in enumerate(open_entries)
            for number in candidates.get(position, ())
        ),
        key=lambda item: (-item[0], item[2], item[3]),
    )
    for score, reason, entry_index, source_index in scored:
        source = sources[source_index]
        if score < config.threshold:
            break
        if entry_index in entry_source or source.document_id in taken:
            continue
        entry_source[entry_index] = (source, "reference", score, reason)
        taken.add(source.document_id)

    entries = _Entries(extraction.references, config)
    markers = _Markers(sources, config)
    return tuple(
        _resolve(citation, entries, markers, explicit, entry_source, config)
        for citation in extraction.citations
    )


def _resolve(
    citation: model.ExtractedCitation,
    entries: _Entries,
    markers: _Markers,
    explicit: dict[str, model.SourceInfo],
    entry_source: dict[int, tuple[model.SourceInfo, model.MatchMethod, float | None, str]],
    config: model.MatchConfig,
) -> model.MappedCitation:
    entry = _entry_for(citation, entries, config, entry_source)
    key = model.normalize_key(citation.key)
    if key in explicit:
        return model.MappedCitation(citation, entry, explicit[key].document_id, "explicit", None,
                              f"explicit key {citation.key}")
    if entry is not None:
        if entry.index not in entry_source:
            return model.MappedCitation(citation, entry, None, None, None,
                                  "no source matches the reference entry")
        source, method, score, reason = entry_source[entry.index]
        return model.MappedCitation(citation, entry, source.document_id, method, score, reason)
    best = markers.best(citation)
    if best is None or best[0] < config.threshold:
        return model.MappedCitation(citation, None, None, None, None,
                              "the reference list has no entry for it and no source matches")
    return model.MappedCitation(citation, None, best[1].document_id, "marker", best[0],
                          "marker's first author and year")
