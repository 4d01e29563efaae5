"""Where the judge loses the contradictions its reader sees (issue 50, item 4).

    CITERUN_EVALDATA=../shared/evaldata python -m bench.quality.contradiction_funnel [--limit 300] [--sets a,b]

The same pairs as ``bench.quality.out_of_domain`` (the seeded sample of each claim set,
SciFact dev first), read by the shipped judge step by step; at each step, how many pairs
it calls CONTRADICT, how many of those are gold CONTRADICT (precision) and what share of
the gold CONTRADICT pairs it keeps (recall), with F1:

1. ``whole passage``: the reader on the claim against the whole evidence text (its first
   128 tokens), raw argmax: what the reader sees with nothing chosen for it;
2. ``best 3, raw``: the reader on the best three sentences joined (what the judge reads),
   raw argmax;
3. ``best 3, calibrated``: after the reader's calibration (temperature, class biases);
4. ``each alone``: any of the best three sentences read alone contradicts (calibrated
   argmax), a reading the judge does not use for the decision;
5. ``>= contradicted_min``: step 3 and its probability at least the bar (0.7);
6. ``+ sentence states it``: step 5 and one sentence states the opposite in words or
   alone at the bar (the judge's no-accusation-without-a-passage gate);
7. ``verdict``: the judge's own ``contradicted`` verdicts (step 6 unless another rule
   decided first).

The table says which step loses most; choosing what to change is measured out of domain on
the leave-one-set-out table (``bench.quality.out_of_domain``), never on one set.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import typing

import numpy

from bench import machine
from evalsets import claims, scifact
from citerun.pipeline import embed, judge
from citerun.pipeline.judging import embedded, sentences, reader as reader_mod

STEPS = ("whole passage", "best 3, raw", "best 3, calibrated", "each alone",
         ">= contradicted_min", "+ sentence states it", "verdict")
CONTRADICT = 1


@dataclasses.dataclass
class Count:
    said: int = 0
    right: int = 0


def funnel(the_judge: embedded.TrainedJudge, pairs: list[claims.Pair],
           dump: typing.TextIO | None = None) -> tuple[dict[str, Count], int]:
    """Per step, the CONTRADICT calls and the right ones; and the gold CONTRADICT count.
    With ``dump``, one JSON line per pair: its gold label, the calibrated probabilities,
    whether a sentence states the opposite, each step's call and the verdict (a bar can
    then be swept without reading the pairs again)."""
    reader = the_judge.reader
    config = the_judge._config  # noqa: SLF001 - the bench reads the judge's own bar
    counts = {step: Count() for step in STEPS}
    gold_c = 0
    for pair in pairs:
        gold = pair.gold == "CONTRADICT"
        gold_c += gold
        passages = claims.passages(pair.evidence)
        called: dict[str, bool] = dict.fromkeys(STEPS, False)
        probabilities = None
        stated = False
        whole = reader.logits([(pair.claim, pair.evidence)])[0]
        called["whole passage"] = int(numpy.argmax(whole)) == CONTRADICT
        signals = the_judge.signals(pair.claim, passages)
        if signals is not None and signals.logits is not None:
            top = signals.found.sentences[: reader_mod.SENTENCES]
            called["best 3, raw"] = int(numpy.argmax(signals.logits)) == CONTRADICT
            probabilities = reader.calibration.apply(signals.logits[None, :])[0]
            calibrated = int(numpy.argmax(probabilities)) == CONTRADICT
            called["best 3, calibrated"] = calibrated
            each = reader.each(signals.claim, [s.candidate.sentence for s in top])
            called["each alone"] = bool((numpy.argmax(each, axis=1) == CONTRADICT).any())
            over = calibrated and float(probabilities[CONTRADICT]) >= config.contradicted_min
            called[">= contradicted_min"] = over
            lexical = any(sentences.opposite_of(signals.claim, s.candidate.sentence, s.candidate.tokens)
                          for s in top)
            alone = float(each[:, CONTRADICT].max()) if len(top) else 0.0
            stated = lexical or alone >= config.contradicted_min
            called["+ sentence states it"] = over and stated
        verdict = the_judge.judge_sync(pair.claim, passages).verdict
        called["verdict"] = verdict == judge.Verdict.CONTRADICTED
        if dump is not None:
            dump.write(json.dumps({
                "set": pair.set, "id": pair.id, "gold": pair.gold, "verdict": verdict.value,
                "calibrated": None if probabilities is None else [round(float(p), 4) for p in probabilities],
                "stated": stated, "steps": called}) + "\n")
        for step, said in called.items():
            if said:
                counts[step].said += 1
                counts[step].right += gold
    return counts, gold_c


BARS = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)


def _at_bar(rows: list[dict[str, typing.Any]], bar: float) -> tuple[int, int, int]:
    """(right, said, gold) CONTRADICT when the judge's gates run at ``bar``: the calibrated
    reading is CONTRADICT, at least ``bar``, and a sentence states the opposite."""
    right = said = gold = 0
    for row in rows:
        p = row["calibrated"]
        called = (p is not None and max(range(3), key=lambda k: p[k]) == CONTRADICT
                  and p[CONTRADICT] >= bar and row["stated"])
        is_c = row["gold"] == "CONTRADICT"
        gold += is_c
        said += called
        right += called and is_c
    return right, said, gold


def _f1(right: int, said: int, gold: int) -> float:
    precision, recall = (right / said if said else 0.0), (right / gold if gold else 0.0)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def bars(rows: list[dict[str, typing.Any]], min_precision: float = 0.6, min_said: int = 10) -> str:
    """Every bar of :data:`BARS` on every set: right/said and F1 CONTRADICT, their mean, and
    how many sets that call CONTRADICT ``min_said`` times or more fall under
    ``min_precision``."""
    by_set: dict[str, list[dict[str, typing.Any]]] = {}
    for row in rows:
        by_set.setdefault(row["set"], []).append(row)
    lines = ["| bar | " + " | ".join(by_set) + " | mean F1 | sets under the precision floor |",
             "|---:|" + "---:|" * (len(by_set) + 2)]
    for bar in BARS:
        cells, f1s, under = [], [], 0
        for set_rows in by_set.values():
            right, said, gold = _at_bar(set_rows, bar)
            f1s.append(_f1(right, said, gold))
            under += said >= min_said and right / said < min_precision
            cells.append(f"{right}/{said} {f1s[-1]:.2f}")
        lines.append(f"| {bar:.2f} | " + " | ".join(cells) + f" | {sum(f1s) / len(f1s):.3f} | {under} |")
    return "\n".join(lines)


def sweep(rows: list[dict[str, typing.Any]], min_precision: float = 0.6, min_said: int = 10) -> str:
    """The bar chosen leave-one-set-out: for each set, the bar of :data:`BARS` with the best
    mean F1 CONTRADICT over the other sets among those that keep precision >= ``min_precision``
    on every other set where they say CONTRADICT ``min_said`` times or more; then scored on
    the set left out. Never chosen on the set it is scored on."""
    by_set: dict[str, list[dict[str, typing.Any]]] = {}
    for row in rows:
        by_set.setdefault(row["set"], []).append(row)
    lines = ["| set left out | bar chosen on the others | right/said | precision | F1 CONTRADICT | at 0.7: right/said, F1 |",
             "|---|---:|---:|---:|---:|---:|"]
    f1s, f1s_07 = [], []
    for held, held_rows in by_set.items():
        best: tuple[float, float] | None = None
        for bar in BARS:
            scores = [_at_bar(r, bar) for name, r in by_set.items() if name != held]
            if not scores or any(said >= min_said and right / said < min_precision for right, said, _ in scores):
                continue
            mean = sum(_f1(*s) for s in scores) / len(scores)
            if best is None or mean > best[1]:
                best = (bar, mean)
        bar = best[0] if best else 0.7
        right, said, gold = _at_bar(held_rows, bar)
        right7, said7, _ = _at_bar(held_rows, 0.7)
        f1s.append(_f1(right, said, gold))
        f1s_07.append(_f1(right7, said7, gold))
        lines.append(f"| {held} | {bar:.2f} | {right}/{said} | "
                     f"{right / said if said else 0:.2f} | {f1s[-1]:.2f} | {right7}/{said7}, {f1s_07[-1]:.2f} |")
    lines.append(f"| **mean** | | | | **{sum(f1s) / len(f1s):.3f}** | {sum(f1s_07) / len(f1s_07):.3f} |")
    return "\n".join(lines)


def table(results: dict[str, tuple[dict[str, Count], int]]) -> str:
    lines = ["| set | gold CONTRADICT | " + " | ".join(STEPS) + " |",
             "|---|---:|" + "---:|" * len(STEPS)]
    for name, (counts, gold) in results.items():
        cells = []
        for step in STEPS:
            c = counts[step]
            precision = c.right / c.said if c.said else 0.0
            recall = c.right / gold if gold else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            cells.append(f"{c.right}/{c.said} F1 {f1:.2f}")
        lines.append(f"| {name} | {gold} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=300, help="pairs per set (seeded sample)")
    parser.add_argument("--sets", default="scifact," + ",".join(claims.SETS))
    parser.add_argument("--dump", type=pathlib.Path, default=None,
                        help="one JSON line per pair (gold, calibrated probabilities, steps)")
    parser.add_argument("--sweep", type=pathlib.Path, default=None,
                        help="read a --dump file and sweep the bar leave-one-set-out (no judging)")
    args = parser.parse_args(argv)
    if args.sweep:
        rows = [json.loads(line) for line in args.sweep.read_text(encoding="utf-8").splitlines()]
        print(bars(rows) + "\n\n" + sweep(rows))
        return
    names = [n for n in args.sets.split(",") if n]
    sets: dict[str, list[claims.Pair]] = {}
    if "scifact" in names:
        sets["scifact"] = scifact.pairs(args.limit)
    sets.update(claims.load([n for n in names if n != "scifact"], limit=args.limit))
    the_judge = embedded.TrainedJudge(embed.WordLlamaEmbedder(), embedded.TrainedJudgeConfig())
    results = {}
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    for name, pairs in sets.items():
        results[name] = funnel(the_judge, pairs, dump)
        print(f"  {name}: {len(pairs)} pairs", file=sys.stderr, flush=True)
    if dump is not None:
        dump.close()
    print("Each cell: right / said CONTRADICT, and F1 CONTRADICT.\n")
    print(table(results))
    print("\n" + machine.summary_line())


if __name__ == "__main__":
    main()
