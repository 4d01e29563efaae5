"""The embedded judge on hand-written pairs, and the OpenAI judge against a real local server."""

from __future__ import annotations

import collections.abc
import dataclasses
import email.utils
import http.server
import json
import pathlib
import threading
import time
import typing

import pytest

from citerun.core import errors
from citerun.pipeline import embed, judge
from citerun.pipeline.judging import language

Verdict = judge.Verdict

# --- the embedded judge --------------------------------------------------------------

_TRIAL = judge.Passage(
    chunk_id=11,
    text=(
        "We recruited 240 adults from three clinics. Adults who exercised regularly for "
        "twelve weeks reported fewer symptoms of anxiety than the control group. Sleep "
        "quality was measured with a questionnaire."
    ),
    page_start=3,
    page_end=4,
    score=0.9,
)
_COHORT = judge.Passage(
    chunk_id=12,
    text=(
        "In this cohort, coffee consumption was not associated with the risk of liver "
        "cancer. Tea drinkers were studied as well."
    ),
    page_start=7,
    page_end=7,
    score=0.5,
)


@pytest.fixture(scope="module")
def embedded() -> judge.RulesJudge:
    return judge.RulesJudge(embed.WordLlamaEmbedder())


async def test_supported_claim_quotes_the_supporting_sentence(embedded: judge.RulesJudge) -> None:
    result = await embedded.judge(
        "Adults who exercised regularly reported fewer symptoms of anxiety than the control group.",
        [_COHORT, _TRIAL],
    )
    assert result.verdict == Verdict.SUPPORTED
    assert result.confidence > 0.8
    best = result.evidence[0]
    assert best.quote == (
        "Adults who exercised regularly for twelve weeks reported fewer symptoms of anxiety "
        "than the control group."
    )
    assert (best.page_start, best.page_end, best.chunk_id) == (3, 4, 11)
    assert result.tokens_used == 0


async def test_paraphrased_claim_is_supported(embedded: judge.RulesJudge) -> None:
    result = await embedded.judge("Regular exercise reduces anxiety symptoms in adults.", [_TRIAL])
    assert result.verdict == Verdict.SUPPORTED
    assert "twelve weeks" in result.evidence[0].quote


async def test_claim_saying_more_than_the_source_is_partially_supported(
    embedded: judge.RulesJudge,
) -> None:
    result = await embedded.judge(
        "Regular exercise reduces anxiety symptoms and depression in adults and adolescents.",
        [_TRIAL],
    )
    assert result.verdict == Verdict.PARTIALLY_SUPPORTED


async def test_unrelated_claim_is_unsupported(embedded: judge.RulesJudge) -> None:
    result = await embedded.judge("The printing press was invented in Mainz around 1450.", [_TRIAL, _COHORT])
    assert result.verdict == Verdict.UNSUPPORTED
    assert result.confidence > 0.8


@pytest.mark.parametrize(
    ("claim", "passage"),
    [
        # The source negates what the claim asserts.
        ("Coffee consumption is associated with the risk of liver cancer.", _COHORT),
        # Opposite direction words.
        ("Regular exercise increases symptoms of anxiety in adults.", _TRIAL),
        # The claim negates what the source asserts.
        (
            "Adults who exercised regularly did not report fewer symptoms of anxiety.",
            _TRIAL,
        ),
        (
            "Die Inflation ist im Jahr 2022 nicht gestiegen.",
            judge.Passage(1, "Die Inflation ist im Jahr 2022 stark gestiegen.", 2, 2, 0.4),
        ),
    ],
)
async def test_contradicted_claims(
    embedded: judge.RulesJudge, claim: str, passage: judge.Passage
) -> None:
    result = await embedded.judge(claim, [passage])
    assert result.verdict == Verdict.CONTRADICTED, result.rationale
    assert "opposite polarity" in result.rationale
    assert result.evidence and result.evidence[0].page_start == passage.page_start


async def test_no_passages_is_unsupported(embedded: judge.RulesJudge) -> None:
    result = await embedded.judge("Anything at all.", [])
    assert (result.verdict, result.evidence) == (Verdict.UNSUPPORTED, ())


@pytest.mark.parametrize(
    ("claim", "sentence", "conflict"),
    [
        ("X reduces Y.", "X did not reduce Y.", True),
        ("X reduces Y.", "X increased Y.", True),
        ("X reduces Y.", "X lowered Y.", False),
        ("X is associated with Y.", "X was not associated with Y.", True),
        ("X improves Y.", "X failed to improve Y.", True),
        ("X improves Y.", "X didn't improve Y.", True),
        ("X improves Y.", "X not only improves Y but also Z.", False),
        ("X raises Y.", "X did not lower Y.", False),
        ("X affects Y.", "X affects Y in adults.", False),
    ],
)
def test_polarity_conflict(claim: str, sentence: str, conflict: bool) -> None:
    assert (judge.polarity_conflict(claim, sentence) is not None) == conflict


@pytest.mark.parametrize(
    ("a", "b"),
    [("peaked", "peak"), ("rose", "rising"), ("fell", "falls"), ("studies", "study"),
     ("hottest", "hot"), ("lowered", "lowers"), ("dropped", "drop")],
)
def test_stem_joins_inflections(a: str, b: str) -> None:
    assert judge.stem(a) == judge.stem(b)


@pytest.mark.parametrize(
    ("claim", "sentence", "conflict"),
    [
        # Two direction words are a relation: more X -> higher Y against more X -> lower Y.
        ("More tree cover goes with higher surface temperatures.",
         "Each additional point of tree cover lowered the surface temperature.", True),
        ("More tree cover goes with lower surface temperatures.",
         "Higher canopy cover went with lower surface temperature.", False),
        ("Admissions fall during heat waves.",
         "Above 30 °C, admissions of adults aged 75 and over rose by 12 percent.", True),
        # A cue far from the shared words, or a comparative of another word, says nothing.
        ("Hospital admissions fall during heat waves.",
         "Deaths during heat waves are well documented; hospital admissions, which show "
         "the burden on health services, less so.", False),
        ("Admissions of older adults fall.", "Older adults are more vulnerable to heat.", False),
    ],
)
def test_polarity_conflict_with_relations_and_anchors(claim: str, sentence: str,
                                                      conflict: bool) -> None:
    assert (judge.polarity_conflict(claim, sentence) is not None) == conflict


_FRONT = judge.Passage(
    chunk_id=21,
    text=(
        "Public Health and Climate 3(3) 2018 Heat Waves and Emergency Hospital Admissions "
        "among Older Adults Li Wei, Sarah Mitchell Public Health and Climate, 3(3), 210-222, "
        "2018 Abstract We linked daily admissions to daily maximum temperature. For every "
        "degree above 30 °C, emergency admissions of adults aged 75 and over rose by 12 "
        "percent. Admissions peaked one day after the hottest day. 3. Results The effect "
        "was stronger in districts with little green space."
    ),
    page_start=1,
    page_end=1,
    score=0.9,
)


def test_titles_and_headings_are_not_quoted() -> None:
    sentences = language.sentences_of(_FRONT)
    assert sentences[0] == "We linked daily admissions to daily maximum temperature."
    assert sentences[-1] == "The effect was stronger in districts with little green space."
    assert not any("Public Health" in s for s in sentences)


async def test_contradiction_by_direction_uses_the_title_as_context(
    embedded: judge.RulesJudge,
) -> None:
    result = await embedded.judge(
        "Hospital admissions of older adults fall during heat waves, because older people "
        "then stay at home.", [_FRONT])
    assert result.verdict == Verdict.CONTRADICTED, result.rationale
    assert result.evidence[0].quote.startswith("For every degree above 30 °C")


async def test_authors_comment_in_a_which_clause_is_not_required(
    embedded: judge.RulesJudge,
) -> None:
    result = await embedded.judge(
        "Admissions peak one day after the hottest day, which gives health services a short "
        "warning time.", [_FRONT])
    assert result.verdict == Verdict.SUPPORTED, result.rationale
    assert result.evidence[0].quote == "Admissions peaked one day after the hottest day."


async def test_one_half_of_an_or_is_partial_support(embedded: judge.RulesJudge) -> None:
    result = await embedded.judge(
        "Heat exposure is uneven: it is worst where streets are narrow or green space is "
        "scarce.", [_FRONT])
    assert result.verdict == Verdict.PARTIALLY_SUPPORTED, result.rationale
    assert "green space" in result.evidence[0].quote


def test_embedded_config_rejects_inverted_thresholds() -> None:
    with pytest.raises(ValueError, match="partially_supported"):
        judge.RulesJudgeConfig(supported=0.4, partially_supported=0.6)


def test_make_judge_builds_the_configured_judge() -> None:
    embedder = embed.WordLlamaEmbedder()
    assert isinstance(judge.make_judge(judge.JudgeConfig(), embedder), judge.TrainedJudge)
    assert isinstance(judge.make_judge(judge.JudgeConfig(kind="rules"), embedder), judge.RulesJudge)
    openai = judge.make_judge(
        judge.JudgeConfig.model_validate({"kind": "openai", "openai": {"token_budget": 5}}), embedder
    )
    assert isinstance(openai, judge.OpenAIJudge) and openai.budget.limit == 5


# --- a real chat-completions server --------------------------------------------------


@dataclasses.dataclass
class Reply:
    status: int = 200
    content: str | None = None  # the model's message; None for a raw body
    body: str = ""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    tokens: int = 100
    delay_s: float = 0.0


@dataclasses.dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, typing.Any]
    at: float


class ChatServer:
    """A chat-completions endpoint on 127.0.0.1 that plays a script of replies."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.seen: list[Seen] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.seen.append(Seen(self.path, dict(self.headers), body, time.monotonic()))
                reply = outer.script.pop(0) if outer.script else Reply(status=500, body="script empty")
                time.sleep(reply.delay_s)
                payload = reply.body
                if reply.content is not None:
                    payload = json.dumps(
                        {
                            "id": "chatcmpl-1",
                            "object": "chat.completion",
                            "model": body["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": reply.content},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {"prompt_tokens": reply.tokens - 20, "completion_tokens": 20,
                                      "total_tokens": reply.tokens},
                        }
                    )
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server() -> collections.abc.Iterator[ChatServer]:
    chat = ChatServer()
    yield chat
    chat.close()


def _config(server: ChatServer, **overrides: typing.Any) -> judge.OpenAIConfig:
    settings: dict[str, typing.Any] = {
        "base_url": server.url,
        "model": "test-model",
        "api_key_env": None,
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
    }
    settings.update(overrides)
    return judge.OpenAIConfig(**settings)


_GOOD = json.dumps(
    {"verdict": "supported", "confidence": 0.85, "evidence": [2], "rationale": "Passage 2 states it."}
)
_CLAIM = "Regular exercise reduces anxiety symptoms in adults."


async def test_openai_good_answer(server: ChatServer) -> None:
    server.script = [Reply(content=_GOOD, tokens=321)]
    budget = judge.TokenBudget(limit=10_000)
    async with judge.OpenAIJudge(_config(server), budget) as openai:
        result = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert (result.verdict, result.confidence, result.tokens_used) == (Verdict.SUPPORTED, 0.85, 321)
    assert result.rationale == "Passage 2 states it. (deciding passages: [2])"
    assert [e.chunk_id for e in result.evidence] == [11]
    assert result.evidence[0].quote.startswith("Adults who exercised regularly")
    assert budget.spent == 321

    (request,) = server.seen
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["response_format"] == {"type": "json_object"}
    system, user = request.body["messages"]
    assert system["role"] == "system" and "contradicted" in system["content"]
    assert _CLAIM in user["content"]
    assert "[1] (p. 7)" in user["content"] and "[2] (pp. 3-4)" in user["content"]
    assert "authorization" not in {k.lower() for k in request.headers}


async def test_openai_base_url_with_v1_is_accepted(server: ChatServer) -> None:
    server.script = [Reply(content=_GOOD)]
    async with judge.OpenAIJudge(_config(server, base_url=server.url + "/v1/"), judge.TokenBudget(None)) as openai:
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert server.seen[0].path == "/v1/chat/completions"


async def test_openai_invalid_answer_is_asked_again(server: ChatServer) -> None:
    server.script = [Reply(content="Sure! It is supported.", tokens=50), Reply(content=_GOOD, tokens=70)]
    async with judge.OpenAIJudge(_config(server), judge.TokenBudget(None)) as openai:
        result = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert result.verdict == Verdict.SUPPORTED
    assert result.tokens_used == 120
    assert len(server.seen) == 2
    retry_messages = server.seen[1].body["messages"]
    assert retry_messages[2] == {"role": "assistant", "content": "Sure! It is supported."}
    assert "invalid" in retry_messages[3]["content"]


async def test_openai_invalid_answer_twice_is_a_clear_error(server: ChatServer) -> None:
    out_of_range = json.dumps({"verdict": "supported", "confidence": 0.9, "evidence": [7], "rationale": "x"})
    server.script = [Reply(content='{"verdict": "maybe"}'), Reply(content=out_of_range)]
    async with judge.OpenAIJudge(_config(server), judge.TokenBudget(None)) as openai:
        with pytest.raises(judge.JudgeAnswerError, match=r"invalid answer twice.*\[7\]"):
            await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert len(server.seen) == 2


async def test_openai_honours_retry_after_seconds(server: ChatServer) -> None:
    server.script = [
        Reply(status=429, body='{"error": "slow down"}', headers={"Retry-After": "1"}),
        Reply(content=_GOOD),
    ]
    async with judge.OpenAIJudge(_config(server), judge.TokenBudget(None)) as openai:
        result = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert result.verdict == Verdict.SUPPORTED
    waited = server.seen[1].at - server.seen[0].at
    # The backoff alone would wait at most 0.05 s.
    assert 0.95 <= waited < 3.0


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    now = 1_700_000_000.0
    assert judge.retry_after_seconds("7", now=now) == 7.0
    assert judge.retry_after_seconds(email.utils.formatdate(now + 30, usegmt=True), now=now) == 30.0
    assert judge.retry_after_seconds(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert judge.retry_after_seconds("soon", now=now) is None
    assert judge.retry_after_seconds(None) is None


async def test_openai_server_errors_exhaust_retries(server: ChatServer) -> None:
    server.script = [Reply(status=500, body="boom"), Reply(status=502, body="bad gateway"),
                     Reply(status=503, body="overloaded")]
    async with judge.OpenAIJudge(_config(server, max_retries=2), judge.TokenBudget(None)) as openai:
        with pytest.raises(judge.JudgeUnavailable, match=r"failed 3 times; last: HTTP 503: overloaded"):
            await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert len(server.seen) == 3


async def test_openai_timeout_is_retried(server: ChatServer) -> None:
    server.script = [Reply(content=_GOOD, delay_s=3.0), Reply(content=_GOOD)]
    async with judge.OpenAIJudge(_config(server, timeout_s=1.0), judge.TokenBudget(None)) as openai:
        result = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert result.verdict == Verdict.SUPPORTED
    assert len(server.seen) == 2


async def test_openai_client_error_is_not_retried(server: ChatServer) -> None:
    server.script = [Reply(status=401, body='{"error": "bad key"}')]
    async with judge.OpenAIJudge(_config(server), judge.TokenBudget(None)) as openai:
        with pytest.raises(judge.JudgeRequestError, match="HTTP 401"):
            await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert len(server.seen) == 1


async def test_openai_budget_exhausted(server: ChatServer) -> None:
    server.script = [Reply(content=_GOOD, tokens=150), Reply(content=_GOOD)]
    budget = judge.TokenBudget(limit=100)
    async with judge.OpenAIJudge(_config(server), budget) as openai:
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])  # the request that crosses the limit counts
        assert (budget.spent, budget.remaining, budget.exhausted) == (150, 0, True)
        with pytest.raises(judge.BudgetExhausted, match="150 of 100"):
            await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert len(server.seen) == 1


async def test_openai_budget_resumes_from_a_stored_count(server: ChatServer) -> None:
    budget = judge.TokenBudget(limit=1000, spent=1000)
    async with judge.OpenAIJudge(_config(server), budget) as openai:
        with pytest.raises(judge.BudgetExhausted):
            await openai.judge(_CLAIM, [_TRIAL])
    assert server.seen == []
    assert issubclass(judge.BudgetExhausted, errors.CiterunError)


async def test_openai_api_key_from_file(server: ChatServer, tmp_path: pathlib.Path) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text("sk-from-secret\n")
    server.script = [Reply(content=_GOOD)]
    async with judge.OpenAIJudge(_config(server, api_key_file=key_file), judge.TokenBudget(None)) as openai:
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert server.seen[0].headers["Authorization"] == "Bearer sk-from-secret"


async def test_openai_api_key_from_env(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITERUN_TEST_JUDGE_KEY", "sk-env")
    server.script = [Reply(content=_GOOD)]
    config = _config(server, api_key_env="CITERUN_TEST_JUDGE_KEY")
    async with judge.OpenAIJudge(config, judge.TokenBudget(None)) as openai:
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert server.seen[0].headers["Authorization"] == "Bearer sk-env"


async def test_openai_missing_key_file_is_a_config_error(server: ChatServer, tmp_path: pathlib.Path) -> None:
    config = _config(server, api_key_file=tmp_path / "missing")
    async with judge.OpenAIJudge(config, judge.TokenBudget(None)) as openai:
        with pytest.raises(judge.JudgeConfigError, match="missing"):
            await openai.judge(_CLAIM, [_TRIAL])
    assert server.seen == []


def test_token_budget_rejects_negative_counts() -> None:
    with pytest.raises(ValueError):
        judge.TokenBudget(limit=10, spent=-1)


class DictCache:
    """An answer cache in a dict (the Postgres one is tested in tests/db)."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[str, int]] = {}

    async def get(self, key: str) -> tuple[str, int] | None:
        return self.answers.get(key)

    async def put(self, key: str, model: str, answer: str, tokens: int) -> None:
        self.answers.setdefault(key, (answer, tokens))


async def test_openai_identical_question_is_answered_from_the_cache(server: ChatServer) -> None:
    server.script = [Reply(content=_GOOD, tokens=321)]
    cache = DictCache()
    budget = judge.TokenBudget(limit=10_000)
    async with judge.OpenAIJudge(_config(server), budget, cache=cache) as openai:
        first = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
        again = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert len(server.seen) == 1  # the second answer cost no request
    assert (first.tokens_used, again.tokens_used, budget.spent) == (321, 0, 321)
    assert again.verdict == first.verdict and again.rationale.endswith("(cached answer)")
    assert [e.chunk_id for e in again.evidence] == [e.chunk_id for e in first.evidence]


async def test_openai_cache_key_changes_with_model_claim_and_passages(server: ChatServer) -> None:
    server.script = [Reply(content=_GOOD) for _ in range(3)]
    cache = DictCache()
    async with judge.OpenAIJudge(_config(server), judge.TokenBudget(None), cache=cache) as openai:
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])
        await openai.judge(_CLAIM + " Strongly.", [_COHORT, _TRIAL])
        await openai.judge(_CLAIM, [_TRIAL, _COHORT])
    async with judge.OpenAIJudge(_config(server, model="other-model"), judge.TokenBudget(None),
                                 cache=cache) as openai:
        server.script = [Reply(content=_GOOD)]
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert len(server.seen) == 4 and len(cache.answers) == 4


async def test_openai_cached_answer_that_no_longer_validates_is_asked_again(server: ChatServer) -> None:
    cache = DictCache()
    server.script = [Reply(content=_GOOD, tokens=50)]
    async with judge.OpenAIJudge(_config(server), judge.TokenBudget(None), cache=cache) as openai:
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])
        (key,) = cache.answers
        cache.answers[key] = ('{"verdict": "maybe"}', 50)
        server.script = [Reply(content=_GOOD, tokens=60)]
        result = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert len(server.seen) == 2 and result.tokens_used == 60


async def test_openai_api_key_given_in_the_config_wins_and_is_not_printed(
        server: ChatServer, tmp_path: pathlib.Path) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text("sk-from-file\n")
    config = _config(server, api_key="sk-per-run", api_key_file=key_file)
    assert "sk-per-run" not in repr(config) and "sk-per-run" not in str(config.model_dump())
    server.script = [Reply(content=_GOOD)]
    async with judge.OpenAIJudge(config, judge.TokenBudget(None)) as openai:
        await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    assert server.seen[0].headers["Authorization"] == "Bearer sk-per-run"


async def test_openai_prompt_numbers_every_passage_and_asks_for_deciding_ids(server: ChatServer) -> None:
    server.script = [Reply(content=json.dumps({"verdict": "contradicted", "confidence": 0.7,
                                               "evidence": [2, 1], "rationale": "[2] says the opposite."}))]
    async with judge.OpenAIJudge(_config(server), judge.TokenBudget(None)) as openai:
        result = await openai.judge(_CLAIM, [_COHORT, _TRIAL])
    (request,) = server.seen  # one request for the citation, with all its passages
    system, user = request.body["messages"]
    assert "decide the verdict" in system["content"]
    assert user["content"].count("\n[") == 2
    assert [e.chunk_id for e in result.evidence] == [_TRIAL.chunk_id, _COHORT.chunk_id]
    assert result.rationale.endswith("(deciding passages: [2], [1])")
