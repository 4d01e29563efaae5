"""The default judge, offline: the reader over the source's best sentences, calibrated.

:class:`TrainedJudge` ranks the sentences of the passages (:class:`.features.Featurizer`),
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

With ``reader: false`` the trees over the hand features decide instead (the judge before
issue 23's step 3, kept for comparison: docs/benchmarks.md). Its settings are
:class:`~citerun.pipeline.judging.embedded_config.TrainedJudgeConfig`.
"""

from __future__ import annotations

import asyncio
import collections.abc
import dataclasses
import functools
import pathlib
import re

import numpy
import numpy.typing

from citerun.pipeline.judging import features, german, language, model, reader, rules
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
    found: features.PairFeatures
    trees: numpy.typing.NDArray[numpy.float64] | None
    logits: numpy.typing.NDArray[numpy.float64] | None

    def read_pair(self) -> tuple[str, str]:
        """The (claim, evidence) pair the reader reads: the claim as read against its best
        :data:`reader.SENTENCES` sentences joined (what ``logits`` were read from)."""
        return self.claim, reader.evidence_text([s.candidate.sentence for s in self.found.sentences[: reader.SENTENCES]])


class TrainedJudge:
    """Decides with the trained model (see :mod:`.model`) over :mod:`.features`.

    What it learned (SciFact train and perturbations of it): closeness of the claim to
    the best sentences, negation near the shared words, direction words, hedging,
    antonym pairs, numbers on one side only, and which kinds of claim words the evidence
    lacks. What it cannot do: read a table or figure, follow support spread over a long
    argument, or know domain facts; contradictions that need world knowledge or a
    population swap without any cue stay ``unsupported`` at best.
    """

    def __init__(self, embedder: Embedder, config: TrainedJudgeConfig | None = None, *,
                 german_dictionary: german.Dictionary | None = None, trees: bool = False) -> None:
        """``german_dictionary``: for German claims; None for Ding's (:func:`.german.ding`).
        ``trees``: compute the trees' probabilities in :meth:`signals` even where they do
        not decide (to fit a calibration that joins them)."""
        self._config = config or TrainedJudgeConfig()
        self._german = german_dictionary
        model_path = self._config.model_file or model.ARTIFACT
        self._model_path = model_path
        self._model: model.Model | None = None  # the trees: loaded only where they decide
        self._calibration: model.Recalibration | None = None
        self._featurizer = features.Featurizer(embedder)
        self._rules = rules.RulesJudge(embedder)
        self._reader: reader.Reader | None = None
        self._always_trees = trees
        if self._config.reader:
            own = self._config.reader_file is not None or self._config.reader_calibration_file is not None
            if not own:
                self._reader = reader.shipped(self._config.calibrated, model_path)
            else:
                reader_path = self._config.reader_file or reader.MODEL
                reader_calibration = self._config.reader_calibration_file or (
                    reader.CALIBRATION if self._config.reader_file is None else None)
                self._reader = reader.Reader(
                    reader_path, reader.TOKENIZER,
                    reader.Calibration.load(reader_calibration, reader_path, model_path)
                    if self._config.calibrated and reader_calibration else None)
        # The trees (740 KB) and their calibration only where they count: without the
        # reader, joined to it by its calibration, or asked for (issue 38: the shipped
        # judge loaded them to give them weight 0).
        if self._reader is None or self._reader.calibration.trees_weight or trees:
            self._load_trees()

    def _load_trees(self) -> model.Model:
        if self._model is None:
            self._model = _load(self._model_path)
            calibration = self._config.calibration_file or (
                model.CALIBRATION if self._config.model_file is None else None)
            self._calibration = (model.Recalibration.load(calibration, self._model_path)
                                 if self._config.calibrated and calibration is not None else None)
        return self._model

    @property
    def featurizer(self) -> features.Featurizer:
        return self._featurizer

    @property
    def trees(self) -> model.Model:
        """The trees, before the calibration (``training/fit_calibration.py`` fits it);
        loaded on first use where the reader decides alone."""
        return self._load_trees()

    @property
    def calibration(self) -> model.Recalibration | None:
        """The trees' out-of-domain calibration in use (None with a model of one's own, or
        while the trees are not loaded)."""
        return self._calibration

    async def judge(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Judgement:
        """Judge ``claim`` against ``passages`` (CPU only, in a thread)."""
        return await asyncio.to_thread(self.judge_sync, claim, passages)

    @property
    def reader(self) -> reader.Reader | None:
        return self._reader

    def signals(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Signals | None:
        """What the verdict is decided from: the claim as read (a German one glossed into
        English), its ranked sentences, the trees' probabilities and the reader's raw
        logits of the claim against its best sentences; None when no sentence was found.
        ``training/fit_reader_calibration.py`` fits the calibration on these."""
        if german.is_german(claim):
            # The source's words choose among a German word's translations.
            context = frozenset(language.content_words(" ".join(p.text for p in passages)))
            claim = german.gloss(claim, context, self._german)
        found = self._featurizer.features(claim, passages)
        if found is None:
            return None
        logits = (self._reader.read(claim, [s.candidate.sentence for s in found.sentences[: reader.SENTENCES]])
                  if self._reader is not None else None)
        # The trees only where they decide: without the reader, or joined to it by its calibration.
        trees = (self._load_trees().probabilities(found.vector[None, :])[0]
                 if self._reader is None or self._reader.calibration.trees_weight or self._always_trees
                 else None)
        return Signals(claim, found, trees, logits)

    def judge_sync(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Judgement:
        """:meth:`judge`, in the calling thread; a German claim is glossed into English first."""
        signals = self.signals(claim, passages)
        if signals is None:
            return Judgement(Verdict.UNSUPPORTED, 0.5, (),
                             "No sentence of the source was retrieved for this claim."
                             if passages else "The claim has no content words to look for.")
        claim, found = signals.claim, signals.found
        if self._reader is not None and signals.logits is not None:
            return self._read(claim, passages, found, self._reader.calibration.apply(
                signals.logits[None, :], None if signals.trees is None else signals.trees[None, :])[0])
        assert signals.trees is not None
        probabilities = signals.trees
        if self._calibration is not None:
            probabilities = self._calibration.apply(probabilities[None, :])[0]
            decision = int(numpy.argmax(probabilities))
        else:
            decision = int(self._load_trees().decide(probabilities[None, :])[0])
        p_support, p_contradict, p_nei = (float(p) for p in probabilities)
        config = self._config
        best = found.sentences[0]
        unsure = False
        probs = f"P(support) {p_support:.2f}, P(contradict) {p_contradict:.2f}, P(not enough info) {p_nei:.2f}"
        if decision == 0:
            confidence, evidence = p_support, _close(found)
            unclear = p_support < config.supported_min
            if unclear:
                verdict, how = Verdict.PARTIALLY_SUPPORTED, "leans towards the claim, but not clearly"
            else:
                verdict, how = Verdict.SUPPORTED, "states the claim"
                part = self._rules.covered_part(claim, passages)
                if part is not None:
                    verdict, how = Verdict.PARTIALLY_SUPPORTED, f'covers only part of the claim ("{part}")'
                elif (p_support < config.sure_support
                      and self._rules.judge_sync(claim, passages).verdict != Verdict.SUPPORTED):
                    # Not sure, and the word-overlap reading does not find the claim
                    # stated: the two readings disagree, so abstain.
                    verdict, confidence, unclear = Verdict.PARTIALLY_SUPPORTED, min(p_support, 0.5), True
                    how = "may state the claim, but does not restate it"
            if (unclear and config.contradicted_min > 0 and p_contradict > p_nei
                    and (opposite := _opposite(claim, found, config, directions_only=True))):
                # Not clearly for the claim, a contradiction the runner-up, and a sentence as
                # close to it states the opposite by a direction ("fall" against "rose"): not "partially supported", but shown to
                # be checked (issue 23).
                verdict, confidence, evidence, unsure = Verdict.UNSUPPORTED, min(1 - p_support, 0.5), [opposite], True
                best, how = opposite, "may say the opposite of the claim, but not clearly"
        elif decision == 1:
            opposite = _opposite(claim, found, config)
            if opposite is not None and p_contradict >= config.contradicted_min:
                verdict, confidence, how = Verdict.CONTRADICTED, p_contradict, "says something incompatible with the claim"
                best, evidence = opposite, [opposite]
            else:
                # No sentence states the opposite, or the model is not sure enough: no
                # accusation without a passage to show (issue 23).
                verdict, confidence = Verdict.UNSUPPORTED, min(p_contradict, 0.5)
                how = ("may disagree with the claim, but no sentence of it states the opposite"
                       if opposite is None else "may disagree with the claim, but not clearly")
                evidence, unsure = [best], True
            part = (self._rules.covered_part(claim, passages, conjuncts_only=True)
                    if p_contradict < config.abstain_below else None)
            if part is not None:
                # Unsure, and one item of "A and B" is stated: the doubt may be the other
                # item, which the source need not mention at all; say "part of it".
                verdict, confidence, how, evidence = _part_stated(claim, part, found, p_contradict)
        else:
            verdict, confidence, how = Verdict.UNSUPPORTED, p_nei, "is the closest, but does not state the claim"
            evidence = [best]
            part = self._item_stated(claim, passages, p_support, either=True)
            if part is not None:
                # Support for one part of "A or B" is not what the model was trained to see.
                verdict, confidence, how, evidence = _part_stated(claim, part, found, p_nei)
        return _judgement(claim, verdict, confidence, evidence, best, how, probs,
                          unsure or confidence < config.abstain_below, config.max_evidence)

    def _item_stated(self, claim: str, passages: collections.abc.Sequence[Passage], p_support: float,
                     *, either: bool = False) -> str | None:
        """The item of "A and B" the source states (the rule judge's coverage test), asked
        only when support is at least ``coordination_support_min`` or, with ``either``, the
        claim is "A or B" (stating one item is part-support); None otherwise."""
        if (either and _EITHER.search(claim)) or p_support >= self._config.coordination_support_min:
            return self._rules.covered_part(claim, passages, conjuncts_only=True)
        return None

    def _read(self, claim: str, passages: collections.abc.Sequence[Passage],
              found: features.PairFeatures, probabilities: numpy.typing.NDArray[numpy.float64]) -> Judgement:
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
                       if features.opposite_of(claim, s.candidate.sentence, s.candidate.tokens)]
            index = max(lexical or range(len(top)), key=lambda i: float(each[i, 1]))
            alone = float(each[index, 1])
            stated = bool(lexical) or (not config.contradiction_needs_words
                                       and alone >= config.contradicted_min)
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


@functools.lru_cache(maxsize=4)
def _load(path: pathlib.Path) -> model.Model:
    return model.Model.load(path)


def _part_stated(claim: str, part: str, found: features.PairFeatures, probability: float
                 ) -> tuple[Verdict, float, str, list[features.Sentence]]:
    """``partially_supported`` for a claim of several items of which the source states
    ``part``: confidence capped at 0.5, the sentence stating it as the evidence."""
    how = (f'covers only part of the claim ("{part}")' if part != claim
           else "states some of the claim's items, not all")
    stating = [s for s in found.sentences if _states(s, part)][:1] or [found.sentences[0]]
    return Verdict.PARTIALLY_SUPPORTED, min(probability, 0.5), how, stating


def _states(sentence: features.Sentence, part: str) -> bool:
    words = language.content_words(part)
    return sum(1 for w in words if language.found(w, sentence.candidate.tokens)) >= max(2, len(words) // 2)


def _close(found: features.PairFeatures) -> list[features.Sentence]:
    """The sentences about as close to the claim as the best one (within 0.1 of its score)."""
    best = found.sentences[0]
    return [s for s in found.sentences if s.score >= best.score - 0.1]


def _opposite(claim: str, found: features.PairFeatures, config: TrainedJudgeConfig,
              *, directions_only: bool = False, gate: bool = False) -> features.Sentence | None:
    """The first of the best ``max_evidence`` sentences, or of those about as close as the
    best (:func:`_close`), that states the opposite of the claim
    (:func:`.features.opposite_of`); without the gate (``contradicted_min`` 0), the best,
    unless ``gate`` (the reader's checks, which always look for the sentence itself)."""
    if config.contradicted_min <= 0 and not gate:
        return found.sentences[0]
    candidates = found.sentences[: max(config.max_evidence, len(_close(found)))]
    return next((s for s in candidates
                 if features.opposite_of(claim, s.candidate.sentence, s.candidate.tokens,
                                         directions_only=directions_only)), None)


def _opposite_direction(claim: str, found: features.PairFeatures, config: TrainedJudgeConfig
                        ) -> features.Sentence | None:
    """With ``opposite_check``: a sentence about as close as the best that states the
    opposite direction of the claim (the reader's "may say the opposite" check)."""
    return _opposite(claim, found, config, gate=True, directions_only=True) if config.opposite_check else None


def _judgement(claim: str, verdict: Verdict, confidence: float, evidence: list[features.Sentence],
               best: features.Sentence, how: str, probs: str, doubt: bool, most: int) -> Judgement:
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


def _cues(claim: str, best: features.Sentence) -> str:
    conflict = language.polarity_conflict(claim, best.candidate.sentence)
    return f"; {conflict}" if conflict else ""


def _evidence(sentence: features.Sentence) -> Evidence:
    passage = sentence.candidate.passage
    return Evidence(sentence.candidate.sentence, passage.page_start, passage.page_end,
                    round(float(numpy.clip(sentence.score, 0.0, 1.0)), 3), passage.chunk_id)
