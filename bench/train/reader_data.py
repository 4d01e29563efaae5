"""The reader's training pairs: (claim, evidence sentence) -> SUPPORT / CONTRADICT / NEI,
from every set whose terms allow training, tokenised for ``bench.train.fit_cross_encoder``.

Issue 23's reader experiment (docs/benchmarks.md, "issue 23, step 2"): trained on these
pairs, blended with the trees and calibrated on SciTab, it added 0.006 of mean macro-F1
out of domain over the recalibrated trees alone, at about twice the judge's CPU per pair,
so it does not ship; this script keeps the data it was trained on reproducible.

Usage::

    CITERUN_EVALDATA=/work/shared/evaldata python -m bench.train.reader_data OUT.npz \\
        --tokenizer DIR/tokenizer.json [--scitab]

Sets (``bench.quality.claims.SETS`` records which may be trained on):

- **SciFact train** (claims CC BY 4.0, abstracts ODC-By 1.0): each gold rationale sentence
  with its label; the claim perturbed against the same sentence (a negated, flipped,
  group-swapped, renumbered or antonym-swapped supported claim is contradicted by it; a
  contradicted claim negated, un-negated or flipped is supported: the same cue, the other
  label, so the model reads the claim against the sentence, not the claim's wording alone);
  two other sentences of each cited abstract as NEI; and, as *hard* NEI, the best sentence
  of the nearest abstract the claim does not cite (by WordLlama similarity: on topic, not
  evidence).
- with ``--scitab``, **SciTab** (MIT), without the claims ``bench.quality.out_of_domain``
  samples to measure on: each claim against the table's caption and cells as text, cut
  to the token budget. Off for the measured reader: those SciTab claims calibrated it
  instead (``bench.train.fit_calibration``), and a calibration set the model was trained on
  would teach it nothing about its confidence.

SciFact dev is never read. The sets whose projects state no licence (HealthVer,
Climate-FEVER, COVID-Fact, NLI4CT) and HealthFC (no derivatives) are measured only; XNLI
(CC BY-NC) and RTE3-DE (its NO is "not entailed", not "contradicted") are not used.
Deterministic: the same data and seed write the same arrays.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import random
import sys

import numpy

from bench.common import evaldata
from bench.quality import claims as claim_sets
from bench.train import cross_encoder
from bench.train import judge as trees
from citerun.pipeline import embed
from citerun.pipeline.judging import language

LABELS = trees.LABELS
SEED = 20261203


def _corpus() -> dict[int, dict[str, object]]:
    out = {}
    for line in (evaldata() / "scifact" / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        out[int(doc["doc_id"])] = doc
    return out


def hard_nei(claims: list[dict[str, object]], corpus: dict[int, dict[str, object]],
             embedder: embed.WordLlamaEmbedder) -> list[tuple[str, str, str, int, float]]:
    """Each claim against the most similar sentence of the nearest abstract it does not cite."""
    doc_ids = sorted(corpus)
    doc_vectors = embedder.embed([str(corpus[d]["title"]) + " " + " ".join(corpus[d]["abstract"])  # type: ignore[arg-type]
                                  for d in doc_ids])
    texts = [str(c["claim"]) for c in claims]
    claim_vectors = embedder.embed(texts)
    nearest = numpy.argsort(-(claim_vectors @ doc_vectors.T), axis=1)[:, :10]
    out = []
    for index, claim in enumerate(claims):
        cited = {int(d) for d in claim["cited_doc_ids"]}  # type: ignore[attr-defined]
        doc = corpus[next(doc_ids[j] for j in nearest[index] if doc_ids[j] not in cited)]
        sentences = [str(s).strip() for s in doc["abstract"] if str(s).strip()]  # type: ignore[attr-defined]
        if not sentences:
            continue
        vectors = embedder.embed(sentences)
        best = sentences[int(numpy.argmax(vectors @ claim_vectors[index]))]
        out.append((texts[index], best, "NEI", int(claim["id"]), 1.0))  # type: ignore[call-overload]
    return out


def scitab_pairs(measured: set[str]) -> list[tuple[str, str, str, int, float]]:
    pairs = claim_sets.SETS["scitab"].read(claim_sets.claims_dir())
    return [(p.claim, p.evidence, p.gold, 10_000_000 + i, 1.0)
            for i, p in enumerate(pairs) if p.id not in measured]


def build(tokenizer: pathlib.Path, scitab: bool) -> tuple[dict[str, numpy.ndarray], list[tuple[str, str, str, int, float]]]:
    corpus = _corpus()
    claims = [json.loads(line) for line in (evaldata() / "scifact" / "claims_train.jsonl").open(encoding="utf-8")]
    rows = trees.sentence_examples(claims, corpus, random.Random(SEED), 1.0)
    # The trees' extra perturbations too (group swap, renumbering, antonyms).
    seen = {(c, s) for c, s, *_ in rows}
    for claim in claims:
        text = str(claim["claim"])
        for doc_id, evidence in claim["evidence"].items():  # type: ignore[attr-defined]
            abstract = [str(s).strip() for s in corpus[int(doc_id)]["abstract"]]  # type: ignore[attr-defined]
            for item in evidence:
                if item["label"] != "SUPPORT":
                    continue
                for variant in (trees.perturb.swap_group(text), trees.perturb.renumber(text),
                                trees.perturb.antonym(text)):
                    for index in item["sentences"]:
                        if variant and (variant, abstract[index]) not in seen:
                            seen.add((variant, abstract[index]))
                            rows.append((variant, abstract[index], "CONTRADICT", int(claim["id"]), 1.0))
    rows += hard_nei(claims, corpus, embed.WordLlamaEmbedder())
    if scitab:
        measured = {p.id for p in claim_sets.load(["scitab"])["scitab"]}
        rows += scitab_pairs(measured)
    # The claim as the judge reads it (its first part, headings off), as at run time.
    rows = [(language.claim_parts(c)[0].text if language.claim_parts(c) else c, s, label, g, w)
            for c, s, label, g, w in rows]
    ids, types, mask = cross_encoder.encode([(c, s) for c, s, *_ in rows], tokenizer)
    data = {"ids": ids, "types": types, "mask": mask,
            "labels": numpy.array([LABELS.index(r[2]) for r in rows]),
            "weights": numpy.array([r[4] for r in rows], dtype=numpy.float64),
            "folds": numpy.zeros(len(rows), dtype=numpy.int64),
            "groups": numpy.array([r[3] for r in rows])}
    return data, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--tokenizer", type=pathlib.Path, required=True)
    parser.add_argument("--scitab", action="store_true")
    args = parser.parse_args()
    data, rows = build(args.tokenizer, args.scitab)
    numpy.savez_compressed(args.out, **data)
    counts = collections.Counter(r[2] for r in rows)
    print(f"wrote {args.out}: {len(rows)} pairs ("
          + ", ".join(f"{k} {counts[k]}" for k in LABELS)
          + f"), mean {data['mask'].sum(1).mean():.0f} tokens", file=sys.stderr)


if __name__ == "__main__":
    main()
