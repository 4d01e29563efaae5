"""Which judge a run uses: :class:`JudgeConfig` and :func:`make_judge`."""

from __future__ import annotations

import typing

import httpx
import pydantic

from citerun.core.runspec import RunJudgeKind
from citerun.pipeline.judging.budget import TokenBudget
from citerun.pipeline.judging.cache import AnswerCache
from citerun.pipeline.judging.embedded import TrainedJudge
from citerun.pipeline.judging.embedded_config import TrainedJudgeConfig
from citerun.pipeline.judging.openai import OpenAIConfig, OpenAIJudge
from citerun.pipeline.judging.rules import RulesJudge, RulesJudgeConfig
from citerun.pipeline.judging.types import Embedder, Judge


#: Every judge the workers can build: those a run may choose, and ``rules``, the rule
#: judge the trained one replaced, which only the workers' settings can name.
JudgeKind = typing.Literal[RunJudgeKind, "rules"]


class JudgeConfig(pydantic.BaseModel):
    """Which judge a run uses, and its settings."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    kind: JudgeKind = pydantic.Field(
        default="embedded",
        description="`embedded`: the trained judge, no network (the default, so a laptop run "
        "works offline); `rules`: the rule judge it replaced, kept as a readable baseline "
        "(worker settings only); `openai`: a chat-completions endpoint.",
    )
    embedded: TrainedJudgeConfig = pydantic.Field(default_factory=TrainedJudgeConfig)
    rules: RulesJudgeConfig = pydantic.Field(default_factory=RulesJudgeConfig)
    openai: OpenAIConfig = pydantic.Field(default_factory=OpenAIConfig)


def make_judge(
    config: JudgeConfig,
    embedder: Embedder,
    *,
    budget: TokenBudget | None = None,
    client: httpx.AsyncClient | None = None,
    cache: AnswerCache | None = None,
) -> Judge:
    """The judge ``config`` asks for.

    For ``openai``, pass the run's ``budget`` (built with the ``spent`` count stored
    for the run); without one, a fresh budget of ``config.openai.token_budget``.
    """
    if config.kind == "embedded":
        return TrainedJudge(embedder, config.embedded)
    if config.kind == "rules":
        return RulesJudge(embedder, config.rules)
    return OpenAIJudge(
        config.openai, budget or TokenBudget(config.openai.token_budget), client=client,
        cache=cache,
    )
