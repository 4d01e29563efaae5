"""Fit the reader's calibration (``reader_calibration.json``) on claims neither model saw.

Usage::

    CITERUN_EVALDATA=../shared/evaldata python -m training.fit_reader_calibration \\
        [--reader PATH] [--trees | --no-trees] [--scifact-train] [--half] [--no-bias] [--out PATH]

Fits ``softmax(logits / T + w * log p_trees + b)`` (:class:`citerun.pipeline.judging.reader.Calibration`)
by maximum likelihood (L-BFGS, deterministic) on the judge's own signals
(:meth:`training.trees.judge.ResearchJudge.signals`: the claim glossed if German, its
ranked sentences, the reader's logits and the trees' probabilities):

- the **SciTab** claims (MIT) that ``bench.quality.out_of_domain`` does not sample, which
  the shipped reader and the trees were not trained on; with ``--half``, only the half of
  them (:func:`evalsets.claims.halves`) that ``training.reader_data`` leaves for
  calibration, for a reader trained on the other half;
- with ``--scifact-train``, also SciFact train's claims against their cited abstracts,
  for a reader that never saw SciFact's claims (the trees did, so only without ``--trees``).

``--trees`` fits ``w`` too (the trees' probabilities of the same claim joined to the
reader's logits; only :class:`training.trees.judge.ResearchJudge` reads such a file, the
shipped judge has no trees); ``--no-trees`` keeps ``w`` at 0 (what ``training.ship``
fits). The file records the reader's and the trees' sha256: the judge refuses a
calibration fitted to other files.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy
from scipy import optimize

from evalsets import claims as claim_sets
from evalsets import scifact
from citerun.pipeline import embed
from citerun.pipeline.judging import reader
from training.trees import judge as trees_judge
from training.trees import model

LABELS = reader.LABELS


def signals(judge: trees_judge.ResearchJudge, pairs: list[claim_sets.Pair]
            ) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    logits, trees, gold = [], [], []
    for pair in pairs:
        found = judge.signals(pair.claim, claim_sets.passages(pair.evidence))
        if found is None or found.logits is None or found.trees is None:
            continue
        logits.append(found.logits)
        trees.append(found.trees)
        gold.append(LABELS.index(pair.gold))
    return numpy.array(logits), numpy.array(trees), numpy.array(gold)


def fit(logits: numpy.ndarray, trees: numpy.ndarray, gold: numpy.ndarray, with_trees: bool,
        with_bias: bool = True) -> tuple[float, numpy.ndarray, float]:
    log_trees = numpy.log(numpy.clip(trees, 1e-6, 1.0))

    def unpack(x: numpy.ndarray) -> tuple[float, numpy.ndarray, float]:
        return float(numpy.exp(x[0])), numpy.array([0.0, x[1], x[2]]), float(x[3]) if with_trees else 0.0

    def loss(x: numpy.ndarray) -> float:
        temperature, bias, weight = unpack(x)
        z = logits / temperature + bias + weight * log_trees
        z = z - z.max(axis=1, keepdims=True)
        logp = z - numpy.log(numpy.exp(z).sum(axis=1, keepdims=True))
        return float(-logp[numpy.arange(len(gold)), gold].mean())

    start = numpy.array([0.0, 0.0, 0.0, 0.5 if with_trees else 0.0])
    bias_bounds = (-5.0, 5.0) if with_bias else (0.0, 0.0)
    bounds = [(-3.0, 3.0), bias_bounds, bias_bounds, (0.0, 5.0) if with_trees else (0.0, 0.0)]
    result = optimize.minimize(loss, start, method="L-BFGS-B", bounds=bounds)
    temperature, bias, weight = unpack(result.x)
    print(f"NLL {loss(start):.4f} -> {result.fun:.4f} on {len(gold)} pairs", file=sys.stderr)
    return temperature, bias, weight


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", type=pathlib.Path, default=reader.MODEL)
    parser.add_argument("--trees", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--scifact-train", action="store_true")
    parser.add_argument("--half", action="store_true",
                        help="only the SciTab half training.reader_data does not train on (for a "
                        "reader trained on the other half)")
    parser.add_argument("--bias", action=argparse.BooleanOptionalAction, default=True,
                        help="fit a bias per class (--no-bias: the temperature alone, which keeps "
                        "the reader's ranking of the classes)")
    parser.add_argument("--out", type=pathlib.Path, default=reader.CALIBRATION)
    args = parser.parse_args()
    if args.trees and args.scifact_train:
        parser.error("the trees were trained on SciFact train: --scifact-train only with --no-trees")
    started = time.perf_counter()
    judge = trees_judge.ResearchJudge(embed.WordLlamaEmbedder(), research=trees_judge.Research(
        reader_file=args.reader, calibrated=False), trees=True)
    scitab = claim_sets.unmeasured("scitab")
    pairs = (claim_sets.halves(scitab)[1] if args.half else scitab) + (
        scifact.pairs(None, "train") if args.scifact_train else [])
    logits, trees, gold = signals(judge, pairs)
    temperature, bias, weight = fit(logits, trees, gold, args.trees, args.bias)
    fitted = reader.Calibration(temperature, bias, reader.sha256(args.reader), weight,
                                reader.sha256(model.ARTIFACT) if weight else "")
    fitted.save(args.out, {"fitted_on": sorted({p.set for p in pairs}), "pairs": int(len(gold)),
                           "command": "python -m training.fit_reader_calibration"
                           + (" --no-trees" if not args.trees else "")
                           + (" --scifact-train" if args.scifact_train else "")
                           + (" --half" if args.half else "")
                           + (" --no-bias" if not args.bias else "")})
    print(f"wrote {args.out}: T {temperature:.3f}, bias {numpy.round(bias, 3).tolist()}, trees weight "
          f"{weight:.3f} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
