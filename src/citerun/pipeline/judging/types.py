"""What every judge shares: the verdicts, the passages in, the judgement out, the errors.

Nothing here knows how a verdict is reached; the embedded judges, the OpenAI-compatible
judge and the pipeline all speak these types, so they change only when the contract
between the pipeline and a judge changes.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import typing

import numpy.typing

from citerun.core import errors
from citerun.core.verdicts import Verdict as Verdict  # the one list of verdicts


@dataclasses.dataclass(frozen=True)
class Passage:
    """A retrieved chunk of the cited source; pages are 1-based and inclusive."""

    chunk_id: int
    text: str
    page_start: int
    page_end: int
    score: float


@dataclasses.dataclass(frozen=True)
class Evidence:
    """The sentence of a passage that bears on the claim, and where it is.

    ``score`` (0-1) is how closely the quote matches the claim, as the judge measured it.
    """

    quote: str
    page_start: int
    page_end: int
    score: float
    chunk_id: int


@dataclasses.dataclass(frozen=True)
class Judgement:
    """A verdict with its confidence (0-1), evidence and a one-paragraph rationale."""

    verdict: Verdict
    confidence: float
    evidence: tuple[Evidence, ...]
    rationale: str
    tokens_used: int = 0


class Judge(typing.Protocol):
    """Decides whether ``passages`` of a source support ``claim``."""

    async def judge(
        self, claim: str, passages: collections.abc.Sequence[Passage]
    ) -> Judgement: ...


class Embedder(typing.Protocol):
    """What the embedded judge needs: one row per text, float, any norm.

    ``citerun.pipeline.embed.WordLlamaEmbedder`` fits; rows are L2-normalised
    here again, so an embedder that does not normalise works as well.
    """

    def embed(self, texts: list[str]) -> numpy.typing.NDArray[typing.Any]: ...


class JudgeError(errors.CiterunError):
    """The judge failed."""


class JudgeConfigError(JudgeError):
    """The judge is not configured correctly."""


class JudgeRequestError(JudgeError):
    """The judge endpoint rejected the request."""


class JudgeUnavailable(JudgeError):
    """The judge endpoint kept failing; retries are exhausted."""


class JudgeAnswerError(JudgeError):
    """The judge model returned an invalid answer twice."""


class BudgetExhausted(errors.CiterunError):
    """The run's token budget for the judge is used up."""

