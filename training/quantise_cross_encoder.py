"""Quantise the fine-tuned cross-encoders to int8 and make the trees' out-of-fold columns.

After ``training.fit_cross_encoder fold`` has written ``fold-K.fp32.onnx`` (K = 0, 1, 2)
into ``DIR``::

    python -m training.quantise_cross_encoder /tmp/pairs.npz DIR

quantises each graph with onnxruntime's dynamic int8 quantisation (weights int8,
activations quantised per batch), predicts each fold's pairs with that fold's int8 model
in the judge's own onnxruntime session (:class:`CrossEncoder`), and writes

- ``DIR/oof.npz``: each example's out-of-fold features (:func:`cross_encoder.aggregate`
  of its sentences), keyed like the examples, for ``training.judge --cross-encoder-oof``:
  the trees learn from what an int8 model computes, not from the fp32 one it was
  quantised from;
- with ``--final``, ``DIR/final.int8.onnx`` from ``final.fp32.onnx`` (``--fold -1``), to
  measure its size and speed.

Needs ``onnx`` (training time only, Apache-2.0: ``pip install onnx``).
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import sys

import numpy
from onnxruntime.quantization import QuantType, quantize_dynamic

from training import cross_encoder


def quantise(source: pathlib.Path, target: pathlib.Path) -> None:
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", type=pathlib.Path, help="the .npz of training.judge --write-pairs")
    parser.add_argument("dir", type=pathlib.Path, help="training.fit_cross_encoder fold --out")
    parser.add_argument("--final", action="store_true", help="also quantise final.fp32.onnx")
    args = parser.parse_args()
    data = numpy.load(args.pairs)
    folds, items = data["read_folds"], data["read_item"]
    each = numpy.zeros((len(folds), len(cross_encoder.NAMES)), numpy.float32)
    for fold in sorted(set(folds.tolist())):
        target = args.dir / f"fold-{fold}.int8.onnx"
        quantise(args.dir / f"fold-{fold}.fp32.onnx", target)
        reader = cross_encoder.CrossEncoder(target)
        rows = numpy.flatnonzero(folds == fold)
        for batch, tokens in cross_encoder.batches(data, rows):
            each[batch] = reader.run(*tokens)
    # Each example's sentences into its three features, as the judge aggregates them.
    merged = numpy.stack([cross_encoder.aggregate(each[items == i]) for i in range(len(data["keys"]))])
    numpy.savez_compressed(args.dir / "oof.npz", keys=data["keys"], log_probabilities=merged)
    print(f"wrote {args.dir / 'oof.npz'}", file=sys.stderr)
    if args.final:
        out = args.dir / "final.int8.onnx"
        quantise(args.dir / "final.fp32.onnx", out)
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, sha256 "
              f"{hashlib.sha256(out.read_bytes()).hexdigest()})", file=sys.stderr)


if __name__ == "__main__":
    main()
