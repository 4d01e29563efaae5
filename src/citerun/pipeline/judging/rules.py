"""The rule-based embedded judge: thresholds over similarity, coverage and polarity.

Kept beside the trained judge (:mod:`.model`) as its readable baseline and for the
evidence sentences it picks; it changes when its rules or thresholds change.
"""

from __future__ import annotations

import asyncio
import collections.abc
import dataclasses
import math

import numpy
import pydantic

from citerun.pipeline.judging import language
from citerun.pipeline.judging.types import (
    Embedder,
    Evidence,
    Judgement,
    Passage,
    Verdict,
)

# --- the embedded judge --------------------------------------------------------------


class RulesJudgeConfig(pydantic.BaseModel):
    """Thresholds of :class:`RulesJudge`; scores are 0-1."""

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
    def _ordered(self) -> RulesJudgeConfig:
        if self.partially_supported > self.supported:
            raise ValueError("partially_supported must not be above supported")
        return self


@dataclasses.dataclass(frozen=True)
class _Scored:
    part: language.Part
    candidate: language.Candidate
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


class RulesJudge:
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

    def __init__(self, embedder: Embedder, config: RulesJudgeConfig | None = None) -> None:
        self._embedder = embedder
        self._config = config or RulesJudgeConfig()

    async def judge(
        self, claim: str, passages: collections.abc.Sequence[Passage]
    ) -> Judgement:
        """Judge ``claim`` against the sentences of ``passages`` (in a thread: an
        embedder may be a blocking HTTP client)."""
        return await asyncio.to_thread(self.judge_sync, claim, passages)

    def judge_sync(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Judgement:
        """:meth:`judge`, in the calling thread."""
        candidates = language.unique(c for p in passages for c in language.candidates_of(p))
        parts = language.claim_parts(claim)
        if not candidates or not parts[0].words:
            return Judgement(
                Verdict.UNSUPPORTED,
                0.5,
                (),
                "No sentence of the source was retrieved for this claim."
                if not candidates else "The claim has no content words to look for.",
            )
        by_part = self._score(parts, candidates)
        config = self._config
        contradiction = self._contradiction(by_part)
        if contradiction is not None:
            found, conflict = contradiction
            confidence = 0.5 + 0.5 * min(found.similarity, found.coverage)
            return Judgement(
                Verdict.CONTRADICTED,
                round(min(confidence, 0.95), 3),
                (_evidence(found),),
                f"A sentence of the source ({language.pages(found.passage)}) talks about the same "
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
            f"The best sentence of the source ({language.pages(best.passage)}) {how}: similarity "
            f"{best.similarity:.2f}, {best.coverage:.0%} of the content words, "
            f"score {best.score:.2f}.",
        )

    def covered_part(self, claim: str, passages: collections.abc.Sequence[Passage], *,
                     conjuncts_only: bool = False) -> str | None:
        """The one part of a claim of several parts that a sentence states, or ``None``.

        For the trained judge, which reads a claim as one statement: "narrow streets or
        scarce green space" against a source on narrow streets only is part-support.
        ``None`` when the claim has one part, or the whole claim is what scores. With
        ``conjuncts_only``: only for a coordination ("A or B", "A and B"), and then any
        part that scores, the whole included (some of its items are stated).
        """
        candidates = language.unique(c for p in passages for c in language.candidates_of(p))
        parts = language.claim_parts(claim)
        if not candidates or len(parts) < 2 or not parts[0].words:
            return None
        by_part = self._score(parts, candidates)
        if self._contradiction(by_part) is not None:
            return None
        partial = self._partial(by_part)
        if partial is None:
            return None
        if conjuncts_only:
            # A coordination cited to several sources: each states some of its items.
            coordinated = any(p.role == "conjunct" for p in parts)
            return partial.part.text if coordinated else None
        return None if partial.part is parts[0] else partial.part.text

    def _contradiction(self, by_part: list[list[_Scored]]) -> tuple[_Scored, str] | None:
        config = self._config
        for scored in by_part:
            if not scored[0].part.required:
                continue
            for s in scored:
                if s.similarity < config.contradiction_similarity or s.coverage < config.contradiction_coverage:
                    continue
                anchors = language.anchors_of(s.part.text, s.sentence)
                claim_polarity = language.polarity_of(s.part.text, anchors)
                sentence_polarity = language.polarity_of(s.sentence, anchors)
                if language.agree(claim_polarity, sentence_polarity):
                    if sentence_polarity.explicit:
                        break  # a better sentence says it with the same polarity
                    continue
                conflict = language.polarity_conflict(s.part.text, s.sentence)
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

    def _score(self, parts: list[language.Part], candidates: list[language.Candidate]) -> list[list[_Scored]]:
        """For each part, every candidate scored against it, best first."""
        texts = [p.text for p in parts] + [c.sentence for c in candidates]
        raw = self._embedder.embed(texts)
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
                matched = sum(1 for w in part.words if language.found(w, candidate.tokens))
                in_context = sum(
                    1 for w in part.words
                    if not language.found(w, candidate.tokens) and language.found(w, candidate.context)
                )
                covered = (matched + context_weight * in_context) / max(len(part.words), 1)
                scored.append(_Scored(part, candidate, similarity, covered, matched,
                                      weight * similarity + (1 - weight) * covered))
            scored.sort(key=lambda s: -s.score)
            result.append(scored)
        return result


def _which(part: language.Part, parts: list[language.Part]) -> str:
    if part is parts[0]:
        return "the claim"
    return f'the clause "{language.short(part.text, 80)}"'


def _evidence(scored: _Scored) -> Evidence:
    return Evidence(
        quote=scored.sentence,
        page_start=scored.passage.page_start,
        page_end=scored.passage.page_end,
        score=round(scored.score, 3),
        chunk_id=scored.passage.chunk_id,
    )


