"""The trained model of the embedded judge: its artifact, inference and its training step.

The artifact (``judge_model.json`` beside this module, written by
``bench/train_judge.py``; see ``MODEL_CARD.md``) holds the feature names it was trained
on, the standardisation, the weights of a logistic regression or a one-hidden-layer MLP,
the temperature that calibrates its probabilities and the per-class decision offsets.
JSON, not a pickle: a model file must never be able to run code, and JSON is byte-stable
so a retrain on the same seed gives the same file (the checksum test holds the shipped
one). Inference is a few matrix products in numpy: no extra runtime dependency.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import typing

import numpy
import numpy.typing

from citerun.worker.pipeline.judging import features
from citerun.worker.pipeline.judging.types import JudgeConfigError

ARTIFACT = pathlib.Path(__file__).with_name("judge_model.json")
LABELS = ("SUPPORT", "CONTRADICT", "NEI")
Array = numpy.typing.NDArray[typing.Any]


def softmax(logits: Array) -> Array:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = numpy.exp(shifted)
    return typing.cast(Array, exp / exp.sum(axis=-1, keepdims=True))


@dataclasses.dataclass(frozen=True)
class Model:
    """Standardisation + (optional hidden layer) + linear layer; calibrated by ``temperature``."""

    names: tuple[str, ...]
    mean: Array
    scale: Array
    layers: tuple[tuple[Array, Array], ...]
    temperature: float = 1.0
    offsets: Array = dataclasses.field(default_factory=lambda: numpy.zeros(3, numpy.float32))
    zero_vector: bool = False

    def logits(self, x: Array) -> Array:
        h = (numpy.asarray(x, dtype=numpy.float32) - self.mean) / self.scale
        for index, (weight, bias) in enumerate(self.layers):
            h = h @ weight + bias
            if index < len(self.layers) - 1:
                h = numpy.maximum(h, 0.0)
        return h

    def probabilities(self, x: Array) -> Array:
        """Calibrated class probabilities, columns in :data:`LABELS` order."""
        return softmax(self.logits(x) / self.temperature)

    def decide(self, probabilities: Array) -> Array:
        """The class index per row: calibrated log-probability plus the decision offsets."""
        return typing.cast(Array, numpy.argmax(numpy.log(probabilities + 1e-12) + self.offsets, axis=-1))

    def save(self, path: pathlib.Path) -> None:
        def floats(a: Array) -> typing.Any:
            return numpy.round(numpy.asarray(a, dtype=numpy.float64), 6).tolist()

        data = {
            "format": 1, "labels": list(LABELS), "names": list(self.names),
            "mean": floats(self.mean), "scale": floats(self.scale),
            "layers": [{"weight": floats(w), "bias": floats(b)} for w, b in self.layers],
            "temperature": round(self.temperature, 6), "offsets": floats(self.offsets),
            "zero_vector": self.zero_vector,
        }
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: pathlib.Path = ARTIFACT) -> Model:
        """Load an artifact; :class:`JudgeConfigError` if it is missing or does not fit."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise JudgeConfigError(f"cannot read the judge model {str(path)!r}: {err}") from err
        if data.get("format") != 1 or tuple(data.get("labels", ())) != LABELS:
            raise JudgeConfigError(f"the judge model {str(path)!r} has an unknown format")
        if tuple(data["names"]) != features.NAMES:
            raise JudgeConfigError(
                f"the judge model {str(path)!r} was trained on other features; "
                "retrain it with bench/train_judge.py")

        def array(values: typing.Any) -> Array:
            return numpy.asarray(values, dtype=numpy.float32)

        return cls(tuple(data["names"]), array(data["mean"]), array(data["scale"]),
                   tuple((array(layer["weight"]), array(layer["bias"])) for layer in data["layers"]),
                   float(data["temperature"]), array(data["offsets"]), bool(data["zero_vector"]))


def fit(x: Array, y: Array, weights: Array, *, hidden: int = 0, l2: float = 1e-3,
        epochs: int = 600, seed: int = 0, learning_rate: float = 0.02) -> Model:
    """Weighted, class-balanced cross-entropy by full-batch Adam (training time only)."""
    rng = numpy.random.RandomState(seed)
    x = numpy.asarray(x, dtype=numpy.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    h0 = (x - mean) / scale
    classes = len(LABELS)
    totals = numpy.array([weights[y == k].sum() for k in range(classes)])
    sample = weights * (totals.sum() / (classes * numpy.maximum(totals, 1e-9)))[y]
    sample = sample / sample.sum()
    onehot = numpy.eye(classes)[y]
    sizes = [x.shape[1]] + ([hidden] if hidden else []) + [classes]
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.normal(0, numpy.sqrt(2.0 / n_in), (n_in, n_out)) * (0.1 if not hidden else 1.0),
                   numpy.zeros(n_out)]
    moments = [numpy.zeros_like(p) for p in params]
    squares = [numpy.zeros_like(p) for p in params]
    for step in range(1, epochs + 1):
        activations = [h0]
        h = h0
        for index in range(0, len(params), 2):
            h = h @ params[index] + params[index + 1]
            if index < len(params) - 2:
                h = numpy.maximum(h, 0.0)
            activations.append(h)
        delta = (softmax(h) - onehot) * sample[:, None]
        grads: list[Array] = [numpy.zeros(0)] * len(params)
        for index in range(len(params) - 2, -1, -2):
            grads[index] = activations[index // 2].T @ delta + l2 * params[index]
            grads[index + 1] = delta.sum(axis=0)
            if index:
                delta = (delta @ params[index].T) * (activations[index // 2] > 0)
        for i, grad in enumerate(grads):
            moments[i] = 0.9 * moments[i] + 0.1 * grad
            squares[i] = 0.999 * squares[i] + 0.001 * grad ** 2
            corrected = moments[i] / (1 - 0.9 ** step)
            params[i] = params[i] - learning_rate * corrected / (
                numpy.sqrt(squares[i] / (1 - 0.999 ** step)) + 1e-8)
    layers = tuple((params[i].astype(numpy.float32), params[i + 1].astype(numpy.float32))
                   for i in range(0, len(params), 2))
    return Model(features.NAMES, mean.astype(numpy.float32), scale.astype(numpy.float32), layers)
