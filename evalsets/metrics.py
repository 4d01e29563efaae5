"""Per-class and macro F1, as every quality table and training screen reports them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy


def f1_per_class(gold: Sequence[object] | numpy.ndarray, predicted: Sequence[object] | numpy.ndarray,
                 labels: Sequence[object]) -> list[float]:
    """F1 of each label in ``labels`` order (0 for a label never predicted right)."""
    g, p = numpy.asarray(gold), numpy.asarray(predicted)
    out = []
    for label in labels:
        tp = int(numpy.sum((g == label) & (p == label)))
        fp = int(numpy.sum((g != label) & (p == label)))
        fn = int(numpy.sum((g == label) & (p != label)))
        out.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return out


def macro_f1(f1s: Sequence[float]) -> float:
    """The unweighted mean of per-class F1s (summed in label order)."""
    return sum(f1s) / len(f1s)
