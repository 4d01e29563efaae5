"""Screen reader candidates in one pass: the judge's own reader inputs for the measured
pairs, read by each candidate model, scored per set.

Usage::

    # here, once (needs citerun): what the judge gives the reader for every measured pair
    CITERUN_EVALDATA=../shared/evaldata python -m training.screen_reader inputs /tmp/inputs.npz
    # wherever onnxruntime runs (numpy, onnxruntime; no citerun, so the device machine too)
    python -m training.screen_reader score /tmp/inputs.npz DIR1/reader.int8.onnx DIR2/... \\
        [--trained-on scitab,scifact] [--calibrate] [--logits OUT.npz] [--summary OUT.json]

``inputs`` runs the judge's featurizer (``TrainedJudge.signals``, the claim glossed when
German) over the pairs ``bench.quality.out_of_domain`` samples (SciFact dev and every set
of ``evalsets.claims.SETS``, 600 a set) and over the SciTab half the calibration is
fitted on (``calibration``), and stores the tokenised (claim, best sentences) pair the
reader reads for each, with its gold label; a pair where the featurizer finds no sentence
is stored as such (the judge answers ``unsupported``: NEI).

``score`` reads them with each model and prints, per set, macro-F1 over the labels the set
has of the argmax of the raw logits (and, in a row below, how many CONTRADICT verdicts were
right of how many were said) (and, with ``--calibrate``, of the calibrated
probabilities with ``contradicted`` gated at 0.7, the calibration fitted on the
``calibration`` rows by ``training.fit_reader_calibration.fit``), and the mean over the
sets not in ``--trained-on``. A screen, not the measure: the decision of the judge (its
evidence checks, "check this") is measured by ``bench.quality.out_of_domain`` with the
chosen model, and that is what docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

import numpy

from evalsets.metrics import f1_per_class, macro_f1

LABELS = ("SUPPORT", "CONTRADICT", "NEI")
CALIBRATION = "calibration"
GATE = 0.7


def inputs(out: pathlib.Path, limit: int) -> None:
    from evalsets import claims, scifact  # noqa: PLC0415 - needs citerun
    from citerun.pipeline import embed  # noqa: PLC0415
    from citerun.pipeline.judging import embedded, reader  # noqa: PLC0415

    sets = {"scifact": scifact.pairs(limit), **claims.load(list(claims.SETS), limit=limit),
            CALIBRATION: claims.halves(claims.unmeasured("scitab"))[1]}
    judge = embedded.TrainedJudge(embed.WordLlamaEmbedder())
    texts, gold, which, found = [], [], [], []
    names = list(sets)
    for name, pairs in sets.items():
        for pair in pairs:
            signals = judge.signals(pair.claim, claims.passages(pair.evidence), read=False)
            if signals is None:
                texts.append((pair.claim, ""))
                found.append(False)
            else:
                texts.append(signals.read_pair())
                found.append(True)
            gold.append(LABELS.index(pair.gold))
            which.append(names.index(name))
        print(f"{name}: {len(pairs)} pairs", file=sys.stderr, flush=True)
    ids, types, mask = reader.encode(texts)
    numpy.savez_compressed(out, ids=ids.astype(numpy.uint16), types=types.astype(numpy.uint8),
                           mask=mask.astype(numpy.uint8), gold=numpy.array(gold), sets=numpy.array(which),
                           found=numpy.array(found), set_names=numpy.array(names))
    with out.with_suffix(".jsonl").open("w", encoding="utf-8") as f:
        for (claim, evidence), g, s in zip(texts, gold, which):
            f.write(json.dumps([names[s], LABELS[g], claim, evidence], ensure_ascii=False) + "\n")
    print(f"wrote {out}: {len(gold)} pairs", file=sys.stderr)


def logits_of(model: pathlib.Path, data: dict[str, numpy.ndarray], batch: int = 64) -> numpy.ndarray:
    import onnxruntime  # noqa: PLC0415

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    ids, types, mask = (data[k].astype(numpy.int64) for k in ("ids", "types", "mask"))
    out = []
    for start in range(0, len(ids), batch):
        length = max(1, int(mask[start:start + batch].sum(1).max()))
        (logits,) = session.run(None, {k: a[start:start + batch, :length]
                                       for k, a in (("ids", ids), ("types", types), ("mask", mask))})
        out.append(numpy.asarray(logits, numpy.float64))
    return numpy.concatenate(out)


def predictions(logits: numpy.ndarray, found: numpy.ndarray, calibration: tuple[float, numpy.ndarray] | None
                ) -> numpy.ndarray:
    nei = LABELS.index("NEI")
    if calibration is None:
        predicted = logits.argmax(1)
    else:
        temperature, bias = calibration
        z = logits / temperature + bias
        p = numpy.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        predicted = p.argmax(1)
        contradict = LABELS.index("CONTRADICT")
        predicted[(predicted == contradict) & (p[:, contradict] < GATE)] = nei
    predicted[~found] = nei
    return predicted


def table(data: dict[str, numpy.ndarray], predicted: numpy.ndarray, trained_on: set[str]
          ) -> tuple[list[str], float, list[str]]:
    """Macro-F1 per set, their mean over the sets not trained on, and per set the precision
    of CONTRADICT ("right / said")."""
    names = [str(n) for n in data["set_names"]]
    contradict = LABELS.index("CONTRADICT")
    cells, unseen, accusations = [], [], []
    for index, name in enumerate(names):
        if name == CALIBRATION:
            continue
        rows = data["sets"] == index
        gold, said = data["gold"][rows], predicted[rows]
        labels = [i for i in range(3) if (gold == i).any()]
        macro = macro_f1(f1_per_class(gold, said, labels))
        cells.append(f"{macro:.3f}" + (" in" if name in trained_on else ""))
        said_c = said == contradict
        accusations.append(f"{int((said_c & (gold == contradict)).sum())} / {int(said_c.sum())}")
        if name not in trained_on:
            unseen.append(macro)
    return cells, sum(unseen) / len(unseen), accusations


def score(args: argparse.Namespace) -> None:
    data = dict(numpy.load(args.inputs))
    names = [str(n) for n in data["set_names"] if str(n) != CALIBRATION]
    trained_on = set(filter(None, args.trained_on.split(",")))
    print("| model | " + " | ".join(names) + " | mean of the sets not trained on |")
    print("|---|" + "---:|" * (len(names) + 1))
    saved, means = {}, {}
    calibration_rows = data["sets"] == [str(n) for n in data["set_names"]].index(CALIBRATION)
    for model in args.models:
        logits = logits_of(model, data)
        saved[str(model)] = logits
        variants = [("raw", None)]
        if args.calibrate:
            from training.fit_reader_calibration import fit  # noqa: PLC0415 - needs scipy

            keep = calibration_rows & data["found"]
            temperature, bias, _ = fit(logits[keep], numpy.zeros((int(keep.sum()), 3)), data["gold"][keep], False)
            variants.append((f"calibrated, gate {GATE}", (temperature, bias)))
        for label, calibration in variants:
            cells, mean, accusations = table(data, predictions(logits, data["found"], calibration), trained_on)
            print(f"| {model} ({label}) | " + " | ".join(cells) + f" | {mean:.3f} |", flush=True)
            print(f"| {model} ({label}): contradicted, right / said | " + " | ".join(accusations) + " | |",
                  flush=True)
            means.setdefault(str(model), {})[label] = round(mean, 4)
    if args.summary:
        args.summary.write_text(json.dumps(means, indent=1) + "\n", encoding="utf-8")
    if args.logits:
        numpy.savez_compressed(args.logits, **{f"m{i}": saved[str(m)] for i, m in enumerate(args.models)},
                               models=numpy.array([str(m) for m in args.models]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    i = sub.add_parser("inputs", help="the reader's inputs for the measured pairs (needs citerun)")
    i.add_argument("out", type=pathlib.Path)
    i.add_argument("--limit", type=int, default=600)
    s = sub.add_parser("score", help="read them with each model; a table of macro-F1 per set")
    s.add_argument("inputs", type=pathlib.Path)
    s.add_argument("models", type=pathlib.Path, nargs="+")
    s.add_argument("--trained-on", default="", help="comma-separated sets the models saw")
    s.add_argument("--calibrate", action="store_true")
    s.add_argument("--logits", type=pathlib.Path, default=None)
    s.add_argument("--summary", type=pathlib.Path, default=None, help="each model's means as JSON")
    args = parser.parse_args()
    if args.command == "inputs":
        inputs(args.out, args.limit)
    else:
        score(args)


if __name__ == "__main__":
    main()
