"""Throughput and memory of the embedded judge as a worker runs it.

Usage::

    CITERUN_EVALDATA=/work/shared/evaldata python -m bench.pipeline.judge [--repeat 3]

One process, like a worker: it loads WordLlama, then the trained judge, then judges the
340 SciFact dev (claim, cited abstract) pairs (the passages are the abstract cut by
``pdf.chunk_pages``, which is what retrieval hands the judge for 334 of them: see
``bench.quality.scifact``), then the same pairs again (warm caches), then the pairs of 340
train claims it has not seen. CPU time is the process's (user + system), so a loaded
machine moves it little; memory is the resident set size after each step (not a peak).
Prints one table.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource

from citerun.pipeline import embed
from citerun.pipeline.judging import embedded
from citerun.pipeline.judging.types import Passage

from bench import machine
from bench.common import evaldata
from training import judge as train_judge


def rss_mib() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pairs_of(split: str, corpus: dict[int, dict[str, object]], limit: int) -> list[tuple[str, tuple[Passage, ...]]]:
    data = evaldata() / "scifact"
    out = []
    for line in (data / f"claims_{split}.jsonl").open(encoding="utf-8"):
        claim = json.loads(line)
        for doc_id in claim["cited_doc_ids"]:
            out.append((claim["claim"], train_judge.passages_of(corpus[int(doc_id)])))
    return out[:limit]


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=340)
    args = parser.parse_args()
    print(", ".join(f"{k} {v}" for k, v in machine.basics().items()) + f"; load {os.getloadavg()[0]:.2f}")
    rows = [("start (Python, numpy, citerun imported)", "", "", "", f"{rss_mib():.0f}")]
    started = cpu()
    embedder = embed.WordLlamaEmbedder()
    embedder.embed(["warm up"])
    rows.append(("WordLlama loaded", "", f"{cpu() - started:.2f}", "", f"{rss_mib():.0f}"))
    started = cpu()
    judge = embedded.TrainedJudge(embedder)
    rows.append(("trained judge loaded", "", f"{cpu() - started:.2f}", "", f"{rss_mib():.0f}"))
    corpus_file = evaldata() / "scifact" / "corpus.jsonl"
    corpus = {d["doc_id"]: d for d in map(json.loads, corpus_file.open(encoding="utf-8"))}
    dev = pairs_of("dev", corpus, args.limit)
    train = pairs_of("train", corpus, len(dev))
    passages = sum(len(p) for _, p in dev)
    for what, pairs in ((f"{len(dev)} dev pairs", dev), ("the same pairs again", dev), (f"{len(train)} train pairs", train)):
        started = cpu()
        for claim, found in pairs:
            judge.judge_sync(claim, found)
        spent = cpu() - started
        rows.append((what, str(len(pairs)), f"{spent:.2f}",
                     f"{len(pairs) / spent:.1f} ({sum(len(p) for _, p in pairs) / spent:.0f})",
                     f"{rss_mib():.0f}"))
    print(f"\n{len(dev)} dev pairs, {passages} passages ({passages / len(dev):.1f} per abstract)")
    print("| step | pairs | CPU s | (claim, abstract) pairs per CPU-s ((claim, passage)) | RSS after (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
