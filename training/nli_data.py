"""The reader's inference pairs: the natural-language-inference sets of
``../shared/evaldata/nli/`` (their README gives each set's terms) as (claim, evidence)
pairs, merged with the claim-set pairs of :mod:`bench.train.reader_data` into one training
file for :mod:`bench.train.fit_reader`.

Usage::

    CITERUN_EVALDATA=../shared/evaldata python -m bench.train.reader_data /tmp/claims.npz
    CITERUN_EVALDATA=../shared/evaldata python -m bench.train.nli_data /tmp/claims.npz /tmp/pairs.npz \\
        [--scale 1.0]    # the documented CPU subsample; --scale 0 takes every pair (a GPU's run)

Read as the judge reads: the hypothesis is the claim (first segment), the premise the
evidence (second), cut by :func:`citerun.pipeline.judging.reader.encode`. Labels:
``entailment`` SUPPORT, ``contradiction`` CONTRADICT, ``neutral`` NEI; SciTail's
``not_entailment`` (a related science sentence that does not state the answer) NEI; WiCE's
``supported`` SUPPORT and ``not_supported`` NEI (``partially_supported`` is left out: it
is the judge's "check this", not a class of the reader). FEVER train has no neutral class:
its NEI pairs are built as SciFact's pipeline builds them, the claim against the evidence
of another claim on the nearest topic (BM25 over the other claims' evidence, the best one
whose evidence is not the claim's own), so "on topic, not stated" is learnt rather than
"another topic". Left out: FEVER's RTE dev and FEVER-Symmetric v0.1 (they overlap
FEVER-Symmetric v0.2 and each other), QNLI (questions, not claims), SummEdits (its
``not_entailment`` mixes contradicted and unstated), e-SNLI's dev (the same pairs as
``snli_dev``) and TaxiNLI's MNLI dev copies.

Pairs are de-duplicated by (premise, hypothesis) across sets; each set is sampled to
its ``cap`` pairs times ``--scale`` (a seeded sample, the same pairs every run), so that
FEVER (73% entailment) does not drown the sets that teach negation, antonyms, quantities
and monotonicity, and the training fits two CPU cores (MODEL_CARD.md gives the time).
:data:`WEIGHTS` weighs the sets against each other before ``fit_reader`` balances the
classes. Deterministic: the same files, scale and seed write the same arrays.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import pathlib
import random
import sys

import numpy

from bench.common import evaldata
from citerun.pipeline.judging import reader

LABELS = reader.LABELS
SEED = 20261205
MAP = {"entailment": "SUPPORT", "contradiction": "CONTRADICT", "neutral": "NEI",
       "supported": "SUPPORT", "not_supported": "NEI"}


@dataclasses.dataclass(frozen=True)
class NliSet:
    name: str
    files: tuple[str, ...]
    cap: int  # pairs taken at --scale 1 (0: all)
    weight: float  # per pair, before the classes are balanced
    not_entailment: str | None = None  # the class `not_entailment` stands for, if taken


SETS = (
    NliSet("mnli", ("mnli_dev_matched/dev_matched.jsonl", "mnli_dev_mismatched/dev_mismatched.jsonl",
                    "taxinli_mnli/mnli_train.jsonl"), 14000, 1.0),
    NliSet("snli", ("snli_dev/dev.jsonl", "esnli/test.jsonl"), 8000, 0.7),
    NliSet("cad_snli", ("cad_snli/train_original.jsonl", "cad_snli/train_revised_hypothesis.jsonl",
                        "cad_snli/train_revised_premise.jsonl", "cad_snli/dev_original.jsonl",
                        "cad_snli/dev_revised_hypothesis.jsonl", "cad_snli/dev_revised_premise.jsonl",
                        "cad_snli/test_original.jsonl", "cad_snli/test_revised_hypothesis.jsonl",
                        "cad_snli/test_revised_premise.jsonl"), 5000, 1.0),
    NliSet("conjnli", ("conjnli/adversarial_train.jsonl", "conjnli/dev.jsonl"), 3000, 0.7),
    NliSet("breaking_nli", ("breaking_nli/test.jsonl",), 2500, 0.7),
    NliSet("monotonicity", ("med/all.jsonl", "help/leskexppmb_and.jsonl", "help/leskexppmb_or.jsonl"), 2500, 0.7),
    NliSet("fever", ("fever_train/train.jsonl",), 14000, 1.0),
    NliSet("fever_symmetric", ("fever_symmetric/v0.2_dev.jsonl", "fever_symmetric/v0.2_test.jsonl"), 1420, 1.0),
    NliSet("scitail", ("scitail/test.jsonl",), 2130, 1.5, not_entailment="NEI"),
    NliSet("wice", ("wice/dev.jsonl", "wice/test.jsonl"), 880, 1.5),
    NliSet("ambient", ("ambient/dev.jsonl", "ambient/test.jsonl", "wanli_sample/train_sample.jsonl"), 2400, 0.7),
)
#: FEVER's built NEI pairs, as a share of its sampled pairs.
FEVER_NEI = 0.5
#: The claim-set pairs of ``reader_data`` sampled too (at --scale 1): the sentences
#: generated from SciFact corpus abstracts are two thirds of them and teach least.
CLAIM_CAPS = {"scifact_corpus": 6000, "scifact_titles": 4000, "scifact": 4000, "scifact_contrast": 2000}

Row = tuple[str, str, str, str, float]  # claim, evidence, label, set, weight


def read(path: pathlib.Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def label_of(spec: NliSet, raw: str) -> str | None:
    if raw == "not_entailment":
        return spec.not_entailment
    return MAP.get(raw)


def fever_nei(rng: random.Random, rows: list[Row], pool: list[dict[str, str]], count: int) -> list[Row]:
    """``count`` claims of ``rows`` each against the evidence of another FEVER claim that
    BM25 ranks nearest to it (not the claim's own evidence, not a premise holding it)."""
    import bm25s  # noqa: PLC0415 - citerun's own retrieval library

    premises = sorted({p["premise"] for p in pool})
    index = bm25s.BM25()
    index.index(bm25s.tokenize(premises, stopwords="en", show_progress=False), show_progress=False)
    own = collections.defaultdict(set)
    for p in pool:
        own[p["hypothesis"]].add(p["premise"])
    picked = rng.sample(rows, min(count, len(rows)))
    claims = [r[0] for r in picked]
    found, _ = index.retrieve(bm25s.tokenize(claims, stopwords="en", show_progress=False), k=6,
                              show_progress=False, n_threads=1)
    out: list[Row] = []
    for claim, ranked in zip(claims, found, strict=True):
        for i in ranked:
            premise = premises[int(i)]
            if premise not in own[claim] and not any(premise in p or p in premise for p in own[claim]):
                out.append((claim, premise, "NEI", "fever", 1.0))
                break
    return out


def build(scale: float) -> list[Row]:
    root = evaldata() / "nli"
    rng = random.Random(SEED)
    seen: set[tuple[str, str]] = set()
    out: list[Row] = []
    for spec in SETS:
        raw: list[dict[str, str]] = []
        for name in spec.files:
            raw += read(root / name)
        rows: list[Row] = []
        for item in raw:
            label = label_of(spec, item["label"])
            key = (" ".join(item["premise"].split()), " ".join(item["hypothesis"].split()))
            if label is None or not all(key) or key in seen:
                continue
            seen.add(key)
            rows.append((key[1], key[0], label, spec.name, spec.weight))
        cap = round(spec.cap * scale) if spec.cap and scale else 0
        if cap and cap < len(rows):
            rows = rng.sample(rows, cap)
        out += rows
        if spec.name == "fever":
            out += fever_nei(rng, rows, raw, round(len(rows) * FEVER_NEI))
    return out


def sample_claims(claims: dict[str, numpy.ndarray], scale: float) -> dict[str, numpy.ndarray]:
    """The claim-set pairs with :data:`CLAIM_CAPS` applied (a seeded sample, in file order)."""
    names = [str(n) for n in claims["set_names"]]
    keep = numpy.ones(len(claims["labels"]), bool)
    state = numpy.random.RandomState(SEED)
    for name, cap in CLAIM_CAPS.items():
        rows = numpy.flatnonzero(claims["sets"] == names.index(name))
        if scale and round(cap * scale) < len(rows):
            keep[state.permutation(rows)[round(cap * scale):]] = False
    return {k: (v[keep] if k != "set_names" else v) for k, v in claims.items()}


def merge(claims: dict[str, numpy.ndarray], rows: list[Row]) -> dict[str, numpy.ndarray]:
    """The claim-set pairs of ``reader_data`` and these rows in one file of its shape."""
    names = [str(n) for n in claims["set_names"]] + [s.name for s in SETS]
    ids, types, mask = reader.encode([(c, e) for c, e, *_ in rows])
    width = max(ids.shape[1], claims["ids"].shape[1])

    def pad(a: numpy.ndarray) -> numpy.ndarray:
        return numpy.pad(a, ((0, 0), (0, width - a.shape[1])))

    return {"ids": numpy.concatenate([pad(claims["ids"]), pad(ids.astype(numpy.uint16))]),
            "types": numpy.concatenate([pad(claims["types"]), pad(types.astype(numpy.uint8))]),
            "mask": numpy.concatenate([pad(claims["mask"]), pad(mask.astype(numpy.uint8))]),
            "labels": numpy.concatenate([claims["labels"],
                                         numpy.array([LABELS.index(r[2]) for r in rows], numpy.int64)]),
            "weights": numpy.concatenate([claims["weights"], numpy.array([r[4] for r in rows], numpy.float64)]),
            "sets": numpy.concatenate([claims["sets"], numpy.array([names.index(r[3]) for r in rows], numpy.int64)]),
            "set_names": numpy.array(names)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("claims", type=pathlib.Path, help="the .npz of bench.train.reader_data")
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="each capped set's share of its cap (0: every pair, for a GPU)")
    args = parser.parse_args()
    rows = build(args.scale)
    with numpy.load(args.claims) as data:
        merged = merge(sample_claims({k: data[k] for k in data.files}, args.scale), rows)
    numpy.savez_compressed(args.out, **merged)
    counts = collections.Counter((r[3], r[2]) for r in rows)
    for spec in SETS:
        print(f"{spec.name}: " + ", ".join(f"{k} {counts[(spec.name, k)]}" for k in LABELS), file=sys.stderr)
    print(f"wrote {args.out}: {len(merged['labels'])} pairs ({len(rows)} inference pairs), "
          f"mean {merged['mask'].sum(1).mean():.0f} tokens", file=sys.stderr)


if __name__ == "__main__":
    main()
