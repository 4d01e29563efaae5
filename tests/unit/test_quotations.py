"""Quotations checked verbatim against real sources, cited pages against printed labels.

The cases come from the real papers of ``$CITERUN_EVALDATA/realpdf`` through
``tests/support/quotation_set.py``: the truth (which sentence, which page, which word was
replaced) is known by construction. Without the papers these tests skip, except under
``CI=true``, where missing evaluation data is a failure.
"""

from __future__ import annotations

import os
import random
import time

import pymupdf
import pytest

from citerun.pipeline.citations import locators, quotation_check, quotation_source, quotations
from citerun.pipeline.pdf import labels as page_labels
from tests.support import quotation_set as qs

KINDS = ("exact", "altered", "absent", "page_break", "ellipsis")


def _need_data() -> None:
    if not qs.available():
        message = f"real evaluation PDFs not found at {qs.PDFS} (set CITERUN_EVALDATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


_CASES: dict[str, qs.QuoteCase] = {}


def _case(name: str) -> qs.QuoteCase:
    _need_data()
    if not _CASES:
        _CASES.update({case.name: case for case in qs.quote_cases()})
    if name not in _CASES:
        pytest.skip(f"{name}: the paper has no page that fits this case")
    return _CASES[name]


def _check(case: qs.QuoteCase) -> quotations.QuotationCheck:
    return quotation_check.check_quotation(case.quote, qs.source(case.source, raw=case.raw).prepared)


def _sentence(name: str = "papermage_lo2023.pdf") -> tuple[qs.Source, str, str]:
    """A real sentence of a paper, its page label, and the paper."""
    src = qs.source(name)
    position, sentence = qs.sentences(src)[0]
    return src, sentence, src.labels[position]


# --- the real-paper cases ---------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("paper", qs.PAPERS)
def test_real_quotation_cases(paper: str, kind: str) -> None:
    case = _case(f"{paper}:{kind}")
    result = _check(case)
    assert (result.status, result.labels) == (case.status, case.labels), (case.quote, result)
    if case.status == "exact":
        assert not result.differences and result.score == 1.0
    if case.status == "altered":
        assert case.changed is not None
        thesis, original = case.changed
        assert [(d.kind, d.thesis, d.source) for d in result.differences] == [("changed", thesis, original)]
        assert result.difference == f'changed "{original}" to "{thesis}"'
    if case.status == "not_found":
        assert result.labels == () and result.pages == ()


def test_a_quotation_split_over_a_page_break_names_both_pages() -> None:
    _need_data()
    splits = [c for c in qs.quote_cases() if c.name.endswith(":page_break")]
    assert len(splits) >= 2
    for case in splits:
        result = _check(case)
        assert result.status == "exact" and len(result.labels) == 2, (case.quote, result)


@pytest.mark.parametrize("kind", ["ligature", "hyphenation"])
def test_ligatures_and_line_end_hyphens_of_the_raw_page_do_not_count(kind: str) -> None:
    case = _case(f"{qs.RAW_PAPER}:{kind}")
    page_text = dict(qs.source(case.source, raw=True).pages)[case.labels[0]]
    if kind == "ligature":
        assert "ﬁ" in page_text or "ﬂ" in page_text
    else:
        assert "-\n" in page_text
    result = _check(case)
    assert (result.status, result.labels) == ("exact", case.labels), (case.quote, result)


def test_a_quotation_written_with_the_ligature_matches_the_unfolded_page() -> None:
    _need_data()
    src, sentence, label = _sentence()
    word = next(w for w in sentence.split() if "fi" in w)
    quote = sentence.replace(word, word.replace("fi", "ﬁ"), 1)
    result = quotation_check.check_quotation(quote, src.prepared)
    assert (result.status, result.labels) == ("exact", (label,))


def test_a_word_hyphenated_over_a_page_break_is_one_word() -> None:
    _need_data()
    src, sentence, label = _sentence()
    words = sentence.split()
    middle = len(words) // 2
    long_word = next(i for i in range(middle, len(words)) if words[i].isalpha() and len(words[i]) >= 6)
    word = words[long_word]
    # The sentence set over two pages, its long word broken at the foot of the first.
    pages = [("41", " ".join(words[:long_word] + [word[:3] + "-"])),
             ("42", " ".join([word[3:]] + words[long_word + 1:]))]
    result = quotation_check.check_quotation(sentence, pages)
    assert (result.status, result.labels) == ("exact", ("41", "42"))
    altered = " ".join(words[:long_word] + ["remarkably"] + words[long_word + 1:])
    changed = quotation_check.check_quotation(altered, pages)
    assert changed.status == "altered"
    assert [(d.kind, d.thesis, d.source) for d in changed.differences] == [("changed", "remarkably", word)]


# --- the thesis's own marks ---------------------------------------------------------------


@pytest.mark.parametrize("ellipsis", ["[…]", "[...]", "(…)", "(...)", "…", "[. . .]"])
def test_every_ellipsis_form_stands_for_the_omitted_words(ellipsis: str) -> None:
    _need_data()
    src, sentence, label = _sentence()
    words = sentence.split()
    quote = " ".join(words[:4] + [ellipsis] + words[-4:])
    result = quotation_check.check_quotation(quote, src.prepared)
    assert (result.status, result.labels) == ("exact", (label,))
    assert result.marked and result.found.split()[0] == words[0].strip(",;:")


def test_an_ellipsis_does_not_stand_for_a_whole_chapter() -> None:
    _need_data()
    src = qs.source("multilexsum_shen2022.pdf")
    found = qs.sentences(src)
    (p1, first), (p2, last) = found[0], next((p, s) for p, s in found if p >= found[0][0] + 6)
    quote = " ".join(first.split()[:5] + ["[…]"] + last.split()[-5:])
    assert quotation_check.check_quotation(quote, src.prepared).status == "not_found"


def test_sic_and_bracketed_insertions_are_marked_changes_not_alterations() -> None:
    _need_data()
    src, sentence, label = _sentence()
    words = sentence.split()
    replaced = len(words) // 2
    inserted = " ".join(words[:replaced] + ["[the toolkit]"] + words[replaced + 1:])
    result = quotation_check.check_quotation(inserted, src.prepared)
    assert (result.status, result.labels, result.marked) == ("exact", (label,), ("[the toolkit]",))
    with_sic = " ".join(words[:3] + ["[sic]"] + words[3:])
    result = quotation_check.check_quotation(with_sic, src.prepared)
    assert (result.status, result.marked) == ("exact", ("[sic]",))
    # "[t]ypically" for "Typically": the writer's lower case, marked.
    lowered = f"[{words[0][0].lower()}]{words[0][1:]} " + " ".join(words[1:])
    assert quotation_check.check_quotation(lowered, src.prepared).status == "exact"


def test_case_added_and_left_out_words_are_named() -> None:
    _need_data()
    src, sentence, _ = _sentence()
    words = sentence.split()
    at = next(i for i in range(4, len(words)) if words[i].isalpha() and words[i].islower())
    upper = " ".join(words[:at] + [words[at].upper()] + words[at + 1:])
    result = quotation_check.check_quotation(upper, src.prepared)
    assert result.status == "altered"
    assert [(d.kind, d.thesis, d.source) for d in result.differences] == [("case", words[at].upper(), words[at])]
    added = " ".join(words[:at] + ["very"] + words[at:])
    result = quotation_check.check_quotation(added, src.prepared)
    assert [(d.kind, d.thesis) for d in result.differences] == [("added", "very")]
    assert result.status == "altered" and result.difference == 'added "very"'
    left_out = " ".join(words[:at] + words[at + 1:])
    result = quotation_check.check_quotation(left_out, src.prepared)
    assert result.status == "altered"
    assert [(d.kind, d.source) for d in result.differences] == [("omitted", words[at].strip(".,;:"))]
    # The first word's capital is the writer's sentence, not an alteration.
    assert quotation_check.check_quotation(words[0].lower() + " " + " ".join(words[1:]), src.prepared).status == "exact"


def test_too_many_changes_is_not_found() -> None:
    _need_data()
    src, sentence, _ = _sentence()
    words = sentence.split()
    mangled = [("remarkably" if i % 3 == 1 else w) for i, w in enumerate(words)]
    assert quotation_check.check_quotation(" ".join(mangled), src.prepared).status == "not_found"


# --- finding quotations in a thesis sentence -------------------------------------------------


def test_german_and_french_quote_marks_and_scare_quotes() -> None:
    _need_data()
    src, sentence, label = _sentence()
    claims = {
        "„": f"Lo et al. schreiben: „{sentence}“ (S. {label}).",
        "»": f"Lo et al. schreiben: »{sentence}« (S. {label}).",
        "«": f"Selon Lo et al., «{sentence}» (p. {label}).",
        "“": f"Lo et al. write that “{sentence}” (p. {label}).",
        '"': f'Lo et al. write that "{sentence}" (p. {label}).',
        "‘": f"Lo et al. write that ‘{sentence}’ (p. {label}).",
    }
    for opening, claim in claims.items():
        found = quotations.find_quotations(claim)
        assert [(q.text, q.opening) for q in found] == [(sentence, opening)], claim
        assert claim[found[0].start:found[0].end] == sentence
        result = quotation_check.check_quotation(found[0].text, src.prepared)
        assert (result.status, result.labels) == ("exact", (label,))
    scare = "Diese „sogenannte“ Methode ist »neu« und ‘smart’, so Lo et al."
    assert quotations.find_quotations(scare) == []


def test_apostrophes_are_not_quote_marks_and_nested_quotes_stay_inside() -> None:
    sentence = "The authors’ view, as they put it, ‘we don’t model layout at all’, was rejected."
    found = quotations.find_quotations(sentence)
    assert [q.text for q in found] == ["we don’t model layout at all"]
    nested = "Sie schreiben: „Das Modell nennt ‚Layout‘ nur am Rande, ohne Belege“."
    assert [q.text for q in quotations.find_quotations(nested)] == ["Das Modell nennt ‚Layout‘ nur am Rande, ohne Belege"]


def test_a_block_quotation_is_the_paragraph_without_its_citation() -> None:
    _need_data()
    src, sentence, label = _sentence()
    paragraph = f"\n  “{sentence}” (Lo et al., 2023, p. {label})\n"
    block = quotations.block_quotation(paragraph)
    assert block is not None and block.block and block.text == sentence
    assert quotation_check.check_quotation(block.text, src.prepared).labels == (label,)
    assert quotations.block_quotation("(Lo et al., 2023)") is None


# --- labels and locators ---------------------------------------------------------------------


def test_page_labels_of_the_real_papers() -> None:
    _need_data()
    # Printed in the page foot (and named in the footer "Postgrad Med J 2010;86:272e278"),
    # while the PDF's own /PageLabels only repeat the index.
    assert qs.labels_of(qs.pdf_bytes("cermine_test5.pdf")) == [str(n) for n in range(272, 279)]
    # The proceedings footer says "pages 4969–4983": one printed number per page.
    assert qs.labels_of(qs.pdf_bytes("dont_stop_pretraining_gururangan2020.pdf")) == [str(n) for n in range(4969, 4984)]
    # /PageLabels of the publisher.
    assert qs.labels_of(qs.pdf_bytes("longeval_krishna2023.pdf")) == [str(n) for n in range(1650, 1670)]
    relabelled = qs.relabelled_bytes()
    labels = qs.labels_of(relabelled)
    assert labels[:4] == ["i", "ii", "101", "102"]
    doc = pymupdf.open(stream=relabelled, filetype="pdf")  # type: ignore[no-untyped-call]
    with doc:
        assert labels == [doc[i].get_label() for i in range(doc.page_count)]  # type: ignore[no-untyped-call]
    # No printed numbers and no /PageLabels: the index.
    assert qs.labels_of(qs.pdf_bytes("papermage_lo2023.pdf")) == [str(n) for n in range(1, 14)]


def test_roman_numbers() -> None:
    assert [page_labels.to_roman(n) for n in (1, 4, 9, 14, 40, 1990)] == ["i", "iv", "ix", "xiv", "xl", "mcmxc"]
    assert [page_labels.from_roman(t) for t in ("xii", "XIV", "iiii", "model", "")] == [12, 14, None, None, None]


def test_locators_of_the_relabelled_paper_are_checked_against_printed_labels() -> None:
    _need_data()
    src = qs.source(qs.RELABELLED_PAPER, relabelled=True)
    for case in qs.locator_cases():
        found = quotation_check.check_quotation(case.quote, src.prepared)
        assert found.status == "exact", case
        check = locators.check_locator(locators.parse_locator(case.locator), found.labels)
        assert (check.status, check.actual) == (case.status, case.actual), (case, check)


def test_a_real_printed_page_is_cited_by_its_printed_number() -> None:
    case = _case("cermine_test5.pdf:exact")
    found = _check(case)
    assert found.labels == ("273",)
    assert locators.check_locator(locators.parse_locator("S. 273"), found.labels).status == "ok"
    mismatch = locators.check_locator(locators.parse_locator("p. 2"), found.labels)
    assert (mismatch.status, mismatch.actual) == ("mismatch", ("273",))


@pytest.mark.parametrize(
    ("text", "kind", "pages"),
    [
        ("45", "pages", "45"), ("p. 45", "pages", "45"), ("pp. 45-47", "pages", "45-47"),
        ("45–47", "pages", "45-47"), ("S. 45 f.", "pages", "45-46"), ("S. 45 ff.", "pages", "45-48 (ff.)"),
        ("45f.", "pages", "45-46"), ("pp. 45 et seq.", "pages", "45-48 (ff.)"), ("123-7", "pages", "123-127"),
        ("S. 10 bis 12", "pages", "10-12"), ("S. 12, 15", "pages", "12, 15"), ("xii", "pages", "xii"),
        ("p. xii-xv", "pages", "xii-xv"), ("S. 45 Fn. 3", "pages", "45"), ("Rn. 12", "margin_number", "Rn. 12"),
        ("Rdnr. 4", "margin_number", "Rdnr. 4"), ("Fn. 3", "footnote", "Fn. 3"), ("§ 4", "other", "§ 4"),
        ("chapter two", "other", "chapter two"),
    ],
)
def test_parse_locator(text: str, kind: str, pages: str) -> None:
    locator = locators.parse_locator(text)
    assert locator is not None and (locator.kind, locator.describe()) == (kind, pages)


@pytest.mark.parametrize("text", ["", "47-45", "see above", "x" * 500, "12-xv"])
def test_parse_locator_refuses_what_is_no_locator(text: str) -> None:
    assert locators.parse_locator(text) is None


def test_check_locator_without_a_page() -> None:
    assert locators.check_locator(None, ["3"]).status == "not_checkable"
    assert locators.check_locator(locators.parse_locator("45"), []).status == "not_checkable"
    ok = locators.check_locator(locators.parse_locator("45"), ["45", "46"])
    assert (ok.status, ok.outside) == ("ok", ("46",))


# --- bounds ------------------------------------------------------------------------------------

LIMIT_S = 3.0  # the brief: "within a second or two"; headroom for a loaded machine


@pytest.fixture(scope="module")
def long_source() -> quotation_source.SourceText:
    """2,000 pages: the real papers' pages over and over (every sentence many times)."""
    _need_data()
    texts = [text for name in sorted(p.name for p in qs.PDFS.glob("*.pdf")) for _, text in qs.source(name).pages]
    pages = [(str(i + 1), texts[i % len(texts)]) for i in range(2000)]
    started = time.perf_counter()
    prepared = quotation_source.prepare_source(pages)
    assert time.perf_counter() - started < LIMIT_S
    return prepared


def _timed(quote: str, source: quotation_source.SourceText) -> tuple[quotations.QuotationCheck, float]:
    started = time.perf_counter()
    result = quotation_check.check_quotation(quote, source)
    return result, time.perf_counter() - started


def test_a_10000_word_quotation_in_a_2000_page_source_is_bounded(long_source: quotation_source.SourceText) -> None:
    words = long_source.exact(50_000, 60_000)
    assert len(words) == 10_000
    result, seconds = _timed(" ".join(words), long_source)
    assert result.status == "exact" and len(result.labels) > 10 and seconds < LIMIT_S
    altered = [("remarkably" if i % 20 == 7 else w) for i, w in enumerate(words)]
    result, seconds = _timed(" ".join(altered), long_source)
    assert (result.status, result.edits) == ("altered", 500) and seconds < LIMIT_S
    shuffled = list(words)
    random.Random(24).shuffle(shuffled)
    result, seconds = _timed(" ".join(shuffled), long_source)
    assert result.status == "not_found" and seconds < LIMIT_S


def test_a_sentence_in_a_2000_page_source_is_bounded(long_source: quotation_source.SourceText) -> None:
    _, sentence, _ = _sentence("cermine_test5.pdf")
    result, seconds = _timed(sentence, long_source)
    assert result.status == "exact" and seconds < 0.5
    altered, _ = qs._replace_word(sentence) if False else (sentence.replace(sentence.split()[5], "remarkably", 1), None)
    result, seconds = _timed(altered, long_source)
    assert result.status == "altered" and seconds < LIMIT_S


def test_hostile_quotations_are_refused_or_bounded() -> None:
    with pytest.raises(quotations.QuotationError):
        quotation_check.check_quotation("[…] — “ ” […]", [("1", "some text of a page")])
    with pytest.raises(quotations.QuotationError):
        quotation_check.check_quotation("word " * (quotations.MAX_QUOTE_WORDS + 1), [("1", "word")])
    with pytest.raises(quotations.QuotationError):
        quotation_source.prepare_source([("1", "a" * (quotations.MAX_SOURCE_CHARS + 1))])
    # One word repeated: every anchor stands everywhere, and the search stays bounded.
    pages = [(str(i), "the " * 2000) for i in range(200)]
    started = time.perf_counter()
    assert quotation_check.check_quotation("the the the the the the the the model", pages).status in {"altered", "not_found"}
    assert quotation_check.check_quotation("[…] the […] the […] the […] the […] x", pages).status in {"altered", "not_found"}
    assert time.perf_counter() - started < LIMIT_S
    started = time.perf_counter()
    assert quotations.find_quotations("„" * 200_000 + "“" * 200_000 + '"' * 200_001) is not None
    assert time.perf_counter() - started < LIMIT_S
