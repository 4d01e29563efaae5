"""How the judges read a claim and a source: tokens, stems, polarity, sentences, clauses.

Pure functions over text, shared by the embedded judges (rules and the trained model)
and by the OpenAI judge (which quotes the best sentence of each passage it cites). They
change when the reading of English or German text changes, never for a threshold.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import math
import re
import typing

import rapidfuzz.fuzz

from citerun.pipeline import pdf
from citerun.pipeline.citations import references
from citerun.pipeline.judging.types import Evidence, Passage

# --- text helpers --------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)?")

STOPWORDS = frozenset(
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

NEGATIONS = frozenset(
    """
    not no never without neither nor none cannot nobody nothing nowhere unable
    nicht kein keine keinen keinem keiner keines nie niemals ohne weder nichts
    """.split()
)
_FAIL = re.compile(r"\b(?:fail|fails|failed|failing)\s+to\b", re.IGNORECASE)
_CONTRACTED_NOT = re.compile(r"\w+n['’]t\b", re.IGNORECASE)
_NOT_ONLY = re.compile(r"\b(?:not\s+only|nicht\s+nur)\b", re.IGNORECASE)

# Direction words with their inflections: "lowered", "lowers", "rose", "rising", "fell".
UP = re.compile(
    r"^(?:increas\w*|higher|more|greater|larger|improv\w*|enhanc\w*|rais(?:e|es|ed|ing)|"
    r"ris(?:e|es|en|ing)|rose|boost\w*|promot\w*|strengthen\w*|gain(?:s|ed)?|"
    r"positive(?:ly)?|accelerat\w*|elevat\w*|grow(?:s|n|ing)?|grew|exceed\w*|"
    r"doubl(?:e|es|ed|ing)|tripl(?:e|es|ed|ing)|surg(?:e|es|ed|ing)|soar\w*|climb\w*|"
    r"upregulat\w*|amplif\w*|augment\w*|"
    r"erhöh\w*|steiger\w*|stieg\w*|verbesser\w*|zunehm\w*|zugenommen|wächst|wuchs|"
    r"höher\w*|mehr|positiv\w*|stärker\w*|verdoppel\w*)$"
)
DOWN = re.compile(
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


def tokenize(text: str) -> list[str]:
    return [t.casefold().replace("’", "'") for t in _TOKEN.findall(text)]


def is_polarity_word(token: str) -> bool:
    return token in NEGATIONS or bool(UP.match(token) or DOWN.match(token))


def content_words(text: str) -> list[str]:
    """Words that carry the claim's content: no stopwords, no negation/direction words."""
    return list(
        dict.fromkeys(
            t
            for t in tokenize(text)
            if t not in STOPWORDS and not is_polarity_word(t) and (len(t) > 1 or t.isdigit())
        )
    )


@functools.lru_cache(maxsize=1 << 18)
def same_word(a: str, b: str) -> bool:
    """Whether two tokens are the same word: equal, same stem, or a spelling variant."""
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


def found(word: str, present: collections.abc.Set[str]) -> bool:
    return word in present or any(same_word(word, p) for p in present)


def coverage(claim: str, sentence: str) -> float:
    """Share (0-1) of the claim's content words found, loosely, in the sentence."""
    wanted = content_words(claim)
    if not wanted:
        return 0.0
    present = set(tokenize(sentence))
    return sum(1 for w in wanted if found(w, present)) / len(wanted)


@dataclasses.dataclass(frozen=True)
class Polarity:
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


def polarity_of(text: str, anchors: collections.abc.Sequence[str] = ()) -> Polarity:
    """Negation and direction of ``text``; with ``anchors``, only of the cues near them.

    A cue counts only within ``_WINDOW`` tokens of an anchor (a content word the claim
    and the sentence share), so that in "admissions rose; deaths were less documented"
    the "less" says nothing about admissions. Without anchors in the text, every cue
    counts.
    """
    lowered = _NOT_ONLY.sub(" ", text)
    lowered = _FAIL.sub(" not ", lowered)
    lowered = _CONTRACTED_NOT.sub(lambda m: m.group(0)[: -3] + " not", lowered)
    tokens = tokenize(lowered)
    is_anchor = [bool(anchors) and any(same_word(a, t) for a in anchors) for t in tokens]
    near = [i for i, anchor in enumerate(is_anchor) if anchor]
    if near:
        # A comparative modifier speaks about the word it modifies: "more vulnerable"
        # says nothing about admissions, "more admissions" does.
        tokens = [t for i, t in enumerate(tokens)
                  if t not in _MODIFIERS or any(is_anchor[i + 1: i + 3])]
        is_anchor = [bool(anchors) and any(same_word(a, t) for a in anchors) for t in tokens]
        near = [i for i, anchor in enumerate(is_anchor) if anchor]
        keep = {j for i in near for j in range(i - _WINDOW, i + _WINDOW + 1)}
        tokens = [t for j, t in enumerate(tokens) if j in keep]
    cues = [t for t in tokens if t in NEGATIONS]
    signs = [(t, 1 if UP.match(t) else -1) for t in tokens if UP.match(t) or DOWN.match(t)]
    # One direction word is the direction; two are a relation between two quantities
    # ("more canopy -> lower temperature" is a decrease, "for each degree above 30 °C
    # admissions rose" an increase), so their signs multiply. With three or more no
    # reading without a parser is reliable: undetermined.
    direction = math.prod(s for _, s in signs) if 0 < len(signs) <= 2 else 0
    return Polarity(len(cues) % 2 == 1, direction, tuple(cues + [t for t, _ in signs]))


def anchors_of(claim: str, sentence: str) -> tuple[str, ...]:
    present = set(tokenize(sentence))
    return tuple(w for w in content_words(claim) if found(w, present))


def polarity_conflict(claim: str, sentence: str) -> str | None:
    """Why ``sentence`` says the opposite of ``claim``, or ``None`` if it does not.

    With a direction word on both sides (increase/decrease, higher/lower, rose/fell, ...)
    the directions, each flipped by an odd number of negations, must agree; otherwise the
    negations alone must agree ("associated" vs "not associated"). Only cues near the
    words both share count (see :func:`polarity_of`).
    """
    anchors = anchors_of(claim, sentence)
    a, b = polarity_of(claim, anchors), polarity_of(sentence, anchors)
    if agree(a, b):
        return None
    return f"the claim has {_cue_text(a)} where the source has {_cue_text(b)}"


def agree(a: Polarity, b: Polarity) -> bool:
    if a.direction and b.direction:
        return a.direction * (-1 if a.negated else 1) == b.direction * (-1 if b.negated else 1)
    return a.negated == b.negated


def _cue_text(polarity: Polarity) -> str:
    if not polarity.cues:
        return "no negation"
    return " … ".join(f'"{cue}"' for cue in polarity.cues)


# --- what counts as a sentence, and what the claim says --------------------------------

_SECTION_NAMES = frozenset(
    """
    abstract summary introduction background methods method materials results discussion
    conclusion conclusions limitations keywords acknowledgements acknowledgments
    appendix zusammenfassung einleitung methoden ergebnisse diskussion fazit
    """.split()
) | frozenset(references.ONE_WORD_HEADINGS)
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
    words = [w for w in _WORD_SPAN.findall(text) if w.casefold() not in STOPWORDS]
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
class Candidate:
    """A sentence of a passage, with the words of its passage as context."""

    sentence: str
    passage: Passage
    tokens: frozenset[str]
    context: frozenset[str]


@functools.lru_cache(maxsize=4096)
def candidates_of(passage: Passage) -> tuple[Candidate, ...]:
    """The statements of a passage; headings, titles and running headers are context."""
    statements = []
    for raw in pdf.sentences(passage.text):
        _heading, statement = _split_front_matter(raw)
        if len(tokenize(statement)) >= 3 and not _is_title_like(statement):
            statements.append(statement)
    context = frozenset(tokenize(passage.text))
    return tuple(Candidate(s, passage, frozenset(tokenize(s)), context) for s in statements)


def sentences_of(passage: Passage) -> list[str]:
    return [c.sentence for c in candidates_of(passage)]


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
class Part:
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


def _conjuncts(part: Part) -> list[Part]:
    """The items of a coordination, each with the words the items share.

    "measured at street level, from satellites and inside homes" gives "measured street
    level", "measured satellites", "measured inside homes"; "more tree canopy and
    reflective roofs lower temperatures" gives "tree canopy lower temperatures" and
    "reflective roofs lower temperatures". Without a parser the shared words are
    guessed: the longest item minus as many words as the other items have, taken from
    its far end (the frame comes first when the list ends the clause, last when it
    starts it).
    """
    items = [tuple(content_words(piece)) for piece in _CONJUNCTION.split(part.text)]
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
            parts.append(Part(" ".join(words), words, "conjunct"))
    return parts


def claim_parts(claim: str) -> list[Part]:
    """The claim without its reporting frame, its clauses, and their conjuncts.

    "Smith et al. showed that X" is judged as "X": the source states X, not that Smith
    showed it. A leading section number (a heading glued to the claim) is dropped. A
    non-restrictive "…, which …" clause is the author's comment on what comes before
    ("…, which gives health services a short warning time"): it is scored but not
    required for ``supported``.
    """
    text = " ".join(_HEADING_NUMBER.sub("", claim.strip()).split())
    stripped = _ATTRIBUTION.sub("", text, count=1)
    if len(content_words(stripped)) >= 2:
        text = stripped
    whole = Part(text, tuple(content_words(text)), "claim")
    clauses: list[Part] = []
    for piece in _CLAUSE_BREAK.split(text):
        words = tuple(content_words(piece))
        role: typing.Literal["clause", "comment"] = (
            "comment" if piece.casefold().startswith("which ") else "clause")
        if clauses and len(words) < 2:  # too short to judge alone: part of the one before
            last = clauses.pop()
            clauses.append(Part(f"{last.text}, {piece}", tuple(dict.fromkeys(last.words + words)),
                                 last.role))
        elif words:
            clauses.append(Part(piece, words, role))
    if len(clauses) < 2:
        clauses = []
    conjuncts = [c for part in (clauses or [whole]) if part.required for c in _conjuncts(part)]
    return [whole, *clauses, *conjuncts]


def unique(candidates: collections.abc.Iterable[Candidate]) -> list[Candidate]:
    """One candidate per sentence (overlapping chunks repeat sentences); first wins."""
    seen: dict[str, Candidate] = {}
    for candidate in candidates:
        seen.setdefault(candidate.sentence, candidate)
    return list(seen.values())


def pages(passage: Passage) -> str:
    if passage.page_start == passage.page_end:
        return f"p. {passage.page_start}"
    return f"pp. {passage.page_start}-{passage.page_end}"


def best_sentence(claim: str, passage: Passage) -> Evidence:
    """The sentence of ``passage`` that shares most words with ``claim`` (no embedder)."""
    sentences = sentences_of(passage) or [" ".join(passage.text.split())]
    scored = [
        (0.7 * coverage(claim, s) + 0.3 * rapidfuzz.fuzz.token_set_ratio(claim, s) / 100, s)
        for s in sentences
    ]
    score, sentence = max(scored, key=lambda item: item[0])
    return Evidence(sentence, passage.page_start, passage.page_end, round(score, 3), passage.chunk_id)


def short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"

