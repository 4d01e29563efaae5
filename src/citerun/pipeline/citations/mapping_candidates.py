"""For each reference entry, the sources :func:`~.mapping_score.match` may score at the
threshold or above (:class:`_Candidates`): a superset found through indexes (keys,
surnames, titles searched with rapidfuzz's ``cdist`` in year bands), never every pair."""

from __future__ import annotations

import collections
import collections.abc

import numpy as np
import rapidfuzz.fuzz
import rapidfuzz.process

from citerun.pipeline.citations import model
from citerun.pipeline.citations.mapping_lookup import _SameSurname
from citerun.pipeline.citations.mapping_score import (
    _EPS, _SLACK, _file_keys, _fold, _fold_words, _source_surnames, _title_text, year_score,
)


def _title_needed(config: model.MatchConfig, has_title: bool, has_surnames: bool,
                  author: float, year: float | None) -> float | None:
    """The least title score at which :func:`match` can reach the threshold, given the
    author and year scores (``year`` None: not compared); 0: any title, None: none."""
    if not has_title and not has_surnames:
        return 0.0 if 0.0 >= config.threshold else None  # "nothing to compare"
    total = ((config.title_weight if has_title else 0.0)
             + (config.author_weight if has_surnames else 0.0)
             + (config.year_weight if year is not None else 0.0))
    rest = ((author * config.author_weight if has_surnames else 0.0)
            + (year * config.year_weight if year is not None else 0.0))
    if not total:
        return 0.0 if 0.0 >= config.threshold else None
    if not has_title or not config.title_weight:
        return 0.0 if rest / total >= config.threshold - _EPS else None
    need = (config.threshold * total - rest) / config.title_weight
    if need > 100.0 + _EPS:
        return None
    return max(need, 0.0)


class _Candidates:
    """For each reference entry, the sources :func:`match` may score at the threshold
    or above: a superset of them, found through indexes instead of every pair."""

    def __init__(self, entries: collections.abc.Sequence[model.ReferenceEntry],
                 sources: collections.abc.Sequence[model.SourceInfo],
                 config: model.MatchConfig) -> None:
        self.entries, self.sources, self.config = entries, sources, config
        self.surnames = [_source_surnames(source, config) for source in sources]
        self.titles = [_title_text(source) for source in sources]
        self.by_doi: dict[str, list[int]] = collections.defaultdict(list)
        self.by_arxiv: dict[str, list[int]] = collections.defaultdict(list)
        self.by_file_key: dict[str, list[int]] = collections.defaultdict(list)
        self.by_name: dict[str, list[int]] = collections.defaultdict(list)
        for number, source in enumerate(sources):
            if source.doi:
                self.by_doi[source.doi.casefold()].append(number)
            if source.arxiv_id:
                self.by_arxiv[source.arxiv_id].append(number)
            for key in _file_keys(source):
                self.by_file_key[key].append(number)
            for name in dict.fromkeys(self.surnames[number]):
                self.by_name[name].append(number)
        self.names = _SameSurname(self.by_name, config)
        self.entry_titles = [_fold_words(e.title) if e.title else "" for e in entries]
        self.entry_texts = [_fold_words(e.text) for e in entries]
        self.by_year: dict[int | None, list[int]] = collections.defaultdict(list)
        for position, entry in enumerate(entries):
            self.by_year[entry.year].append(position)

    def pairs(self) -> dict[int, set[int]]:
        """Entry position -> the numbers of its candidate sources."""
        found: dict[int, set[int]] = collections.defaultdict(set)
        self._by_identifiers(found)
        self._by_authors(found)
        for number in range(len(self.sources)):
            self._by_title(number, found)
        return found

    def _by_identifiers(self, found: dict[int, set[int]]) -> None:
        for position, entry in enumerate(self.entries):
            if entry.doi:
                found[position].update(self.by_doi.get(entry.doi.casefold(), ()))
            if entry.arxiv_id:
                found[position].update(self.by_arxiv.get(entry.arxiv_id, ()))
            if entry.author_year_key:
                found[position].update(self.by_file_key.get(entry.author_year_key, ()))

    def _by_authors(self, found: dict[int, set[int]]) -> None:
        """Sources one of whose surnames the entry names: their author score exactly."""
        words = [({_fold(a) for a in entry.authors}
                  | set(self.entry_texts[position].split()),
                  set(_fold_words(entry.authors[0]).split()) if entry.authors else set())
                 for position, entry in enumerate(self.entries)]
        self.names.prepare(word for anywhere, first in words for word in anywhere | first)
        for position, (anywhere, first) in enumerate(words):
            named = {name for word in anywhere for name in self.names(word)}
            first_named = {name for word in first for name in self.names(word)}
            numbers = {number for name in named | first_named for number in self.by_name[name]}
            entry = self.entries[position]
            for number in numbers:
                surnames = self.surnames[number]
                if entry.authors and surnames[0] in first_named:
                    author = 100.0
                else:
                    author = 100.0 * sum(1 for name in surnames if name in named) / len(surnames)
                year = year_score(self.sources[number], entry.year)
                if _title_needed(self.config, bool(self.titles[number]), True, author,
                                 year) is not None:
                    found[position].add(number)

    def _by_title(self, number: int, found: dict[int, set[int]]) -> None:
        """Entries whose title (or text) may make up for no author agreeing."""
        title, source = self.titles[number], self.sources[number]
        has_title, has_surnames = bool(title), bool(self.surnames[number])

        def needed(entry_year: int | None) -> float | None:
            return _title_needed(self.config, has_title, has_surnames, 0.0,
                                 year_score(source, entry_year))

        wanted = {y: needed(y) for y in self.by_year}
        years = [y for y, need in wanted.items() if need is not None]
        if not years:
            return
        positions: collections.abc.Sequence[int]
        if sum(len(self.by_year[y]) for y in years) * 2 > len(self.entries):
            positions = range(len(self.entries))  # most entries: the lists as they are
        else:  # a source's year and its neighbours (or entries without a year)
            positions = [p for y in years for p in self.by_year[y]]
        cutoff = min(need for need in wanted.values() if need is not None) - _SLACK
        if cutoff <= 0 or not has_title:  # any title will do, or the title cannot matter
            found_any = (p for p in positions if wanted[self.entries[p].year] is not None)
            for p in found_any:
                found[p].add(number)
            return
        everything = isinstance(positions, range)
        titles = self.entry_titles if everything else [self.entry_titles[p] for p in positions]
        # The mean of token_set_ratio and token_sort_ratio reaches the cutoff only where
        # token_sort_ratio (cheap) reaches 2 * cutoff - 100: token_set_ratio only there.
        best = np.zeros(len(titles), dtype=np.float32)
        sort_cutoff = 2 * cutoff - 100
        by_sort = self._scores(title, titles, rapidfuzz.fuzz.token_sort_ratio, max(sort_cutoff, 0.0))
        rows = (np.nonzero(by_sort >= sort_cutoff)[0] if sort_cutoff > 0
                else np.arange(len(titles)))
        if len(rows):
            by_set = self._scores(title, [titles[int(r)] for r in rows],
                                  rapidfuzz.fuzz.token_set_ratio, 0.0)
            best[rows] = (by_set + by_sort[rows]) / 2
        if len(title) >= 20:
            texts = self.entry_texts if everything else [self.entry_texts[p] for p in positions]
            np.maximum(best, self._scores(title, texts, rapidfuzz.fuzz.partial_ratio, cutoff),
                       out=best)
        for row in np.nonzero(best >= cutoff)[0]:
            p = positions[int(row)]
            need = wanted[self.entries[p].year]
            if need is not None and best[row] >= need - _SLACK:
                found[p].add(number)

    @staticmethod
    def _scores(title: str, choices: collections.abc.Sequence[str],
                scorer: collections.abc.Callable[..., float], cutoff: float) -> np.ndarray:
        scores: np.ndarray = rapidfuzz.process.cdist([title], choices, scorer=scorer,
                                                     score_cutoff=cutoff, dtype=np.float32,
                                                     workers=1)[0]
        return scores
