"""Judges: does a passage of the cited source support the claim of the thesis?

A judge is anything with ``async judge(claim, passages) -> Judgement``; the
``judge_citation`` task retrieves the passages and stores the judgement. The judges
live in the :mod:`citerun.pipeline.judging` package, one module per reason to
change; this module is the one place the rest of the pipeline imports them from, so
the package can be re-cut without touching its callers.

Only ``supported``, ``partially_supported``, ``unsupported`` and ``contradicted`` come
from a judge; ``source_unavailable`` and ``unresolved_citation`` are decided by the
pipeline before any judge runs, and so is ``supported`` for a citation that names a
work when the source is that work (:func:`judge_named`: "a lock service called Chubby
[8]" against the Chubby paper). Evidence quotes the best matching *sentence* of a
passage, with the passage's pages, because a reader checks a sentence, not a chunk.
"""

from __future__ import annotations

from citerun.pipeline.judging.budget import TokenBudget
from citerun.pipeline.judging.cache import AnswerCache, PostgresAnswerCache
from citerun.pipeline.judging.embedded import TrainedJudge, TrainedJudgeConfig
from citerun.pipeline.judging.factory import JudgeConfig, make_judge
from citerun.pipeline.judging.language import (
    best_sentence,
    coverage,
    polarity_conflict,
    stem,
)
from citerun.pipeline.judging.openai import (
    SYSTEM_PROMPT,
    JudgeAnswer,
    OpenAIConfig,
    OpenAIJudge,
    retry_after_seconds,
)
from citerun.pipeline.judging.naming import judge_named
from citerun.pipeline.judging.rules import RulesJudge, RulesJudgeConfig
from citerun.pipeline.judging.types import (
    BudgetExhausted,
    Embedder,
    Evidence,
    Judge,
    JudgeAnswerError,
    JudgeConfigError,
    JudgeError,
    Judgement,
    JudgeRequestError,
    JudgeUnavailable,
    Passage,
    Verdict,
)

__all__ = [
    "SYSTEM_PROMPT", "AnswerCache", "BudgetExhausted", "PostgresAnswerCache", "RulesJudge", "RulesJudgeConfig", "Embedder",
    "Evidence", "Judge", "JudgeAnswer", "JudgeAnswerError", "JudgeConfig", "JudgeConfigError",
    "JudgeError", "JudgeRequestError", "JudgeUnavailable", "Judgement", "OpenAIConfig",
    "OpenAIJudge", "Passage", "TokenBudget", "TrainedJudge", "TrainedJudgeConfig", "Verdict", "best_sentence", "coverage",
    "judge_named", "make_judge", "polarity_conflict", "retry_after_seconds", "stem",
]
