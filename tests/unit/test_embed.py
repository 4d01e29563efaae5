"""Embedders: the offline WordLlama model and an OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import collections.abc
import dataclasses
import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
import typing

import numpy
import pydantic
import pytest

from citerun.pipeline import embed

# --- WordLlama -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordllama() -> embed.WordLlamaEmbedder:
    return embed.WordLlamaEmbedder()


def test_wordllama_rows_are_unit_float32_of_fixed_width(
    wordllama: embed.WordLlamaEmbedder,
) -> None:
    vectors = wordllama.embed(["Trees cool streets.", "Roofs reflect light.", "x"])
    assert vectors.shape == (3, embed.EMBEDDING_DIM) == (3, 256)
    assert vectors.dtype == numpy.float32
    numpy.testing.assert_allclose(numpy.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert wordllama.dim == 256
    assert isinstance(wordllama, embed.Embedder)


def test_wordllama_similar_sentences_are_closer_than_unrelated_ones(
    wordllama: embed.WordLlamaEmbedder,
) -> None:
    a, b, c = wordllama.embed(
        [
            "Street trees lower the surface temperature of city neighbourhoods.",
            "Urban tree canopy reduces land surface temperatures in cities.",
            "The court dismissed the appeal because the contract was void.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_wordllama_empty_input_and_empty_text(wordllama: embed.WordLlamaEmbedder) -> None:
    assert wordllama.embed([]).shape == (0, 256)
    with pytest.raises(embed.EmbeddingError, match="nothing to embed"):
        wordllama.embed(["fine", ""])


def test_wordllama_model_is_loaded_once_per_process() -> None:
    assert embed._wordllama_model() is embed._wordllama_model()


def test_importing_wordllama_leaves_root_logging_alone() -> None:
    script = (
        "import logging\n"
        "from citerun.pipeline import embed\n"
        "embed._wordllama_model()\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), logging.getLevelName(root.level))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "0 WARNING"
    assert result.stderr == ""


_OFFLINE_SCRIPT = textwrap.dedent(
    """
    import socket

    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access attempted")

    socket.socket.connect = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from citerun.pipeline import embed

    vectors = embed.WordLlamaEmbedder().embed(["offline works", "still offline"])
    print(vectors.shape, len(attempts))
    """
)


def test_wordllama_loads_without_any_network(tmp_path: typing.Any) -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HOME": str(tmp_path),  # no ~/.cache/wordllama to fall back on
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(2, 256) 0"
    assert not (tmp_path / ".cache").exists()


# --- an OpenAI-compatible server -------------------------------------------------------


@dataclasses.dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    width: int = 256
    body: bytes | None = None  # overrides the embeddings


@dataclasses.dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, typing.Any]


class FakeServer:
    """A real HTTP server on 127.0.0.1 that plays back scripted replies."""

    def __init__(self) -> None:
        self.replies: collections.deque[Reply] = collections.deque()
        self.default = Reply()
        self.seen: list[Seen] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                body = json.loads(self.rfile.read(length))
                server.seen.append(Seen(self.path, dict(self.headers), body))
                reply = server.replies.popleft() if server.replies else server.default
                payload = reply.body
                if payload is None and reply.status == 200:
                    items = [
                        {"object": "embedding", "index": i, "embedding": vector(text, reply.width)}
                        for i, text in enumerate(body["input"])
                    ]
                    items.reverse()  # the index, not the order, says which text it is
                    payload = json.dumps({"object": "list", "data": items}).encode()
                payload = payload or b'{"error": {"message": "scripted failure"}}'
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def vector(text: str, width: int) -> list[float]:
    """A deterministic, unnormalized vector per text, with weight beyond dimension 256."""
    rng = numpy.random.default_rng(sum(map(ord, text)))
    return [float(x) for x in rng.normal(size=width) * 3.0]


@pytest.fixture
def server() -> collections.abc.Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def openai(server: FakeServer, sleeps: Sleeps | None = None, **config: typing.Any) -> embed.OpenAIEmbedder:
    settings = embed.EmbeddingConfig(
        provider="openai", base_url=server.url, model="tiny-embed", api_key=pydantic.SecretStr("sk-test"), **config
    )
    return embed.OpenAIEmbedder(settings, sleep=sleeps if sleeps is not None else Sleeps())


def test_openai_request_shape_batching_and_order(server: FakeServer) -> None:
    texts = ["one", "two", "three", "four", "five"]
    with openai(server, batch_size=2) as embedder:
        vectors = embedder.embed(texts)
    assert vectors.shape == (5, 256) and vectors.dtype == numpy.float32
    assert [len(s.body["input"]) for s in server.seen] == [2, 2, 1]
    first = server.seen[0]
    assert first.path == "/v1/embeddings"
    assert first.headers["Authorization"] == "Bearer sk-test"
    assert first.body == {
        "model": "tiny-embed",
        "input": ["one", "two"],
        "encoding_format": "float",
        "dimensions": 256,
    }
    expected = numpy.array([vector(t, 256) for t in texts], dtype=numpy.float32)
    expected /= numpy.linalg.norm(expected, axis=1, keepdims=True)
    numpy.testing.assert_allclose(vectors, expected, rtol=1e-5)
    assert embedder.name == "openai/tiny-embed@256"


def test_openai_longer_vectors_are_truncated_and_renormalized(server: FakeServer) -> None:
    server.default = Reply(width=1536)
    with openai(server, request_dimensions=False) as embedder:
        vectors = embedder.embed(["alpha", "beta"])
    assert "dimensions" not in server.seen[0].body
    full = numpy.array([vector(t, 1536) for t in ["alpha", "beta"]], dtype=numpy.float32)
    head = full[:, :256] / numpy.linalg.norm(full[:, :256], axis=1, keepdims=True)
    numpy.testing.assert_allclose(vectors, head, rtol=1e-5)
    numpy.testing.assert_allclose(numpy.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_openai_shorter_vectors_are_a_clear_error(server: FakeServer) -> None:
    server.default = Reply(width=128)
    with openai(server) as embedder, pytest.raises(embed.EmbeddingError) as caught:
        embedder.embed(["alpha"])
    assert "128-dimensional" in str(caught.value)
    assert "256" in str(caught.value)


def test_openai_429_waits_for_retry_after_then_succeeds(server: FakeServer) -> None:
    server.replies.extend([Reply(429, {"Retry-After": "2"}), Reply(429, {"Retry-After": "0.25"})])
    sleeps = Sleeps()
    with openai(server, sleeps) as embedder:
        vectors = embedder.embed(["alpha"])
    assert vectors.shape == (1, 256)
    assert sleeps == [2.0, 0.25]
    assert len(server.seen) == 3


def test_openai_retry_after_is_capped(server: FakeServer) -> None:
    server.replies.append(Reply(503, {"Retry-After": "3600"}))
    sleeps = Sleeps()
    with openai(server, sleeps, backoff_cap_s=7.0) as embedder:
        embedder.embed(["alpha"])
    assert sleeps == [7.0]


def test_openai_5xx_retries_exhausted_is_a_clear_error(server: FakeServer) -> None:
    server.default = Reply(503)
    sleeps = Sleeps()
    with openai(server, sleeps, max_retries=3, backoff_base_s=1.0) as embedder:
        with pytest.raises(embed.EmbeddingServiceError) as caught:
            embedder.embed(["alpha"])
    err = caught.value
    assert (err.status, err.retryable) == (503, True)
    assert "failed 4 time(s)" in str(err) and "HTTP 503" in str(err)
    assert server.url in str(err)
    assert len(server.seen) == 4
    # Exponential backoff of 1, 2, 4 seconds with the retry policy's ±25 % jitter.
    assert len(sleeps) == 3
    assert all(0.75 * b <= s <= 1.25 * b for s, b in zip(sleeps, (1, 2, 4))), sleeps


def test_openai_client_errors_are_not_retried(server: FakeServer) -> None:
    server.default = Reply(401)
    sleeps = Sleeps()
    with openai(server, sleeps) as embedder, pytest.raises(embed.EmbeddingServiceError) as caught:
        embedder.embed(["alpha"])
    assert (caught.value.status, caught.value.retryable) == (401, False)
    assert len(server.seen) == 1 and sleeps == []


def test_openai_malformed_response_is_a_clear_error(server: FakeServer) -> None:
    server.default = Reply(200, body=b'{"data": [{"nope": 1}]}')
    with openai(server) as embedder, pytest.raises(embed.EmbeddingServiceError, match="malformed"):
        embedder.embed(["alpha"])


def test_openai_base_url_may_end_in_v1(server: FakeServer) -> None:
    settings = embed.EmbeddingConfig(provider="openai", base_url=server.url + "/v1/")
    with embed.OpenAIEmbedder(settings) as embedder:
        embedder.embed(["alpha"])
    assert server.seen[0].path == "/v1/embeddings"
    assert "Authorization" not in server.seen[0].headers


def test_openai_connection_refused_is_retried_then_reported() -> None:
    settings = embed.EmbeddingConfig(provider="openai", base_url="http://127.0.0.1:9", max_retries=1)
    sleeps = Sleeps()
    with embed.OpenAIEmbedder(settings, sleep=sleeps) as embedder:
        with pytest.raises(embed.EmbeddingServiceError, match="ConnectError") as caught:
            embedder.embed(["alpha"])
    assert caught.value.retryable and len(sleeps) == 1


# --- configuration ---------------------------------------------------------------------


def test_make_embedder_follows_the_provider() -> None:
    assert isinstance(embed.make_embedder(embed.EmbeddingConfig()), embed.WordLlamaEmbedder)
    remote = embed.make_embedder(embed.EmbeddingConfig(provider="openai"))
    assert isinstance(remote, embed.OpenAIEmbedder)
    remote.close()


def test_config_hides_the_key_and_rejects_unknown_fields() -> None:
    config = embed.EmbeddingConfig(api_key=pydantic.SecretStr("sk-secret"))
    assert "sk-secret" not in repr(config)
    with pytest.raises(pydantic.ValidationError):
        embed.EmbeddingConfig(batchsize=3)  # type: ignore[call-arg]
    with pytest.raises(pydantic.ValidationError):
        embed.EmbeddingConfig(timeout_s=0)
    for field in embed.EmbeddingConfig.model_fields.values():
        assert field.description
