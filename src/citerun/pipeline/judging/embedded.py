"""The default judge, offline: the reader over the source's best sentences, calibrated.

:class:`TrainedJudge` ranks the sentences of the passages (:class:`.sentences.Ranker`),
has the reader (:mod:`.reader`, a cross-encoder; issue 23) read the claim against the
best of them, and turns its calibrated probabilities of SUPPORT / CONTRADICT /
NOT-ENOUGH-INFO into a verdict, saying so when it is unsure instead of guessing (see
:meth:`TrainedJudge._read` and the table "Verdicts" of docs/report.md): ``contradicted``
only with a sentence that states the opposite, shown; a SUPPORT below ``supported_min``
is ``partially_supported``; a decision below ``abstain_below``, or a contradiction it
cannot show, is marked "check this"; the confidence is the calibrated probability that
the verdict's class is right. A German claim is glossed into English first
(:mod:`.german`). Claims with several parts are also checked part by part by the rule
judge's coverage test: a source that states only one part gives ``partially_supported``
instead of ``supported`` (any part: "A; B") or instead of ``unsupported`` (one item of
"A or B", "A and B": a claim citing two sources for its two halves).

Its settings are :class:`~citerun.pipeline.judging.embedded_config.TrainedJudgeConfig`.
The trees it replaced, a reader of one's own and the other research switches live with
the benches and training that use them (``training/trees/``, issue 50).
"""

from __future__ import annotations

import asyncio
import collections.abc
import dataclasses
import re

import numpy
import numpy.typing

from citerun.pipeline.judging import german, language, reader, rules, sentences
from citerun.pipeline.judging.embedded_config import TrainedJudgeConfig as TrainedJudgeConfig
from citerun.pipeline.judging.types import (
    Embedder,
    Evidence,
    Judgement,
    Passage,
    Verdict,
)


@dataclasses.dataclass(frozen=True)
class Signals:
    """See :meth:`TrainedJudge.signals`."""

    claim: str
    found: sentences.Ranked
    logits: numpy.typing.NDArray[numpy.float64] | None

    def read_pair(self) -> tuple[str, str]:
        """The (claim, evidence) pair the reader reads: the claim as read against its best
        :data:`reader.SENTENCES` sentences joined (what ``logits`` were read from)."""
        return self.claim, reader.evidence_text([s.candidate.sentence for s in self.found.sentences[: reader.SENTENCES]])


class TrainedJudge:
    """Decides with the reader (see :mod:`.reader`) over the ranked sentences.

    What it learned: see the reader's ``MODEL_CARD.md``. What it cannot do: read a table
    or figure, follow support spread over a long argument, or know domain facts;
    contradictions that need world knowledge stay ``unsupported`` at best.
    """

    def __init__(self, embedder: Embedder, config: TrainedJudgeConfig | None = None, *,
                 german_dictionary: german.Dictionary | None = None,
                 own_reader: reader.Reader | None = None) -> None:
        """``german_dictionary``: for German claims; None for Ding's (:func:`.german.ding`).
        ``own_reader``: a reader of one's own (training and the benches measure
        candidates with it); None for the package's, calibrated."""
        self._config = config or TrainedJudgeConfig()
        self._german = german_dictionary
        self._ranker = sentences.Ranker(embedder)
        self._rules = rules.RulesJudge(embedder)
        self._reader = own_reader if own_reader is not None else reader.shipped()

    @property
    def ranker(self) -> sentences.Ranker:
        return self._ranker

    @property
    def reader(self) -> reader.Reader:
        return self._reader

    async def judge(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Judgement:
        """Judge ``claim`` against ``passages`` (CPU only, in a thread)."""
        return await asyncio.to_thread(self.judge_sync, claim, passages)

    def signals(self, claim: str, passages: collections.abc.Sequence[Passage], *,
                read: bool = True) -> Signals | None:
        """What the verdict is decided from: the claim as read (a German one glossed into
        English), its ranked sentences and the reader's raw logits of the claim against
        its best sentences (None with ``read`` off, for training data); None when no
        sentence was found. ``training/fit_reader_calibration.py`` fits the calibration
        on these."""
        if german.is_german(claim):
            # The source's words choose among a German word's translations.
            context = frozenset(language.content_words(" ".join(p.text for p in passages)))
            claim = german.gloss(claim, context, self._german)
        found = self._ranker.rank(claim, passages)
        if found is None:
            return None
        logits = (self._reader.read(claim, [s.candidate.sentence for s in found.sentences[: reader.SENTENCES]])
                  if read else None)
        return Signals(claim, found, logits)

    def judge_sync(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Judgement:
        """:meth:`judge`, in the calling thread; a German claim is glossed into English first."""
        signals = self.signals(claim, passages)
        if signals is None:
            return unfound(passages)
        assert signals.logits is not None
        return self._read(signals.claim, passages, signals.found,
                          self._reader.calibration.apply(signals.logits[None, :])[0])

    def _item_stated(self, claim: str, passages: collections.abc.Sequence[Passage], p_support: float,
                     *, either: bool = False) -> str | None:
        """The item of "A and B" the source states (the rule judge's coverage test), asked
        only when support is at least ``coordination_support_min`` or, with ``either``, the
        claim is "A or B" (stating one item is part-support); None otherwise."""
        if (either and _EITHER.search(claim)) or p_support >= self._config.coordination_support_min:
            return self._rules.covered_part(claim, passages, conjuncts_only=True)
        return None

    def _read(self, claim: str, passages: collections.abc.Sequence[Passage],
              found: sentences.Ranked, probabilities: numpy.typing.NDArray[numpy.float64]) -> Judgement:
        """The reader's verdict (issue 23): the claim read against its best sentences.

        ``supported`` when support is the most probable reading and at least
        ``supported_min``, else ``partially_supported`` marked for checking; ``contradicted``
        only when contradiction is the most probable reading, at least ``contradicted_min``,
        and one of the best sentences read alone contradicts the claim as surely: that
        sentence is the evidence. A contradiction short of that is ``unsupported`` and
        marked for checking, never an accusation. The confidence is the calibrated
        probability that the verdict's class is right.
        """
        assert self._reader is not None
        config = self._config
        top = found.sentences[: reader.SENTENCES]
        p_support, p_contradict, p_nei = (float(p) for p in probabilities)
        decision = max(range(3), key=lambda k: (p_support, p_contradict, p_nei)[k])
        best, evidence, unsure = top[0], list(top[:1]), False
        probs = (f"P(support) {p_support:.2f}, P(contradict) {p_contradict:.2f}, "
                 f"P(not enough info) {p_nei:.2f}")
        if decision == 0:
            confidence, evidence = p_support, _close(found)
            if p_support < config.supported_min:
                verdict, how, unsure = Verdict.PARTIALLY_SUPPORTED, "leans towards the claim, but not clearly", True
            else:
                verdict, how = Verdict.SUPPORTED, "states the claim"
                part = self._rules.covered_part(claim, passages)
                if part is not None:
                    verdict, how = Verdict.PARTIALLY_SUPPORTED, f'covers only part of the claim ("{part}")'
            if opposite := _opposite_direction(claim, found, config):
                # The reader reads support, but a sentence as close states the opposite
                # direction ("fall" against "rose"), which the reader was trained on too
                # little to weigh: neither a support nor an accusation, shown to be checked.
                verdict, confidence, evidence, unsure = Verdict.UNSUPPORTED, p_nei, [opposite], True
                best, how = opposite, "may say the opposite of the claim"
        elif decision == 1:
            each = self._reader.each(claim, [s.candidate.sentence for s in top])
            # The sentence to show: one of those read that states the opposite in words (a
            # negation, a direction, a word of opposite meaning) if there is one, else the
            # one the reader, reading each alone, finds the surest contradiction.
            lexical = [i for i, s in enumerate(top)
                       if sentences.opposite_of(claim, s.candidate.sentence, s.candidate.tokens)]
            index = max(lexical or range(len(top)), key=lambda i: float(each[i, 1]))
            alone = float(each[index, 1])
            stated = bool(lexical) or alone >= config.contradicted_min
            if p_contradict >= config.contradicted_min and stated:
                verdict, confidence, how = Verdict.CONTRADICTED, p_contradict, "says something incompatible with the claim"
                best = top[index]
                evidence = [best]
            else:
                # No sentence states the opposite on its own, or the reader is not sure:
                # no accusation without a passage to show (issue 23).
                verdict, confidence, unsure = Verdict.UNSUPPORTED, p_nei, True
                how = ("may disagree with the claim, but no sentence of it states the opposite"
                       if not stated else "may disagree with the claim, but not clearly")
                if stated:  # the sentence to check is the one that seems to say the opposite
                    best = top[index]
                    evidence = [best]
                part = self._item_stated(claim, passages, p_support)
                if part is not None:
                    # Unsure, and one item of "A and B" is stated: the doubt may be the
                    # other item, which the source need not mention at all.
                    verdict, confidence, how, evidence = _part_stated(claim, part, found, p_support)
        else:
            verdict, confidence, how = Verdict.UNSUPPORTED, p_nei, "is the closest, but does not state the claim"
            part = self._item_stated(claim, passages, p_support, either=True)
            if part is not None:
                verdict, confidence, how, evidence = _part_stated(claim, part, found, p_support)
            elif opposite := _opposite_direction(claim, found, config):
                # Not stated, and a sentence about as close states the opposite direction:
                # that sentence is the one to show, to be checked.
                evidence, best, unsure = [opposite], opposite, True
                how = "may say the opposite of the claim"
        return _judgement(claim, verdict, confidence, evidence, best, how, probs,
                          unsure or confidence < config.abstain_below, config.max_evidence)


_EITHER = re.compile(r"\s(?:or|oder)\s", re.IGNORECASE)


def unfound(passages: collections.abc.Sequence[Passage]) -> Judgement:
    """The judgement when no sentence of the source was ranked against the claim."""
    return Judgement(Verdict.UNSUPPORTED, 0.5, (),
                     "No sentence of the source was retrieved for this claim."
                     if passages else "The claim has no content words to look for.")


def _part_stated(claim: str, part: str, found: sentences.Ranked, probability: float
                 ) -> tuple[Verdict, float, str, list[sentences.Sentence]]:
    """``partially_supported`` for a claim of several items of which the source states
    ``part``: confidence capped at 0.5, the sentence stating it as the evidence."""
    how = (f'covers only part of the claim ("{part}")' if part != claim
           else "states some of the claim's items, not all")
    stating = [s for s in found.sentences if _states(s, part)][:1] or [found.sentences[0]]
    return Verdict.PARTIALLY_SUPPORTED, min(probability, 0.5), how, stating


def _states(sentence: sentences.Sentence, part: str) -> bool:
    words = language.content_words(part)
    return sum(1 for w in words if language.found(w, sentence.candidate.tokens)) >= max(2, len(words) // 2)


def _close(found: sentences.Ranked) -> list[sentences.Sentence]:
    """The sentences about as close to the claim as the best one (within 0.1 of its score)."""
    best = found.sentences[0]
    return [s for s in found.sentences if s.score >= best.score - 0.1]


def _opposite(claim: str, found: sentences.Ranked, config: TrainedJudgeConfig,
              *, directions_only: bool = False) -> sentences.Sentence | None:
    """The first of the best ``max_evidence`` sentences, or of those about as close as the
    best (:func:`_close`), that states the opposite of the claim
    (:func:`.sentences.opposite_of`)."""
    candidates = found.sentences[: max(config.max_evidence, len(_close(found)))]
    return next((s for s in candidates
                 if sentences.opposite_of(claim, s.candidate.sentence, s.candidate.tokens,
                                         directions_only=directions_only)), None)


def _opposite_direction(claim: str, found: sentences.Ranked, config: TrainedJudgeConfig
                        ) -> sentences.Sentence | None:
    """A sentence about as close as the best that states the opposite direction of the
    claim (the reader's "may say the opposite" check)."""
    return _opposite(claim, found, config, directions_only=True)


def _judgement(claim: str, verdict: Verdict, confidence: float, evidence: list[sentences.Sentence],
               best: sentences.Sentence, how: str, probs: str, doubt: bool, most: int) -> Judgement:
    """The judgement with its rationale: where the best sentence is, what it does, how
    close it is, the cues, the probabilities, and "check this" when in doubt."""
    return Judgement(
        verdict,
        round(min(max(confidence, 0.0), 0.99), 3),
        tuple(_evidence(s) for s in evidence[:most]),
        f"The best sentence of the source ({language.pages(best.candidate.passage)}) {how} "
        f"(similarity {best.similarity:.2f}, {best.coverage:.0%} of the content words"
        f"{_cues(claim, best)}); {probs}."
        + (" The judge is unsure: check this citation." if doubt else ""),
    )


def _cues(claim: str, best: sentences.Sentence) -> str:
    conflict = language.polarity_conflict(claim, best.candidate.sentence)
    return f"; {conflict}" if conflict else ""


def _evidence(sentence: sentences.Sentence) -> Evidence:
    passage = sentence.candidate.passage
    return Evidence(sentence.candidate.sentence, passage.page_start, passage.page_end,
                    round(float(numpy.clip(sentence.score, 0.0, 1.0)), 3), passage.chunk_id)
