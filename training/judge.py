"""Train the embedded judge's model on SciFact train (and augmentation); never on dev.

Usage::

    CITERUN_EVALDATA=/work/shared/evaldata python -m training.judge          # writes the artifact
    python -m training.judge --learner linear --out /tmp/linear.json       # another variant

Data (``$CITERUN_EVALDATA/scifact``; SciFact, Wadden et al. 2020; claims CC BY 4.0,
abstracts ODC-By 1.0):

- *real pairs*: each of the 809 train claims with each abstract it cites; gold SUPPORT
  or CONTRADICT from the abstract's evidence, NEI when the cited abstract has none. The
  passages are the abstract (title + sentences) cut by ``pdf.chunk_pages``, the chunks
  ``judge_citation`` would retrieve: an abstract is 2-3 chunks and ``top_k`` is 5, so
  retrieval returns all of them (``bench.quality.scifact`` checks this on dev).
- *augmentation* (:mod:`training.perturb`, rules): a supported claim negated ("does not
  increase", "is not") or with its direction word flipped -> CONTRADICT of the same
  abstract; a contradicted claim negated, un-negated or flipped -> SUPPORT (so a
  negation in the claim is not by itself a sign of contradiction); and (on by default
  since the fifth round, ``--no-more-perturbations`` to leave out) a supported claim
  with its group swapped, a number changed or a word replaced by its antonym ->
  CONTRADICT. Augmented pairs weigh ``--aug-weight``. Claims against non-cited abstracts as NEI
  (``--nei-aug-weight``) are off by default: on train they lowered out-of-fold macro-F1
  (0.665 -> 0.651), the real NEI pairs suffice.

Model: the features of :mod:`training.trees.features` into gradient-
boosted trees (LightGBM, a training-time dependency: ``pip install lightgbm``; the trees
are flattened into the JSON artifact and evaluated in numpy) or, with ``--learner
linear``, a multinomial logistic regression (numpy, full-batch Adam with L2).
The cross-encoder experiment (docs/benchmarks.md; not shipped): ``--write-pairs`` writes
its training data (SciFact train's rationale sentences; ``--tokenizer``) and stops,
``training.fit_cross_encoder`` and ``training.quantise_cross_encoder`` make it and its
out-of-fold features, and ``--cross-encoder-oof`` gives the trees those as three more
columns, for the out-of-fold comparison.
Five-fold cross-validation grouped by claim, over ``--repeats`` (5) splits of the
claims, gives out-of-fold probabilities on the real train pairs; on all of those at once
the script fits the temperature (calibration, by log-loss) and the per-class decision
offsets (by macro-F1), and it prints each split's scores and their mean. The final model is fitted on all train pairs. Seeded (``--seed``): two runs
write the same bytes. Run time on the 2-core machine of docs/benchmarks.md: about 8 minutes
when it was shared with other jobs, most of it features (``--cache DIR`` keeps them);
on a quiet one (fifth round) 61 s, 33 s of it features, and 40 s with the cache warm.
"""

from __future__ import annotations

import os

# One BLAS thread: the same sums in the same order, so a retrain writes the same bytes.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import collections
import collections.abc
import dataclasses
import hashlib
import json
import pathlib
import random
import sys
import time
import typing

import numpy

from citerun.pipeline import embed, pdf
from citerun.pipeline.judging import language, sentences
from citerun.pipeline.judging.types import Passage

from evalsets import evaldata
from evalsets.metrics import f1_per_class
from evalsets.metrics import macro_f1 as mean_f1
from evalsets.scifact import gold_label
from training import cross_encoder, perturb
from training.trees import features, model

LABELS = model.LABELS


@dataclasses.dataclass(frozen=True)
class Example:
    claim: str
    doc_id: int
    label: str
    group: int
    weight: float
    real: bool


def passages_of(doc: dict[str, object]) -> tuple[Passage, ...]:
    text = str(doc["title"]) + "\n\n" + " ".join(doc["abstract"])  # type: ignore[arg-type]
    chunks = pdf.chunk_pages([pdf.Page(1, text)])
    return tuple(Passage(int(doc["doc_id"]) * 100 + c.ordinal, c.text, 1, 1, 0.0)  # type: ignore[call-overload]
                 for c in chunks)


def opposites(text: str, label: str, extra: bool = False) -> tuple[str, list[str]]:
    """The other label and the perturbed claims that take it against the same evidence:
    a supported claim negated or flipped (with ``extra`` also group-swapped, renumbered,
    antonym-swapped) is contradicted; a contradicted claim un-negated, negated or flipped
    is supported (the same cue, the other label, so a model learns the claim's negation
    against the evidence, not alone). None for NEI."""
    if label == "SUPPORT":
        more = (perturb.swap_group(text), perturb.renumber(text), perturb.antonym(text)) if extra else ()
        made = (perturb.negate(text), perturb.flip(text), *more)
        return "CONTRADICT", [v for v in made if v]
    if label == "CONTRADICT":
        return "SUPPORT", [v for v in (perturb.unnegate(text), perturb.negate(text), perturb.flip(text)) if v]
    return label, []


def examples(claims: list[dict[str, object]], corpus: dict[int, dict[str, object]],
             embedder: embed.WordLlamaEmbedder, rng: random.Random, aug_weight: float,
             extra: bool = False) -> list[Example]:
    doc_ids = sorted(corpus)
    doc_vectors = embedder.embed([str(corpus[d]["title"]) + " " + " ".join(corpus[d]["abstract"])  # type: ignore[arg-type]
                                  for d in doc_ids])
    claim_vectors = embedder.embed([str(c["claim"]) for c in claims])
    nearest = numpy.argsort(-(claim_vectors @ doc_vectors.T), axis=1)[:, :20]
    out = []
    for index, claim in enumerate(claims):
        text, group = str(claim["claim"]), int(claim["id"])  # type: ignore[call-overload]
        cited = [int(d) for d in claim["cited_doc_ids"]]  # type: ignore[attr-defined]
        for doc_id in cited:
            label = gold_label(claim, doc_id)
            out.append(Example(text, doc_id, label, group, 1.0, True))
            other, variants = opposites(text, label, extra)
            out.extend(Example(v, doc_id, other, group, aug_weight, False) for v in variants)
        other = rng.choice([d for d in doc_ids if d not in cited])
        out.append(Example(text, other, "NEI", group, aug_weight, False))
        hard = next(doc_ids[j] for j in nearest[index] if doc_ids[j] not in cited)
        out.append(Example(text, hard, "NEI", group, aug_weight, False))
    return out


def featurize(items: list[Example], corpus: dict[int, dict[str, object]],
              featurizer: features.Featurizer) -> list[tuple[list[float], list[list[str]]]]:
    """Each item's :data:`features.NAMES` vector and its cross-encoder pairs (the claim as
    the features read it, with each of its best sentences)."""
    rows = []
    for item in items:
        found = featurizer.features(item.claim, passages_of(corpus[item.doc_id]))
        if found is None:
            rows.append(([0.0] * len(features.NAMES), []))
            continue
        claim = language.claim_parts(item.claim)[0].text
        pairs = cross_encoder.pairs_of(claim, [s.candidate.sentence for s in found.sentences])
        rows.append((found.vector.tolist(), [list(p) for p in pairs]))
    return rows


def folds_of(groups: collections.abc.Iterable[int], seed: int, k: int = 5) -> dict[int, int]:
    """Fold per claim (seeded): 5 for the trees, 3 for the cross-encoder (see
    training.fit_cross_encoder for what one fine-tuning costs)."""
    unique_groups = sorted(set(groups))
    random.Random(seed).shuffle(unique_groups)
    return {g: i % k for i, g in enumerate(unique_groups)}


def sentence_examples(claims: list[dict[str, object]], corpus: dict[int, dict[str, object]],
                      rng: random.Random, aug_weight: float) -> list[tuple[str, str, str, int, float]]:
    """The cross-encoder's training pairs (claim, sentence, label, claim id, weight): each
    gold rationale sentence of SciFact train with its label, the same sentence with the
    claim perturbed as for the trees (a negated supported claim is contradicted by it), and
    up to :data:`NEI_SENTENCES` other sentences of each cited abstract as NEI."""
    out = []
    for claim in claims:
        text, group = str(claim["claim"]), int(claim["id"])  # type: ignore[call-overload]
        for doc_id in (int(d) for d in claim["cited_doc_ids"]):  # type: ignore[attr-defined]
            abstract = [str(s).strip() for s in corpus[doc_id]["abstract"]]  # type: ignore[attr-defined]
            rationale: dict[int, str] = {}
            for evidence in claim["evidence"].get(str(doc_id), []):  # type: ignore[attr-defined]
                for index in evidence["sentences"]:
                    rationale[int(index)] = str(evidence["label"])
            for index, label in sorted(rationale.items()):
                out.append((text, abstract[index], label, group, 1.0))
                other, variants = opposites(text, label)
                out.extend((v, abstract[index], other, group, aug_weight) for v in variants)
            rest = [i for i in range(len(abstract)) if i not in rationale and abstract[i]]
            for index in sorted(rng.sample(rest, min(NEI_SENTENCES, len(rest)))):
                out.append((text, abstract[index], "NEI", group, 1.0))
    return out


NEI_SENTENCES = 2


def write_pairs(path: pathlib.Path, items: list[Example], pairs: list[list[list[str]]],
                claims: list[dict[str, object]], corpus: dict[int, dict[str, object]],
                args: argparse.Namespace) -> None:
    """The cross-encoder's data: its tokenised training pairs (``train_*``: rationale
    sentences, labels, weights, folds) and each example's pairs as the judge makes them
    (``read_*``: the example's index, its fold), which the fold models predict for the
    trees' out-of-fold columns; ``keys`` are the examples'."""
    fold_of = folds_of((e.group for e in items), args.seed, 3)
    train = sentence_examples(claims, corpus, random.Random(args.seed), args.aug_weight)
    ids, types, mask = cross_encoder.encode([(c, s) for c, s, *_ in train], args.tokenizer)
    read = [(i, pair) for i, item_pairs in enumerate(pairs) for pair in item_pairs]
    read_ids, read_types, read_mask = cross_encoder.encode([(p[0], p[1]) for _, p in read], args.tokenizer)
    numpy.savez_compressed(
        path, ids=ids, types=types, mask=mask,
        labels=numpy.array([LABELS.index(t[2]) for t in train]),
        weights=numpy.array([t[4] for t in train], dtype=numpy.float64),
        folds=numpy.array([fold_of[t[3]] for t in train]),
        read_ids=read_ids, read_types=read_types, read_mask=read_mask,
        read_item=numpy.array([i for i, _ in read]),
        read_folds=numpy.array([fold_of[items[i].group] for i, _ in read]),
        keys=numpy.array([key_of(e) for e in items]))
    print(f"wrote {path}: {len(train)} training pairs ("
          + ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(t[2] for t in train).items()))
          + f"), {len(read)} pairs of {len(items)} examples to predict", file=sys.stderr)


def key_of(item: Example) -> str:
    return f"{item.doc_id}\t{item.claim}"


def macro_f1(gold: numpy.ndarray, predicted: numpy.ndarray) -> tuple[float, list[float]]:
    f1s = f1_per_class(gold, predicted, range(len(LABELS)))
    return mean_f1(f1s), f1s


def choose_decision(logits: numpy.ndarray, gold: numpy.ndarray) -> tuple[float, numpy.ndarray]:
    """Temperature by log-loss, then per-class offsets by macro-F1 (grid, seeded order)."""
    best_t, best_loss = 1.0, numpy.inf
    for t in numpy.arange(0.5, 3.01, 0.05):
        p = model.softmax(logits / t)
        loss = -numpy.mean(numpy.log(p[numpy.arange(len(gold)), gold] + 1e-12))
        if loss < best_loss:
            best_t, best_loss = float(t), loss
    logp = numpy.log(model.softmax(logits / best_t) + 1e-12)
    best = (-1.0, numpy.zeros(3))
    grid = numpy.arange(-1.5, 1.51, 0.1)
    for c in grid:
        for n in grid:
            offsets = numpy.array([0.0, c, n])
            score, _ = macro_f1(gold, numpy.argmax(logp + offsets, axis=1))
            if score > best[0] + 1e-9:
                best = (score, offsets)
    return best_t, best[1]


def learn(x: numpy.ndarray, y: numpy.ndarray, w: numpy.ndarray, args: argparse.Namespace) -> model.Model:
    if args.learner == "trees":
        return model.fit_trees(x, y, w, rounds=args.rounds, leaves=args.leaves, seed=args.seed)
    return model.fit(x, y, w, hidden=args.hidden, l2=args.l2, epochs=args.epochs, seed=args.seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=model.ARTIFACT)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--learner", choices=("trees", "linear"), default="trees",
                        help="trees: LightGBM, flattened into the JSON; linear: logistic regression")
    parser.add_argument("--rounds", type=int, default=300, help="boosting rounds (trees)")
    parser.add_argument("--leaves", type=int, default=15, help="leaves per tree (trees)")
    parser.add_argument("--hidden", type=int, default=0, help="MLP width for linear; 0 = none")
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=600)
    parser.add_argument("--aug-weight", type=float, default=1.0,
                        help="weight of a perturbed (CONTRADICT/SUPPORT) example")
    parser.add_argument("--nei-aug-weight", type=float, default=0.0,
                        help="weight of a claim against a non-cited abstract (NEI); 0 drops them: "
                        "on train they cost out-of-fold macro-F1 (docs/benchmarks.md)")
    parser.add_argument("--more-perturbations", action=argparse.BooleanOptionalAction, default=True,
                        help="also group swaps (men -> women), changed numbers and more antonyms of "
                        "supported claims as CONTRADICT")
    parser.add_argument("--repeats", type=int, default=5,
                        help="splits of the claims into five folds whose out-of-fold predictions "
                        "fit the temperature and offsets (fold seeds --seed, --seed + 1, ...)")
    parser.add_argument("--cache", type=pathlib.Path, default=None,
                        help="directory for a feature cache (keyed by the examples, features.py and sentences.py)")
    parser.add_argument("--write-pairs", type=pathlib.Path, default=None,
                        help="cross-encoder experiment: write its tokenised pairs (.npz) and stop")
    parser.add_argument("--tokenizer", type=pathlib.Path, default=None,
                        help="with --write-pairs: all-MiniLM-L6-v2's tokenizer.json")
    parser.add_argument("--cross-encoder-oof", type=pathlib.Path, default=None,
                        help="cross-encoder experiment: its out-of-fold features (oof.npz of "
                        "training.quantise_cross_encoder) as three more columns of the trees; the model "
                        "written is for comparison only (the judge does not load it)")
    args = parser.parse_args()
    if args.write_pairs is not None and args.tokenizer is None:
        parser.error("--write-pairs needs --tokenizer")
    if args.cross_encoder_oof is not None and args.out.resolve() == model.ARTIFACT.resolve():
        parser.error("--cross-encoder-oof writes a comparison model: give --out outside the package")
    started = time.perf_counter()
    data = evaldata() / "scifact"
    claims = [json.loads(line) for line in (data / "claims_train.jsonl").open(encoding="utf-8")]
    corpus = {d["doc_id"]: d for d in map(json.loads, (data / "corpus.jsonl").open(encoding="utf-8"))}
    rng = random.Random(args.seed)
    embedder = embed.WordLlamaEmbedder()
    items = [e for e in examples(claims, corpus, embedder, rng, args.aug_weight, args.more_perturbations)
             if e.real or e.label != "NEI" or args.nei_aug_weight > 0]
    items = [dataclasses.replace(e, weight=args.nei_aug_weight) if not e.real and e.label == "NEI"
             else e for e in items]
    print(f"{len(items)} examples: " + ", ".join(
        f"{k} {v}" for k, v in sorted(collections.Counter((e.label, e.real) for e in items).items())),
        file=sys.stderr)
    key = hashlib.sha256(b"".join(pathlib.Path(m.__file__).read_bytes() for m in (features, sentences))
                         ).hexdigest()[:16]
    cache_file = args.cache / f"features-pairs-{key}.json" if args.cache else None
    cache: dict[str, list[typing.Any]] = (json.loads(cache_file.read_text()) if cache_file is not None
                                          and cache_file.exists() else {})
    todo = [e for e in items if key_of(e) not in cache]
    for item, (row, pairs) in zip(todo, featurize(todo, corpus, features.Featurizer(embedder))):
        cache[key_of(item)] = [row, pairs]
    if cache_file is not None and todo:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(json.dumps(cache))
    x = numpy.asarray([cache[key_of(e)][0] for e in items], dtype=numpy.float32)
    if args.write_pairs is not None:
        write_pairs(args.write_pairs, items, [cache[key_of(e)][1] for e in items], claims, corpus, args)
        return
    names = features.NAMES
    if args.cross_encoder_oof is not None:
        read = numpy.load(args.cross_encoder_oof)
        column = {str(k): row for k, row in zip(read["keys"], read["log_probabilities"])}
        x = numpy.concatenate([x, numpy.asarray([column[key_of(e)] for e in items], numpy.float32)], axis=1)
        names = features.NAMES + cross_encoder.NAMES
    featured = time.perf_counter()
    y = numpy.array([LABELS.index(e.label) for e in items])
    w = numpy.array([e.weight for e in items], dtype=numpy.float64)
    real = numpy.array([e.real for e in items])
    # Out-of-fold logits over --repeats splits of the claims into five folds; the
    # temperature and offsets are fitted on all of them at once, so that they do not
    # follow one split's noise (one split alone moves macro-F1 by up to 0.016).
    oofs = []
    for repeat in range(args.repeats):
        fold_of = folds_of((e.group for e in items), args.seed + repeat)
        folds = numpy.array([fold_of[e.group] for e in items])
        oof = numpy.zeros((len(items), 3))
        for fold in range(5):
            train = folds != fold
            fitted = learn(x[train], y[train], w[train], args)
            oof[~train] = fitted.logits(x[~train])
        oofs.append(oof[real])
    gold = numpy.tile(y[real], args.repeats)
    temperature, offsets = choose_decision(numpy.concatenate(oofs), gold)
    scores = []
    for repeat, oof in enumerate(oofs):
        logp = numpy.log(model.softmax(oof / temperature) + 1e-12)
        scores.append(macro_f1(y[real], numpy.argmax(logp + offsets, axis=1)))
        if args.repeats > 1:
            print(f"split {repeat + 1} (fold seed {args.seed + repeat}): macro-F1 {scores[-1][0]:.3f}; "
                  + " ".join(f"F1 {k} {v:.3f}" for k, v in zip(LABELS, scores[-1][1])), file=sys.stderr)
    raw_macro = float(numpy.mean([macro_f1(y[real], numpy.argmax(o, axis=1))[0] for o in oofs]))
    macro = float(numpy.mean([m for m, _ in scores]))
    f1s = numpy.mean([f for _, f in scores], axis=0)
    print(f"out-of-fold on {int(real.sum())} real train pairs ({args.repeats} split(s), mean): macro-F1 "
          f"{raw_macro:.3f} (argmax) -> {macro:.3f} with offsets {offsets.round(2).tolist()}, "
          f"T {temperature:.2f}; " + " ".join(f"F1 {k} {v:.3f}" for k, v in zip(LABELS, f1s)))
    final = learn(x, y, w, args)
    final = dataclasses.replace(final, names=names, temperature=temperature,
                                offsets=offsets.astype(numpy.float32))
    final.save(args.out)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB, sha256 {digest}); features "
          f"{featured - started:.0f} s, total {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
