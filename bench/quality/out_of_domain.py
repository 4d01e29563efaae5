"""The judge out of domain: per claim set, how its verdicts compare with the set's labels.

Usage::

    python -m bench.quality.out_of_domain [--limit 600] [--sets healthver,scitab,...]
                                          [--model PATH] [--trained-on scifact]
                                          [--config NAME=JSON ...]

Every set of :mod:`evalsets.claims` plus SciFact dev (each claim against each
abstract it cites, :func:`bench.common.gold_label`) goes through the judge a run uses
(``TrainedJudge`` with WordLlama, as the worker builds it); a pair's evidence text is
chunked by ``pdf.chunk_pages`` exactly as a parsed page is, and every chunk is a
passage, so retrieval is skipped (the evidence is given). Verdicts are read as labels
the way the SciFact bench reads them: supported and partially supported are SUPPORT,
contradicted is CONTRADICT, unsupported is NEI.

Printed per set: pairs, the majority class's accuracy and macro-F1 (always answering the
most common gold label), accuracy, macro-F1 (over the labels the set has: COVID-Fact and
NLI4CT have no NEI, so theirs is the mean of two), F1 per class, the precision of
``contradicted`` (with how many verdicts were ``contradicted``), and the expected
calibration error of the verdict's confidence (seven bins as in the SciFact bench).
``--trained-on`` names the sets the model saw, so the table marks the rows that are in
domain. The shipped judge decides with the reader, which saw pairs made from SciFact
corpus abstracts that no dev claim cites and none of any set's claims (its MODEL_CARD.md),
so every row is out of domain (the default, ``none``); its calibration was fitted on the
SciTab claims this bench does not sample. ``--config`` takes the shipped judge's settings
and the research switches of :class:`training.trees.judge.Research` (the judge is then
:class:`training.trees.judge.ResearchJudge`). The trees (``--config '{"reader": false}'``,
not shipped: ``training/trees/``) saw SciFact train: ``--trained-on scifact`` for them.
Leave-one-set-out models are trained by ``training.fit_reader train --leave-out SET`` and
measured here with ``--config '{"reader_file": "PATH"}'``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import pathlib
import time
import typing

from bench import common, machine
from evalsets import claims, scifact
from citerun.pipeline import embed, judge, pdf
from training.trees import judge as trees_judge

LABELS = claims.LABELS
BINS = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)


def label_of(verdict: judge.Verdict) -> str:
    if verdict in (judge.Verdict.SUPPORTED, judge.Verdict.PARTIALLY_SUPPORTED):
        return "SUPPORT"
    if verdict == judge.Verdict.CONTRADICTED:
        return "CONTRADICT"
    return "NEI"


@dataclasses.dataclass
class Row:
    name: str
    pairs: int
    majority_accuracy: float
    majority_macro: float
    accuracy: float
    macro: float
    f1: list[float]
    contradicted: int
    contradicted_precision: float
    ece: float
    in_domain: bool
    cpu_s: float


def expected_calibration_error(right: list[bool], confidence: list[float]) -> float:
    total = 0.0
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = [i for i, c in enumerate(confidence) if low <= c < high]
        if inside:
            accuracy = sum(right[i] for i in inside) / len(inside)
            mean = sum(confidence[i] for i in inside) / len(inside)
            total += len(inside) / len(right) * abs(accuracy - mean)
    return total


def score(name: str, gold: list[str], predicted: list[str], confidence: list[float], *,
          in_domain: bool, cpu_s: float) -> Row:
    majority = collections.Counter(gold).most_common(1)[0][0]
    always = [majority] * len(gold)
    labels = [label for label in LABELS if label in gold]  # COVID-Fact, NLI4CT: no NEI
    f1 = [common.f1_per_class(gold, predicted, [label])[0] if label in labels else float("nan")
          for label in LABELS]
    right = [g == p for g, p in zip(gold, predicted)]
    said = [g for g, p in zip(gold, predicted) if p == "CONTRADICT"]
    return Row(name, len(gold), sum(g == majority for g in gold) / len(gold),
               common.macro_f1(common.f1_per_class(gold, always, labels)),
               sum(right) / len(gold), common.macro_f1([x for x in f1 if x == x]), f1, len(said),
               said.count("CONTRADICT") / len(said) if said else float("nan"),
               expected_calibration_error(right, confidence), in_domain, cpu_s)


def run(the_judge: typing.Any, sets: dict[str, list[claims.Pair]],
        trained_on: set[str], dump: typing.TextIO | None = None, config: str = "") -> list[Row]:
    """One row per set; with ``dump``, one JSON line per pair (its set, id, gold label,
    verdict, confidence and the evidence shown), to read the errors behind the figures."""
    rows = []
    for name, pairs in sets.items():
        started = time.process_time()
        judgements = [the_judge.judge_sync(p.claim, claims.passages(p.evidence)) for p in pairs]
        cpu_s = time.process_time() - started
        for p, j in zip(pairs, judgements) if dump else ():
            dump.write(json.dumps({"config": config, "set": name, "id": p.id, "claim": p.claim,
                                   "gold": p.gold, "verdict": j.verdict.value,
                                   "confidence": round(j.confidence, 4), "rationale": j.rationale,
                                   "evidence": [e.quote for e in j.evidence]},
                                  ensure_ascii=False) + "\n")
        rows.append(score(name, [p.gold for p in pairs], [label_of(j.verdict) for j in judgements],
                          [j.confidence for j in judgements],
                          in_domain=name.split("_")[0] in trained_on, cpu_s=cpu_s))
    return rows


def table(rows: list[Row]) -> str:
    def f(x: float) -> str:
        return "n/a" if x != x else f"{x:.3f}"

    lines = ["| set | pairs | majority acc. / macro-F1 | accuracy | macro-F1 | F1 SUPPORT | "
             "F1 CONTRADICT | F1 NEI | `contradicted`: verdicts, precision | calibration error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        mark = " (in domain)" if r.in_domain else ""
        lines.append(f"| {r.name}{mark} | {r.pairs} | {f(r.majority_accuracy)} / "
                     f"{f(r.majority_macro)} | {f(r.accuracy)} | {f(r.macro)} | "
                     + " | ".join(f(x) for x in r.f1)
                     + f" | {r.contradicted}, {f(r.contradicted_precision)} | {f(r.ece)} |")
    out = [r for r in rows if not r.in_domain]
    if out:
        lines.append(f"\nOut of domain ({len(out)} sets): mean macro-F1 "
                     f"{sum(r.macro for r in out) / len(out):.3f}; sets at least 0.15 over "
                     f"their majority macro-F1: {sum(r.macro >= r.majority_macro + 0.15 for r in out)}"
                     f"; judge CPU {sum(r.cpu_s for r in rows):.0f} s for "
                     f"{sum(r.pairs for r in rows)} pairs.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=600, help="pairs per set (seeded sample)")
    parser.add_argument("--sets", default="scifact," + ",".join(claims.SETS))
    parser.add_argument("--model", default=None,
                        help="a judge_model.json (trees) of one's own; training/trees/judge_model.json if unset")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=JSON",
                        help="a judge configuration (TrainedJudgeConfig and "
                        "training.trees.judge.Research fields as JSON) to compare, one table "
                        "each in the same run; repeatable; the shipped configuration if none")
    parser.add_argument("--trained-on", default="none",
                        help="comma-separated sets the model was trained on (marked in domain)")
    parser.add_argument("--dump", type=pathlib.Path, default=None,
                        help="write one JSON line per judged pair here (JSON Lines)")
    args = parser.parse_args(argv)
    names = [n for n in args.sets.split(",") if n]
    sets = {}
    if "scifact" in names:
        sets["scifact"] = scifact.pairs(args.limit)
    sets.update(claims.load([n for n in names if n != "scifact"], limit=args.limit))
    embedder = embed.WordLlamaEmbedder()
    configs = [(name, json.loads(value)) for name, _, value in
               (c.partition("=") for c in args.config)] or [("shipped", {})]
    for name, fields in configs:
        if args.model:
            fields = {"model_file": args.model, **fields}
        the_judge = trees_judge.make(embedder, fields)
        with args.dump.open("a", encoding="utf-8") if args.dump else contextlib.nullcontext() as dump:
            rows = run(the_judge, sets, set(args.trained_on.split(",")), dump, name)
        print(f"\n{name}: {json.dumps(fields)}\n")
        print(table(rows))
    print("\n" + machine.summary_line())


if __name__ == "__main__":
    main()
