"""Fit the trees' calibration out of domain: their probabilities on claims they never saw.

Usage::

    CITERUN_EVALDATA=/work/shared/evaldata python -m training.fit_calibration [--out PATH]

The trees (``judge_model.json``) were trained on SciFact train and calibrated there; on
other text they were confident where they were wrong (issue 23; docs/benchmarks.md). This
fits :class:`training.trees.model.Recalibration` -- one weight on the trees'
log-probabilities and a bias per class -- on **SciTab** (Lu et al. 2023, MIT): the 624
claims that ``bench.quality.out_of_domain`` does not sample to measure on, each against
its table's caption and cells as the judge reads them (the same passages and ranked
sentences a run uses). Written beside the trees: ``training/trees/calibration.json``. Class-balanced log-loss, full-batch gradient descent from weight 1,
bias 0, a fixed number of steps: deterministic, a few seconds after the features (about
20 s of CPU). The measured sets never enter it; SciTab's measured claims are held-out
claims of the set it was fitted on, the other six sets are out of domain for it.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import pathlib
import sys

import numpy

from evalsets import claims, scifact
from citerun.pipeline import embed
from training.trees import features, model

STEPS = 3000
RATE = 0.05


def probabilities(pairs: list[claims.Pair]) -> tuple[numpy.ndarray, numpy.ndarray]:
    """The trees' calibrated probabilities of each pair (rows) and the gold labels."""
    # The shipped trees, without the calibration this fits.
    featurizer, trees = features.Featurizer(embed.WordLlamaEmbedder()), model.Model.load()
    rows, gold = [], []
    for pair in pairs:
        found = featurizer.features(pair.claim, claims.passages(pair.evidence))
        rows.append(trees.probabilities(found.vector[None, :])[0] if found is not None
                    else numpy.full(3, 1 / 3))
        gold.append(model.LABELS.index(pair.gold))
    return numpy.array(rows, dtype=numpy.float64), numpy.array(gold)


def fit(p: numpy.ndarray, y: numpy.ndarray) -> tuple[float, numpy.ndarray]:
    logp = numpy.log(numpy.clip(p, 1e-6, 1.0))
    counts = numpy.bincount(y, minlength=3).astype(numpy.float64)
    w = (len(y) / (3 * numpy.maximum(counts, 1.0)))[y]
    weight, bias = 1.0, numpy.zeros(3)
    for _ in range(STEPS):
        q = model.softmax(weight * logp + bias)
        g = q.copy()
        g[numpy.arange(len(y)), y] -= 1.0
        g *= w[:, None] / w.sum()
        weight -= RATE * float((g * logp).sum())
        bias -= RATE * g.sum(0)
    return weight, bias


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=model.CALIBRATION)
    args = parser.parse_args()
    pairs = claims.unmeasured("scitab")
    p, y = probabilities(pairs)
    weight, bias = fit(p, y)
    counts = collections.Counter(model.LABELS[k] for k in y)
    data = {
        "weight": round(weight, 6), "bias": [round(float(b), 6) for b in bias],
        "model_sha256": hashlib.sha256(model.ARTIFACT.read_bytes()).hexdigest(),
        "fitted_on": (f"SciTab (MIT): {len(pairs)} claims not in bench.quality.out_of_domain's "
                      f"sample ({', '.join(f'{k} {counts[k]}' for k in model.LABELS)})"),
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: weight {weight:.3f}, bias {numpy.round(bias, 3).tolist()}", file=sys.stderr)


if __name__ == "__main__":
    main()
