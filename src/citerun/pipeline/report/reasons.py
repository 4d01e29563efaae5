"""The judge's reasons in words a student understands, and the numbers behind them.

The embedded judges write their rationale in the model's terms ("The best sentence of
the source (p. 3) is the closest, but does not state the claim (similarity 0.43, 11% of
the content words); P(support) 0.23, P(contradict) 0.05, P(not enough info) 0.72."). The
report says what that means instead ("The closest passage (p. 3) is about something
else: it does not say this.") and keeps the numbers, and the judge's own words, for who
asks (:class:`Reasons`). A rationale in another form (the LLM judge writes plain words,
the pipeline writes why a citation is unresolved) is shown as it is.

``tests/unit/test_report_meaning.py`` runs the shipped judges and checks that every
rationale they write is read here, so a change of wording there cannot pass unnoticed.
"""

from __future__ import annotations

import dataclasses
import re

from citerun.pipeline import judge
from citerun.pipeline.report.model import CitationEntry, Probabilities

__all__ = ["Reasons", "explain", "probabilities_in"]

_NUMBER = r"(\d+(?:\.\d+)?)"
_PROBABILITIES = re.compile(
    rf"P\(support\) {_NUMBER}, P\(contradict\) {_NUMBER}, P\(not enough info\) {_NUMBER}")
# TrainedJudge (judging/embedded.py, _judgement).
_EMBEDDED = re.compile(
    r"^The best sentence of the source \((?P<pages>[^)]*)\) (?P<how>.+?) "
    rf"\(similarity (?P<similarity>{_NUMBER[1:-1]}), (?P<coverage>\d+)% of the content words"
    r"(?:; (?P<cues>.*))?\); P\(support\) .*?\.(?P<unsure> The judge is unsure: check this citation\.)?$",
    re.DOTALL)
# RulesJudge (judging/rules.py): support, part-support, not stated; and a contradiction.
_RULES = re.compile(
    r"^The best sentence of the source \((?P<pages>[^)]*)\) (?P<how>.+?): similarity "
    rf"(?P<similarity>{_NUMBER[1:-1]}), (?P<coverage>\d+)% of the content words, score "
    rf"{_NUMBER}\.$", re.DOTALL)
_RULES_OPPOSITE = re.compile(
    r"^A sentence of the source \((?P<pages>[^)]*)\) talks about the same things as .+? "
    rf"\(similarity (?P<similarity>{_NUMBER[1:-1]}), (?P<coverage>\d+)% of its content words\) "
    r"but with the opposite polarity: (?P<cues>.*)\.$", re.DOTALL)
_NOTHING = {
    "No sentence of the source was retrieved for this claim.":
        "Nothing in the source came close to this claim.",
    "The claim has no content words to look for.":
        "The claim has no words to look for in the source.",
}
_PART = re.compile(r'^covers only part of the claim \((?:the clause )?"?(?P<part>.*?)"?\)$', re.DOTALL)
_NAMED = "The citation names the work "
# A closest passage sharing less than this share of the claim's words is about something else.
_FEW_WORDS = 30


@dataclasses.dataclass(frozen=True)
class Reasons:
    """Why the judge decided so: ``plain`` words, the ``numbers`` behind them (empty when
    the rationale has none) and the judge's own ``words``; ``unsure``: it says so."""

    plain: str
    numbers: tuple[tuple[str, str], ...]
    words: str
    unsure: bool
    recognised: bool


def probabilities_in(rationale: str) -> Probabilities | None:
    """The three calibrated probabilities an embedded judge's rationale states, or None."""
    found = _PROBABILITIES.search(rationale)
    if found is None:
        return None
    support, contradict, neither = (float(x) for x in found.groups())
    return Probabilities(support=min(support, 1.0), contradict=min(contradict, 1.0),
                         not_enough_info=min(neither, 1.0))


def _quote(citation: CitationEntry) -> str:
    return f": “{citation.evidence[0].quote}”" if citation.evidence else "."


def _part_of(part: str, citation: CitationEntry) -> str:
    """Which part of the writer's sentence the source says, in words that never pass the
    claim's words off as the source's: the part as the sentence reads where it is a piece
    of it, else (the judges' items are a clause's content words, "worst streets narrow")
    the words that part is made of, unquoted."""
    part = part.strip().rstrip(".")
    cut = part.endswith("…")
    piece = " ".join(part.rstrip("…").split())
    if piece and piece.casefold() in " ".join(citation.claim.split()).casefold():
        return f"the part of your sentence that reads “{piece}{'…' if cut else ''}”"
    words = piece.split()
    listed = ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else piece
    return f"the part of your sentence with the words {listed}"


def _how(how: str, where: str, coverage: int, citation: CitationEntry) -> str | None:
    """The plain sentence for what the best sentence does (``how``, the judges' words)."""
    if how in ("states the claim", "states each clause of the claim"):
        return f"The source says this ({where})."
    if how == "leans towards the claim, but not clearly":
        return f"The source leans towards this, but does not say it clearly ({where})."
    if how == "may state the claim, but does not restate it":
        return f"The source may say this, but not in words close to the claim’s ({where})."
    if how == "states some of the claim's items, not all":
        return f"The source says some of the things the claim lists, not all ({where})."
    if part := _PART.match(how):
        return f"The source says only part of this ({where}), {_part_of(part['part'], citation)}."
    if how.startswith("may say the opposite of the claim"):
        return f"The source may say the opposite ({where}){_quote(citation)}"
    if how == "says something incompatible with the claim":
        return f"The source says the opposite ({where}){_quote(citation)}"
    if how == "may disagree with the claim, but no sentence of it states the opposite":
        return "The source may disagree with this, but no sentence of it says the opposite outright."
    if how == "may disagree with the claim, but not clearly":
        return f"The source may disagree with this, but not clearly ({where})."
    if how == "is the closest, but does not state the claim":
        if coverage < _FEW_WORDS:
            return (f"The closest passage ({where}) shares few of the claim’s words: it is "
                    "about something else and does not say this.")
        return f"The closest passage ({where}) does not say this."
    return None


def _numbers(similarity: str, coverage: str, probabilities: Probabilities | None
             ) -> tuple[tuple[str, str], ...]:
    rows = [("Similarity of the closest sentence to the claim (0-1)", similarity),
            ("Share of the claim’s words found in it", f"{coverage}%")]
    if probabilities is not None:
        rows += [("Probability that the source states the claim", f"{probabilities.support:.0%}"),
                 ("Probability that it says the opposite", f"{probabilities.contradict:.0%}"),
                 ("Probability that it says neither", f"{probabilities.not_enough_info:.0%}")]
    return tuple(rows)


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def explain(citation: CitationEntry) -> Reasons:
    """The reasons of ``citation``'s verdict in plain words, with the numbers behind them."""
    words = citation.rationale
    verdict = citation.verdict
    if verdict is judge.Verdict.UNRESOLVED_CITATION:
        return Reasons("None of the sources you gave matches this citation: add its source, "
                       "or correct the reference.", (), words, False, True)
    if verdict in (judge.Verdict.SOURCE_UNAVAILABLE, judge.Verdict.NOT_CHECKED,
                   judge.Verdict.NOT_IN_ABSTRACT):
        return Reasons(_sentence(words) + ("" if words.endswith(".") else "."), (), words,
                       False, True)
    if words in _NOTHING:
        return Reasons(_NOTHING[words], (), words, False, True)
    for pattern in (_EMBEDDED, _RULES, _RULES_OPPOSITE):
        found = pattern.match(words)
        if found is None:
            continue
        groups = found.groupdict()
        coverage = int(groups["coverage"])
        if pattern is _RULES_OPPOSITE:
            plain: str | None = f"The source says the opposite ({groups['pages']}){_quote(citation)}"
        else:
            plain = _how(groups["how"], groups["pages"], coverage, citation)
        if plain is None:
            break
        if groups.get("cues"):
            plain += f" {_sentence(groups['cues'])}."
        unsure = bool(groups.get("unsure"))
        if unsure:
            plain += " The judge is unsure: check this citation yourself."
        return Reasons(plain, _numbers(groups["similarity"], groups["coverage"],
                                       citation.probabilities), words, unsure, True)
    # A named work's rationale (judging/naming.py) and the LLM judge's: already in words.
    unsure = words.endswith("The judge is unsure: check this citation.")
    return Reasons(_sentence(words), (), words, unsure, words.startswith(_NAMED))
