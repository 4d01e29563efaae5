"""The trees' features of (claim, evidence passages): one vector per pair.

The trees (:mod:`training.trees.model`) were the embedded judge's decision before the
reader (issue 23, step 3) and are kept for comparison in the benches; these features are
theirs alone, so they live here, outside the shipped package. They are computed from the
shipped judge's ranking of the source's sentences (:class:`citerun.pipeline.judging.sentences.Ranked`),
so the trees read the same sentences as the reader. Three groups:

- *closeness*: cosine similarity (WordLlama) and content-word coverage of the claim by
  its best sentences, by the best two together and by the whole evidence, and the
  alignment of each claim word with the evidence's words by their WordLlama vectors
  (the least-aligned words; substitutions, a claim word whose closest evidence word is
  missing from the claim);
- *cues* of what a similarity cannot see, each measured on the claim and on its best
  sentences and compared: negation near the words both share (its scope, not a "not"
  anywhere), direction words with the words they govern, hedging, antonym pairs
  (young/old, activates/inhibits, and WordNet's, ``antonyms.tsv``), words negated by an
  affix (ineffective, unrelated), numbers present on one side only;
- *cue words on one side only*: a fixed list (negations, direction and effect words,
  hedges, quantifiers), each flagged when the claim has it and its best sentences do not,
  and the other way round, so the model weighs each cue on its own. (A mean word vector
  of the claim's unmatched words was tried and dropped: it overfitted the 809 claims.)

The names in :data:`NAMES` are the model's input schema; the trained artifact stores
them and refuses to load against other names, so a feature change forces a retrain.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import math
import re
import typing

import numpy
import numpy.typing

from citerun.pipeline.judging import language, sentences
from citerun.pipeline.judging.sentences import Sentence
from citerun.pipeline.judging.types import Embedder, Passage

Vector = numpy.typing.NDArray[numpy.float32]
_HEDGES = frozenset(
    """
    may might could possibly possible potentially potential likely unlikely suggest suggests
    suggested suggesting hypothesis hypothesize hypothesized hypothesise propose proposed
    appear appears appeared seem seems seemed putative presumably perhaps whether unclear
    speculate speculated probably kann könnte könnten möglicherweise vermutlich
    wahrscheinlich eventuell scheint scheinen
    """.split()
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
# Number words, so that "one in two" and "one in five" are numbers that differ.
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())} | {
    "half": "0.5", "third": "3", "quarter": "4", "fifth": "5", "twice": "2", "double": "2",
    "triple": "3", "tenfold": "10", "twofold": "2", "threefold": "3"}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
# Effect words with a sign, wider than the direction words of :mod:`.language` (which
# the rule judge shares): verbs of causing and of preventing, and their nouns.
_EFFECT_UP = re.compile(
    r"^(?:increas\w*|higher|more|greater|improv\w*|enhanc\w*|promot\w*|encourag\w*|"
    r"induc\w*|activat\w*|stimulat\w*|caus\w*|trigger\w*|facilitat\w*|potentiat\w*|"
    r"accelerat\w*|elevat\w*|rais\w*|boost\w*|upregulat\w*|augment\w*|amplif\w*|"
    r"positive\w*|gain\w*|restor\w*|drive[sn]?|driving|exacerbat\w*|worsen\w*|aggravat\w*|"
    r"susceptib\w*|risk|risks|harm\w*)$")
_EFFECT_DOWN = re.compile(
    r"^(?:decreas\w*|lower\w*|less|fewer|reduc\w*|declin\w*|impair\w*|diminish\w*|"
    r"inhibit\w*|suppress\w*|prevent\w*|block\w*|abolish\w*|abrogat\w*|attenuat\w*|"
    r"slow\w*|delay\w*|downregulat\w*|negative\w*|loss|lack\w*|deficien\w*|protect\w*|"
    r"antagoni\w*|repress\w*|silenc\w*|knock\w*|delet\w*|ablat\w*|alleviat\w*|"
    r"ameliorat\w*|mitigat\w*|resist\w*|benefi\w*)$")
# Groups a claim may swap: a claim about men checked against a finding about women.
_GROUPS = (
    frozenset("men man male males boys boy".split()), frozenset("women woman female females girls girl".split()),
    frozenset("children child infants infant toddlers toddler newborns neonates pediatric paediatric".split()),
    frozenset("adolescents adolescent teenagers youth".split()),
    frozenset("adults adult".split()), frozenset("elderly older aged seniors".split()),
    frozenset("mice mouse murine".split()), frozenset("rats rat".split()),
    frozenset("humans human".split()), frozenset("vegans vegan vegetarians vegetarian".split()),
    frozenset("omnivores omnivorous".split()), frozenset("smokers".split()), frozenset("nonsmokers".split()),
)
_SCALARS = (
    "sim1", "sim2", "cov1", "cov2", "ctxcov1", "score1", "score2", "score_gap",
    "cov_top2", "cov_all", "sim_all", "n_words", "n_sentences",
    "claim_neg", "sent_neg1", "sent_neg_any", "neg_mismatch1", "neg_mismatch_any",
    "claim_dir", "sent_dir1", "dir_agree1", "dir_conflict1", "dir_conflict_any",
    "conflict1_x_score", "neg_mismatch1_x_score",
    "claim_hedge", "sent_hedge1", "hedge_mismatch",
    "antonym_conflict", "antonym_conflict_x_score",
    "claim_numbers", "numbers_found", "numbers_missing",
    "unmatched_share", "unmatched_polarity",
    "effect_claim", "effect_agree_top", "effect_conflict_top", "effect_conflict1_x_score",
    "prefix_antonym", "number_conflict", "group_swap", "group_missing",
    "wordnet_antonym_conflict", "affix_negative_claim", "affix_negative_claim_only",
    "affix_negative_evidence_only", "affix_negative_claim_only_x_score",
    "align_min", "align_second", "align_mean", "subst_sim", "subst_count", "subst_effect_conflict",
)
# Cue words whose presence on one side only the model weighs (prefixes of tokens; the
# negations whole). A fixed list, so each cue gets its own learned weight.
CUES = (
    "not", "no", "never", "without", "none", "neither", "nor", "cannot", "fail", "lack",
    "absen", "increas", "decreas", "reduc", "high", "low", "more", "less", "great", "fewer",
    "elevat", "improv", "wors", "enhanc", "impair", "inhibit", "promot", "suppress", "activat",
    "block", "prevent", "induc", "protect", "risk", "associat", "correlat", "significant",
    "differ", "similar", "compar", "may", "might", "could", "suggest", "only", "all", "both",
    "independent", "require", "sufficient", "necessary", "cause", "effect", "improve",
)
_WHOLE = frozenset({"not", "no", "never", "without", "none", "neither", "nor", "cannot", "may",
                    "might", "could", "only", "all", "both", "less", "more"})
NAMES: tuple[str, ...] = (_SCALARS + tuple(f"claim_only_{c}" for c in CUES)
                          + tuple(f"evidence_only_{c}" for c in CUES))


@dataclasses.dataclass(frozen=True)
class PairFeatures:
    """The feature vector of one pair and its sentences, best first."""

    vector: Vector
    sentences: tuple[Sentence, ...]


def _numbers(text: str) -> set[str]:
    text = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(1).casefold()], text)
    return {n.replace(",", ".").rstrip("0").rstrip(".") or "0" for n in _NUMBER.findall(text)}


def _numbers_apart(claim: collections.abc.Set[str], evidence: collections.abc.Set[str]) -> int:
    """Claim numbers that no evidence number equals, rounded ("exceed 6" against "6.2" is
    the same number), when the evidence has numbers at all: "one in two" against "one in
    five" is 1."""
    values = [float(n) for n in evidence]
    if not values:
        return 0

    def same(a: float, b: float) -> bool:
        return a == b or (max(abs(a), abs(b)) >= 1 and round(a) == round(b))

    return sum(1 for n in claim if not any(same(float(n), v) for v in values))


def _effect(tokens: collections.abc.Sequence[str]) -> int:
    """The sign of the effect words in ``tokens`` (their product), flipped by a negation."""
    signs = [sign for sign in map(_effect_sign, tokens) if sign]
    if not signs or len(signs) > 3:
        return 0
    negated = sum(1 for t in tokens if t in language.NEGATIONS) % 2 == 1
    return math.prod(signs) * (-1 if negated else 1)


@functools.lru_cache(maxsize=65536)
def _effect_sign(token: str) -> int:
    """+1 for a word of causing, -1 for one of preventing, 0 otherwise (a token repeats
    across pairs: matched once)."""
    return 1 if _EFFECT_UP.match(token) else -1 if _EFFECT_DOWN.match(token) else 0


def _near(tokens: collections.abc.Sequence[str], anchors: collections.abc.Set[str]) -> list[str]:
    """The tokens within 6 of a token in ``anchors`` (all of them when none is)."""
    at = [i for i, t in enumerate(tokens) if t in anchors]
    if not at:
        return list(tokens)
    keep = {j for i in at for j in range(i - 6, i + 7)}
    return [t for j, t in enumerate(tokens) if j in keep]


def _lexicon_cues(claim: collections.abc.Set[str], top: collections.abc.Set[str],
                  first: collections.abc.Set[str], score: float) -> list[float]:
    """WordNet antonyms with one side in the claim only and the other in the best
    sentences only; affix-negated words in the claim and not near it in the evidence, and
    the other way round (stems on both sides)."""
    opposite, negative = sentences.lexicon()
    conflicts = sum(1 for stem in claim - top for other in opposite.get(stem, ()) if other in top - claim)
    claim_negative = claim & negative
    claim_only = float(bool(claim_negative - top))
    return [float(conflicts), float(bool(claim_negative)), claim_only,
            float(bool((first & negative) - claim)), claim_only * score]


def _groups(tokens: collections.abc.Set[str]) -> set[int]:
    return {i for i, group in enumerate(_GROUPS) if not group.isdisjoint(tokens)}


def _cues(tokens: collections.abc.Iterable[str]) -> set[str]:
    present: set[str] = set()
    for token in tokens:
        present.update(_cues_of(token))
    return present


@functools.lru_cache(maxsize=65536)
def _cues_of(token: str) -> tuple[str, ...]:
    """The cues one token carries (a token repeats across pairs: computed once)."""
    return tuple(cue for cue in CUES if token == cue or (cue not in _WHOLE and token.startswith(cue)))


def _effective(p: language.Polarity) -> int:
    return p.direction * (-1 if p.negated else 1)


class Featurizer:
    """Turns (claim, passages) into :data:`NAMES`-ordered vectors (training and the
    benches; the shipped judge ranks with :class:`~citerun.pipeline.judging.sentences.Ranker`
    alone)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._ranker = sentences.Ranker(embedder)

    def features(self, claim: str, passages: collections.abc.Sequence[Passage]) -> PairFeatures | None:
        """The pair's features, or ``None`` when there is nothing to compare."""
        ranked = self._ranker.rank(claim, passages)
        if ranked is None:
            return None
        return PairFeatures(vector(self._embedder, ranked), ranked.sentences)


def vector(embedder: Embedder, ranked: sentences.Ranked) -> Vector:
    """The :data:`NAMES`-ordered features of a ranked pair."""
    words, claim_tokens, matches, found = list(ranked.words), list(ranked.tokens), ranked.matches, ranked.found
    ranked_sentences = list(ranked.sentences)
    vectors = ranked.vectors
    own = list(dict.fromkeys(t for t in claim_tokens
                             if t not in language.STOPWORDS or t in language.NEGATIONS))
    first = ranked_sentences[0]
    second = ranked_sentences[1] if len(ranked_sentences) > 1 else first
    top = ranked_sentences[:3]
    top_tokens = frozenset().union(*(s.candidate.tokens for s in ranked_sentences[:2]))
    all_tokens = frozenset().union(*(s.candidate.tokens for s in ranked_sentences))

    anchors = language.anchors_of(ranked.claim, first.candidate.sentence)
    claim_polarity = language.polarity_of(ranked.claim, anchors)
    sentence_polarity = language.polarity_of(first.candidate.sentence, anchors)
    others = [language.polarity_of(s.candidate.sentence,
                                   language.anchors_of(ranked.claim, s.candidate.sentence))
              for s in top]
    claim_direction = _effective(claim_polarity)
    sentence_direction = _effective(sentence_polarity)
    conflict1 = float(not language.agree(claim_polarity, sentence_polarity))
    conflict_any = float(any(not language.agree(language.polarity_of(
        ranked.claim, language.anchors_of(ranked.claim, s.candidate.sentence)), p)
        for s, p in zip(top, others)))
    neg_mismatch1 = float(claim_polarity.negated != sentence_polarity.negated)
    neg_mismatch_any = float(any(claim_polarity.negated != p.negated for p in others))

    claim_hedge = float(any(t in _HEDGES for t in claim_tokens))
    sentence_hedge = float(any(t in _HEDGES for t in first.candidate.tokens))
    claim_set = frozenset(claim_tokens)
    top_set = frozenset().union(*(s.candidate.tokens for s in top))
    claim_stems, top_stems = sentences.stems(claim_set), sentences.stems(top_set)
    antonyms = sentences.antonym_conflicts(claim_stems, top_stems)
    claim_numbers = _numbers(ranked.claim)
    evidence_numbers = _numbers(" ".join(s.candidate.sentence for s in ranked_sentences))
    unmatched = [t for t in own if not found(t, top_tokens)]
    polar_unmatched = sum(1 for t in unmatched if language.is_polarity_word(t))
    score1 = first.score
    scalars = [
        first.similarity, second.similarity, first.coverage, second.coverage,
        first.context_coverage, score1, second.score, score1 - second.score,
        sum(1 for w in words if found(w, top_tokens)) / len(words),
        sum(1 for w in words if found(w, all_tokens)) / len(words),
        float(vectors[1] @ vectors[0]), numpy.log1p(len(words)), numpy.log1p(len(ranked_sentences)),
        float(claim_polarity.negated), float(sentence_polarity.negated),
        float(any(p.negated for p in others)), neg_mismatch1, neg_mismatch_any,
        float(claim_direction), float(sentence_direction),
        float(claim_direction * sentence_direction > 0),
        float(claim_direction * sentence_direction < 0),
        conflict_any, conflict1 * score1, neg_mismatch1 * score1,
        claim_hedge, sentence_hedge, float(claim_hedge != sentence_hedge),
        float(antonyms), float(antonyms) * score1,
        float(len(claim_numbers)),
        len(claim_numbers & evidence_numbers) / max(len(claim_numbers), 1),
        float(len(claim_numbers - evidence_numbers)),
        len(unmatched) / max(len(claim_tokens), 1), float(polar_unmatched),
    ]
    # Effect signs near the words the claim and each top sentence share.
    content = set(own) - language.NEGATIONS
    claim_effect = _effect(_near(claim_tokens, content))
    effects = []
    for sentence in top:
        claim_anchors = {w for w in content if found(w, sentence.candidate.tokens)}
        sentence_anchors = {t for t in sentence.candidate.tokens
                            if any(t in matches[w] for w in claim_anchors)}
        effects.append((_effect(_near(claim_tokens, claim_anchors)),
                        _effect(_near(language.tokenize(sentence.candidate.sentence), sentence_anchors))))
    agree_top = sum(1 for c, e in effects if c and e and c == e)
    conflict_top = sum(1 for c, e in effects if c and e and c != e)
    conflict_first = float(bool(effects) and effects[0][0] * effects[0][1] < 0)
    near_numbers = _numbers(" ".join(s.candidate.sentence for s in top))
    claim_groups, evidence_groups = _groups(claim_set), _groups(top_set)
    scalars += [
        float(claim_effect), float(agree_top), float(conflict_top), conflict_first * score1,
        float(sentences.prefix_antonyms(claim_set, top_set)),
        float(_numbers_apart(claim_numbers, near_numbers)),
        float(bool(claim_groups - evidence_groups) and bool(evidence_groups - claim_groups)),
        float(len(claim_groups - evidence_groups)),
    ]
    scalars += _lexicon_cues(claim_stems, top_stems, sentences.stems(first.candidate.tokens), score1)
    scalars += _alignment(embedder, own, top_set, found)
    claim_cues = _cues(claim_tokens)
    near_cues = _cues(top_tokens)
    best_cues = _cues(first.candidate.tokens)
    cue_flags = [float(c in claim_cues and c not in near_cues) for c in CUES] + [
        float(c in best_cues and c not in claim_cues) for c in CUES]
    return numpy.asarray(scalars + cue_flags, dtype=numpy.float32).astype(numpy.float32)


def _normalised(vectors: typing.Any) -> Vector:
    array = numpy.asarray(vectors, dtype=numpy.float32)
    norms = numpy.linalg.norm(array, axis=1, keepdims=True)
    return (array / numpy.where(norms == 0, 1, norms)).astype(numpy.float32)


def _alignment(embedder: Embedder, own: list[str], top_set: frozenset[str],
               found: typing.Callable[[str, frozenset[str]], bool]) -> list[float]:
    """Each claim word against the words of the best sentences by their vectors: how
    well the least-aligned words are met (a paraphrase counts, which the same-word
    coverage misses), and substitutions: a claim word missing from the evidence whose
    closest evidence word is itself missing from the claim (increases/reduces,
    scarce/expanded), with the signs of their effects."""
    claim_words = [w for w in own if w not in language.NEGATIONS and not w.isdigit()]
    evidence = sorted(t for t in top_set if t not in language.STOPWORDS and not t.isdigit())
    if not claim_words or not evidence:
        return [0.0] * 6
    vectors = _normalised(embedder.embed(claim_words + evidence))
    cos = vectors[:len(claim_words)] @ vectors[len(claim_words):].T
    best = cos.max(axis=1)
    ranked = numpy.sort(best)
    claim_set = frozenset(claim_words)
    top_tokens = frozenset(evidence)
    subst_sim, subst_count, conflict = 0.0, 0, 0.0
    for i, word in enumerate(claim_words):
        if found(word, top_tokens):
            continue
        j = int(cos[i].argmax())
        other = evidence[j]
        if any(language.same_word(other, w) for w in claim_set):
            continue
        similarity = float(cos[i, j])
        subst_count += similarity >= 0.5
        if similarity > subst_sim:
            subst_sim = similarity
            conflict = float(_effect_sign(word) * _effect_sign(other) < 0)
    return [float(ranked[0]), float(ranked[1] if len(ranked) > 1 else ranked[0]),
            float(best.mean()), subst_sim, float(subst_count), conflict]
