"""The reader's inference pairs: the natural-language-inference sets of
``../shared/evaldata/nli/`` (their README gives each set's terms) as (claim, evidence)
pairs, merged with the claim-set pairs of :mod:`training.reader_data` into one training
file for :mod:`training.fit_reader`.

Usage::

    CITERUN_EVALDATA=../shared/evaldata python -m training.reader_data /tmp/claims.npz
    CITERUN_EVALDATA=../shared/evaldata python -m training.nli_data /tmp/claims.npz /tmp/pairs.npz \\
        [--scale 1.0]    # the documented CPU subsample; --scale 0 takes every pair (a GPU's run)

The sets are read by :mod:`evalsets.nli` (which also says how their labels map and which
files are left out), cut by :func:`citerun.pipeline.judging.reader.encode` as the judge
reads. FEVER train has no neutral class: its NEI pairs are built as SciFact's pipeline
builds them, the claim against the evidence of another claim on the nearest topic (BM25
over the other claims' evidence, the best one whose evidence is not the claim's own), so
"on topic, not stated" is learnt rather than "another topic".

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
import pathlib
import random
import sys

import numpy

from evalsets import nli
from citerun.pipeline.judging import reader

LABELS = reader.LABELS
SEED = 20261205


@dataclasses.dataclass(frozen=True)
class Take:
    """How much of one :data:`evalsets.nli.SOURCES` set training takes, and its weight."""

    name: str
    cap: int  # pairs taken at --scale 1
    weight: float  # per pair, before fit_reader balances the classes


SETS = (Take("mnli", 14000, 1.0), Take("snli", 8000, 0.7), Take("cad_snli", 5000, 1.0),
        Take("conjnli", 3000, 0.7), Take("breaking_nli", 2500, 0.7), Take("monotonicity", 2500, 0.7),
        Take("fever", 14000, 1.0), Take("fever_symmetric", 1420, 1.0), Take("scitail", 2130, 1.5),
        Take("wice", 880, 1.5), Take("ambient", 2400, 0.7))
#: FEVER's built NEI pairs, as a share of its sampled pairs.
FEVER_NEI = 0.5
#: The claim-set pairs of ``reader_data`` sampled too (at --scale 1): the sentences
#: generated from SciFact corpus abstracts are two thirds of them and teach least.
CLAIM_CAPS = {"scifact_corpus": 6000, "scifact_titles": 4000, "scifact": 4000, "scifact_contrast": 2000}

Row = tuple[str, str, str, str, float]  # claim, evidence, label, set, weight


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
    found, _ = index.retrieve(bm25s.tokenize(claims, stopwords="en", show_progress=False), k=min(6, len(premises)),
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
    rng = random.Random(SEED)
    seen: set[tuple[str, str]] = set()
    out: list[Row] = []
    for take in SETS:
        source = nli.SOURCES[take.name]
        rows: list[Row] = []
        for claim, evidence, label in nli.rows(source):
            if (evidence, claim) not in seen:
                seen.add((evidence, claim))
                rows.append((claim, evidence, label, take.name, take.weight))
        cap = round(take.cap * scale) if scale else 0
        if cap and cap < len(rows):
            rows = rng.sample(rows, cap)
        out += rows
        if take.name == "fever":
            out += fever_nei(rng, rows, list(nli.raw(source)), round(len(rows) * FEVER_NEI))
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
    parser.add_argument("claims", type=pathlib.Path, help="the .npz of training.reader_data")
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
