"""The trees: the embedded judge's decision before the reader, their artifact, inference,
training step and out-of-domain calibration.

Not shipped (issue 50): the judge decides with the reader, and the trees are kept here for
the benches that compare with them (:mod:`training.trees.judge`,
``bench.quality.out_of_domain --config 'trees={"reader": false}'``). The artifact
(``judge_model.json`` beside this module, written by ``training/judge.py``; see
``README.md`` beside it) holds the feature names it was trained
on and the flattened trees of a gradient-boosted model (format 2, shipped) or the
standardisation and the weights of a logistic regression or an MLP (format 1),
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

from citerun.pipeline.judging.types import JudgeConfigError
from training.trees import features

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
    trees: Trees | None = None

    def logits(self, x: Array) -> Array:
        if self.trees is not None:
            return self.trees.raw_scores(numpy.asarray(x, dtype=numpy.float64))
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
            "format": 1 if self.trees is None else 2, "labels": list(LABELS),
            "names": list(self.names),
            "mean": floats(self.mean), "scale": floats(self.scale),
            "layers": [{"weight": floats(w), "bias": floats(b)} for w, b in self.layers],
            "temperature": round(self.temperature, 6), "offsets": floats(self.offsets),
        }
        if self.trees is not None:
            data["trees"] = self.trees.as_json()
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: pathlib.Path = ARTIFACT) -> Model:
        """Load an artifact; :class:`JudgeConfigError` if it is missing or does not fit."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise JudgeConfigError(f"cannot read the judge model {str(path)!r}: {err}") from err
        if data.get("format") not in (1, 2) or tuple(data.get("labels", ())) != LABELS:
            raise JudgeConfigError(f"the judge model {str(path)!r} has an unknown format")
        if tuple(data["names"]) != features.NAMES:
            raise JudgeConfigError(
                f"the judge model {str(path)!r} was trained on other features; "
                "retrain it with training/judge.py")

        def array(values: typing.Any) -> Array:
            return numpy.asarray(values, dtype=numpy.float32)

        return cls(tuple(data["names"]), array(data["mean"]), array(data["scale"]),
                   tuple((array(layer["weight"]), array(layer["bias"])) for layer in data["layers"]),
                   float(data["temperature"]), array(data["offsets"]),
                   Trees.from_json(data["trees"]) if data["format"] == 2 else None)


@dataclasses.dataclass(frozen=True)
class Trees:
    """Gradient-boosted trees (LightGBM's, flattened), evaluated in numpy.

    Tree ``t`` adds to class ``t % 3``; a node with ``feature < 0`` is a leaf holding
    ``value``; otherwise ``x[feature] <= threshold`` goes ``left``, else ``right``. The
    arrays are padded to the largest tree, so all trees step down together.
    """

    feature: Array  # int, (trees, nodes)
    threshold: Array  # float64
    left: Array  # int
    right: Array  # int
    value: Array  # float64

    def raw_scores(self, x: Array) -> Array:
        rows = numpy.atleast_2d(x)
        trees = numpy.arange(self.feature.shape[0])
        out = numpy.zeros((rows.shape[0], len(LABELS)))
        for r, row in enumerate(rows):
            node = numpy.zeros(len(trees), dtype=numpy.int64)
            for _ in range(self.feature.shape[1]):
                feature = self.feature[trees, node]
                inner = feature >= 0
                if not inner.any():
                    break
                go_left = row[numpy.where(inner, feature, 0)] <= self.threshold[trees, node]
                node = numpy.where(inner, numpy.where(go_left, self.left[trees, node],
                                                      self.right[trees, node]), node)
            leaves = self.value[trees, node]
            out[r] = [leaves[k::len(LABELS)].sum() for k in range(len(LABELS))]
        return out

    @classmethod
    def from_lightgbm(cls, dump: dict[str, typing.Any]) -> Trees:
        """From ``Booster.dump_model()`` of a 3-class model (training time only)."""
        flat: list[list[tuple[int, float, int, int, float]]] = []
        for info in dump["tree_info"]:
            nodes: list[tuple[int, float, int, int, float]] = []

            def walk(node: dict[str, typing.Any]) -> int:
                index = len(nodes)
                nodes.append((-1, 0.0, 0, 0, 0.0))
                if "leaf_value" in node or "split_feature" not in node:
                    nodes[index] = (-1, 0.0, index, index, float(node.get("leaf_value", 0.0)))
                    return index
                if node["decision_type"] != "<=":
                    raise ValueError(f"unsupported split {node['decision_type']}")
                left = walk(node["left_child"])
                right = walk(node["right_child"])
                nodes[index] = (int(node["split_feature"]), float(node["threshold"]), left, right, 0.0)
                return index

            walk(info["tree_structure"])
            flat.append(nodes)
        width = max(len(n) for n in flat)
        padded = [n + [(-1, 0.0, 0, 0, 0.0)] * (width - len(n)) for n in flat]
        columns = list(zip(*[list(zip(*n)) for n in padded]))
        return cls(numpy.asarray(columns[0], dtype=numpy.int64), numpy.asarray(columns[1], dtype=numpy.float64),
                   numpy.asarray(columns[2], dtype=numpy.int64), numpy.asarray(columns[3], dtype=numpy.int64),
                   numpy.asarray(columns[4], dtype=numpy.float64))

    def as_json(self) -> dict[str, typing.Any]:
        return {"feature": self.feature.tolist(), "threshold": self.threshold.tolist(),
                "left": self.left.tolist(), "right": self.right.tolist(),
                "value": numpy.round(self.value, 9).tolist()}

    @classmethod
    def from_json(cls, data: dict[str, typing.Any]) -> Trees:
        return cls(numpy.asarray(data["feature"], dtype=numpy.int64),
                   numpy.asarray(data["threshold"], dtype=numpy.float64),
                   numpy.asarray(data["left"], dtype=numpy.int64),
                   numpy.asarray(data["right"], dtype=numpy.int64),
                   numpy.asarray(data["value"], dtype=numpy.float64))


def fit_trees(x: Array, y: Array, weights: Array, *, rounds: int = 200, leaves: int = 7,
              seed: int = 0) -> Model:
    """Class-balanced gradient boosting with LightGBM (a training-time dependency only)."""
    import lightgbm  # noqa: PLC0415 - not needed, and not installed, in a worker

    totals = numpy.array([weights[y == k].sum() for k in range(len(LABELS))])
    sample = weights * (totals.sum() / (len(LABELS) * numpy.maximum(totals, 1e-9)))[y]
    params = {"objective": "multiclass", "num_class": len(LABELS), "num_leaves": leaves,
              "learning_rate": 0.05, "bagging_fraction": 0.8, "bagging_freq": 1,
              "feature_fraction": 0.5, "min_data_in_leaf": 10, "lambda_l2": 1.0, "seed": seed,
              "verbose": -1, "num_threads": 1, "deterministic": True}
    booster = lightgbm.train(params, lightgbm.Dataset(numpy.asarray(x, dtype=numpy.float64), y,
                                                      weight=sample), num_boost_round=rounds)
    trees = Trees.from_lightgbm(booster.dump_model())
    sample_rows = numpy.asarray(x[:100], dtype=numpy.float64)
    if not numpy.allclose(trees.raw_scores(sample_rows), booster.predict(sample_rows, raw_score=True),
                          atol=1e-6):
        raise AssertionError("the flattened trees do not reproduce LightGBM's scores")
    width = x.shape[1]
    return Model(features.NAMES, numpy.zeros(width, numpy.float32), numpy.ones(width, numpy.float32),
                 (), trees=trees)


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


CALIBRATION = pathlib.Path(__file__).with_name("calibration.json")


@dataclasses.dataclass(frozen=True)
class Recalibration:
    """The trees' probabilities made to mean the same out of domain (issue 23):
    ``softmax(weight * log p + bias)``, fitted by ``training/fit_calibration.py`` on
    claims of a set the trees never saw (SciTab's, none of those the benches measure).
    ``weight`` below 1 softens the trees' confidence, which on SciFact's own claims was
    right and elsewhere was 0.9 where they were right half the time; ``bias`` moves the
    classes' priors (the trees, trained on SciFact, say "not enough info" far too often
    on other text). The decision is the most probable class of the result."""

    weight: float
    bias: Array
    model_sha256: str

    def apply(self, probabilities: Array) -> Array:
        logp = numpy.log(numpy.clip(probabilities, 1e-6, 1.0))
        return softmax(self.weight * logp + self.bias)

    @classmethod
    def load(cls, path: pathlib.Path = CALIBRATION, model_path: pathlib.Path = ARTIFACT) -> Recalibration:
        """Load it; :class:`JudgeConfigError` if it is missing, malformed or fitted to
        another model than ``model_path`` (a retrained model needs its calibration refitted)."""
        import hashlib

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            weight, bias = float(data["weight"]), numpy.asarray(data["bias"], dtype=numpy.float64)
            sha = str(data["model_sha256"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise JudgeConfigError(f"cannot read the judge calibration {str(path)!r}: {err}") from err
        if bias.shape != (3,) or not numpy.isfinite(bias).all() or not 0.0 < weight < 10.0:
            raise JudgeConfigError(f"the judge calibration {str(path)!r} is out of range")
        if hashlib.sha256(model_path.read_bytes()).hexdigest() != sha:
            raise JudgeConfigError(
                f"the judge calibration {str(path)!r} was fitted to another model than "
                f"{str(model_path)!r}; refit it with training/fit_calibration.py")
        return cls(weight, bias, sha)
