"""Look-ups by surname: whether two surnames are the same (:func:`_same_surname`), the
same answer for many words at once in C (:class:`_SameSurname`), the reference entry a
citation names (:func:`_entry_for`) and the source a marker without an entry names
(:class:`_Markers`, :func:`_marker_score`)."""

from __future__ import annotations

import collections
import collections.abc

import numpy as np
import rapidfuzz.fuzz
import rapidfuzz.process

from citerun.pipeline.citations import model
from citerun.pipeline.citations.mapping_score import (
    _CELLS, _SLACK, _author_count, _by_count, _count_rank, _file_keys, _filename_year, _fold,
    _fold_words, _source_surnames, _years,
)


def _same_surname(a: str, b: str, config: model.MatchConfig) -> bool:
    return rapidfuzz.fuzz.ratio(_fold(a), _fold(b)) >= config.surname_similarity


def _marker_score(citation: model.ExtractedCitation, source: model.SourceInfo, config: model.MatchConfig) -> float:
    """A marker's first surname and year against a source that has no reference entry."""
    if not citation.authors or citation.year is None:
        return 0.0
    if citation.key in _file_keys(source):
        return 100.0
    surname = citation.authors[0]
    names = _source_surnames(source, config)
    if not any(_same_surname(part, name, config)
               for name in names[:1] for part in [surname, *_fold_words(surname).split()]):
        return 0.0
    # The exact year (parsed, or as the file name gives it): without an entry's title,
    # a year apart is another work.
    if citation.year not in _years(source):
        return 0.0
    return 100.0


class _SameSurname:
    """Which of a fixed set of folded names are the same surname as a folded word.

    The same answer as :func:`_same_surname` over every (word, name) pair: rapidfuzz's
    ``cdist`` compares the words with all names in C, with a cutoff just under
    ``surname_similarity``, and each hit is confirmed by :func:`_same_surname` itself.
    """

    def __init__(self, names: collections.abc.Iterable[str], config: model.MatchConfig) -> None:
        self._names = sorted(set(names))
        self._config = config
        self._found: dict[str, tuple[str, ...]] = {}

    def prepare(self, words: collections.abc.Iterable[str]) -> None:
        """Look up many words at once (one ``cdist`` per block of words)."""
        new = sorted({word for word in words if word not in self._found})
        if not new:
            return
        if not self._names:
            self._found.update((word, ()) for word in new)
            return
        cutoff = self._config.surname_similarity - _SLACK
        if cutoff <= 0:  # every name passes the cutoff: confirm them all
            for word in new:
                self._found[word] = self._confirmed(word, self._names)
            return
        rows = max(1, _CELLS // len(self._names))
        for start in range(0, len(new), rows):
            block = new[start:start + rows]
            scores = rapidfuzz.process.cdist(block, self._names, scorer=rapidfuzz.fuzz.ratio,
                                             score_cutoff=cutoff, dtype=np.float32, workers=1)
            hits: dict[int, list[str]] = collections.defaultdict(list)
            for row, column in zip(*np.nonzero(scores >= cutoff), strict=True):
                hits[int(row)].append(self._names[int(column)])
            for row, word in enumerate(block):
                self._found[word] = self._confirmed(word, hits.get(row, ()))

    def _confirmed(self, word: str, names: collections.abc.Iterable[str]) -> tuple[str, ...]:
        return tuple(name for name in names if _same_surname(name, word, self._config))

    def __call__(self, word: str) -> tuple[str, ...]:
        if word not in self._found:
            self.prepare((word,))
        return self._found[word]


class _Entries:
    """The reference entries a citation may name, by label and by first surname and year."""

    def __init__(self, references: collections.abc.Sequence[model.ReferenceEntry],
                 config: model.MatchConfig) -> None:
        self.references, self.config = references, config
        self.by_label: dict[str, model.ReferenceEntry] = {}
        self.by_name_year: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
        for position, entry in enumerate(references):
            if entry.label:
                self.by_label.setdefault(model.normalize_key(entry.label), entry)
            if entry.authors and entry.year is not None:
                first = entry.authors[0]
                for name in {_fold(first), *_fold_words(first).split()}:
                    self.by_name_year[name, entry.year].append(position)
        self.names = _SameSurname({name for name, _ in self.by_name_year}, config)

    def same_author(self, citation: model.ExtractedCitation) -> list[model.ReferenceEntry]:
        """The entries of the citation's year whose first author is its first author,
        in list order (what :func:`_entry_for` filters from all entries)."""
        if citation.year is None:
            return []
        surname = citation.authors[0]
        positions = sorted({p for name in self.names(_fold(surname))
                            for p in self.by_name_year.get((name, citation.year), ())})
        entries = [self.references[p] for p in positions]
        return [e for e in entries if _names_first_author(e, surname, self.config)]


def _names_first_author(entry: model.ReferenceEntry, surname: str, config: model.MatchConfig) -> bool:
    return bool(entry.authors) and entry.year is not None and any(
        _same_surname(part, surname, config)
        for part in [entry.authors[0], *_fold_words(entry.authors[0]).split()])


def _entry_for(
    citation: model.ExtractedCitation,
    references: collections.abc.Sequence[model.ReferenceEntry] | _Entries,
    config: model.MatchConfig,
    mapped: collections.abc.Container[int] = (),
) -> model.ReferenceEntry | None:
    """The reference entry a citation names: its label, or its first surname and year.

    When one author has several entries (Chang 2017, Chang 2023a, Chang 2023b) the
    year and its suffix decide, then the second surname, then an entry that maps to a
    source wins over one that does not.
    """
    index = references if isinstance(references, _Entries) else _Entries(references, config)
    if not citation.authors:
        return index.by_label.get(model.normalize_key(citation.key))
    candidates = index.same_author(citation)
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
        # "Eaton et al., 2006" is not the single-author Eaton 2006 of the same list.
        candidates = [candidates[i] for i in _by_count(citation,
                                                       [len(e.authors) for e in candidates])]
    if len(candidates) > 1:
        candidates = [e for e in candidates if e.index in mapped] or candidates
    return candidates[0] if candidates else None


class _Markers:
    """The sources a marker without an entry matches (:func:`_marker_score` 100)."""

    def __init__(self, sources: collections.abc.Sequence[model.SourceInfo],
                 config: model.MatchConfig) -> None:
        self.sources, self.config = sources, config
        self.by_file_key: dict[str, list[int]] = collections.defaultdict(list)
        self.by_first_year: dict[tuple[str, int | None], list[int]] = collections.defaultdict(list)
        for number, source in enumerate(sources):
            for key in _file_keys(source):
                self.by_file_key[key].append(number)
            names = _source_surnames(source, config)
            if names:
                for year in _years(source) or (None,):
                    self.by_first_year[names[0], year].append(number)
        self.names = _SameSurname({name for name, _ in self.by_first_year}, config)

    def best(self, citation: model.ExtractedCitation) -> tuple[float, model.SourceInfo] | None:
        """A source :func:`_marker_score` gives 100, the best of several by :meth:`_rank`
        (the file name's year, then the author count), else the first source with 0."""
        if not self.sources:
            return None
        hits: set[int] = set()
        if citation.authors and citation.year is not None:
            hits.update(self.by_file_key.get(citation.key, ()))
            surname = citation.authors[0]
            for part in {_fold(surname), *_fold_words(surname).split()}:
                for name in self.names(part):
                    hits.update(self.by_first_year.get((name, citation.year), ()))
        if hits:
            # Of several sources by the first author in that year, the one whose file
            # name gives that year (not another: "Eaton_2005.pdf" parsed as of 2006) and
            # whose author count fits the marker ("et al.": not the single-author paper).
            return 100.0, self.sources[min(hits, key=lambda n: self._rank(citation, n))]
        return 0.0, self.sources[0]

    def _rank(self, citation: model.ExtractedCitation, number: int) -> tuple[int, int, int]:
        source = self.sources[number]
        filed = _filename_year(source)
        return (0 if filed is None or filed == citation.year else 1,
                _count_rank(citation, _author_count(source)), number)
