"""Map each citation to a source document, and say why.

A key the user gave explicitly always wins; then a DOI or arXiv id equal on both sides;
otherwise each reference entry is scored (rapidfuzz) against every source's title,
first author or surnames, and year (one apart still counts: preprint and publication),
and one source goes to at most one entry, best scores first. The decision records its
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
"""

from __future__ import annotations

import collections
import collections.abc
import functools
import re

import numpy as np
import rapidfuzz.fuzz
import rapidfuzz.process

from citerun.pipeline import normalize
from citerun.pipeline.citations import authors, model, patterns


# rapidfuzz's cutoffs run this far under the score needed; what they keep is rescored
# exactly, so the slack only admits a few more candidates, never loses one.
_SLACK = 0.5
_EPS = 1e-6
_CELLS = 1 << 22  # cells of one cdist block (4 MiB of float32)

# An entry is scored against several sources and its words looked up often: the folded
# forms are kept (normalize's folding is pure, so the answers are the same).
_fold = functools.lru_cache(maxsize=1 << 16)(normalize.fold)
_fold_words = functools.lru_cache(maxsize=1 << 16)(normalize.fold_words)


def _source_surnames(source: model.SourceInfo, config: model.MatchConfig) -> list[str]:
    """The folded surnames of the source's first ``config.max_source_authors`` authors."""
    folded = (_fold(authors.written_surname(author))
              for author in source.authors[:config.max_source_authors])
    return [name for name in folded if name]


def _same_surname(a: str, b: str, config: model.MatchConfig) -> bool:
    return rapidfuzz.fuzz.ratio(_fold(a), _fold(b)) >= config.surname_similarity


def _filename_words(filename: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", filename)
    return _fold_words(re.sub(r"[_\-.]+", " ", stem))


def _filename_key(source: model.SourceInfo) -> str:
    return model.normalize_key(_filename_words(source.filename))


_FILE_YEAR = re.compile(r"^(?:1[6-9]|20)\d{2}[a-z]?$")


def _filename_author_year(source: model.SourceInfo) -> str | None:
    """The ``smith2020a`` key a file name names by its first word and a year among its
    next words, as writers and reference managers name PDFs: "Hammer_2010.pdf",
    "Hammer et al. - 2010 - Tool use.pdf" (Zotero's and Mendeley's default),
    "Hammer_Li_2010_corvids.pdf". None where the name does not open with a surname
    followed by a year."""
    words = _filename_words(source.filename).split()
    if len(words) < 2 or not words[0].isalpha() or len(words[0]) < 2:
        return None
    for word in words[1:6]:
        if _FILE_YEAR.match(word):
            return model.normalize_key(f"{words[0]}{word}")
        if not word.isalpha():
            return None
    return None


def _file_keys(source: model.SourceInfo) -> set[str]:
    """The keys a source's file name gives: its whole stem, and its author and year."""
    keys = {_filename_key(source)}
    author_year = _filename_author_year(source)
    if author_year:
        keys.add(author_year)
    return keys


def _et_al(citation: model.ExtractedCitation) -> bool:
    """Whether the marker names its first author with "et al." ("Eaton et al., 2006")."""
    if not citation.authors:
        return False
    return re.search(rf"{re.escape(citation.authors[0])}\s*,?\s*{patterns.ET_AL}",
                     citation.marker) is not None


def _fits_count(citation: model.ExtractedCitation, count: int) -> bool:
    """Whether a work of ``count`` authors can be cited as the marker cites it: "et al."
    stands for three or more (two where a style abbreviates two), one surname alone for
    one author, two surnames for two."""
    if _et_al(citation):
        return count >= 2
    return count == len(citation.authors)


def _by_count(citation: model.ExtractedCitation, counts: collections.abc.Sequence[int],
              ) -> list[int]:
    """The positions whose author count fits the marker, the best fit first; all of them
    where none fits (a list written differently is still the writer's list)."""
    fitting = [i for i, count in enumerate(counts) if _fits_count(citation, count)]
    if _et_al(citation):
        fitting.sort(key=lambda i: counts[i] < 3)  # three or more first
    return fitting or list(range(len(counts)))


def _title_text(source: model.SourceInfo) -> str:
    """The title a source is compared by: its own, or its file name's words."""
    title = _fold_words(source.title or "")
    from_filename = _filename_words(source.filename)
    if len(title.split()) < 2 and len(from_filename.split()) >= 3:
        title = from_filename  # "deep_learning_for_theses.pdf" says more than no title
    return title


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
    if entry.author_year_key and entry.author_year_key in _file_keys(source):
        return 100.0, "file name is the entry's key"
    parts: list[tuple[float, float]] = []
    why: list[str] = []
    title = _title_text(source)
    if title:
        scores = [0.0]
        if entry.title:
            entry_title = _fold_words(entry.title)
            scores.append(
                (rapidfuzz.fuzz.token_set_ratio(entry_title, title)
                 + rapidfuzz.fuzz.token_sort_ratio(entry_title, title)) / 2
            )
        if len(title) >= 20:
            scores.append(rapidfuzz.fuzz.partial_ratio(title, _fold_words(entry.text)))
        parts.append((max(scores), config.title_weight))
        why.append(f"title {max(scores):.0f}")
    surnames = _source_surnames(source, config)
    if surnames:
        # _same_surname folds both sides; folded once here (folding is idempotent).
        similarity = config.surname_similarity
        entry_words = _fold_words(entry.text).split()
        others = [*(_fold(other) for other in entry.authors), *entry_words]
        first_agrees = bool(entry.authors) and any(
            rapidfuzz.fuzz.ratio(surnames[0], part) >= similarity
            for part in _fold_words(entry.authors[0]).split()
        )
        found = sum(
            1
            for name in surnames
            if any(rapidfuzz.fuzz.ratio(name, other) >= similarity for other in others)
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
    if citation.key in _file_keys(source):
        return 100.0
    surname = citation.authors[0]
    names = _source_surnames(source, config)
    if not any(_same_surname(part, name, config)
               for name in names[:1] for part in [surname, *_fold_words(surname).split()]):
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


def _year_score(source_year: int | None, entry_year: int | None) -> float | None:
    if source_year is None or entry_year is None:
        return None
    gap = abs(source_year - entry_year)
    return 100.0 if gap == 0 else 70.0 if gap == 1 else 0.0


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
                year = _year_score(self.sources[number].year, entry.year)
                if _title_needed(self.config, bool(self.titles[number]), True, author,
                                 year) is not None:
                    found[position].add(number)

    def _by_title(self, number: int, found: dict[int, set[int]]) -> None:
        """Entries whose title (or text) may make up for no author agreeing."""
        title, year = self.titles[number], self.sources[number].year
        has_title, has_surnames = bool(title), bool(self.surnames[number])

        def needed(entry_year: int | None) -> float | None:
            return _title_needed(self.config, has_title, has_surnames, 0.0,
                                 _year_score(year, entry_year))

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
                self.by_first_year[names[0], source.year].append(number)
        self.names = _SameSurname({name for name, _ in self.by_first_year}, config)

    def best(self, citation: model.ExtractedCitation) -> tuple[float, model.SourceInfo] | None:
        """What ``max`` over every source's :func:`_marker_score` finds (the first best)."""
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
            # Of several sources by the first author in that year, one whose author
            # count fits the marker ("et al.": not the single-author paper).
            ordered = sorted(hits)
            fits = _by_count(citation, [len(self.sources[n].authors) or len(citation.authors)
                                        for n in ordered])
            return 100.0, self.sources[ordered[fits[0]]]
        return 0.0, self.sources[0]


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
