"""Judges: does a passage of the cited source support the claim of the thesis?

A judge is anything with ``async judge(claim, passages) -> Judgement``; the
``judge_citation`` task retrieves the passages and stores the judgement. Two judges
ship, chosen by :class:`JudgeConfig`:

- :class:`EmbeddedJudge` needs no network and no GPU: it compares the claim with every
  sentence of the passages (static word embeddings plus content-word overlap) and looks
  for a polarity conflict in the closest sentence. It is fast and predictable, and its
  limits are spelled out in its docstring.
- :class:`OpenAIJudge` asks any OpenAI-compatible chat-completions endpoint and
  validates its JSON answer. Everything that talks to the network is bounded: a timeout
  per request, retries with backoff on 429/5xx (honouring ``Retry-After``), one retry for
  an invalid answer, and a per-run :class:`TokenBudget` whose ``spent`` count the caller
  persists, so a redeployed worker carries on counting where the last one stopped.

Only ``supported``, ``partially_supported``, ``unsupported`` and ``contradicted`` come
from a judge; ``source_unavailable`` and ``unresolved_citation`` are decided by the
pipeline before any judge runs. Evidence quotes the best matching *sentence* of a
passage, with the passage's pages, because a reader checks a sentence, not a chunk.
"""

from __future__ import annotations

import asyncio
import collections.abc
import dataclasses
import enum
import functools
import json
import logging
import math
import os
import pathlib
import re
import typing

import httpx
import numpy
import numpy.typing
import pydantic
import rapidfuzz.fuzz

from citerun import errors, retry
from citerun.verdicts import Verdict as Verdict  # the one list of verdicts
from citerun.worker.pipeline import pdf

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Passage:
    """A retrieved chunk of the cited source; pages are 1-based and inclusive."""

    chunk_id: int
    text: str
    page_start: int
    page_end: int
    score: float


@dataclasses.dataclass(frozen=True)
class Evidence:
    """The sentence of a passage that bears on the claim, and where it is.

    ``score`` (0-1) is how closely the quote matches the claim, as the judge measured it.
    """

    quote: str
    page_start: int
    page_end: int
    score: float
    chunk_id: int


@dataclasses.dataclass(frozen=True)
class Judgement:
    """A verdict with its confidence (0-1), evidence and a one-paragraph rationale."""

    verdict: Verdict
    confidence: float
    evidence: tuple[Evidence, ...]
    rationale: str
    tokens_used: int = 0


class Judge(typing.Protocol):
    """Decides whether ``passages`` of a source support ``claim``."""

    async def judge(
        self, claim: str, passages: collections.abc.Sequence[Passage]
    ) -> Judgement: ...


class Embedder(typing.Protocol):
    """What the embedded judge needs: one row per text, float, any norm.

    ``citerun.worker.pipeline.embed.WordLlamaEmbedder`` fits; rows are L2-normalised
    here again, so an embedder that does not normalise works as well.
    """

    def embed(self, texts: list[str]) -> numpy.typing.NDArray[typing.Any]: ...


class JudgeError(errors.CiterunError):
    """The judge failed."""


class JudgeConfigError(JudgeError):
    """The judge is not configured correctly."""


class JudgeRequestError(JudgeError):
    """The judge endpoint rejected the request."""


class JudgeUnavailable(JudgeError):
    """The judge endpoint kept failing; retries are exhausted."""


class JudgeAnswerError(JudgeError):
    """The judge model returned an invalid answer twice."""


class BudgetExhausted(errors.CiterunError):
    """The run's token budget for the judge is used up."""


# --- text helpers --------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)?")

_STOPWORDS = frozenset(
    """
    a an the and or but if then than that this these those there here of in on at to
    for from by with as into onto about over under between among through during is are
    was were be been being am has have had do does did can could may might must shall
    should will would it its it's they them their we our us you your he she his her i
    me my which who whom whose what when where why how also such so very much many
    most some any all each both other another one two per via et al e g i ie eg
    yet however moreover furthermore additionally thus therefore hence indeed still
    because since while whereas although though instead further
    der die das den dem des ein eine einer eines einem einen und oder aber wenn dann
    als dass daß dies diese dieser dieses diesem im in am an auf aus bei mit nach von
    vom zu zum zur für über unter ist sind war waren wird werden wurde wurden sein hat
    haben hatte es sie er wir ihr auch sich so sehr durch um bzw vgl jedoch daher
    """.split()
)

_NEGATIONS = frozenset(
    """
    not no never without neither nor none cannot nobody nothing nowhere unable
    nicht kein keine keinen keinem keiner keines nie niemals ohne weder nichts
    """.split()
)
_FAIL = re.compile(r"\b(?:fail|fails|failed|failing)\s+to\b", re.IGNORECASE)
_CONTRACTED_NOT = re.compile(r"\w+n['’]t\b", re.IGNORECASE)
_NOT_ONLY = re.compile(r"\b(?:not\s+only|nicht\s+nur)\b", re.IGNORECASE)

# Direction words with their inflections: "lowered", "lowers", "rose", "rising", "fell".
_UP = re.compile(
    r"^(?:increas\w*|higher|more|greater|larger|improv\w*|enhanc\w*|rais(?:e|es|ed|ing)|"
    r"ris(?:e|es|en|ing)|rose|boost\w*|promot\w*|strengthen\w*|gain(?:s|ed)?|"
    r"positive(?:ly)?|accelerat\w*|elevat\w*|grow(?:s|n|ing)?|grew|exceed\w*|"
    r"doubl(?:e|es|ed|ing)|tripl(?:e|es|ed|ing)|surg(?:e|es|ed|ing)|soar\w*|climb\w*|"
    r"upregulat\w*|amplif\w*|augment\w*|"
    r"erhöh\w*|steiger\w*|stieg\w*|verbesser\w*|zunehm\w*|zugenommen|wächst|wuchs|"
    r"höher\w*|mehr|positiv\w*|stärker\w*|verdoppel\w*)$"
)
_DOWN = re.compile(
    r"^(?:decreas\w*|lower\w*|less|fewer|smaller|reduc\w*|declin\w*|worse\w*|worsen\w*|"
    r"impair\w*|diminish\w*|inhibit\w*|weaken\w*|drop(?:s|ped|ping)?|fell|fall(?:s|en|ing)?|"
    r"negative(?:ly)?|suppress\w*|slow(?:s|ed|er|ing)?|shrink\w*|shrank|"
    r"halv(?:e|es|ed|ing)|lessen\w*|attenuat\w*|downregulat\w*|plummet\w*|"
    r"verringer\w*|senk\w*|sank|gesunken|reduzier\w*|verschlechter\w*|vermindert\w*|"
    r"abnehm\w*|abgenommen|niedriger\w*|weniger|negativ\w*|schwächer\w*|halbier\w*)$"
)

# Forms a suffix rule cannot reach; the value is the stem the regular forms get.
_IRREGULAR = {
    "rose": "ris", "risen": "ris", "fell": "fall", "fallen": "fall", "grew": "grow",
    "grown": "grow", "shrank": "shrink", "shrunk": "shrink", "sank": "sink", "sunk": "sink",
    "found": "find", "made": "mak", "led": "lead", "kept": "keep", "held": "hold",
    "brought": "bring", "shown": "show", "gave": "giv", "given": "giv", "took": "tak",
    "taken": "tak", "children": "child", "women": "woman", "men": "man", "mice": "mous",
    "worse": "bad", "worst": "bad", "better": "good", "best": "good", "fewer": "few",
    "less": "few", "least": "few",
}
_SUFFIXES = ("ational", "ization", "isation", "ations", "ation", "ingly", "edly", "ness",
             "ings", "ing", "ies", "ied", "est", "ers", "er", "ed", "ly", "es", "s")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stem, so that inflections match: peaked ~ peak, studies ~ study.

    Suffix stripping in the spirit of Porter's step 1 (plurals, -ed, -ing, comparatives,
    -ly), a final "e" dropped and a doubled consonant undone (hottest ~ hot, dropped ~
    drop), and a table of irregular forms (rose ~ rise, fell ~ fall). Over-stemming two
    unrelated words together only costs a little coverage precision.
    """
    word = word.casefold()
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    if word.endswith("er") and len(word) >= 5:  # lowered -> lower -> low, like lowers
        word = word[:-2]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _tokens(text: str) -> list[str]:
    return [t.casefold().replace("’", "'") for t in _TOKEN.findall(text)]


def _is_polarity_word(token: str) -> bool:
    return token in _NEGATIONS or bool(_UP.match(token) or _DOWN.match(token))


def _content_words(text: str) -> list[str]:
    """Words that carry the claim's content: no stopwords, no negation/direction words."""
    return list(
        dict.fromkeys(
            t
            for t in _tokens(text)
            if t not in _STOPWORDS and not _is_polarity_word(t) and (len(t) > 1 or t.isdigit())
        )
    )


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    if a[0].isdigit() or b[0].isdigit() or min(len(a), len(b)) < 3:
        return False
    if stem(a) == stem(b):
        return True
    if min(len(a), len(b)) < 5:  # "heat" is not "health"
        return False
    # Spelling variants and derivations the stemmer misses: "behaviour"/"behavior",
    # "measured"/"measurement".
    return rapidfuzz.fuzz.ratio(a, b) >= 85 or a[:5] == b[:5]


def _found(word: str, present: collections.abc.Set[str]) -> bool:
    return word in present or any(_same_word(word, p) for p in present)


def coverage(claim: str, sentence: str) -> float:
    """Share (0-1) of the claim's content words found, loosely, in the sentence."""
    wanted = _content_words(claim)
    if not wanted:
        return 0.0
    present = set(_tokens(sentence))
    return sum(1 for w in wanted if _found(w, present)) / len(wanted)


@dataclasses.dataclass(frozen=True)
class _Polarity:
    negated: bool
    direction: int  # +1 up, -1 down, 0 none or undetermined
    cues: tuple[str, ...]

    @property
    def explicit(self) -> bool:
        return bool(self.direction) or self.negated


_MODIFIERS = frozenset(
    "more less fewer higher lower greater smaller larger mehr weniger höher niedriger "
    "größer kleiner".split()
)
_WINDOW = 8  # tokens on either side of a shared content word in which a cue counts


def _polarity(text: str, anchors: collections.abc.Sequence[str] = ()) -> _Polarity:
    """Negation and direction of ``text``; with ``anchors``, only of the cues near them.

    A cue counts only within ``_WINDOW`` tokens of an anchor (a content word the claim
    and the sentence share), so that in "admissions rose; deaths were less documented"
    the "less" says nothing about admissions. Without anchors in the text, every cue
    counts.
    """
    lowered = _NOT_ONLY.sub(" ", text)
    lowered = _FAIL.sub(" not ", lowered)
    lowered = _CONTRACTED_NOT.sub(lambda m: m.group(0)[: -3] + " not", lowered)
    tokens = _tokens(lowered)
    is_anchor = [bool(anchors) and any(_same_word(a, t) for a in anchors) for t in tokens]
    near = [i for i, anchor in enumerate(is_anchor) if anchor]
    if near:
        # A comparative modifier speaks about the word it modifies: "more vulnerable"
        # says nothing about admissions, "more admissions" does.
        tokens = [t for i, t in enumerate(tokens)
                  if t not in _MODIFIERS or any(is_anchor[i + 1: i + 3])]
        is_anchor = [bool(anchors) and any(_same_word(a, t) for a in anchors) for t in tokens]
        near = [i for i, anchor in enumerate(is_anchor) if anchor]
        keep = {j for i in near for j in range(i - _WINDOW, i + _WINDOW + 1)}
        tokens = [t for j, t in enumerate(tokens) if j in keep]
    cues = [t for t in tokens if t in _NEGATIONS]
    signs = [(t, 1 if _UP.match(t) else -1) for t in tokens if _UP.match(t) or _DOWN.match(t)]
    # One direction word is the direction; two are a relation between two quantities
    # ("more canopy -> lower temperature" is a decrease, "for each degree above 30 °C
    # admissions rose" an increase), so their signs multiply. With three or more no
    # reading without a parser is reliable: undetermined.
    direction = math.prod(s for _, s in signs) if 0 < len(signs) <= 2 else 0
    return _Polarity(len(cues) % 2 == 1, direction, tuple(cues + [t for t, _ in signs]))


def _anchors(claim: str, sentence: str) -> tuple[str, ...]:
    present = set(_tokens(sentence))
    return tuple(w for w in _content_words(claim) if _found(w, present))


def polarity_conflict(claim: str, sentence: str) -> str | None:
    """Why ``sentence`` says the opposite of ``claim``, or ``None`` if it does not.

    With a direction word on both sides (increase/decrease, higher/lower, rose/fell, ...)
    the directions, each flipped by an odd number of negations, must agree; otherwise the
    negations alone must agree ("associated" vs "not associated"). Only cues near the
    words both share count (see :func:`_polarity`).
    """
    anchors = _anchors(claim, sentence)
    a, b = _polarity(claim, anchors), _polarity(sentence, anchors)
    if _agree(a, b):
        return None
    return f"the claim has {_cue_text(a)} where the source has {_cue_text(b)}"


def _agree(a: _Polarity, b: _Polarity) -> bool:
    if a.direction and b.direction:
        return a.direction * (-1 if a.negated else 1) == b.direction * (-1 if b.negated else 1)
    return a.negated == b.negated


def _cue_text(polarity: _Polarity) -> str:
    if not polarity.cues:
        return "no negation"
    return " … ".join(f'"{cue}"' for cue in polarity.cues)


# --- what counts as a sentence, and what the claim says --------------------------------

_SECTION_NAMES = frozenset(
    """
    abstract summary introduction background methods method materials results discussion
    conclusion conclusions limitations keywords acknowledgements acknowledgments
    references bibliography appendix zusammenfassung einleitung methoden ergebnisse
    diskussion fazit literaturverzeichnis
    """.split()
)
_HEADING_NUMBER = re.compile(r"^(?:\d{1,3}\.)*\d{1,3}\.?\s+(?=\S)")
_WORD_SPAN = re.compile(r"[^\W\d_][\w'’-]*")
# "7(2)", "3(3)", "45-58", "vol. 12", "pp. 301-319": a journal or reference line.
_JOURNAL = re.compile(r"\b\d+\s*\(\d+\)|\b\d+[-–]\d+\b|\b(?:vol|pp|no|doi)\b\.?", re.IGNORECASE)
# Finite-verb cues; a title has none ("Heat Waves and Emergency Hospital Admissions").
_VERB_CUE = re.compile(
    r"\b(?:is|are|was|were|has|have|had|be|been|did|does|do|can|could|may|might|will|"
    r"would|should|must|shows?|found|[a-z]{3,}ed)\b"
)


def _is_title_like(text: str) -> bool:
    """A title, running header, journal line or heading: not a statement to quote.

    Title Case (most content words capitalised) without a finite-verb cue, a journal
    line ("Public Health and Climate 3(3) 2018"), or a bare section name.
    """
    words = [w for w in _WORD_SPAN.findall(text) if w.casefold() not in _STOPWORDS]
    if not words:
        return True
    if len(words) == 1:
        return words[0].casefold() in _SECTION_NAMES or words[0][0].isupper()
    capitalised = sum(1 for w in words if w[0].isupper()) / len(words)
    if capitalised >= 0.75 and not _VERB_CUE.search(text):
        return True
    return bool(_JOURNAL.search(text)) and capitalised >= 0.5


def _split_front_matter(sentence: str) -> tuple[str, str]:
    """``(heading, statement)``: a heading or title block glued to a sentence's start.

    Chunk text has lost its line breaks, so "1. Introduction Older adults are ..." or
    "Journal 3(3) 2018 A Title in Title Case Abstract We linked ..." reach the judge as
    one sentence. The statement starts at the last capitalised word that is followed by
    a lower-case word and preceded by a title-like prefix (or by a numbered heading of
    at most six words).
    """
    numbered = _HEADING_NUMBER.match(sentence)
    words = list(_WORD_SPAN.finditer(sentence))
    best = 0
    for index, word in enumerate(words[:-1]):
        if index == 0 or not word.group(0)[0].isupper() or not words[index + 1].group(0)[0].islower():
            continue
        prefix = sentence[: word.start()]
        if numbered and index <= 6 and not best:
            best = word.start()
            continue
        bare = _HEADING_NUMBER.sub("", prefix).strip()
        if _is_title_like(bare) and (len(bare.split()) > 1 or bare.casefold() in _SECTION_NAMES):
            best = word.start()
    if not best and numbered:
        return sentence[: numbered.end()].strip(), sentence[numbered.end():]
    return sentence[:best].strip(), sentence[best:]


@dataclasses.dataclass(frozen=True)
class _Candidate:
    """A sentence of a passage, with the words of its passage as context."""

    sentence: str
    passage: Passage
    tokens: frozenset[str]
    context: frozenset[str]


def _candidates(passage: Passage) -> list[_Candidate]:
    """The statements of a passage; headings, titles and running headers are context."""
    statements = []
    for raw in pdf.sentences(passage.text):
        _heading, statement = _split_front_matter(raw)
        if len(_tokens(statement)) >= 3 and not _is_title_like(statement):
            statements.append(statement)
    context = frozenset(_tokens(passage.text))
    return [_Candidate(s, passage, frozenset(_tokens(s)), context) for s in statements]


def _sentences(passage: Passage) -> list[str]:
    return [c.sentence for c in _candidates(passage)]


_ATTRIBUTION = re.compile(
    r"^(?:according to [^,]{1,80},\s*|[^,;:]{1,80}?\b(?:show|shows|showed|shown|found|find|"
    r"finds|report|reports|reported|estimate|estimates|estimated|observe|observes|observed|"
    r"demonstrate|demonstrates|demonstrated|argue|argues|argued|suggest|suggests|suggested|"
    r"conclude|concludes|concluded|note|notes|noted|confirm|confirms|confirmed|indicate|"
    r"indicates|indicated|reveal|reveals|revealed)\s+that\s+)",
    re.IGNORECASE,
)
# Where a claim sentence splits into clauses that each state something.
_CLAUSE_BREAK = re.compile(
    r"\s*[;:]\s+|,\s+(?=(?:which|because|since|so that|so|whereas|while|although|though|"
    r"but|when|where)\b)",
    re.IGNORECASE,
)


@dataclasses.dataclass(frozen=True)
class _Part:
    """The claim, or a piece of it, as the judge scores it.

    ``role``: ``claim`` (the whole), ``clause`` (required for ``supported``),
    ``comment`` (the author's remark: scored, never required) or ``conjunct`` (one item
    of "A, B and C" with the words the items share: only for partial support).
    """

    text: str
    words: tuple[str, ...]
    role: typing.Literal["claim", "clause", "comment", "conjunct"]

    @property
    def required(self) -> bool:
        return self.role in ("claim", "clause")


_CONJUNCTION = re.compile(r",?\s+(?:and|or|as well as|und|oder)\s+|,\s+", re.IGNORECASE)


def _conjuncts(part: _Part) -> list[_Part]:
    """The items of a coordination, each with the words the items share.

    "measured at street level, from satellites and inside homes" gives "measured street
    level", "measured satellites", "measured inside homes"; "more tree canopy and
    reflective roofs lower temperatures" gives "tree canopy lower temperatures" and
    "reflective roofs lower temperatures". Without a parser the shared words are
    guessed: the longest item minus as many words as the other items have, taken from
    its far end (the frame comes first when the list ends the clause, last when it
    starts it).
    """
    items = [tuple(_content_words(piece)) for piece in _CONJUNCTION.split(part.text)]
    items = [i for i in items if i]
    if len(items) < 2:
        return []
    longest = max(range(len(items)), key=lambda i: len(items[i]))
    width = max(len(i) for k, i in enumerate(items) if k != longest)
    long_item = items[longest]
    frame: tuple[str, ...] = ()
    if len(long_item) > width and longest == 0:
        frame, items[0] = long_item[: len(long_item) - width], long_item[len(long_item) - width:]
    elif len(long_item) > width and longest == len(items) - 1:
        frame, items[-1] = long_item[width:], long_item[:width]
    parts = []
    for item in items:
        words = tuple(dict.fromkeys(frame + item))
        if len(words) >= 2 and len(words) < len(part.words):
            parts.append(_Part(" ".join(words), words, "conjunct"))
    return parts


def _claim_parts(claim: str) -> list[_Part]:
    """The claim without its reporting frame, its clauses, and their conjuncts.

    "Smith et al. showed that X" is judged as "X": the source states X, not that Smith
    showed it. A leading section number (a heading glued to the claim) is dropped. A
    non-restrictive "…, which …" clause is the author's comment on what comes before
    ("…, which gives health services a short warning time"): it is scored but not
    required for ``supported``.
    """
    text = " ".join(_HEADING_NUMBER.sub("", claim.strip()).split())
    stripped = _ATTRIBUTION.sub("", text, count=1)
    if len(_content_words(stripped)) >= 2:
        text = stripped
    whole = _Part(text, tuple(_content_words(text)), "claim")
    clauses: list[_Part] = []
    for piece in _CLAUSE_BREAK.split(text):
        words = tuple(_content_words(piece))
        role: typing.Literal["clause", "comment"] = (
            "comment" if piece.casefold().startswith("which ") else "clause")
        if clauses and len(words) < 2:  # too short to judge alone: part of the one before
            last = clauses.pop()
            clauses.append(_Part(f"{last.text}, {piece}", tuple(dict.fromkeys(last.words + words)),
                                 last.role))
        elif words:
            clauses.append(_Part(piece, words, role))
    if len(clauses) < 2:
        clauses = []
    conjuncts = [c for part in (clauses or [whole]) if part.required for c in _conjuncts(part)]
    return [whole, *clauses, *conjuncts]


# --- the embedded judge --------------------------------------------------------------


class EmbeddedJudgeConfig(pydantic.BaseModel):
    """Thresholds of :class:`EmbeddedJudge`; scores are 0-1."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    similarity_weight: float = pydantic.Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description=(
            "Weight of the cosine similarity in a sentence's score; the rest is the "
            "content-word coverage. 0.6 lets a paraphrase with other words score well "
            "while a sentence that merely shares the topic does not."
        ),
    )
    context_weight: float = pydantic.Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Credit (0-1) for a claim word that is not in the sentence but elsewhere in its "
            "passage (the paper's title, the paragraph): a reader takes \"admissions rose\" "
            "in a paper titled \"Heat Waves and Admissions among Older Adults\" as being "
            "about older adults in heat waves. Half credit: context is not a statement."
        ),
    )
    supported: float = pydantic.Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="Lowest score of the best sentence for `supported`.",
    )
    partially_supported: float = pydantic.Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Lowest score for `partially_supported`; below it, `unsupported`. A sentence "
            "on the same topic saying something else scores about 0.4."
        ),
    )
    partial_coverage: float = pydantic.Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Share of a clause's content words (and at least two of them) that one sentence "
            "must contain, for `partially_supported` when the score alone is too low: a "
            "claim citing two sources for its two halves (\"narrow streets or scarce green "
            "space\") finds each half in a different source."
        ),
    )
    partial_similarity: float = pydantic.Field(
        default=0.35,
        ge=0.0,
        le=1.0,
        description="Lowest cosine similarity for the `partial_coverage` rule.",
    )
    contradiction_similarity: float = pydantic.Field(
        default=0.4,
        ge=0.0,
        le=1.0,
        description=(
            "Lowest cosine similarity at which a polarity conflict counts as a "
            "contradiction; word embeddings barely see a negation, so a contradiction "
            "looks as similar as a support."
        ),
    )
    contradiction_coverage: float = pydantic.Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description=(
            "Lowest content-word coverage (negation and direction words left out, context "
            "words at `context_weight`) for a contradiction: the sentence must talk about "
            "the same things."
        ),
    )
    max_evidence: int = pydantic.Field(
        default=3, ge=1, description="Most evidence sentences kept for one claim."
    )

    @pydantic.model_validator(mode="after")
    def _ordered(self) -> EmbeddedJudgeConfig:
        if self.partially_supported > self.supported:
            raise ValueError("partially_supported must not be above supported")
        return self


@dataclasses.dataclass(frozen=True)
class _Scored:
    part: _Part
    candidate: _Candidate
    similarity: float
    coverage: float
    matched: int  # claim words found in the sentence itself
    score: float

    @property
    def sentence(self) -> str:
        return self.candidate.sentence

    @property
    def passage(self) -> Passage:
        return self.candidate.passage


class EmbeddedJudge:
    """A judge that needs no network: sentence embeddings plus word overlap.

    The claim is read without its reporting frame ("Smith et al. showed that …") and
    split into clauses (at ``;``, ``:`` and ", which/because/when/but/…"). Each passage
    is split into sentences; titles, running headers, journal lines and headings are no
    sentences (they are context). For the claim and each clause, a sentence's score is
    ``w * cosine + (1 - w) * coverage``, where coverage is the share of the content
    words (stopwords, negations and direction words left out) that the sentence contains,
    matched by stem and loosely; a word found only elsewhere in the sentence's passage
    counts ``context_weight``. Then:

    - a sentence with high similarity and coverage of the claim or of a required clause,
      whose polarity conflicts with it, and no better-scoring sentence that agrees with
      an explicit polarity -> ``contradicted``;
    - the claim's best score >= ``supported``, or every required clause's ->
      ``supported``;
    - a score >= ``partially_supported`` for the claim or a clause, or one sentence with
      ``partial_coverage`` of a clause's content words -> ``partially_supported``;
    - else ``unsupported``.

    What it can detect: a claim restated or closely paraphrased in one sentence of the
    source, with other inflections (peak/peaked, rise/rose); a claim only partly covered
    (one clause, or one half of "A or B"); a source that is about something else; a
    contradiction made by an explicit negation ("did not reduce", "no association",
    "failed to", "kein", "nicht") or by direction words of the opposite sign
    (increase/decrease, higher/lower, rose/fell, more/fewer, halved/doubled,
    erhöhen/senken), including relations of two quantities ("more canopy, higher
    temperature" against "more canopy lowered the temperature").

    What it cannot detect: support spread over several sentences; paraphrases with no
    shared words and distant vocabulary (static word embeddings are a bag of words);
    numbers that differ but are both present ("30 %" vs "40 %" only lowers coverage);
    contradictions without a negation or direction word (antonyms like
    "safe"/"dangerous", "cooler"/"warmer", different quantities, different
    populations); hedging ("may reduce" vs "reduces"); negation scope ("not only",
    double negation, negations in a subordinate clause can fool it); sentences with
    three or more direction words (their direction is left undetermined); titles in
    sentence case glued to a statement; sarcasm, tables and figures. Context words come
    only from the retrieved passages: a title on a page that was not retrieved gives
    none. Its confidence is a heuristic distance from the thresholds, not a probability.
    """

    def __init__(self, embedder: Embedder, config: EmbeddedJudgeConfig | None = None) -> None:
        self._embedder = embedder
        self._config = config or EmbeddedJudgeConfig()

    async def judge(
        self, claim: str, passages: collections.abc.Sequence[Passage]
    ) -> Judgement:
        """Judge ``claim`` against the sentences of ``passages`` (no I/O)."""
        candidates = _unique(c for p in passages for c in _candidates(p))
        parts = _claim_parts(claim)
        if not candidates or not parts[0].words:
            return Judgement(
                Verdict.UNSUPPORTED,
                0.5,
                (),
                "No sentence of the source was retrieved for this claim."
                if not candidates else "The claim has no content words to look for.",
            )
        by_part = await self._score(parts, candidates)
        config = self._config
        contradiction = self._contradiction(by_part)
        if contradiction is not None:
            found, conflict = contradiction
            confidence = 0.5 + 0.5 * min(found.similarity, found.coverage)
            return Judgement(
                Verdict.CONTRADICTED,
                round(min(confidence, 0.95), 3),
                (_evidence(found),),
                f"A sentence of the source ({_pages(found.passage)}) talks about the same "
                f"things as {_which(found.part, parts)} (similarity {found.similarity:.2f}, "
                f"{found.coverage:.0%} of its content words) but with the opposite "
                f"polarity: {conflict}.",
            )
        whole = by_part[0][0]
        required = [scored[0] for scored in by_part[1:] if scored[0].part.role == "clause"]
        clause_floor = min((s.score for s in required), default=0.0)
        if whole.score >= config.supported or (required and clause_floor >= config.supported):
            verdict = Verdict.SUPPORTED
            top = max(whole.score, clause_floor)
            confidence = 0.6 + 0.4 * (top - config.supported) / max(1 - config.supported, 1e-9)
            how = "states the claim" if whole.score >= config.supported else "states each clause of the claim"
            evidence = [whole] if whole.score >= config.supported else required
            floor = config.partially_supported
        else:
            partial = self._partial(by_part)
            if partial is not None:
                verdict = Verdict.PARTIALLY_SUPPORTED
                span = max(config.supported - config.partially_supported, 1e-9)
                middle = (config.supported + config.partially_supported) / 2
                confidence = 0.6 - 0.2 * min(abs(partial.score - middle) / (span / 2), 1.0)
                how = f"covers only part of the claim ({_which(partial.part, parts)})"
                evidence = [partial]
                floor = config.partially_supported
            else:
                verdict = Verdict.UNSUPPORTED
                confidence = 0.6 + 0.4 * (config.partially_supported - whole.score) / max(
                    config.partially_supported, 1e-9
                )
                how = "is the closest, but does not state the claim"
                evidence = [whole]
                floor = math.inf
        best = evidence[0]
        evidence += [s for s in by_part[0][1:] if s.score >= floor]
        kept: list[_Scored] = []
        for s in evidence:
            if all(k.sentence != s.sentence for k in kept):
                kept.append(s)
        return Judgement(
            verdict,
            round(min(max(confidence, 0.0), 0.99), 3),
            tuple(_evidence(s) for s in kept[: config.max_evidence]),
            f"The best sentence of the source ({_pages(best.passage)}) {how}: similarity "
            f"{best.similarity:.2f}, {best.coverage:.0%} of the content words, "
            f"score {best.score:.2f}.",
        )

    def _contradiction(self, by_part: list[list[_Scored]]) -> tuple[_Scored, str] | None:
        config = self._config
        for scored in by_part:
            if not scored[0].part.required:
                continue
            for s in scored:
                if s.similarity < config.contradiction_similarity or s.coverage < config.contradiction_coverage:
                    continue
                anchors = _anchors(s.part.text, s.sentence)
                claim_polarity = _polarity(s.part.text, anchors)
                sentence_polarity = _polarity(s.sentence, anchors)
                if _agree(claim_polarity, sentence_polarity):
                    if sentence_polarity.explicit:
                        break  # a better sentence says it with the same polarity
                    continue
                conflict = polarity_conflict(s.part.text, s.sentence)
                assert conflict is not None
                return s, conflict
        return None

    def _partial(self, by_part: list[list[_Scored]]) -> _Scored | None:
        config = self._config
        for scored in by_part:
            if scored[0].part.required and scored[0].score >= config.partially_supported:
                return scored[0]
        for scored in by_part:
            if scored[0].part.role == "comment":
                continue
            enough = [s for s in scored if s.matched >= 2
                      and s.matched / len(s.part.words) >= config.partial_coverage
                      and s.similarity >= config.partial_similarity]
            if enough:
                return enough[0]
        return None

    async def _score(self, parts: list[_Part], candidates: list[_Candidate]) -> list[list[_Scored]]:
        """For each part, every candidate scored against it, best first."""
        # In a thread: an embedder may be a blocking HTTP client.
        texts = [p.text for p in parts] + [c.sentence for c in candidates]
        raw = await asyncio.to_thread(self._embedder.embed, texts)
        vectors = numpy.asarray(raw, dtype=numpy.float32)
        norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = (vectors / numpy.where(norms == 0, 1, norms)).astype(numpy.float32)
        similarities = vectors[len(parts):] @ vectors[: len(parts)].T
        weight = self._config.similarity_weight
        context_weight = self._config.context_weight
        result = []
        for j, part in enumerate(parts):
            scored = []
            for i, candidate in enumerate(candidates):
                similarity = max(float(similarities[i, j]), 0.0)
                matched = sum(1 for w in part.words if _found(w, candidate.tokens))
                in_context = sum(
                    1 for w in part.words
                    if not _found(w, candidate.tokens) and _found(w, candidate.context)
                )
                covered = (matched + context_weight * in_context) / max(len(part.words), 1)
                scored.append(_Scored(part, candidate, similarity, covered, matched,
                                      weight * similarity + (1 - weight) * covered))
            scored.sort(key=lambda s: -s.score)
            result.append(scored)
        return result


def _unique(candidates: collections.abc.Iterable[_Candidate]) -> list[_Candidate]:
    """One candidate per sentence (overlapping chunks repeat sentences); first wins."""
    seen: dict[str, _Candidate] = {}
    for candidate in candidates:
        seen.setdefault(candidate.sentence, candidate)
    return list(seen.values())


def _which(part: _Part, parts: list[_Part]) -> str:
    if part is parts[0]:
        return "the claim"
    return f'the clause "{_short(part.text, 80)}"'


def _evidence(scored: _Scored) -> Evidence:
    return Evidence(
        quote=scored.sentence,
        page_start=scored.passage.page_start,
        page_end=scored.passage.page_end,
        score=round(scored.score, 3),
        chunk_id=scored.passage.chunk_id,
    )


def _pages(passage: Passage) -> str:
    if passage.page_start == passage.page_end:
        return f"p. {passage.page_start}"
    return f"pp. {passage.page_start}-{passage.page_end}"


def best_sentence(claim: str, passage: Passage) -> Evidence:
    """The sentence of ``passage`` that shares most words with ``claim`` (no embedder)."""
    sentences = _sentences(passage) or [" ".join(passage.text.split())]
    scored = [
        (0.7 * coverage(claim, s) + 0.3 * rapidfuzz.fuzz.token_set_ratio(claim, s) / 100, s)
        for s in sentences
    ]
    score, sentence = max(scored, key=lambda item: item[0])
    return Evidence(sentence, passage.page_start, passage.page_end, round(score, 3), passage.chunk_id)


# --- the OpenAI-compatible judge -----------------------------------------------------


class TokenBudget:
    """Tokens a run may spend on the judge; ``limit=None`` means no limit.

    ``spent`` is the only state: the caller stores it with the run and passes it back
    in when a worker resumes the run, so a redeploy does not reset the count. The
    check is made before each request, so the request that crosses the limit still
    completes and is counted; the next one raises :class:`BudgetExhausted`.
    """

    def __init__(self, limit: int | None, spent: int = 0) -> None:
        if limit is not None and limit < 0:
            raise ValueError("limit must not be negative")
        if spent < 0:
            raise ValueError("spent must not be negative")
        self._limit = limit
        self._spent = spent

    @property
    def limit(self) -> int | None:
        return self._limit

    @property
    def spent(self) -> int:
        return self._spent

    @property
    def remaining(self) -> int | None:
        return None if self._limit is None else max(self._limit - self._spent, 0)

    @property
    def exhausted(self) -> bool:
        return self._limit is not None and self._spent >= self._limit

    def check(self) -> None:
        """Raise :class:`BudgetExhausted` if no tokens are left."""
        if self.exhausted:
            raise BudgetExhausted(
                f"the run's judge token budget is used up: {self._spent} of {self._limit} tokens spent"
            )

    def charge(self, tokens: int) -> None:
        """Count ``tokens`` as spent (negative counts are ignored)."""
        self._spent += max(tokens, 0)


class OpenAIConfig(pydantic.BaseModel):
    """Settings of the OpenAI-compatible judge."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str = pydantic.Field(
        default="https://api.openai.com",
        description=(
            "Root URL of the endpoint; requests go to {base_url}/v1/chat/completions (a "
            "trailing /v1 is accepted). Any compatible server works: vLLM, llama.cpp, Ollama."
        ),
    )
    model: str = pydantic.Field(
        default="gpt-4o-mini",
        min_length=1,
        description="Model name sent with each request; the default is cheap and supports JSON mode.",
    )
    api_key_env: str | None = pydantic.Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the API key; used when api_key_file is not set.",
    )
    api_key: pydantic.SecretStr | None = pydantic.Field(
        default=None,
        description=(
            "The key itself (a run's own key, apiKeySecretRef, given per run by the "
            "operator after its access check); wins over api_key_file and api_key_env."
        ),
    )
    api_key_file: pathlib.Path | None = pydantic.Field(
        default=None,
        description=(
            "File holding the API key, e.g. a Kubernetes Secret mounted as a volume; read "
            "on every request so a rotated Secret is picked up. Wins over api_key_env."
        ),
    )
    timeout_s: float = pydantic.Field(
        default=60.0,
        gt=0,
        description=(
            "Seconds one request may take, connect to last byte; a judge answer of a few "
            "hundred tokens takes seconds, 60 leaves room for a loaded server."
        ),
    )
    max_retries: int = pydantic.Field(
        default=4,
        ge=0,
        description=(
            "Retries after a 429, a 5xx, a timeout or a connection error (so at most "
            "max_retries + 1 requests); 4 with the default backoff waits about 15 s in all."
        ),
    )
    backoff_base_s: float = pydantic.Field(
        default=1.0,
        ge=0,
        description="Seconds before the first retry; doubles each retry, with jitter.",
    )
    backoff_max_s: float = pydantic.Field(
        default=30.0, ge=0, description="Seconds; cap of one backoff wait."
    )
    retry_after_max_s: float = pydantic.Field(
        default=120.0,
        ge=0,
        description=(
            "Seconds; cap of a wait the server asks for with Retry-After, so one rate "
            "limit cannot stall a task beyond its lease."
        ),
    )
    token_budget: int | None = pydantic.Field(
        default=1_000_000,
        ge=0,
        description=(
            "Tokens (usage.total_tokens) one run may spend on the judge; None for no "
            "limit. A citation costs about 1,500 tokens with five passages, so the "
            "default covers some 600 citations and stops a runaway run."
        ),
    )
    max_passage_chars: int = pydantic.Field(
        default=2000,
        ge=100,
        description="Characters of each passage put into the prompt; about 500 tokens.",
    )
    max_answer_tokens: int = pydantic.Field(
        default=400,
        ge=16,
        description="max_tokens of the answer; the JSON answer needs about 100-200.",
    )

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if base.endswith("/v1"):
            base = base[: -len("/v1")]
        return f"{base}/v1/chat/completions"

    def retry_policy(self) -> retry.RetryPolicy:
        """The requests' retries: this config's backoff, cap and attempts."""
        return retry.RetryPolicy(base_s=self.backoff_base_s, cap_s=self.backoff_max_s,
                                 retry_after_cap_s=self.retry_after_max_s,
                                 max_attempts=self.max_retries + 1)


class JudgeAnswer(pydantic.BaseModel):
    """The JSON object the model must answer with."""

    model_config = pydantic.ConfigDict(extra="ignore")

    # The judged verdicts of citerun.verdicts.JUDGED (tests/unit/test_verdicts.py checks).
    verdict: typing.Literal["supported", "partially_supported", "unsupported", "contradicted"]
    confidence: float = pydantic.Field(ge=0.0, le=1.0)
    evidence: list[int] = pydantic.Field(
        default_factory=list, description="1-based numbers of the passages that bear on the claim."
    )
    rationale: str = pydantic.Field(min_length=1)


class _Message(pydantic.BaseModel):
    content: str


class _Choice(pydantic.BaseModel):
    message: _Message


class _Usage(pydantic.BaseModel):
    total_tokens: int = 0


class _ChatResponse(pydantic.BaseModel):
    choices: list[_Choice] = pydantic.Field(min_length=1)
    usage: _Usage | None = None


SYSTEM_PROMPT = """\
You check citations in academic theses. You get one claim from a thesis and numbered \
passages from the source the thesis cites for it. Decide, from the passages alone, \
whether the source supports the claim:

- "supported": the passages state the claim, or something that clearly entails it.
- "partially_supported": the passages support part of the claim, or a weaker or \
narrower version of it (other population, hedged, fewer conditions).
- "unsupported": the passages do not say what the claim says (silent, or on another topic).
- "contradicted": the passages say the opposite of the claim, or something incompatible \
with it.

Do not use outside knowledge. Answer with one JSON object and nothing else:
{"verdict": "<one of the four>", "confidence": <0.0-1.0>, "evidence": [<numbers of the \
passages that bear on the claim>], "rationale": "<one or two sentences>"}"""


def _user_prompt(claim: str, passages: collections.abc.Sequence[Passage], limit: int) -> str:
    lines = [f"Claim: {claim}", "", "Passages:"]
    for number, passage in enumerate(passages, 1):
        text = " ".join(passage.text.split())
        if len(text) > limit:
            text = text[:limit].rsplit(" ", 1)[0] + " …"
        lines.append(f"[{number}] ({_pages(passage)}) {text}")
    return "\n".join(lines)


retry_after_seconds = retry.retry_after_seconds


class OpenAIJudge:
    """A judge backed by an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    The model answers in JSON mode; the answer is validated against
    :class:`JudgeAnswer` and asked for once more if invalid, then
    :class:`JudgeAnswerError`. 429, 5xx, timeouts and connection errors are retried
    with exponential backoff and jitter (or the server's ``Retry-After``), then
    :class:`JudgeUnavailable`; other 4xx raise :class:`JudgeRequestError` at once.
    Every response's ``usage.total_tokens`` is charged to ``budget``.
    """

    def __init__(
        self,
        config: OpenAIConfig,
        budget: TokenBudget,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._config = config
        self._budget = budget
        self._client = client
        self._owns_client = client is None

    @property
    def budget(self) -> TokenBudget:
        return self._budget

    async def aclose(self) -> None:
        """Close the HTTP client if this judge created it."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> OpenAIJudge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def judge(
        self, claim: str, passages: collections.abc.Sequence[Passage]
    ) -> Judgement:
        """Ask the model; raises :class:`BudgetExhausted` before a request over budget."""
        if not passages:
            return Judgement(
                Verdict.UNSUPPORTED, 0.5, (), "No passage of the source was retrieved for this claim."
            )
        messages: list[dict[str, str]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": _user_prompt(claim, passages, self._config.max_passage_chars)},
        ]
        tokens = 0
        problem = ""
        for attempt in range(2):
            response = await self._complete(messages)
            tokens += response.usage.total_tokens if response.usage else 0
            content = response.choices[0].message.content if response.choices else ""
            try:
                answer = JudgeAnswer.model_validate_json(_strip_fences(content))
                bad = [n for n in answer.evidence if not 1 <= n <= len(passages)]
                if bad:
                    raise ValueError(f"evidence numbers {bad} are not among 1..{len(passages)}")
            except (pydantic.ValidationError, ValueError) as err:
                problem = _short(str(err))
                logger.info(
                    "invalid judge answer",
                    extra={"action": "judge_answer_invalid", "attempt": attempt + 1, "error": problem},
                )
                messages = [
                    *messages,
                    {"role": "assistant", "content": content},
                    {
                        "role": "user",
                        "content": f"That answer is invalid ({problem}). Answer again with only "
                        "the JSON object described in the instructions.",
                    },
                ]
                continue
            evidence = tuple(best_sentence(claim, passages[n - 1]) for n in dict.fromkeys(answer.evidence))
            return Judgement(
                Verdict(answer.verdict), answer.confidence, evidence, answer.rationale.strip(), tokens
            )
        raise JudgeAnswerError(
            f"the judge model {self._config.model!r} returned an invalid answer twice; last problem: {problem}"
        )

    async def _complete(self, messages: list[dict[str, str]]) -> _ChatResponse:
        config = self._config
        body = {
            "model": config.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": config.max_answer_tokens,
            "response_format": {"type": "json_object"},
        }
        policy = config.retry_policy()
        last = ""
        attempt = 0
        while True:
            attempt += 1
            self._budget.check()
            retry_after: str | None = None
            try:
                response = await self._http().post(
                    config.url, json=body, headers=self._headers(), timeout=config.timeout_s
                )
            except httpx.TransportError as err:
                last = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            else:
                if response.status_code == 200:
                    return self._parse(response)
                last = f"HTTP {response.status_code}: {_short(response.text)}"
                if not policy.retryable(response.status_code):
                    raise JudgeRequestError(f"the judge endpoint {config.url} refused the request: {last}")
                retry_after = response.headers.get("retry-after")
            if policy.exhausted(attempt):
                break
            delay = policy.delay_s(attempt, retry_after=retry_after)
            logger.info(
                "judge request failed, retrying",
                extra={"action": "judge_retry", "attempt": attempt, "delay_s": delay, "error": last},
            )
            await asyncio.sleep(delay)
        raise JudgeUnavailable(
            f"the judge endpoint {config.url} failed {config.max_retries + 1} times; last: {last}"
        )

    def _parse(self, response: httpx.Response) -> _ChatResponse:
        try:
            data = response.json()
        except json.JSONDecodeError as err:
            raise JudgeRequestError(
                f"the judge endpoint answered with non-JSON: {_short(response.text)}"
            ) from err
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("total_tokens"), int):
            self._budget.charge(usage["total_tokens"])
        try:
            return _ChatResponse.model_validate(data)
        except pydantic.ValidationError as err:
            raise JudgeRequestError(
                f"the judge endpoint's answer is not a chat completion: {_short(str(err))}"
            ) from err

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient()
        return self._client

    def _headers(self) -> dict[str, str]:
        key = self._api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _api_key(self) -> str | None:
        config = self._config
        if config.api_key is not None:
            return config.api_key.get_secret_value() or None
        if config.api_key_file is not None:
            try:
                return config.api_key_file.read_text(encoding="utf-8").strip() or None
            except OSError as err:
                raise JudgeConfigError(
                    f"cannot read the judge API key file {str(config.api_key_file)!r}: {err.strerror}"
                ) from err
        if config.api_key_env:
            return os.environ.get(config.api_key_env) or None
        return None


def _strip_fences(content: str) -> str:
    """Some servers wrap JSON mode output in ```json fences anyway."""
    content = content.strip()
    match = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", content, re.DOTALL)
    return match.group(1) if match else content


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


# --- configuration -------------------------------------------------------------------


class JudgeConfig(pydantic.BaseModel):
    """Which judge a run uses, and its settings."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    kind: typing.Literal["embedded", "openai"] = pydantic.Field(
        default="embedded",
        description="`embedded` needs no network (the default, so a laptop run works offline); "
        "`openai` calls a chat-completions endpoint.",
    )
    embedded: EmbeddedJudgeConfig = pydantic.Field(default_factory=EmbeddedJudgeConfig)
    openai: OpenAIConfig = pydantic.Field(default_factory=OpenAIConfig)


def make_judge(
    config: JudgeConfig,
    embedder: Embedder,
    *,
    budget: TokenBudget | None = None,
    client: httpx.AsyncClient | None = None,
) -> Judge:
    """The judge ``config`` asks for.

    For ``openai``, pass the run's ``budget`` (built with the ``spent`` count stored
    for the run); without one, a fresh budget of ``config.openai.token_budget``.
    """
    if config.kind == "embedded":
        return EmbeddedJudge(embedder, config.embedded)
    return OpenAIJudge(
        config.openai, budget or TokenBudget(config.openai.token_budget), client=client
    )
