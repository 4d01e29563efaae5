"""The source's sentences ranked against a claim, and whether one states its opposite.

:class:`Ranker` scores every sentence of the cited passages against the claim: cosine
similarity of their WordLlama vectors and the share of the claim's content words the
sentence (and, at half weight, its neighbours) contains; the reader reads the best of
them (:mod:`.reader`). :func:`opposite_of` says why a sentence states the opposite of the
claim (a negation or direction that disagrees, an antonym pair with one side on each,
WordNet's included, ``antonyms.tsv``, or a word negated by its prefix): the judge shows
such a sentence before it says ``contradicted``.

The trees the reader replaced computed their hand features from the same ranking; those
features live with the trees, outside the package (``training/trees/features.py``), and
read the claim as ranked here (:class:`Ranked`) so both see the same sentences.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import functools
import pathlib
import typing

import numpy
import numpy.typing

from citerun.pipeline.judging import language
from citerun.pipeline.judging.types import Embedder, Passage

Vector = numpy.typing.NDArray[numpy.float32]

# Pairs of stems that say opposite things about the same object. Stems, so that
# "activates"/"inhibited" and "younger"/"older" match; direction words are in here too
# because a pair is a sharper cue than the sign of a sentence.
ANTONYM_PAIRS: tuple[tuple[str, str], ...] = tuple(
    tuple(pair.split("/"))  # type: ignore[misc]
    for pair in """
    increas/decreas increas/reduc high/low great/small larg/small more/few up/down
    upregulat/downregulat activat/inhibit promot/suppress promot/inhibit induc/inhibit
    induc/prevent enhanc/impair enhanc/reduc improv/worsen positiv/negativ young/old
    early/lat benefit/harm safe/unsaf effectiv/ineffectiv gain/loss ris/fall
    presenc/absenc present/absent sam/differ resist/sensitiv resist/susceptibl strong/weak
    fast/slow long/short male/femal acut/chronic befor/after abov/below major/minor
    common/rar frequent/infrequent stabl/unstabl elevat/reduc agonist/antagonist
    excess/deficien overexpress/knockdown accelerat/delay protect/damag stimulat/inhibit
    rais/lower boost/reduc expand/shrink add/remov rich/poor maximum/minimum
    significant/insignificant sufficient/insufficient necessary/unnecessary
    all/none always/never alive/dead healthy/diseas
    """.split()
)
_PREFIXES = ("un", "in", "im", "non", "ir", "il", "dis")
ANTONYMS = pathlib.Path(__file__).with_name("antonyms.tsv")


@functools.cache
def lexicon() -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """WordNet's direct antonyms (``antonyms.tsv``, written by training/antonyms.py) as
    stem -> the stems of its antonyms, and the stems of the words that are another word
    negated by an affix (ineffective, unrelated, harmless): they state an absence with no
    "not" for the negation cues to see."""
    opposite: dict[str, set[str]] = collections.defaultdict(set)
    negative: set[str] = set()
    for line in ANTONYMS.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        a, b, negated = line.split("\t")
        x, y = language.stem(a), language.stem(b)
        if x == y:
            continue
        opposite[x].add(y)
        opposite[y].add(x)
        if negated:
            negative.add(language.stem(negated))
    return {k: frozenset(v) for k, v in opposite.items()}, frozenset(negative)


@dataclasses.dataclass(frozen=True)
class Sentence:
    """A candidate sentence with its closeness to the claim."""

    candidate: language.Candidate
    similarity: float
    coverage: float
    context_coverage: float

    @property
    def score(self) -> float:
        return 0.6 * self.similarity + 0.4 * self.context_coverage


@dataclasses.dataclass(frozen=True)
class Ranked:
    """The sentences of the passages, best first, and the claim as they were ranked
    against it: its text (the whole claim), content words, tokens, each word's matches
    among the evidence's words, and the unit vectors of the claim, of the evidence joined
    and of each sentence (in the passages' order)."""

    claim: str
    words: tuple[str, ...]
    tokens: tuple[str, ...]
    matches: collections.abc.Mapping[str, frozenset[str]]
    vectors: Vector
    sentences: tuple[Sentence, ...]

    def found(self, word: str, tokens: frozenset[str]) -> bool:
        """Whether ``word`` of the claim is among ``tokens`` (or a form of it is)."""
        return not self.matches[word].isdisjoint(tokens)


def _normalised(vectors: typing.Any) -> Vector:
    array = numpy.asarray(vectors, dtype=numpy.float32)
    norms = numpy.linalg.norm(array, axis=1, keepdims=True)
    return (array / numpy.where(norms == 0, 1, norms)).astype(numpy.float32)


def antonym_conflicts(claim: collections.abc.Set[str], evidence: collections.abc.Set[str]) -> int:
    """Antonym pairs with one side only in the claim and the other only in the evidence."""
    count = 0
    for a, b in ANTONYM_PAIRS:
        for x, y in ((a, b), (b, a)):
            if x in claim and y in evidence and y not in claim and x not in evidence:
                count += 1
    return count


def stems(tokens: collections.abc.Iterable[str]) -> set[str]:
    return {language.stem(t) for t in tokens}


def prefix_antonyms(claim: collections.abc.Set[str], evidence: collections.abc.Set[str]) -> int:
    """Words on one side whose prefix-negated form is on the other (accurate/inaccurate)."""
    count = 0
    for a, b in ((claim, evidence), (evidence, claim)):
        for word in a:
            if len(word) > 4 and word not in b and any(p + word in b and p + word not in a for p in _PREFIXES):
                count += 1
    return count


def opposite_of(claim: str, sentence: str, sentence_tokens: collections.abc.Iterable[str],
                *, directions_only: bool = False) -> str | None:
    """Why ``sentence`` states the opposite of ``claim``, or ``None``: a negation or direction
    that disagrees (:func:`.language.polarity_conflict`), an antonym pair with one side on
    each (young/old, WordNet's), or a word negated by its prefix (effective/ineffective).
    What the judge needs before it says ``contradicted``: a sentence it can show.
    ``directions_only``: only a direction word on both sides that disagrees counts."""
    conflict = language.polarity_conflict(claim, sentence)
    if directions_only:
        # Only a direction on both sides ("fall" against "rose"): a "cannot" or "not" near
        # shared words, or an antonym pair, is too weak a cue on its own.
        anchors = language.anchors_of(claim, sentence)
        both = (language.polarity_of(claim, anchors).direction
                and language.polarity_of(sentence, anchors).direction)
        return conflict if conflict and both else None
    if conflict:
        return conflict
    claim_set, sentence_set = frozenset(language.tokenize(claim)), frozenset(sentence_tokens)
    claim_stems, sentence_stems = stems(claim_set), stems(sentence_set)
    opposite, _ = lexicon()
    if (antonym_conflicts(claim_stems, sentence_stems) or prefix_antonyms(claim_set, sentence_set)
            or any(other in sentence_stems - claim_stems
                   for stem in claim_stems - sentence_stems for other in opposite.get(stem, ()))):
        return "the claim and the source use words of opposite meaning"
    return None


class Ranker:
    """Ranks the sentences of a claim's passages (:meth:`rank`)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def rank(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Ranked | None:
        """The passages' sentences ranked against the claim, or ``None`` when there is
        nothing to compare (no sentence, or a claim without content words)."""
        candidates = language.unique(c for p in passages for c in language.candidates_of(p))
        whole = language.claim_parts(claim)[0]
        words = tuple(whole.words)
        if not candidates or not words:
            return None
        claim_tokens = tuple(language.tokenize(whole.text))
        # One embedder call per pair: the claim, the evidence joined, its sentences (the
        # trees read the joined evidence's vector; it stays in the call, so that every
        # sentence's vector is what it was when they were trained).
        texts = [whole.text, " ".join(c.sentence for c in candidates)] + [
            c.sentence for c in candidates]
        vectors = _normalised(self._embedder.embed(texts))
        similarities = vectors[2:] @ vectors[0]
        vocabulary = frozenset().union(*(c.context for c in candidates))
        # Each claim word against each word of the evidence once, not once per sentence.
        matches = {w: frozenset(t for t in vocabulary if language.same_word(w, t))
                   for w in dict.fromkeys(words + claim_tokens)}

        def found(word: str, tokens: frozenset[str]) -> bool:
            return not matches[word].isdisjoint(tokens)

        sentences = []
        for candidate, similarity in zip(candidates, similarities):
            matched = sum(1 for w in words if found(w, candidate.tokens))
            in_context = sum(1 for w in words if not found(w, candidate.tokens)
                             and found(w, candidate.context))
            sentences.append(Sentence(candidate, max(float(similarity), 0.0), matched / len(words),
                                      (matched + 0.5 * in_context) / len(words)))
        sentences.sort(key=lambda s: -s.score)
        return Ranked(whole.text, words, claim_tokens, matches, vectors, tuple(sentences))
