"""The settings of the embedded judge (:class:`~citerun.pipeline.judging.embedded.TrainedJudge`):
the probabilities at which each verdict is said (``judge.embedded`` of the pipeline
settings, a run's spec may override them). The switches only the benches and training
turned (the trees instead of the reader, a reader or trees file of one's own, the
calibration off) live with them (``training/trees/judge.py``, issue 50)."""

from __future__ import annotations

import pydantic


class TrainedJudgeConfig(pydantic.BaseModel):
    """Settings of :class:`TrainedJudge`; probabilities are calibrated (0-1)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

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
            "by side)."
        ),
    )
    max_evidence: int = pydantic.Field(default=3, ge=1, description="Most evidence sentences kept.")
