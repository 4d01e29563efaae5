"""The settings of the embedded judge (:class:`~citerun.pipeline.judging.embedded.TrainedJudge`):
which reader or trees decide, their calibration, and the probabilities at which each
verdict is said (``judge.embedded`` of the pipeline settings, a run's spec may override
them)."""

from __future__ import annotations

import pathlib

import pydantic


class TrainedJudgeConfig(pydantic.BaseModel):
    """Settings of :class:`TrainedJudge`; probabilities are calibrated (0-1)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    reader: bool = pydantic.Field(
        default=True,
        description=(
            "Decide with the reader, the cross-encoder that reads the claim against the "
            "best sentences (citerun.pipeline.judging.reader; issue 23), instead of the "
            "trees over hand features. The trees stay for comparison: docs/benchmarks.md."
        ),
    )
    reader_file: pathlib.Path | None = pydantic.Field(
        default=None,
        description="A reader written by training/fit_reader.py; None for the package's.",
    )
    reader_calibration_file: pathlib.Path | None = pydantic.Field(
        default=None,
        description=(
            "A calibration written by training/fit_reader_calibration.py for `reader_file`; "
            "None for the package's (when the reader is the package's) or none."
        ),
    )
    model_file: pathlib.Path | None = pydantic.Field(
        default=None,
        description="Trees written by training/judge.py (with `reader` off); None for the package's.",
    )
    calibrated: bool = pydantic.Field(
        default=True,
        description=(
            "Apply the out-of-domain calibration (issue 23; docs/benchmarks.md): "
            "`calibration_file`, or the package's (citerun.pipeline.judging.model.CALIBRATION) "
            "when the model is the package's. A model of one's own without a "
            "`calibration_file` runs uncalibrated."
        ),
    )
    calibration_file: pathlib.Path | None = pydantic.Field(
        default=None,
        description="A calibration written by training/fit_calibration.py for the model in use.",
    )
    supported_min: float = pydantic.Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Lowest probability of SUPPORT for `supported`; a SUPPORT decision below it is "
            "`partially_supported` with that (low) confidence. 0.5: `supported` is said only "
            "when support is more likely than not (chosen on train, docs/benchmarks.md)."
        ),
    )
    abstain_below: float = pydantic.Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Below this probability of its own decision the rationale says the judge is "
            "unsure and the report ranks the citation among the first to check."
        ),
    )
    sure_support: float = pydantic.Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description=(
            "Below this probability a SUPPORT decision that the rule judge does not "
            "confirm becomes `partially_supported` (capped at 0.5 confidence): the two "
            "readings disagree. 0.7: from there on the reliability table shows 80% and "
            "more of the verdicts right."
        ),
    )
    coordination_support_min: float = pydantic.Field(
        default=0.15,
        ge=0.0,
        le=1.0,
        description=(
            "Lowest probability of SUPPORT at which a NOT-ENOUGH-INFO decision on a "
            "coordination (\"A and B\") with one item stated becomes `partially_supported` "
            "(a disjunction, \"A or B\", needs none). 0.15: the demo's claims that cite "
            "several sources for their items score 0.19-0.37 (docs/benchmarks.md)."
        ),
    )
    contradicted_min: float = pydantic.Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description=(
            "Lowest calibrated probability of CONTRADICT for `contradicted`, which also needs "
            "a sentence of those read that states the opposite (in words, or as the reader "
            "reads it alone), shown as the evidence; short of either the citation is "
            "`unsupported` and marked for checking: an accusation only with evidence. 0.7: "
            "a false accusation is taken to cost about twice a missed contradiction, so "
            "accuse from p >= 2/3 (docs/benchmarks.md, issue 23, step 3: 0.5 and 0.7 side "
            "by side). 0: no such gate (the trees' path)."
        ),
    )
    contradiction_needs_words: bool = pydantic.Field(
        default=False,
        description=(
            "With the reader: `contradicted` needs a sentence that states the opposite in "
            "words (a negation, a direction, a word of opposite meaning), not only one the "
            "reader reads as a contradiction on its own."
        ),
    )
    opposite_check: bool = pydantic.Field(
        default=True,
        description=(
            "With the reader: a support it reads while a sentence about as close states the "
            "opposite direction of the claim (features.opposite_of, directions only: \"fall\" "
            "against \"rose\") is `unsupported`, shown and marked for checking."
        ),
    )
    max_evidence: int = pydantic.Field(default=3, ge=1, description="Most evidence sentences kept.")
