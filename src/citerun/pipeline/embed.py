"""Text embeddings behind one small protocol, with an offline default and an HTTP option.

Every vector citerun stores has :data:`EMBEDDING_DIM` (256) dimensions, because the
``chunks.embedding`` column and its HNSW index have one fixed width. Embedders are
therefore interchangeable only at that width: the offline WordLlama model is used at
256 dimensions natively, and an OpenAI-compatible server is asked for 256 and, if it
sends more, truncated and renormalized (valid for Matryoshka-trained models such as
``text-embedding-3-*``). Each embedder has a ``name`` that the caller stores next to the
vectors, so vectors of different models are never compared with each other.

The default must work on a laptop with no network: :class:`WordLlamaEmbedder` loads the
weights that ship inside the ``wordllama`` wheel, with downloads disabled, once per
process. The HTTP embedder is synchronous on purpose: the pipeline runs it in a worker
thread, and a sync client keeps retries and batching plain code.
"""

from __future__ import annotations

import collections.abc
import logging
import pathlib
import random
import threading
import time
import typing

import httpx
import numpy
import numpy.typing
import pydantic

from citerun.core import errors, retry

logger = logging.getLogger(__name__)

EMBEDDING_DIM = 256
"""Width of every stored vector: the ``chunks.embedding`` column's (tests/db/test_embedding_model.py)."""

Vectors = numpy.typing.NDArray[numpy.float32]


class EmbeddingError(errors.CiterunError):
    """Embedding the texts failed."""


class EmbeddingServiceError(EmbeddingError):
    """The embedding service did not answer with embeddings."""

    def __init__(
        self, message: str | None = None, *, status: int | None = None, retryable: bool = False
    ) -> None:
        self.status = status
        self.retryable = retryable
        super().__init__(message)


@typing.runtime_checkable
class Embedder(typing.Protocol):
    """Turns texts into unit-length float32 vectors of ``dim`` dimensions."""

    @property
    def name(self) -> str:
        """Identifies model and width; stored with the vectors it made."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: collections.abc.Sequence[str]) -> Vectors:
        """One L2-normalized row per text, shape ``(len(texts), dim)``, dtype float32."""


def _normalize_rows(vectors: Vectors, texts: collections.abc.Sequence[str]) -> Vectors:
    norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
    empty = numpy.flatnonzero(norms[:, 0] == 0)
    if empty.size:
        samples = ", ".join(f"#{i} {texts[i][:40]!r}" for i in empty[:3])
        raise EmbeddingError(f"{empty.size} text(s) have nothing to embed: {samples}")
    return numpy.ascontiguousarray(vectors / norms, dtype=numpy.float32)


# --- WordLlama (offline default) -------------------------------------------------------

WORDLLAMA_CONFIG = "l2_supercat"



def _import_wordllama() -> typing.Any:
    """Import wordllama, undoing the ``logging.basicConfig(level=INFO)`` it runs on import.

    The process's logging belongs to the CLI; a library must not add root handlers.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    # wordllama ships no type information (no py.typed).
    import wordllama

    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return wordllama


class _WordLlamaModel(typing.Protocol):
    """The part of ``wordllama.inference.WordLlamaInference`` used here (it is untyped)."""

    def embed(
        self, texts: list[str], norm: bool = ..., batch_size: int = ...
    ) -> numpy.typing.NDArray[numpy.float32]: ...


_model_lock = threading.Lock()
_model: _WordLlamaModel | None = None


def _wordllama_model() -> _WordLlamaModel:
    """Load the WordLlama model once per process, from the files inside its wheel.

    ``WordLlama.load()`` with its defaults looks for the tokenizer in a folder that does
    not exist in the wheel and then downloads it from Hugging Face; pointing
    ``cache_dir`` at the package folder finds both the tokenizer and the 256-dim weights
    there, and ``disable_download`` turns a missing file into an error, not a download.
    """
    global _model
    with _model_lock:
        if _model is None:
            wordllama = _import_wordllama()

            package_dir = pathlib.Path(wordllama.__file__).resolve().parent
            started = time.perf_counter()
            try:
                _model = wordllama.WordLlama.load(
                    config=WORDLLAMA_CONFIG,
                    dim=EMBEDDING_DIM,
                    cache_dir=package_dir,
                    disable_download=True,
                )
            except (FileNotFoundError, ValueError) as err:
                raise EmbeddingError(
                    f"the WordLlama model files are missing from {package_dir}: {err}"
                ) from err
            logger.info(
                "loaded WordLlama model",
                extra={
                    "action": "load_model",
                    "model": WORDLLAMA_CONFIG,
                    "seconds": round(time.perf_counter() - started, 3),
                },
            )
        return _model


class WordLlamaEmbedder:
    """Static token embeddings averaged per text: fast on a CPU, no network, 256 dims."""

    name = f"wordllama/{WORDLLAMA_CONFIG}@{EMBEDDING_DIM}"
    dim = EMBEDDING_DIM

    def __init__(self, *, batch_size: int = 64) -> None:
        self.batch_size = batch_size

    def embed(self, texts: collections.abc.Sequence[str]) -> Vectors:
        if not texts:
            return numpy.empty((0, self.dim), dtype=numpy.float32)
        raw = _wordllama_model().embed(list(texts), norm=False, batch_size=self.batch_size)
        return _normalize_rows(numpy.asarray(raw, dtype=numpy.float32), texts)


# --- OpenAI-compatible HTTP endpoint ---------------------------------------------------


class EmbeddingConfig(pydantic.BaseModel):
    """Which embedder to use and how to reach it."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    provider: typing.Literal["wordllama", "openai"] = pydantic.Field(
        default="wordllama",
        description=(
            "'wordllama' runs offline inside the worker (default: no network, no key); "
            "'openai' calls any OpenAI-compatible /v1/embeddings endpoint."
        ),
    )
    base_url: str = pydantic.Field(
        default="https://api.openai.com",
        description=(
            "Server root for provider 'openai'; '/v1/embeddings' is appended (a trailing "
            "'/v1' is accepted too). Default: OpenAI itself."
        ),
    )
    model: str = pydantic.Field(
        default="text-embedding-3-small",
        description=(
            "Model name for provider 'openai'. The default is Matryoshka-trained, so it "
            "honours 'dimensions' and may be truncated to 256 without losing its meaning."
        ),
    )
    api_key: pydantic.SecretStr | None = pydantic.Field(
        default=None,
        description="Bearer token for provider 'openai'; None for servers without auth.",
    )
    timeout_s: float = pydantic.Field(
        default=30.0,
        gt=0,
        description=(
            "Seconds per HTTP request (connect, read and write each). A batch of 64 chunks "
            "takes well under a second on a healthy server; 30 s only rules out hangs."
        ),
    )
    batch_size: int = pydantic.Field(
        default=64,
        ge=1,
        le=2048,
        description=(
            "Texts per request (OpenAI accepts up to 2048). 64 chunks of ~900 characters "
            "keep a request near 60 kB and a retry cheap."
        ),
    )
    max_retries: int = pydantic.Field(
        default=5,
        ge=0,
        description=(
            "Extra attempts per batch after a 429, a 5xx or a network error. With the "
            "backoff below, 5 retries wait up to about a minute before the task fails "
            "and the queue's own retry takes over."
        ),
    )
    backoff_base_s: float = pydantic.Field(
        default=0.5,
        ge=0,
        description=(
            "Seconds of the first retry delay; each further delay doubles, with jitter. "
            "A Retry-After header from the server takes precedence."
        ),
    )
    backoff_cap_s: float = pydantic.Field(
        default=30.0,
        ge=0,
        description=(
            "Upper bound in seconds for one retry delay, including a server's "
            "Retry-After, so a task never sleeps longer than its lease can cover."
        ),
    )
    request_dimensions: bool = pydantic.Field(
        default=True,
        description=(
            "Send 'dimensions': 256 with each request. Turn off for servers or models "
            "that reject the parameter; longer vectors are then truncated locally."
        ),
    )

    def retry_policy(self) -> retry.RetryPolicy:
        """The requests' retries: this config's backoff, cap (Retry-After included) and
        attempts."""
        return retry.RetryPolicy(base_s=self.backoff_base_s, cap_s=self.backoff_cap_s,
                                 max_attempts=self.max_retries + 1)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``POST /v1/embeddings`` endpoint."""

    dim = EMBEDDING_DIM

    def __init__(
        self,
        config: EmbeddingConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: collections.abc.Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.name = f"openai/{config.model}@{EMBEDDING_DIM}"
        base = config.base_url.rstrip("/")
        self.url = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
        headers = {"Content-Type": "application/json"}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(config.timeout_s), transport=transport
        )
        self._sleep = sleep
        self._random = random.Random()

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def embed(self, texts: collections.abc.Sequence[str]) -> Vectors:
        if not texts:
            return numpy.empty((0, self.dim), dtype=numpy.float32)
        size = self.config.batch_size
        parts = [self._embed_batch(texts[i : i + size]) for i in range(0, len(texts), size)]
        return _normalize_rows(numpy.concatenate(parts), texts)

    def _embed_batch(self, texts: collections.abc.Sequence[str]) -> Vectors:
        body: dict[str, object] = {
            "model": self.config.model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self.config.request_dimensions:
            body["dimensions"] = EMBEDDING_DIM
        response = self._post_with_retries(body)
        return self._vectors(response, len(texts))

    def _post_with_retries(self, body: dict[str, object]) -> httpx.Response:
        policy = self.config.retry_policy()

        def attempt() -> httpx.Response:
            try:
                response = self._client.post(self.url, json=body)
            except httpx.TransportError as err:
                raise retry.TryAgain.no_answer(err) from err
            if response.is_success:
                return response
            problem = f"HTTP {response.status_code}: {response.text[:200]}"
            if not policy.retryable(response.status_code):
                raise EmbeddingServiceError(
                    f"the embedding service at {self.url} refused the request "
                    f"with {problem}",
                    status=response.status_code,
                )
            raise retry.TryAgain(problem, status=response.status_code,
                                 retry_after=response.headers.get("retry-after"))

        try:
            return retry.retrying_sync(policy, "embed_request", attempt,
                                       errors=(retry.TryAgain,), sleep=self._sleep,
                                       rng=self._random)
        except retry.TryAgain as err:
            raise EmbeddingServiceError(
                f"the embedding service at {self.url} failed {policy.max_attempts} time(s); "
                f"last error: {err}",
                status=err.status,
                retryable=True,
            ) from err

    def _vectors(self, response: httpx.Response, count: int) -> Vectors:
        try:
            data = response.json()["data"]
            ordered = sorted(data, key=lambda item: item["index"])
            rows = [item["embedding"] for item in ordered]
            vectors = numpy.asarray(rows, dtype=numpy.float32)
        except (ValueError, KeyError, TypeError) as err:
            raise EmbeddingServiceError(
                f"the embedding service at {self.url} sent a malformed response: {err!r}"
            ) from err
        if vectors.ndim != 2 or vectors.shape[0] != count:
            raise EmbeddingServiceError(
                f"the embedding service at {self.url} sent {vectors.shape[0] if vectors.ndim else 0}"
                f" embeddings of shape {vectors.shape[1:]} for {count} texts"
            )
        width = vectors.shape[1]
        if width < EMBEDDING_DIM:
            raise EmbeddingError(
                f"model {self.config.model!r} returned {width}-dimensional embeddings; "
                f"citerun stores {EMBEDDING_DIM} dimensions and cannot pad shorter vectors. "
                "Choose a model with at least that many dimensions."
            )
        # Matryoshka: the first dimensions carry the meaning; renormalized by the caller.
        return vectors[:, :EMBEDDING_DIM]


def make_embedder(config: EmbeddingConfig) -> Embedder:
    """The embedder that ``config`` describes."""
    if config.provider == "openai":
        return OpenAIEmbedder(config)
    return WordLlamaEmbedder(batch_size=config.batch_size)
