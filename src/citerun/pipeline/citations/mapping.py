"""Map each citation to a source document, and say why.

A key the user gave explicitly always wins; then a DOI or arXiv id equal on both sides;
otherwise each reference entry is scored (rapidfuzz) against every source's title,
first author or surnames, and year (one apart still counts: preprint and publication),
and one source goes to at most one entry, best scores first. The decision records its
reason. A citation that maps to nothing is kept with ``document_id=None``: it is
reported as ``unresolved_citation`` with its reference entry, never silently dropped.
"""

from __future__ import annotations

import collections.abc
import re

import rapidfuzz.fuzz

from citerun.pipeline import normalize
from citerun.pipeline.citations import authors, model


def _source_surnames(source: model.SourceInfo) -> list[str]:
    folded = (normalize.fold(authors.written_surname(author)) for author in source.authors)
    return [name for name in folded if name]


def _same_surname(a: str, b: str, config: model.MatchConfig) -> bool:
    return rapidfuzz.fuzz.ratio(normalize.fold(a), normalize.fold(b)) >= config.surname_similarity


def _filename_words(filename: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", filename)
    return normalize.fold_words(re.sub(r"[_\-.]+", " ", stem))


def match_score(
    entry: model.ReferenceEntry, source: model.SourceInfo, config: model.MatchConfig
) -> float:
    """How well a reference entry describes a source, 0-100 (see :func:`match`)."""
    return match(entry, source, config)[0]


def match(
    entry: model.ReferenceEntry, source: model.SourceInfo, config: model.MatchConfig
) -> tuple[float, str]:
    """How well a reference entry describes a source, 0-100, and why.

    A DOI or arXiv id printed in the entry that equals the source's wins outright (100).
    Otherwise a weighted mean over what both sides know: title similarity (the parsed
    title, or the source title found inside the entry's text), authors (the first
    author's surname, else the share of the source's surnames found in the entry), and
    the year (equal, or one apart: a preprint and its publication). A source named
    like the entry's key ("smith2020.pdf" for Smith 2020) scores 100. Without a title or
    authors to compare, the score is 0: a year alone proves nothing.
    """
    if entry.doi and source.doi and entry.doi.casefold() == source.doi.casefold():
        return 100.0, "doi equal"
    if entry.arxiv_id and source.arxiv_id and entry.arxiv_id == source.arxiv_id:
        return 100.0, "arxiv id equal"
    if entry.author_year_key and model.normalize_key(_filename_words(source.filename)) == entry.author_year_key:
        return 100.0, "file name is the entry's key"
    parts: list[tuple[float, float]] = []
    why: list[str] = []
    title = normalize.fold_words(source.title or "")
    from_filename = _filename_words(source.filename)
    if len(title.split()) < 2 and len(from_filename.split()) >= 3:
        title = from_filename  # "deep_learning_for_theses.pdf" says more than no title
    if title:
        scores = [0.0]
        if entry.title:
            entry_title = normalize.fold_words(entry.title)
            scores.append(
                (rapidfuzz.fuzz.token_set_ratio(entry_title, title)
                 + rapidfuzz.fuzz.token_sort_ratio(entry_title, title)) / 2
            )
        if len(title) >= 20:
            scores.append(rapidfuzz.fuzz.partial_ratio(title, normalize.fold_words(entry.text)))
        parts.append((max(scores), config.title_weight))
        why.append(f"title {max(scores):.0f}")
    surnames = _source_surnames(source)
    if surnames:
        entry_words = normalize.fold_words(entry.text).split()
        first_agrees = bool(entry.authors) and any(
            _same_surname(surnames[0], part, config) for part in normalize.fold_words(entry.authors[0]).split()
        )
        found = sum(
            1
            for name in surnames
            if any(_same_surname(name, other, config) for other in (*entry.authors, *entry_words))
        )
        author_score = 100.0 if first_agrees else 100.0 * found / len(surnames)
        parts.append((author_score, config.author_weight))
        why.append("first author" if first_agrees else f"authors {found}/{len(surnames)}")
    if not parts:
        return 0.0, "nothing to compare"
    if source.year is not None and entry.year is not None:
        gap = abs(source.year - entry.year)
        parts.append((100.0 if gap == 0 else 70.0 if gap == 1 else 0.0, config.year_weight))
        why.append("year" if gap == 0 else "year ±1" if gap == 1 else "year differs")
    total = sum(weight for _, weight in parts)
    score = sum(score * weight for score, weight in parts) / total if total else 0.0
    return score, ", ".join(why)


def _marker_score(citation: model.ExtractedCitation, source: model.SourceInfo, config: model.MatchConfig) -> float:
    """A marker's first surname and year against a source that has no reference entry."""
    if not citation.authors or citation.year is None:
        return 0.0
    if model.normalize_key(_filename_words(source.filename)) == citation.key:
        return 100.0
    surname = citation.authors[0]
    names = _source_surnames(source)
    if not any(_same_surname(part, name, config)
               for name in names[:1] for part in [surname, *normalize.fold_words(surname).split()]):
        return 0.0
    # The exact year: without an entry's title, a year apart is another work.
    if source.year != citation.year:
        return 0.0
    return 100.0


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


def _entry_for(
    citation: model.ExtractedCitation,
    references: collections.abc.Sequence[model.ReferenceEntry],
    config: model.MatchConfig,
    mapped: collections.abc.Container[int] = (),
) -> model.ReferenceEntry | None:
    """The reference entry a citation names: its label, or its first surname and year.

    When one author has several entries (Chang 2017, Chang 2023a, Chang 2023b) the
    year and its suffix decide, then the second surname, then an entry that maps to a
    source wins over one that does not.
    """
    if not citation.authors:
        key = model.normalize_key(citation.key)
        return next((e for e in references if e.label and model.normalize_key(e.label) == key), None)
    same_author = [
        e for e in references
        if e.authors and e.year is not None
        and any(_same_surname(part, citation.authors[0], config)
                for part in [e.authors[0], *normalize.fold_words(e.authors[0]).split()])
    ]
    candidates = [e for e in same_author if e.year == citation.year]
    suffix = citation.key[len(model.normalize_key(citation.authors[0])) + 4:]
    exact = [e for e in candidates if e.year_suffix == suffix]
    candidates = exact or [e for e in candidates if not e.year_suffix or not suffix]
    if len(candidates) > 1 and len(citation.authors) > 1:
        # "Smith & Jones 2019" vs "Smith & Lee 2019": the second surname decides.
        second = [
            e
            for e in candidates
            if len(e.authors) > 1 and _same_surname(e.authors[1], citation.authors[1], config)
        ]
        candidates = second or candidates
    if len(candidates) > 1:
        candidates = [e for e in candidates if e.index in mapped] or candidates
    return candidates[0] if candidates else None


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
    two sources claim the same explicit key.
    """
    config = config or model.MatchConfig()
    explicit = _explicit_sources(sources)

    entry_source: dict[int, tuple[model.SourceInfo, model.MatchMethod, float | None, str]] = {}
    for entry in extraction.references:
        for key in entry.keys:
            if key in explicit:
                entry_source[entry.index] = (explicit[key], "explicit", None, f"explicit key {key}")
                break
    taken = {source.document_id for source, _, _, _ in entry_source.values()}
    scored = sorted(
        (
            (*match(entry, source, config), entry.index, source_index)
            for entry in extraction.references
            if entry.index not in entry_source
            for source_index, source in enumerate(sources)
            if source.document_id not in taken
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

    return tuple(
        _resolve(citation, extraction.references, sources, explicit, entry_source, config)
        for citation in extraction.citations
    )


def _resolve(
    citation: model.ExtractedCitation,
    references: collections.abc.Sequence[model.ReferenceEntry],
    sources: collections.abc.Sequence[model.SourceInfo],
    explicit: dict[str, model.SourceInfo],
    entry_source: dict[int, tuple[model.SourceInfo, model.MatchMethod, float | None, str]],
    config: model.MatchConfig,
) -> model.MappedCitation:
    entry = _entry_for(citation, references, config, entry_source)
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
    scored = [(_marker_score(citation, source, config), source) for source in sources]
    best = max(scored, key=lambda item: item[0], default=None)
    if best is None or best[0] < config.threshold:
        return model.MappedCitation(citation, None, None, None, None,
                              "the reference list has no entry for it and no source matches")
    return model.MappedCitation(citation, None, best[1].document_id, "marker", best[0],
                          "marker's first author and year")

