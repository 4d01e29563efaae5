"""Matching citations to sources is bounded work with the answers of every pair (issue 27).

A 201-page thesis with 3,000 references and 6,000 markers against 500 sources made
``map_citations`` score all 1.5 million (entry, source) pairs and scan every entry per
citation: 16 minutes of CPU on the worker's loop. These tests count the work done
(calls of :func:`mapping.match` and :func:`mapping_lookup._same_surname`, each raising once over
its budget so the old code fails fast), check the caps, and compare the indexed
matching with scoring every pair on varied inputs and configs.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import time
from typing import Any

import pytest

from citerun.pipeline import citations, normalize, pdf
from citerun.pipeline.citations import mapping, mapping_lookup, model
from citerun.pipeline.settings import LimitSettings
from citerun.worker import sandbox, steps
from tests.support import hostile_theses, loop


def _pages(references: int, markers: int) -> list[tuple[int, str]]:
    """The hostile thesis's text as pages (the blocks the PDF is written from)."""
    spec = hostile_theses.big_bibliography_spec(references, markers, filler_pages=0)
    return hostile_theses.pages_of(spec)


def _sources(count: int, every: int = 6, surnames: int = 1000) -> list[citations.SourceInfo]:
    """Source ``k`` is the paper of reference ``every * k``: its title, authors and year."""
    infos = []
    for k in range(count):
        number = every * k
        text, year = hostile_theses.reference(number, surnames)
        title = text.split("). ", 1)[1].split(". ")[0]
        infos.append(citations.SourceInfo(
            document_id=f"d{k}", filename=f"source-{k}.pdf", title=title, year=year,
            authors=(f"A. {hostile_theses.surname(number % surnames)}",
                     f"B. {hostile_theses.surname(number + 7)}")))
    return infos


class _Budget:
    """Counts calls of a function and fails the test once they pass ``limit``."""

    def __init__(self, fn: collections.abc.Callable[..., Any], limit: int) -> None:
        self.fn, self.limit, self.calls = fn, limit, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.calls > self.limit:
            raise AssertionError(f"over the budget of {self.limit:,} calls")
        return self.fn(*args)


@pytest.fixture(scope="module")
def big_thesis() -> citations.Extraction:
    return citations.extract(_pages(3000, 6000))


def test_a_big_bibliography_is_matched_with_a_few_comparisons_per_entry(
        big_thesis: citations.Extraction, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = _sources(500)
    entries, cited = len(big_thesis.references), len(big_thesis.citations)
    assert (entries, cited) == (3000, 6000)
    # Scoring every pair made 1,500,000 calls of match and scanning every entry per
    # citation 36 million of _same_surname.
    scores = _Budget(mapping.match, 3 * entries)
    surnames = _Budget(mapping_lookup._same_surname, 20 * (entries + cited))
    monkeypatch.setattr(mapping, "match", scores)
    monkeypatch.setattr(mapping_lookup, "_same_surname", surnames)
    mapped = citations.map_citations(big_thesis, sources)
    # Source k is reference 6k (entry index 6k + 1): every citation of it maps there,
    # every other citation keeps its entry and stays unresolved.
    for m in mapped:
        assert m.reference is not None
        number = m.reference.index - 1
        expected = f"d{number // 6}" if number % 6 == 0 else None
        assert m.document_id == expected, (m.citation, m.reference, m.document_id)
    assert sum(m.document_id is not None for m in mapped) == 1000
    assert scores.calls < 3 * entries and surnames.calls < 20 * (entries + cited)


def test_a_source_with_20000_authors_is_read_for_its_first_100() -> None:
    parsed = pdf.parse_pdf(hostile_theses.many_authors_source(20_000), max_bytes=10**8)
    assert len(parsed.authors) == 20_000  # the parser believes the list
    source = citations.SourceInfo(document_id="many", filename="many-authors.pdf",
                                  title=parsed.title, authors=parsed.authors, year=parsed.year)
    # The entry's first author is the source's second: the share of authors counts.
    second = hostile_theses.surname(1)
    entry = citations.parse_entry(
        f"{second}, A. (2020). On urban heat and street trees. Urban Studies, 3, 1-9.", 1)
    config = citations.MatchConfig()
    score, reason = citations.match(entry, source, config)
    assert "/100" in reason, reason  # 20,000 before the cap
    assert score >= config.threshold
    assert citations.match(entry, source, config.model_copy(update={"max_source_authors": 10}))[1] \
        .endswith("/10, year")
    extraction = citations.extract([
        (1, f"Trees cool streets ({second}, 2020)."),
        (2, "References\n\n" + entry.text)])
    assert [m.document_id for m in citations.map_citations(extraction, [source])] == ["many"]


def _entries(count: int) -> tuple[citations.ReferenceEntry, ...]:
    return tuple(citations.parse_entry(hostile_theses.reference(n, 1000)[0], n + 1)
                 for n in range(count))


def test_a_thesis_over_the_caps_is_refused_with_the_limit_named() -> None:
    config = citations.MatchConfig()
    assert (config.max_references, config.max_citations) == (5000, 20_000)
    refs = citations.Extraction(citations=(), references=_entries(5001), reference_page=2)
    with pytest.raises(citations.TooLargeToMatch, match="5,001 reference entries, over the "
                       "limit of 5,000"):
        citations.map_citations(refs, [])
    one = citations.ExtractedCitation(ordinal=1, key="1", claim="A claim.", page=1, marker="[1]",
                                      locator=None)
    cites = citations.Extraction(citations=(one,) * 11, references=(), reference_page=None)
    with pytest.raises(citations.TooLargeToMatch, match="11 citations, over the limit of 10"):
        citations.map_citations(cites, [], citations.MatchConfig(max_citations=10))
    assert len(citations.map_citations(cites, [])) == 11  # under the default cap


async def test_the_worker_maps_in_a_child_and_refuses_over_the_caps(
        big_thesis: citations.Extraction) -> None:
    limits = LimitSettings()
    # Over a cap: DocumentTooComplex (the run fails with the limit named), checked first.
    with pytest.raises(sandbox.DocumentTooComplex, match="document_too_complex: 6,000 "
                       "citations, over the limit of 5,000"):
        await steps.mapped(big_thesis, [], citations.MatchConfig(max_citations=5000), limits)
    # A duplicate key is the same error as without the sandbox.
    small = citations.extract([(1, "A claim [1].")])
    twice = [citations.SourceInfo(document_id=d, filename=f"{d}.pdf", title=None, authors=(),
                                  year=None, explicit_keys=("1",)) for d in ("a", "b")]
    with pytest.raises(citations.DuplicateKeyError, match="'1'"):
        await steps.mapped(small, twice, citations.MatchConfig(), limits)
    # The big thesis is mapped in a child while the loop goes on ticking (heartbeats).
    started = time.monotonic()
    mapped, ticks = await loop.ticks_while(steps.mapped(
        big_thesis, _sources(500), citations.MatchConfig(), limits))
    elapsed = time.monotonic() - started
    assert not isinstance(mapped, Exception), mapped
    assert sum(m.document_id is not None for m in mapped) == 1000
    assert ticks >= elapsed / 0.05 / 2, (ticks, elapsed)


# --- the same answers as scoring every pair -------------------------------------------


def _every_pair(extraction: citations.Extraction, sources: list[citations.SourceInfo],
                config: citations.MatchConfig) -> list[tuple[Any, ...]]:
    """The matching by its definition: every (entry, source) pair scored, every entry
    and every source scanned per citation (what map_citations did before issue 27)."""
    explicit = mapping._explicit_sources(sources)
    entry_source: dict[int, tuple[citations.SourceInfo, str, float | None, str]] = {}
    for entry in extraction.references:
        for key in entry.keys:
            if key in explicit:
                entry_source[entry.index] = (explicit[key], "explicit", None, "")
                break
    taken = {source.document_id for source, _, _, _ in entry_source.values()}
    scored = sorted(((*citations.match(e, s, config), e.index, n)
                     for e in extraction.references if e.index not in entry_source
                     for n, s in enumerate(sources) if s.document_id not in taken),
                    key=lambda item: (-item[0], item[2], item[3]))
    for score, reason, entry_index, n in scored:
        if score < config.threshold:
            break
        if entry_index in entry_source or sources[n].document_id in taken:
            continue
        entry_source[entry_index] = (sources[n], "reference", score, reason)
        taken.add(sources[n].document_id)
    out: list[tuple[Any, ...]] = []
    for c in extraction.citations:
        named: citations.ReferenceEntry | None = None
        if not c.authors:
            named = next((e for e in extraction.references
                          if e.label and model.normalize_key(e.label) == model.normalize_key(c.key)),
                         None)
        else:
            same = [e for e in extraction.references
                    if e.authors and e.year == c.year and any(
                        mapping_lookup._same_surname(part, c.authors[0], config)
                        for part in [e.authors[0], *normalize.fold_words(e.authors[0]).split()])]
            suffix = c.key[len(model.normalize_key(c.authors[0])) + 4:]
            same = [e for e in same if e.year_suffix == suffix] or [
                e for e in same if not e.year_suffix or not suffix]
            if len(same) > 1 and len(c.authors) > 1:
                same = [e for e in same if len(e.authors) > 1
                        and mapping_lookup._same_surname(e.authors[1], c.authors[1], config)] or same
            if len(same) > 1:
                same = [e for e in same if e.index in entry_source] or same
            named = same[0] if same else None
        key = model.normalize_key(c.key)
        if key in explicit:
            out.append((c.ordinal, explicit[key].document_id, "explicit", None))
        elif named is not None:
            found = entry_source.get(named.index)
            out.append((c.ordinal, found[0].document_id if found else None,
                        found[1] if found else None, found[2] if found else None))
        else:
            best = max(((mapping_lookup._marker_score(c, s, config), s) for s in sources),
                       key=lambda item: item[0], default=None)
            if best is None or best[0] < config.threshold:
                out.append((c.ordinal, None, None, None))
            else:
                out.append((c.ordinal, best[1].document_id, "marker", best[0]))
    return out


def _varied() -> tuple[citations.Extraction, list[citations.SourceInfo]]:
    """120 entries (a few surnames, years close together, some titles with typos) and 40
    sources with and without titles, authors, years, DOIs and telling file names, plus
    markers whose entry is missing."""
    refs, body = [], []
    for n in range(120):
        name = hostile_theses.surname(n % 25)
        year = 2015 + n % 4
        suffix = "a" if n % 25 == 3 else ""
        doi = f" https://doi.org/10.1234/x{n}" if n % 11 == 0 else ""
        refs.append(f"{name}, A., & {hostile_theses.surname(n + 3)}, B. ({year}{suffix}). "
                    f"{hostile_theses._TOPICS[n % 10].capitalize()} and heat in "
                    f"{hostile_theses.surname(n + 40)} city. Journal, {n}, 1-9.{doi}")
        body.append(f"Heat matters ({name}, {year}{suffix}).")
    unlisted = hostile_theses.surname(30)  # no entry names them: markers match sources
    body += [f"Nobody saw it ({unlisted}, 2016).", f"Trees help ({unlisted}, 2017)."]
    extraction = citations.extract([(1, " ".join(body)),
                                     (2, "References\n\n" + "\n\n".join(refs))])
    assert len(extraction.references) == 120
    sources = []
    for k in range(40):
        n = (k * 7) % 120
        entry = extraction.references[n]
        title = entry.title or ""
        if k % 5 == 1:
            title = title.replace("heat", "haet")  # a typo
        sources.append(citations.SourceInfo(
            document_id=f"s{k}",
            filename=(f"{entry.author_year_key}.pdf" if k % 9 == 4 else f"file{k}.pdf"),
            title=None if k % 7 == 2 else title,
            authors=() if k % 4 == 3 else (f"A. {entry.authors[0]}", f"C. {hostile_theses.surname(k)}")
            if k % 6 else (f"Z. {hostile_theses.surname(k + 90)}",),
            year=None if k % 8 == 5 else (entry.year or 0) + (k % 3 == 2),
            doi=entry.doi if k % 10 == 0 else None))
    sources.append(citations.SourceInfo(document_id="unlisted", filename="u.pdf", title="Heat",
                                        authors=(f"A. {unlisted}",), year=2016))
    return extraction, sources


@pytest.mark.parametrize("overrides", [
    {},
    {"threshold": 40},
    {"threshold": 90, "surname_similarity": 70},
    {"title_weight": 0.0},
    {"author_weight": 0.0, "year_weight": 0.5},
    {"threshold": 0.0},
    {"surname_similarity": 0.0, "threshold": 60},
    {"max_source_authors": 1},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_the_indexes_give_the_answers_of_every_pair(overrides: dict[str, float]) -> None:
    config = citations.MatchConfig(**overrides)
    extraction, sources = _varied()
    mapped = citations.map_citations(extraction, sources, config)
    assert [(m.citation.ordinal, m.document_id, m.method, m.score) for m in mapped] \
        == _every_pair(extraction, sources, config)
    if not overrides:  # the inputs exercise every path
        assert {m.method for m in mapped} >= {"reference", "marker", None}


def test_the_indexes_give_the_answers_of_every_pair_on_the_big_thesis(
        big_thesis: citations.Extraction) -> None:
    """A slice of the big thesis, where scoring every pair is still affordable."""
    extraction = dataclasses.replace(big_thesis, references=big_thesis.references[:300],
                                     citations=big_thesis.citations[:400])
    sources = _sources(60)
    config = citations.MatchConfig()
    assert [(m.citation.ordinal, m.document_id, m.method, m.score)
            for m in citations.map_citations(extraction, sources, config)] \
        == _every_pair(extraction, sources, config)
