"""What the report's words mean: each verdict and each problem in plain words, the
confidence, the order "most doubtful first", and the rows of "citations to fix".

One owner for each: the HTML's legend, badges, summary and filters, and the list of
citations to fix are generated from :data:`VERDICTS` and :data:`PROBLEMS`, which cover
every :class:`~citerun.core.verdicts.Verdict` and every :class:`~.model.Problem` (checked on
import, so a new verdict cannot go unexplained).
"""

from __future__ import annotations

import collections.abc
import csv
import dataclasses
import io
import re

from citerun.core import verdicts
from citerun.pipeline import judge
from citerun.pipeline.report.model import CitationEntry, Problem, Report
from citerun.pipeline.report.reasons import explain
from citerun.pipeline.report.render_fetched import abstract_only

__all__ = ["CONFIDENCE", "FIX_COLUMNS", "PROBLEMS", "TERMS", "VERDICTS", "Meaning",
           "confidence_text", "judged", "labels", "risk", "to_fix_csv", "to_fix_rows"]


@dataclasses.dataclass(frozen=True)
class Meaning:
    """A verdict or a problem: its ``label``, what it ``means`` and what to ``do``;
    ``colour`` is its badge's background (white text on it has a contrast of at least
    4.5:1; a problem's badge has dark text on it instead)."""

    label: str
    colour: str
    means: str
    do: str


V = judge.Verdict

VERDICTS: dict[judge.Verdict, Meaning] = {
    V.SUPPORTED: Meaning(
        "Supported", "#1a7f37",
        "The source says what your sentence says; the passage is shown.",
        "Nothing, unless a problem (wrong page, altered quotation) is marked."),
    V.PARTIALLY_SUPPORTED: Meaning(
        "Partially supported", "#9a6700",
        "The source says part of it, or leans towards it without saying it clearly.",
        "Narrow the sentence to what the source says, or cite a source for the rest."),
    V.UNSUPPORTED: Meaning(
        "Unsupported", "#57606a",
        "The source does not say this; the closest passage found is shown. When the judge "
        "is unsure it says so: then read the passage yourself.",
        "Cite the passage or the source that says it, or change the sentence."),
    V.CONTRADICTED: Meaning(
        "Contradicted", "#cf222e",
        "The source says the opposite; the passage that says it is shown.",
        "Read the passage, then correct the sentence or the citation."),
    V.SOURCE_UNAVAILABLE: Meaning(
        "Source unavailable", "#8250df",
        "The source’s PDF could not be read (a scan without text, an encrypted or damaged "
        "file), so the sentence was not checked.",
        "Give a PDF of the source with a text layer."),
    V.UNRESOLVED_CITATION: Meaning(
        "Unresolved citation", "#0550ae",
        "None of the sources you gave matches this citation, so it was not checked.",
        "Add the source’s PDF, or correct the reference entry."),
    V.NOT_CHECKED: Meaning(
        "Not checked", "#6e5494",
        "citerun failed while checking this citation against its source (the reason names "
        "the file); the rest of the report is complete.",
        "Check this citation yourself, or run the thesis again."),
    V.NOT_IN_ABSTRACT: Meaning(
        "Not found in the abstract", "#0a6b73",
        "No PDF of the source was given or found: only its abstract, which an open-access "
        "service gave (issue 51), and the abstract does not say this. That is no evidence "
        "against the sentence: the full text may say it.",
        "Add the full text (the source’s PDF), then run again."),
}

PROBLEMS: dict[Problem, Meaning] = {
    Problem.WRONG_PAGE: Meaning(
        "wrong page", "#ffd33d",
        "The passage stands on another page of the source than the page cited.",
        "Correct the page number."),
    Problem.ALTERED_QUOTATION: Meaning(
        "altered quotation", "#ffd33d",
        "The quoted words differ from the source’s; the difference is shown.",
        "Quote the source word for word, or mark your changes ([…], [sic])."),
    Problem.QUOTATION_NOT_FOUND: Meaning(
        "quotation not found", "#ffd33d",
        "The quoted words are not in the source.",
        "Check the quotation against the source."),
}

#: The one explanation of the confidence shown on each citation (:func:`.model.confidence_of`).
CONFIDENCE = (
    "The judge’s probability that the verdict it gives is right, 0-100%: for Supported and "
    "Partially supported the probability that the source supports the sentence, for "
    "Unsupported the probability that it does not say it, for Contradicted the probability "
    "that it says the opposite (a language-model judge states it itself). Below 50% the judge is "
    "unsure: check the citation yourself. Unresolved and unavailable citations are facts, "
    "not judgements, and have none.")

#: The other words of the report, in plain words (term, meaning), for the legend.
TERMS: tuple[tuple[str, str], ...] = (
    ("Confidence", CONFIDENCE),
    ("Evidence", "The sentences of the source closest to your sentence, best first, with the "
                 "passage marked on its page; “Show the whole page” opens the page."),
    ("Cited page", "The page you cited, checked against the page number printed where the "
                   "quotation (or, for a supported sentence, the evidence) stands."),
    ("Quotation", "Words you quote are searched for in the source word for word; hyphenation, "
                  "quote marks and your own […] or [sic] do not count as changes."),
    ("The judge", "An automatic reader, and it makes mistakes: the report is a list of places "
                  "to look at, most doubtful first, not a grade."),
)

# "Most doubtful first": a contradiction, then a sentence the source does not make, then
# a citation with a problem (its page or its quotation is wrong, whatever the judge read),
# then part-support, then what could not be judged (no source matched, then the source
# unreadable), then support. Within a rank the surer negative verdict comes first, and
# the less sure positive one; ties in reading order.
_RISK: dict[judge.Verdict, int] = {
    V.CONTRADICTED: 0, V.UNSUPPORTED: 1, V.PARTIALLY_SUPPORTED: 3,
    V.UNRESOLVED_CITATION: 4, V.NOT_IN_ABSTRACT: 4, V.SOURCE_UNAVAILABLE: 5, V.NOT_CHECKED: 5,
    V.SUPPORTED: 6,
}
_PROBLEM_RISK = 2
_NEGATIVE = (V.CONTRADICTED, V.UNSUPPORTED)


def _complete() -> None:
    """Every verdict and problem has its meaning and its rank (on import: no drift)."""
    for name, table, members in (("VERDICTS", VERDICTS, set(judge.Verdict)),
                                 ("risk order", _RISK, set(judge.Verdict)),
                                 ("PROBLEMS", PROBLEMS, set(Problem))):
        if set(table) != members:
            raise RuntimeError(f"report {name} does not cover {sorted(map(str, members - set(table)))}")


_complete()


def risk(citation: CitationEntry) -> tuple[int, float, int]:
    """Sort key of ``citation`` for "most doubtful first", then reading order."""
    rank = _RISK[citation.verdict]
    if citation.problems():
        rank = min(rank, _PROBLEM_RISK)
    sure = -citation.confidence if citation.verdict in _NEGATIVE else citation.confidence
    return rank, sure, citation.ordinal


def judged(citation: CitationEntry) -> bool:
    """Whether a judge gave the verdict (so it has a confidence to show)."""
    return citation.verdict in verdicts.JUDGED


def confidence_text(citation: CitationEntry) -> str:
    """"Confidence 80%", or "" for a verdict no judge gave."""
    return f"Confidence {citation.confidence:.0%}" if judged(citation) else ""


#: The columns of :func:`to_fix_rows`, in order.
FIX_COLUMNS: tuple[str, ...] = (
    "citation", "where_in_thesis", "marker", "claim", "source", "cited_page", "verdict",
    "problems", "confidence", "why", "what_to_do")


def to_fix_rows(report: Report) -> list[dict[str, str]]:
    """The citations to fix, most doubtful first, one row each (for a CSV: the keys are
    :data:`FIX_COLUMNS`): every citation but a supported one without problems."""
    rows = []
    for c in sorted(report.citations, key=risk):
        problems = c.problems()
        if c.verdict is V.SUPPORTED and not problems:
            continue
        todo = [VERDICTS[c.verdict].do] if c.verdict is not V.SUPPORTED else []
        todo += [PROBLEMS[p].do for p in problems]
        rows.append({
            "citation": str(c.ordinal),
            "where_in_thesis": c.location or f"p. {c.page}",
            "marker": c.marker,
            "claim": c.claim,
            "source": (c.source.title or c.source.filename) if c.source else "",
            "cited_page": c.locator or "",
            "verdict": VERDICTS[c.verdict].label,
            "problems": "; ".join(PROBLEMS[p].label for p in problems),
            "confidence": f"{c.confidence:.0%}" if judged(c) else "",
            "why": ("Judged on the abstract only (no full text was found). "
                    if abstract_only(c) else "") + explain(c).plain,
            "what_to_do": " ".join(todo),
        })
    return rows


# A cell opening with one of these is a formula to a spreadsheet ("=HYPERLINK(...)" in a
# claim); OWASP's advice: open it with a quote mark, which the spreadsheet shows as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# The same after blanks or double quotes, which a spreadsheet may drop before it reads a
# formula (" =1+1", '"=1+1"').
_FORMULA_AFTER_BLANKS = re.compile('[ \u00a0\t"]*[=+\\-@]')
# Where a spreadsheet may see a cell start inside this file's cell: after a list separator
# of any locale (",", ";" in German or French Excel, a tab) or a line break, where the
# quoting of the "," this file uses is not honoured. OWASP: "take care of the field
# separator ... as attackers could use this to start a new cell".
_CELL_INSIDE = re.compile('(?<=[,;\t\r\n])(?=[ \u00a0\t"]*[=+\\-@])')


def _cell(value: str) -> str:
    """``value`` that no spreadsheet reads as a formula, whatever its list separator: a
    quote mark before a formula's first character at the cell's start and after any
    separator or line break inside it; other text as it is."""
    value = _CELL_INSIDE.sub("'", value)
    if value.startswith(_FORMULA_START) or _FORMULA_AFTER_BLANKS.match(value):
        return "'" + value
    return value


def to_fix_csv(report: Report) -> str:
    """:func:`to_fix_rows` as CSV text (a header of :data:`FIX_COLUMNS`, CRLF line ends),
    every cell that a spreadsheet would read as a formula opened with a quote mark, in
    whichever locale it is opened (:func:`_cell`)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIX_COLUMNS)
    writer.writeheader()
    for row in to_fix_rows(report):
        writer.writerow({key: _cell(value) for key, value in row.items()})
    return out.getvalue()


def labels(items: collections.abc.Iterable[Problem]) -> str:
    """" · wrong page · altered quotation" for a badge, "" without problems."""
    return "".join(f" · {PROBLEMS[p].label}" for p in items)
