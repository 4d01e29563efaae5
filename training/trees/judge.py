"""The embedded judge with the switches the shipped one dropped (issue 50).

The shipped judge (:class:`citerun.pipeline.judging.embedded.TrainedJudge`) decides with
the reader alone. The benches compare it with what it replaced and with candidates, and
training fits calibrations on what those compute, so :class:`ResearchJudge` adds, as
:class:`Research` fields beside the shipped settings:

- ``reader: false``: the trees over the hand features decide (:mod:`training.trees.model`,
  :mod:`training.trees.features`; the judge before issue 23's step 3), calibrated out of
  domain by ``calibration.json`` beside them unless ``calibrated`` is off;
- ``model_file`` / ``calibration_file``: trees and their calibration of one's own;
- ``reader_file`` / ``reader_calibration_file``: a reader and its calibration of one's own
  (a reader of one's own without one runs uncalibrated), and a calibration that joins the
  trees' probabilities to the reader's logits (``training.fit_reader_calibration --trees``);
- ``sure_support``: the trees' bar below which a SUPPORT the rule judge does not confirm is
  only ``partially_supported``.

:func:`make` builds a judge from one JSON object of both kinds of fields (the benches'
``--config``): the shipped judge when it names no research field.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import pathlib
import typing

import numpy
import numpy.typing
import pydantic

from citerun.pipeline.judging import embedded, german, reader, sentences
from citerun.pipeline.judging.embedded import TrainedJudgeConfig
from citerun.pipeline.judging.types import Embedder, Judgement, Passage, Verdict
from training.trees import features, model

Array = numpy.typing.NDArray[numpy.float64]


class Research(pydantic.BaseModel):
    """The switches of :class:`ResearchJudge` (the benches' and training's only)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    reader: bool = pydantic.Field(
        default=True, description="Decide with the reader; false: the trees over the hand features.")
    reader_file: pathlib.Path | None = pydantic.Field(
        default=None, description="A reader written by training/fit_reader.py; None for the package's.")
    reader_calibration_file: pathlib.Path | None = pydantic.Field(
        default=None,
        description="A calibration written by training/fit_reader_calibration.py for `reader_file`; "
        "None for the package's (when the reader is the package's) or none.")
    model_file: pathlib.Path | None = pydantic.Field(
        default=None, description="Trees written by training/judge.py; None for those beside this module.")
    calibrated: bool = pydantic.Field(
        default=True,
        description="Apply the calibrations: the reader's, and the trees' out-of-domain one "
        "(`calibration_file`, or the one beside the trees when the trees are those). Trees of "
        "one's own without a `calibration_file` run uncalibrated.")
    calibration_file: pathlib.Path | None = pydantic.Field(
        default=None, description="A calibration written by training/fit_calibration.py for the trees in use.")
    sure_support: float = pydantic.Field(
        default=0.7, ge=0.0, le=1.0,
        description="The trees: below this probability a SUPPORT decision that the rule judge "
        "does not confirm becomes `partially_supported` (capped at 0.5 confidence).")


def make(embedder: Embedder, fields: collections.abc.Mapping[str, typing.Any], *,
         german_dictionary: german.Dictionary | None = None) -> embedded.TrainedJudge:
    """The judge ``fields`` (shipped settings and :class:`Research` fields, as JSON) asks
    for: the shipped :class:`~citerun.pipeline.judging.embedded.TrainedJudge` when they
    name no research field."""
    research = {k: v for k, v in fields.items() if k in Research.model_fields}
    config = TrainedJudgeConfig(**{k: v for k, v in fields.items() if k not in research})
    if not research:
        return embedded.TrainedJudge(embedder, config, german_dictionary=german_dictionary)
    return ResearchJudge(embedder, config, Research(**research), german_dictionary=german_dictionary)


@dataclasses.dataclass(frozen=True)
class TreeSignals(embedded.Signals):
    """The shipped judge's signals and the trees' probabilities (None where they do not count)."""

    trees: Array | None = None


class ResearchJudge(embedded.TrainedJudge):
    """The shipped judge, or the trees, with the switches of :class:`Research`."""

    def __init__(self, embedder: Embedder, config: TrainedJudgeConfig | None = None,
                 research: Research | None = None, *, german_dictionary: german.Dictionary | None = None,
                 trees: bool = False) -> None:
        """``trees``: compute the trees' probabilities in :meth:`signals` even where they do
        not decide (to fit a calibration that joins them)."""
        self._research = research = research or Research()
        self._embedder = embedder
        self._model_path = research.model_file or model.ARTIFACT
        self._model: model.Model | None = None
        self._calibration: model.Recalibration | None = None
        own = research.reader_file is not None or research.reader_calibration_file is not None
        if not own:
            own_reader = (reader.shipped() if research.calibrated
                          else reader.Reader(reader.MODEL, reader.TOKENIZER))
        else:
            reader_path = research.reader_file or reader.MODEL
            reader_calibration = research.reader_calibration_file or (
                reader.CALIBRATION if research.reader_file is None else None)
            own_reader = reader.Reader(
                reader_path, reader.TOKENIZER,
                reader.Calibration.load(reader_calibration, reader_path, self._model_path)
                if research.calibrated and reader_calibration else None)
        super().__init__(embedder, config, german_dictionary=german_dictionary, own_reader=own_reader)
        self._always_trees = trees
        if self._trees_count():
            self._load_trees()

    def _trees_count(self) -> bool:
        """Whether the trees' probabilities are computed: they decide, the reader's
        calibration joins them, or they were asked for."""
        return not self._research.reader or bool(self.reader.calibration.trees_weight) or self._always_trees

    def _load_trees(self) -> model.Model:
        if self._model is None:
            self._model = _load(self._model_path)
            calibration = self._research.calibration_file or (
                model.CALIBRATION if self._research.model_file is None else None)
            self._calibration = (model.Recalibration.load(calibration, self._model_path)
                                 if self._research.calibrated and calibration is not None else None)
        return self._model

    @property
    def trees(self) -> model.Model:
        """The trees, before their out-of-domain calibration (``training/fit_calibration.py``
        fits it); loaded on first use where the reader decides alone."""
        return self._load_trees()

    @property
    def calibration(self) -> model.Recalibration | None:
        """The trees' out-of-domain calibration in use (None with trees of one's own, or
        while the trees are not loaded)."""
        return self._calibration

    def signals(self, claim: str, passages: collections.abc.Sequence[Passage], *,
                read: bool = True) -> TreeSignals | None:
        """The shipped judge's signals (the reader's logits only where it decides) and the
        trees' probabilities where they count."""
        found = super().signals(claim, passages, read=read and self._research.reader)
        if found is None:
            return None
        trees = (self._load_trees().probabilities(features.vector(self._embedder, found.found)[None, :])[0]
                 if self._trees_count() else None)
        return TreeSignals(found.claim, found.found, found.logits, trees)

    def judge_sync(self, claim: str, passages: collections.abc.Sequence[Passage]) -> Judgement:
        signals = self.signals(claim, passages)
        if signals is None:
            return embedded.unfound(passages)
        claim, found = signals.claim, signals.found
        if self._research.reader and signals.logits is not None:
            return self._read(claim, passages, found, self.reader.calibration.apply(
                signals.logits[None, :], None if signals.trees is None else signals.trees[None, :])[0])
        assert signals.trees is not None
        return self._trees_verdict(claim, passages, found, signals.trees)

    def _trees_verdict(self, claim: str, passages: collections.abc.Sequence[Passage],
                       found: sentences.Ranked, probabilities: Array) -> Judgement:
        """The trees' verdict (the embedded judge's before issue 23, step 3)."""
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
            confidence, evidence = p_support, embedded._close(found)  # noqa: SLF001 - the shipped judge's own helpers
            unclear = p_support < config.supported_min
            if unclear:
                verdict, how = Verdict.PARTIALLY_SUPPORTED, "leans towards the claim, but not clearly"
            else:
                verdict, how = Verdict.SUPPORTED, "states the claim"
                part = self._rules.covered_part(claim, passages)
                if part is not None:
                    verdict, how = Verdict.PARTIALLY_SUPPORTED, f'covers only part of the claim ("{part}")'
                elif (p_support < self._research.sure_support
                      and self._rules.judge_sync(claim, passages).verdict != Verdict.SUPPORTED):
                    # Not sure, and the word-overlap reading does not find the claim
                    # stated: the two readings disagree, so abstain.
                    verdict, confidence, unclear = Verdict.PARTIALLY_SUPPORTED, min(p_support, 0.5), True
                    how = "may state the claim, but does not restate it"
            if (unclear and config.contradicted_min > 0 and p_contradict > p_nei
                    and (opposite := _opposite(claim, found, config, directions_only=True))):
                # Not clearly for the claim, a contradiction the runner-up, and a sentence as
                # close to it states the opposite by a direction ("fall" against "rose"): not
                # "partially supported", but shown to be checked (issue 23).
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
                verdict, confidence, how, evidence = embedded._part_stated(claim, part, found, p_contradict)  # noqa: SLF001
        else:
            verdict, confidence, how = Verdict.UNSUPPORTED, p_nei, "is the closest, but does not state the claim"
            evidence = [best]
            part = self._item_stated(claim, passages, p_support, either=True)
            if part is not None:
                # Support for one part of "A or B" is not what the model was trained to see.
                verdict, confidence, how, evidence = embedded._part_stated(claim, part, found, p_nei)  # noqa: SLF001
        return embedded._judgement(claim, verdict, confidence, evidence, best, how, probs,  # noqa: SLF001
                                   unsure or confidence < config.abstain_below, config.max_evidence)


@functools.lru_cache(maxsize=4)
def _load(path: pathlib.Path) -> model.Model:
    return model.Model.load(path)


def _opposite(claim: str, found: sentences.Ranked, config: TrainedJudgeConfig,
              *, directions_only: bool = False) -> sentences.Sentence | None:
    """The shipped judge's sentence that states the opposite; without the gate
    (``contradicted_min`` 0), the best sentence."""
    if config.contradicted_min <= 0:
        return found.sentences[0]
    return embedded._opposite(claim, found, config, directions_only=directions_only)  # noqa: SLF001
