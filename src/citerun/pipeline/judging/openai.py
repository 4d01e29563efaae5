"""The OpenAI-compatible judge: prompt, HTTP client with bounded retries, answer checks.

Everything that talks to the network is bounded: a timeout per request, retries with
backoff on 429/5xx (honouring ``Retry-After``), one retry for an invalid answer, and a
per-run :class:`~.budget.TokenBudget` whose ``spent`` count the caller persists, so a
redeployed worker carries on counting where the last one stopped.
"""

from __future__ import annotations

import collections.abc
import json
import logging
import os
import pathlib
import re
import typing

import httpx
import pydantic

from citerun.core import retry
from citerun.pipeline.judging import cache as answer_cache
from citerun.pipeline.judging import language
from citerun.pipeline.judging.budget import TokenBudget
from citerun.pipeline.judging.types import (
    JudgeAnswerError,
    JudgeConfigError,
    JudgeRequestError,
    Judgement,
    JudgeUnavailable,
    Passage,
    Verdict,
)

logger = logging.getLogger(__name__)


class OpenAIConfig(pydantic.BaseModel):
    """Settings of the OpenAI-compatible judge."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str = pydantic.Field(
        default="https://api.openai.com",
        description=(
            "Root URL of the endpoint; requests go to {base_url}/v1/chat/completions (a "
            "trailing /v1 is accepted). Any compatible server works: vLLM, llama.cpp, Ollama."
        ),
    )
    model: str = pydantic.Field(
        default="gpt-4o-mini",
        min_length=1,
        description="Model name sent with each request; the default is cheap and supports JSON mode.",
    )
    api_key: pydantic.SecretStr | None = pydantic.Field(
        default=None,
        description=(
            "The key itself (a run's own key, apiKeySecretRef, given per run by the "
            "operator after its access check); wins over api_key_file and api_key_env. "
            "Never logged: a SecretStr prints as stars."
        ),
    )
    api_key_env: str | None = pydantic.Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the API key; used when api_key_file is not set.",
    )
    api_key_file: pathlib.Path | None = pydantic.Field(
        default=None,
        description=(
            "File holding the API key, e.g. a Kubernetes Secret mounted as a volume; read "
            "on every request so a rotated Secret is picked up. Wins over api_key_env."
        ),
    )
    timeout_s: float = pydantic.Field(
        default=60.0,
        gt=0,
        description=(
            "Seconds one request may take, connect to last byte; a judge answer of a few "
            "hundred tokens takes seconds, 60 leaves room for a loaded server."
        ),
    )
    max_retries: int = pydantic.Field(
        default=4,
        ge=0,
        description=(
            "Retries after a 429, a 5xx, a timeout or a connection error (so at most "
            "max_retries + 1 requests); 4 with the default backoff waits about 15 s in all."
        ),
    )
    backoff_base_s: float = pydantic.Field(
        default=1.0,
        ge=0,
        description="Seconds before the first retry; doubles each retry, with jitter.",
    )
    backoff_cap_s: float = pydantic.Field(
        default=30.0, ge=0, description="Seconds; cap of one backoff wait."
    )
    retry_after_cap_s: float = pydantic.Field(
        default=120.0,
        ge=0,
        description=(
            "Seconds; cap of a wait the server asks for with Retry-After, so one rate "
            "limit cannot stall a task beyond its lease."
        ),
    )
    token_budget: int | None = pydantic.Field(
        default=1_000_000,
        ge=0,
        description=(
            "Tokens (usage.total_tokens) one run may spend on the judge; None for no "
            "limit. A citation costs about 1,500 tokens with five passages, so the "
            "default covers some 600 citations and stops a runaway run."
        ),
    )
    max_passage_chars: int = pydantic.Field(
        default=2000,
        ge=100,
        description="Characters of each passage put into the prompt; about 500 tokens.",
    )
    max_answer_tokens: int = pydantic.Field(
        default=400,
        ge=16,
        description="max_tokens of the answer; the JSON answer needs about 100-200.",
    )

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if base.endswith("/v1"):
            base = base[: -len("/v1")]
        return f"{base}/v1/chat/completions"

    def retry_policy(self) -> retry.RetryPolicy:
        """The requests' retries: this config's backoff, cap and attempts."""
        return retry.RetryPolicy(base_s=self.backoff_base_s, cap_s=self.backoff_cap_s,
                                 retry_after_cap_s=self.retry_after_cap_s,
                                 max_attempts=self.max_retries + 1)


class JudgeAnswer(pydantic.BaseModel):
    """The JSON object the model must answer with."""

    model_config = pydantic.ConfigDict(extra="ignore")

    # The judged verdicts of citerun.core.verdicts.JUDGED (tests/unit/test_verdicts.py checks).
    verdict: typing.Literal["supported", "partially_supported", "unsupported", "contradicted"]
    confidence: float = pydantic.Field(ge=0.0, le=1.0)
    evidence: list[int] = pydantic.Field(
        default_factory=list, description="1-based numbers of the passages that bear on the claim."
    )
    rationale: str = pydantic.Field(min_length=1)


class _Message(pydantic.BaseModel):
    content: str


class _Choice(pydantic.BaseModel):
    message: _Message


class _Usage(pydantic.BaseModel):
    total_tokens: int = 0


class _ChatResponse(pydantic.BaseModel):
    choices: list[_Choice] = pydantic.Field(min_length=1)
    usage: _Usage | None = None


SYSTEM_PROMPT = """\
You check citations in academic theses. You get one claim from a thesis and numbered \
passages from the source the thesis cites for it. Decide, from the passages alone, \
whether the source supports the claim:

- "supported": the passages state the claim, or something that clearly entails it.
- "partially_supported": the passages support part of the claim, or a weaker or \
narrower version of it (other population, hedged, fewer conditions).
- "unsupported": the passages do not say what the claim says (silent, or on another topic).
- "contradicted": the passages say the opposite of the claim, or something incompatible \
with it.

Do not use outside knowledge. Answer with one JSON object and nothing else:
{"verdict": "<one of the four>", "confidence": <0.0-1.0>, "evidence": [<numbers of the \
passages that decide the verdict, most important first>], "rationale": "<one or two \
sentences that refer to the passages by their numbers, e.g. [2]>"}"""


def _user_prompt(claim: str, passages: collections.abc.Sequence[Passage], limit: int) -> str:
    lines = [f"Claim: {claim}", "", "Passages:"]
    for number, passage in enumerate(passages, 1):
        text = " ".join(passage.text.split())
        if len(text) > limit:
            text = text[:limit].rsplit(" ", 1)[0] + " …"
        lines.append(f"[{number}] ({language.pages(passage)}) {text}")
    return "\n".join(lines)


retry_after_seconds = retry.retry_after_seconds


class OpenAIJudge:
    """A judge backed by an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    The model answers in JSON mode; the answer is validated against
    :class:`JudgeAnswer` and asked for once more if invalid, then
    :class:`JudgeAnswerError`. 429, 5xx, timeouts and connection errors are retried
    with exponential backoff and jitter (or the server's ``Retry-After``), then
    :class:`JudgeUnavailable`; other 4xx raise :class:`JudgeRequestError` at once.
    Every response's ``usage.total_tokens`` is charged to ``budget``.
    """

    def __init__(
        self,
        config: OpenAIConfig,
        budget: TokenBudget,
        client: httpx.AsyncClient | None = None,
        cache: answer_cache.AnswerCache | None = None,
    ) -> None:
        self._config = config
        self._budget = budget
        self._cache = cache
        self._client = client
        self._owns_client = client is None

    @property
    def budget(self) -> TokenBudget:
        return self._budget

    async def aclose(self) -> None:
        """Close the HTTP client if this judge created it."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> OpenAIJudge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def judge(
        self, claim: str, passages: collections.abc.Sequence[Passage]
    ) -> Judgement:
        """Ask the model; raises :class:`BudgetExhausted` before a request over budget."""
        if not passages:
            return Judgement(
                Verdict.UNSUPPORTED, 0.5, (), "No passage of the source was retrieved for this claim."
            )
        messages: list[dict[str, str]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": _user_prompt(claim, passages, self._config.max_passage_chars)},
        ]
        key = answer_cache.key_of(self._config.model, messages)
        if self._cache is not None:
            cached = await self._cache.get(key)
            if cached is not None:
                try:
                    answer = self._checked(cached[0], passages)
                except (pydantic.ValidationError, ValueError):
                    pass  # an answer the current checks reject is asked again
                else:
                    return self._judgement(claim, passages, answer, 0, cached=True)
        tokens = 0
        problem = ""
        for attempt in range(2):
            response = await self._complete(messages)
            tokens += response.usage.total_tokens if response.usage else 0
            content = response.choices[0].message.content if response.choices else ""
            try:
                answer = self._checked(_strip_fences(content), passages)
            except (pydantic.ValidationError, ValueError) as err:
                problem = language.short(str(err))
                logger.info(
                    "invalid judge answer",
                    extra={"action": "judge_answer_invalid", "attempt": attempt + 1, "error": problem},
                )
                messages = [
                    *messages,
                    {"role": "assistant", "content": content},
                    {
                        "role": "user",
                        "content": f"That answer is invalid ({problem}). Answer again with only "
                        "the JSON object described in the instructions.",
                    },
                ]
                continue
            if self._cache is not None:
                await self._cache.put(key, self._config.model, answer.model_dump_json(), tokens)
            return self._judgement(claim, passages, answer, tokens, cached=False)
        raise JudgeAnswerError(
            f"the judge model {self._config.model!r} returned an invalid answer twice; last problem: {problem}"
        )

    @staticmethod
    def _checked(content: str, passages: collections.abc.Sequence[Passage]) -> JudgeAnswer:
        answer = JudgeAnswer.model_validate_json(content)
        bad = [n for n in answer.evidence if not 1 <= n <= len(passages)]
        if bad:
            raise ValueError(f"evidence numbers {bad} are not among 1..{len(passages)}")
        return answer

    @staticmethod
    def _judgement(claim: str, passages: collections.abc.Sequence[Passage], answer: JudgeAnswer,
                   tokens: int, *, cached: bool) -> Judgement:
        """The answer as a judgement: evidence from the passages it cites, in its order."""
        cited = list(dict.fromkeys(answer.evidence))
        evidence = tuple(language.best_sentence(claim, passages[n - 1]) for n in cited)
        rationale = answer.rationale.strip()
        if cited:
            rationale += " (deciding passages: " + ", ".join(f"[{n}]" for n in cited) + ")"
        if cached:
            rationale += " (cached answer)"
        return Judgement(Verdict(answer.verdict), answer.confidence, evidence, rationale, tokens)

    async def _complete(self, messages: list[dict[str, str]]) -> _ChatResponse:
        config = self._config
        body = {
            "model": config.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": config.max_answer_tokens,
            "response_format": {"type": "json_object"},
        }
        policy = config.retry_policy()

        async def attempt() -> _ChatResponse:
            self._budget.check()
            try:
                response = await self._http().post(
                    config.url, json=body, headers=self._headers(), timeout=config.timeout_s
                )
            except httpx.TransportError as err:
                raise retry.TryAgain.no_answer(err) from err
            if response.status_code == 200:
                return self._parse(response)
            problem = f"HTTP {response.status_code}: {language.short(response.text)}"
            if not policy.retryable(response.status_code):
                raise JudgeRequestError(f"the judge endpoint {config.url} refused the request: {problem}")
            raise retry.TryAgain(problem, status=response.status_code,
                                 retry_after=response.headers.get("retry-after"))

        try:
            return await retry.retrying(policy, "judge_request", attempt, errors=(retry.TryAgain,))
        except retry.TryAgain as err:
            raise JudgeUnavailable(
                f"the judge endpoint {config.url} failed {config.max_retries + 1} times; last: {err}"
            ) from err

    def _parse(self, response: httpx.Response) -> _ChatResponse:
        try:
            data = response.json()
        except json.JSONDecodeError as err:
            raise JudgeRequestError(
                f"the judge endpoint answered with non-JSON: {language.short(response.text)}"
            ) from err
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("total_tokens"), int):
            self._budget.charge(usage["total_tokens"])
        try:
            return _ChatResponse.model_validate(data)
        except pydantic.ValidationError as err:
            raise JudgeRequestError(
                f"the judge endpoint's answer is not a chat completion: {language.short(str(err))}"
            ) from err

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient()
        return self._client

    def _headers(self) -> dict[str, str]:
        key = self._api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _api_key(self) -> str | None:
        config = self._config
        if config.api_key is not None:
            return config.api_key.get_secret_value() or None
        if config.api_key_file is not None:
            try:
                return config.api_key_file.read_text(encoding="utf-8").strip() or None
            except OSError as err:
                raise JudgeConfigError(
                    f"cannot read the judge API key file {str(config.api_key_file)!r}: {err.strerror}"
                ) from err
        if config.api_key_env:
            return os.environ.get(config.api_key_env) or None
        return None


def _strip_fences(content: str) -> str:
    """Some servers wrap JSON mode output in ```json fences anyway."""
    content = content.strip()
    match = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", content, re.DOTALL)
    return match.group(1) if match else content

