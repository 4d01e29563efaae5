"""How well one reference entry describes one source (:func:`match`, 0-100, and why):
DOI or arXiv id, a file name that is the entry's key, title, authors and year; and the
folded surnames, titles and file-name keys of a source that the indexes share."""

from __future__ import annotations

import collections.abc
import functools
import re

import numpy
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
    return list(_surnames_of(source.authors[:config.max_source_authors]))


@functools.lru_cache(maxsize=1 << 12)
def _surnames_of(names: tuple[str, ...]) -> tuple[str, ...]:
    """Folded once per source (it is scored against many entries: 13 s of 111 went to
    folding them again per pair, issue 48)."""
    folded = (_fold(authors.written_surname(author)) for author in names)
    return tuple(name for name in folded if name)


def _found_surnames(surnames: list[str], others: list[str], similarity: float) -> int:
    """How many of ``surnames`` are within ``similarity`` (rapidfuzz ratio) of one of
    ``others``: one ``cdist`` in C (issue 48: the pairs of 100 surnames and an entry's
    words, compared one by one in Python, were 83 s of a 111 s matching), the same count
    as comparing each pair."""
    if not others:
        return 0
    if similarity <= 0:
        return len(surnames)  # every ratio is at least 0
    grid = rapidfuzz.process.cdist(surnames, others, scorer=rapidfuzz.fuzz.ratio,
                                   score_cutoff=similarity, dtype=numpy.float32)
    return int(numpy.count_nonzero(grid.max(axis=1) > 0))  # a kept score is >= similarity



def _filename_words(filename: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", filename)
    return _fold_words(re.sub(r"[_\-.]+", " ", stem))


def _filename_key(source: model.SourceInfo) -> str:
    return model.normalize_key(_filename_words(source.filename))


# A year standing alone or glued to the end of a file name's word, with its letter
# ("2010", "2010a", "crosssections2010"), and a surname glued to its year ("hammer2010",
# "eaton2006wild": a BibTeX key as a file name).
_GLUED_YEAR = re.compile(rf"[^\W\d_]*?(?P<y>{patterns.YEAR})(?P<rest>[^\W\d_]*)")
_SURNAME_YEAR = re.compile(rf"(?P<name>[^\W\d_]{{2,}})(?P<y>{patterns.YEAR})(?P<rest>[^\W\d_]*)")


@functools.lru_cache(maxsize=1 << 14)
def _filename_author(filename: str) -> tuple[str, int, str] | None:
    """The first author's surname, the year and its letter a file name names, as writers
    and reference managers name PDFs: "Hammer_2010.pdf", "Hammer et al. - 2010 - Tool
    use.pdf" (Zotero's and Mendeley's default), "Hammer et al 2010 - Title.pdf",
    "Hammer_Li_2010_corvids.pdf", "Hammer_LithoprobeCrossSections2010.pdf",
    "hammer2010.pdf", "hammer2010tool.pdf". None where the name does not open with a
    surname followed by a year within its next five words."""
    words = _filename_words(filename).split()
    if not words:
        return None
    glued = _SURNAME_YEAR.fullmatch(words[0])
    if glued:
        rest = glued["rest"]
        return glued["name"], int(glued["y"]), rest if len(rest) == 1 else ""
    if len(words) < 2 or not words[0].isalpha() or len(words[0]) < 2:
        return None
    for word in words[1:6]:
        year = _GLUED_YEAR.fullmatch(word)
        if year:
            rest = year["rest"]
            return words[0], int(year["y"]), rest if len(rest) == 1 else ""
        if not word.isalpha():
            return None
    return None


def _filename_author_year(source: model.SourceInfo) -> str | None:
    """The ``smith2020a`` key a file name names by its first author and year
    (:func:`_filename_author`)."""
    found = _filename_author(source.filename)
    return model.normalize_key(f"{found[0]}{found[1]}{found[2]}") if found else None


def _filename_year(source: model.SourceInfo) -> int | None:
    """The year a file name gives its work ("Eaton_2005.pdf": 2005), as the writer filed
    it; None where the name does not open with a surname and a year."""
    found = _filename_author(source.filename)
    return found[1] if found else None


def _author_count(source: model.SourceInfo) -> int | None:
    """How many authors the source has, as far as known: a file name's "et al." says
    three or more and its "A and B - 2010" two (Zotero's and Mendeley's names; a parsed
    first page may have missed the co-authors), else the parsed authors; None where
    neither says."""
    words = _filename_words(source.filename).split()
    if " et al " in f" {' '.join(words[1:6])} ":
        return max(3, len(source.authors))
    if (len(words) >= 4 and words[1] in ("and", "und") and _filename_author(source.filename)
            and _GLUED_YEAR.fullmatch(words[3])):
        return 2
    return len(source.authors) or None


def _years(source: model.SourceInfo) -> tuple[int, ...]:
    """The years a source may be of: its parsed year and the year its file name gives."""
    return tuple(dict.fromkeys(y for y in (source.year, _filename_year(source)) if y is not None))


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


def _count_rank(citation: model.ExtractedCitation, count: int | None) -> int:
    """How well a work of ``count`` authors (None: not known) fits the marker: 0 fits
    ("et al." and three or more, two names and two, one name and one), 1 might (not
    known, or "et al." for two), 2 does not ("et al." for a single author)."""
    if count is None:
        return 1
    if _et_al(citation):
        return 0 if count >= 3 else 1 if count == 2 else 2
    return 0 if count == len(citation.authors) else 2


# A parsed title that names no work: a heading of the first page ("1 Introduction",
# "Abstract", "Contents"), an article's kind, or a journal's or publisher's name
# (compared folded: "1.2 Introduction" is "1 2 introduction").
_GENERIC_WORDS = (
    r"introduction|einleitung|einfuehrung|abstract|summary|zusammenfassung|kurzfassung|"
    r"contents|table of contents|inhalt|inhaltsverzeichnis|preface|vorwort|foreword|"
    r"acknowledge?ments?|danksagung|references|bibliography|literatur|literaturverzeichnis|"
    r"appendix|anhang|keywords|conclusions?|background|methods?|results?|discussion|"
    r"overview|(?:research |original |review |scientific )?(?:article|paper|report)|"
    r"original research|review|editorial|letter|brief communication|short communication|"
    r"commentary|title|title page|untitled|cover|front matter|full text|"
    r"supplementary (?:material|information)|contents lists available at sciencedirect|"
    r"sciencedirect|elsevier|springer|wiley|taylor (?:and )?francis|plos one"
)
_GENERIC_TITLE = re.compile(
    rf"(?:(?:chapter|kapitel|section|abschnitt|part|teil)\s+)?(?:(?:\d+|[ivx]+)\s+)*"
    rf"(?:{_GENERIC_WORDS})"
    r"|(?:the\s+)?(?:(?:international|american|european|british)\s+)?journal\s+of\b.*"
    r"|(?:(?:ieee|acm)\s+)?(?:proceedings|annals|transactions|bulletin)\s+(?:of|on)\b.*"
    r"|zeitschrift\s+fuer\b.*|(?:\w+\s+){0,3}(?:letters|journal|quarterly|magazine)"
    r"(?:\s+international)?"
)


def generic_title(title: str | None) -> bool:
    """Whether a parsed title names no work ("1 Introduction", "Abstract", "Journal of
    Geophysical Research"): a first page's heading or a journal's name, never trusted."""
    return bool(title) and _GENERIC_TITLE.fullmatch(_fold_words(title or "")) is not None


def _title_text(source: model.SourceInfo) -> str:
    """The title a source is compared by: its own, or its file name's words where it
    has none, a one-word one, or one that names no work (:func:`generic_title`)."""
    title = "" if generic_title(source.title) else _fold_words(source.title or "")
    from_filename = _filename_words(source.filename)
    if len(title.split()) < 2 and len(from_filename.split()) >= 3:
        title = from_filename  # "deep_learning_for_theses.pdf" says more than no title
    return title


def year_score(source: model.SourceInfo, entry_year: int | None) -> float | None:
    """The year's share of a match (None: not compared): 100 equal, 70 one apart (a
    preprint and its publication), else 0; the source's parsed year or the year its
    file name gives, whichever is nearer."""
    years = _years(source)
    if not years or entry_year is None:
        return None
    gap = min(abs(year - entry_year) for year in years)
    return 100.0 if gap == 0 else 70.0 if gap == 1 else 0.0


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
        found = _found_surnames(surnames, others, similarity)
        author_score = 100.0 if first_agrees else 100.0 * found / len(surnames)
        parts.append((author_score, config.author_weight))
        why.append("first author" if first_agrees else f"authors {found}/{len(surnames)}")
    if not parts:
        return 0.0, "nothing to compare"
    year = year_score(source, entry.year)
    if year is not None:
        parts.append((year, config.year_weight))
        why.append("year" if year == 100.0 else "year ±1" if year else "year differs")
    total = sum(weight for _, weight in parts)
    score = sum(score * weight for score, weight in parts) / total if total else 0.0
    return score, ", ".join(why)
