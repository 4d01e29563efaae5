"""What the report means (issue 39): a legend for every verdict and problem, the judge's
reasons in plain words with the numbers on demand, one meaning of confidence, a wrong page
or an altered quotation in the badge, the summary, the filters and the order, the
evidence as a crop of its page with tight boxes, "1 page", and the rows to fix.

The report is built with :func:`report.build` from rows shaped as the worker stores them,
and its source page is a real PDF page parsed and rendered by the pipeline.
"""

from __future__ import annotations

import csv
import functools
import html.parser
import io
import pathlib
import re
import typing

import pytest

from citerun.core import verdicts
from citerun.pipeline import embed, judge, layout, pdf, report
from citerun.pipeline.report import meaning, reasons
from tests.unit import pdf_fixtures, report_fixtures

V = judge.Verdict
DIGEST = "e" * 64
# Line 3 holds the end of one sentence and the start of the quoted one.
SOURCE_LINES = [
    "Methods", "",
    "We followed 212 adults for two years in a cohort study. Adults",
    "who exercised regularly reported fewer symptoms of anxiety.",
    "", "The effect held after adjusting for age and income.",
]
QUOTE = "Adults who exercised regularly reported fewer symptoms of anxiety."
EMBEDDED_OPPOSITE = (
    "The best sentence of the source (p. 1) may say the opposite of the claim (similarity 0.61, "
    "40% of the content words; the claim has \"rose\" where the source has \"fell\"); P(support) "
    "0.80, P(contradict) 0.17, P(not enough info) 0.03. The judge is unsure: check this citation.")
EMBEDDED_SUPPORTED = (
    "The best sentence of the source (p. 1) states the claim (similarity 0.88, 90% of the content "
    "words); P(support) 0.93, P(contradict) 0.02, P(not enough info) 0.05.")
EMBEDDED_ELSEWHERE = (
    "The best sentence of the source (p. 1) is the closest, but does not state the claim "
    "(similarity 0.43, 11% of the content words); P(support) 0.23, P(contradict) 0.05, "
    "P(not enough info) 0.72.")
EMBEDDED_CONTRADICTED = (
    "The best sentence of the source (p. 1) says something incompatible with the claim "
    "(similarity 0.70, 60% of the content words); P(support) 0.05, P(contradict) 0.85, "
    "P(not enough info) 0.10.")


@functools.cache
def _page() -> pdf.Page:
    data = pdf_fixtures.text_pdf([SOURCE_LINES])
    return pdf.parse_pdf(data, max_bytes=10 * 1024 * 1024).pages[0]


def _row(ordinal: int, verdict: V, rationale: str, *, confidence: float = 0.5,
         locator: str | None = None, claim: str = "Exercise lowers anxiety.",
         evidence: bool = True) -> dict[str, typing.Any]:
    return {
        "ordinal": ordinal, "key": "1", "marker": f"[1, p. {locator}]" if locator else "[1]",
        "claim": claim, "page": 3, "locator": locator,
        "digest": None if verdict is V.UNRESOLVED_CITATION else DIGEST,
        "verdict": verdict.value, "confidence": confidence, "rationale": rationale,
        "evidence": [{"quote": QUOTE, "page_start": 1, "page_end": 1, "score": 0.9}] if evidence else [],
        "reference": "Smith, J. (2020). Exercise and anxiety.", "match_method": "reference",
        "match_score": 96.0, "match_reason": "title 100, first author, year",
    }


def _build(*rows: dict[str, typing.Any], thesis_pages: int = 42,
           written_format: str | None = None) -> tuple[report.Report, dict[tuple[str, int], bytes]]:
    page = _page()
    docs = [{"role": "thesis", "digest": "t" * 64, "filename": "thesis.pdf", "title": None,
             "state": "parsed", "error": None, "page_count": thesis_pages,
             "written_format": written_format},
            {"role": "source", "digest": DIGEST, "filename": "smith2020.pdf", "title": "Exercise",
             "state": "parsed", "error": None, "page_count": 1}]
    pages = {(DIGEST, 1): {"lines": layout.line_rows(page.lines), "width": page.width,
                           "height": page.height, "image": page.image, "label": "1"}}
    built = report.build({"id": "run-1", "name": "thesis-check", "tokens_spent": 0}, docs,
                         list(rows), pages, {DIGEST: [("1", page.text)]})
    return built, report.page_images(pages)


class _Text(html.parser.HTMLParser):
    """The text of the elements matching ``tag`` with attribute ``attr`` (= ``value``)."""

    def __init__(self, tag: str, attr: str, value: str | None = None) -> None:
        super().__init__()
        self._want = (tag, attr, value)
        self._depth = 0
        self.found: list[str] = []

    _BLOCKS = ("p", "dt", "dd", "li", "td", "th", "summary", "h2", "h3", "div", "tr")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._depth:
            self._depth += 1
            if tag in self._BLOCKS:
                self.found[-1] += " "
            return
        want_tag, attr, value = self._want
        if tag == want_tag and any(k == attr and (value is None or v == value) for k, v in attrs):
            self._depth = 1
            self.found.append("")

    def handle_endtag(self, tag: str) -> None:
        if self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.found[-1] += data


def _texts(page: str, tag: str, attr: str, value: str | None = None) -> list[str]:
    parser = _Text(tag, attr, value)
    parser.feed(page)
    return [" ".join(t.split()) for t in parser.found]


def _article(page: str, ordinal: int) -> str:
    found = re.search(rf'<article [^>]*id="citation-{ordinal}".*?</article>', page, re.DOTALL)
    assert found, ordinal
    return found.group(0)


# --- legend -------------------------------------------------------------------------------


def test_the_legend_explains_every_verdict_and_every_problem() -> None:
    assert set(meaning.VERDICTS) == set(verdicts.Verdict)
    assert set(meaning.PROBLEMS) == set(report.Problem)
    page = report.render_html(report_fixtures.sample_report())
    legend = " ".join(_texts(page, "section", "class", "legend"))
    for verdict, said in meaning.VERDICTS.items():
        assert f"{said.label} {said.means}" in legend, verdict
    for problem in meaning.PROBLEMS.values():
        assert f"{problem.label} {problem.means}" in legend
    assert meaning.CONFIDENCE in legend


# --- confidence ---------------------------------------------------------------------------


def test_confidence_is_the_probability_of_the_verdict_given() -> None:
    built, _ = _build(
        _row(1, V.UNSUPPORTED, EMBEDDED_OPPOSITE, confidence=0.03),
        _row(2, V.SUPPORTED, EMBEDDED_SUPPORTED, confidence=0.93),
        _row(3, V.CONTRADICTED, EMBEDDED_CONTRADICTED, confidence=0.85),
        _row(4, V.UNSUPPORTED, EMBEDDED_ELSEWHERE, confidence=0.72),
        _row(5, V.SUPPORTED, "The source says so.", confidence=0.7),  # an LLM judge's own words
        _row(6, V.UNRESOLVED_CITATION, "no source document matches the citation '[1]'",
             confidence=1.0, evidence=False))
    by = {c.ordinal: c for c in built.citations}
    # "may say the opposite" with P(support) 0.80: 1 - 0.80 that it is unsupported, not P(NEI) 0.03.
    assert by[1].confidence == pytest.approx(0.20)
    assert by[1].probabilities == report.Probabilities(support=0.8, contradict=0.17, not_enough_info=0.03)
    assert by[2].confidence == pytest.approx(0.93)
    assert by[3].confidence == pytest.approx(0.85)
    assert by[4].confidence == pytest.approx(0.77)
    assert by[5].confidence == pytest.approx(0.7) and by[5].probabilities is None
    page = report.render_html(built)
    assert "Confidence 20%" in _article(page, 1) and "Confidence 3%" not in page
    assert "Confidence" not in " ".join(_texts(_article(page, 6), "header", "id", None) or [""])
    assert "Confidence" not in re.sub(r"<details.*?</details>", "", _article(page, 6), flags=re.DOTALL)


def test_confidence_is_said_the_same_way_in_the_readme_the_docs_and_the_report() -> None:
    root = pathlib.Path(__file__).parents[2]
    said = "the judge's probability that the verdict it gives is right"

    def words(text: str) -> str:
        return " ".join(text.replace("’", "'").split()).lower()

    for text in ((root / "README.md").read_text(encoding="utf-8"),
                 (root / "docs" / "report.md").read_text(encoding="utf-8"), meaning.CONFIDENCE):
        assert said in words(text)


# --- reasons in plain words ------------------------------------------------------------------


def test_the_reasons_are_in_plain_words_with_the_numbers_on_demand() -> None:
    built, _ = _build(_row(1, V.UNSUPPORTED, EMBEDDED_ELSEWHERE),
                      _row(2, V.CONTRADICTED, EMBEDDED_CONTRADICTED),
                      _row(3, V.UNSUPPORTED, EMBEDDED_OPPOSITE))
    page = report.render_html(built)
    why = {n: " ".join(_texts(_article(page, n), "p", "class", "rationale")) for n in (1, 2, 3)}
    assert why[1] == "Why: The closest passage (p. 1) shares few of the claim’s words: it is about something else and does not say this."
    assert why[2] == f"Why: The source says the opposite (p. 1): “{QUOTE}”"
    assert why[3].startswith(f"Why: The source may say the opposite (p. 1): “{QUOTE}” The claim has")
    assert why[3].endswith("The judge is unsure: check this citation yourself.")
    for n in (1, 2, 3):
        visible = re.sub(r"<details.*?</details>", "", _article(page, n), flags=re.DOTALL)
        assert "similarity" not in visible and "P(support)" not in visible and "match 0." not in visible
        numbers = " ".join(_texts(_article(page, n), "details", "class", "numbers"))
        assert "Similarity of the closest sentence to the claim (0-1)" in numbers
        assert "Probability that the source states the claim" in numbers
        assert built.citations[n - 1].rationale in numbers  # the judge's own words, kept


def test_a_reason_quotes_only_what_the_source_says() -> None:
    """Issue 47: "The source says only part of this (p. 1): “worst streets narrow”" put a
    bag of the claim's words in quotation marks as if the source said them. The part is
    now said to be the sentence's: quoted as the sentence reads where it is a piece of it,
    its words unquoted where the judge made it of words."""
    claim = "The worst heat is found in narrow streets, and parks cool the air at night."
    part = EMBEDDED_SUPPORTED.replace("states the claim", 'covers only part of the claim ("{}")')
    built, _ = _build(
        _row(1, V.PARTIALLY_SUPPORTED, part.format("worst streets narrow"), claim=claim),
        _row(2, V.PARTIALLY_SUPPORTED, part.format("parks cool the air at night"), claim=claim),
        _row(3, V.PARTIALLY_SUPPORTED, EMBEDDED_SUPPORTED.replace(
            "states the claim", 'covers only part of the claim (the clause "The worst heat is found in narrow streets")'
        ).replace("words); P(support)", 'words; the claim has "not" where the source has no negation); P(support)'),
             claim=claim))
    page = report.render_html(built)
    why = {n: " ".join(_texts(_article(page, n), "p", "class", "rationale")) for n in (1, 2, 3)}
    assert why[1] == ("Why: The source says only part of this (p. 1), the part of your sentence "
                      "with the words worst, streets and narrow.")
    assert "“worst" not in page
    assert why[2] == ("Why: The source says only part of this (p. 1), the part of your sentence "
                      "that reads “parks cool the air at night”.")
    assert why[3].startswith("Why: The source says only part of this (p. 1), the part of your "
                             "sentence that reads “The worst heat is found in narrow streets”.")
    # What is quoted as the source's is the source's sentence, shown as its evidence.
    assert all(QUOTE in _article(page, n) for n in (1, 2, 3))


def test_a_key_is_said_without_the_mapping_s_jargon() -> None:
    row = _row(1, V.SUPPORTED, EMBEDDED_SUPPORTED) | {
        "match_method": "explicit", "match_score": None, "match_reason": "explicit key alvarez2019"}
    built, _ = _build(row)
    match = " ".join(_texts(_article(report.render_html(built), 1), "p", "class", "match"))
    assert match == ("Matched to the source by its citation key, which your library or list of "
                     "sources gives its file (alvarez2019)")
    assert "explicit" not in match and "run's list" not in match


@pytest.fixture(scope="module")
def embedder() -> embed.WordLlamaEmbedder:
    return embed.WordLlamaEmbedder()


CASES = [
    ("Regular exercise reduces symptoms of anxiety in adults.",
     "Adults who exercised regularly reported fewer symptoms of anxiety in our cohort."),
    ("Regular exercise does not reduce symptoms of anxiety in adults.",
     "Adults who exercised regularly reported fewer symptoms of anxiety in our cohort."),
    ("Coffee consumption raises the price of wheat in Europe.",
     "Adults who exercised regularly reported fewer symptoms of anxiety in our cohort."),
    ("Regular exercise reduces anxiety and improves sleep quality in adults.",
     "Adults who exercised regularly reported fewer symptoms of anxiety in our cohort."),
]


@pytest.mark.parametrize("kind", ["trained", "rules"])
async def test_every_rationale_the_shipped_judges_write_is_read(
        embedder: embed.WordLlamaEmbedder, kind: str) -> None:
    judging: judge.Judge = (judge.TrainedJudge(embedder) if kind == "trained"
                            else judge.RulesJudge(embedder))
    template = report_fixtures.sample_report().citations[0]
    for claim, text in CASES:
        found = await judging.judge(claim, [judge.Passage(1, text, 3, 3, 0.9)])
        probabilities = reasons.probabilities_in(found.rationale)
        citation = template.model_copy(update={
            "claim": claim, "verdict": found.verdict, "rationale": found.rationale,
            "probabilities": probabilities,
            "confidence": report.confidence_of(found.verdict, probabilities, found.confidence)})
        said = reasons.explain(citation)
        assert said.recognised, found.rationale
        assert "similarity" not in said.plain and "P(" not in said.plain, said.plain
        assert (probabilities is not None) == (kind == "trained")


# --- problems: a wrong page, an altered quotation ------------------------------------------


def test_a_wrong_page_shows_in_the_badge_summary_filters_and_order() -> None:
    built, _ = _build(
        _row(1, V.SUPPORTED, EMBEDDED_SUPPORTED, locator="45"),  # the passage is on p. 1
        _row(2, V.SUPPORTED, EMBEDDED_SUPPORTED, locator="1"),
        _row(3, V.PARTIALLY_SUPPORTED, EMBEDDED_SUPPORTED.replace("states the claim",
                                                                  "leans towards the claim, but not clearly")))
    by = {c.ordinal: c for c in built.citations}
    assert by[1].page_check is not None and by[1].page_check.status == "mismatch"
    assert by[1].problems() == [report.Problem.WRONG_PAGE] and by[2].problems() == []
    assert built.summary.by_problem == report.ProblemCounts(wrong_page=1)
    page = report.render_html(built)
    assert _texts(_article(page, 1), "span", "class", "badge") == ["Supported · wrong page"]
    assert _texts(_article(page, 2), "span", "class", "badge") == ["Supported"]
    assert 'data-problems="wrong_page"' in _article(page, 1)
    assert _article(page, 1).startswith('<article class="citation" id="citation-1"')  # as parsers expect
    assert _texts(page, "li", "data-summary-problem", "wrong_page") == ["1Wrong page"]  # count, label
    assert _texts(page, "button", "data-filter", "problem:wrong_page") == ["Wrong page (1)"]
    # Most doubtful first: the wrong page before the part-support and the clean support.
    order = [c.ordinal for c in sorted(built.citations, key=report.risk)]
    assert order == [1, 3, 2]
    assert page.index('id="citation-1"') < page.index('id="citation-3"') < page.index('id="citation-2"')


def test_an_altered_quotation_shows_in_the_badge_and_summary() -> None:
    claim = ('Smith found that “adults who exercised rarely reported fewer symptoms of anxiety”.')
    built, _ = _build(_row(1, V.SUPPORTED, EMBEDDED_SUPPORTED, claim=claim))
    citation = built.citations[0]
    assert [q.status for q in citation.quotations] == ["altered"]
    assert citation.problems() == [report.Problem.ALTERED_QUOTATION]
    assert built.summary.by_problem == report.ProblemCounts(altered_quotation=1)
    page = report.render_html(built)
    assert _texts(_article(page, 1), "span", "class", "badge") == ["Supported · altered quotation"]


def test_an_old_report_without_problem_counts_still_validates() -> None:
    data = report_fixtures.sample_report().model_dump(mode="json")
    data["summary"].pop("by_problem")
    assert report.Report.model_validate(data).summary.by_problem is None


# --- evidence on its page --------------------------------------------------------------------


def test_the_evidence_is_a_crop_of_its_page_with_tight_boxes() -> None:
    built, images = _build(_row(1, V.SUPPORTED, EMBEDDED_SUPPORTED))
    evidence = built.citations[0].evidence[0]
    page = _page()
    line = next(ln for ln in page.lines if ln.text.endswith("cohort study. Adults"))
    first = evidence.boxes[0]
    # The quote starts after "... cohort study." on its first line: the box starts there.
    assert first.x0 > line.bbox[0] + 0.6 * (line.bbox[2] - line.bbox[0])
    assert first.x1 == pytest.approx(line.bbox[2], abs=0.2)
    assert len(evidence.boxes) == 2
    html_page = report.render_html(built, images)
    crop = re.search(r'<div class="crop [^"]*" style="aspect-ratio:([\d.]+)/([\d.]+);'
                     r'min-width:\d+px;max-width:\d+px;background-size:([\d.]+)% ([\d.]+)%', html_page)
    assert crop, "no cropped region"
    width, height, size_x, size_y = (float(g) for g in crop.groups())
    assert height < 0.2 * page.height and size_y > 500  # a strip of the page, not all of it
    assert width <= page.width and size_x >= 100
    # The whole page is a click away, in a closed <details>, from the same embedded image.
    assert re.search(r'<details class="whole-page"><summary>Show the whole page 1</summary>'
                     r'<div class="sheet ', html_page)
    assert html_page.count("data:image/jpeg;base64,") == 1


# --- the thesis's extent ---------------------------------------------------------------------


@pytest.mark.parametrize(("pages", "written", "said"), [
    (1, None, "1 page ·"), (42, None, "42 pages ·"),
    (1, "latex", "LaTeX source ·"), (1, "docx", "Word document ·")])
def test_the_thesis_extent_is_said_right(pages: int, written: str | None, said: str) -> None:
    built, _ = _build(_row(1, V.SUPPORTED, EMBEDDED_SUPPORTED), thesis_pages=pages,
                      written_format=written)
    meta = _texts(report.render_html(built), "p", "class", "meta")[0]
    assert said in meta and "1 pages" not in meta and "1 sources" not in meta


# --- citations to fix ------------------------------------------------------------------------


def test_the_rows_to_fix_are_the_doubtful_citations_most_doubtful_first() -> None:
    built, _ = _build(
        _row(1, V.SUPPORTED, EMBEDDED_SUPPORTED, locator="45"),
        _row(2, V.SUPPORTED, EMBEDDED_SUPPORTED),
        _row(3, V.CONTRADICTED, EMBEDDED_CONTRADICTED),
        _row(4, V.UNRESOLVED_CITATION, "no source document matches the citation '[1]'",
             confidence=1.0, evidence=False))
    rows = report.to_fix_rows(built)
    assert [r["citation"] for r in rows] == ["3", "1", "4"]  # the clean support is not listed
    assert all(list(r) == list(report.FIX_COLUMNS) for r in rows)
    assert rows[0]["verdict"] == "Contradicted" and rows[0]["confidence"] == "85%"
    assert rows[0]["why"].startswith("The source says the opposite (p. 1)")
    assert rows[0]["where_in_thesis"] == "p. 3" and rows[0]["marker"] == "[1]"
    assert rows[1]["problems"] == "wrong page" and rows[1]["cited_page"] == "45"
    assert rows[1]["what_to_do"] == "Correct the page number."
    assert rows[2]["confidence"] == "" and "Add the source" in rows[2]["what_to_do"]


def test_the_csv_of_citations_to_fix_cannot_carry_a_formula() -> None:
    built, _ = _build(
        _row(1, V.CONTRADICTED, EMBEDDED_CONTRADICTED, claim='=HYPERLINK("http://x.test","click")'),
        _row(2, V.UNSUPPORTED, EMBEDDED_ELSEWHERE, claim="@SUM(A1:A2), \"quoted\", and more"))
    text = report.to_fix_csv(built)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(report.FIX_COLUMNS)
    assert rows[0]["claim"] == '\'=HYPERLINK("http://x.test","click")'
    assert rows[1]["claim"] == "'@SUM(A1:A2), \"quoted\", and more"
    assert rows[0]["why"] == report.to_fix_rows(built)[0]["why"]  # other cells as they are
