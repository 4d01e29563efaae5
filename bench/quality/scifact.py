"""Evaluate retrieval and the embedded judge on SciFact, through the real stack.

Usage::

    python -m bench.quality.scifact                      # dev split, all claims
    python -m bench.quality.scifact --split train --tune # choose thresholds on train only
    python -m bench.quality.scifact --limit 50           # a quick run

Every abstract of ``corpus.jsonl`` (title + sentences) becomes a document in an embedded
Postgres, stored with the same queries ``parse_document`` uses: staged, chunked with
``pdf.chunk_pages``, embedded with WordLlama, marked parsed. The database lives under
``--data-dir`` and is reused by later runs (the corpus is loaded once).

(a) Retrieval: for each claim with evidence, all abstracts are ranked by the
``Retriever`` (pgvector + bm25s fused by RRF; an abstract ranks by its best chunk),
and by each leg alone. nDCG@10 and recall@10 against the evidence abstracts (binary
relevance, the BEIR setup; the published BM25 reference on BEIR SciFact is nDCG@10 =
0.665, over all 300 test claims with bm25 on Elasticsearch).

(b) Judge: for each claim and each cited abstract, ``Retriever.search`` inside that
abstract and ``RulesJudge.judge``, as ``judge_citation`` does. Gold: the abstract's
evidence label (SUPPORT / CONTRADICT), NEI when the cited abstract has no evidence.
Mapping: supported -> SUPPORT, contradicted -> CONTRADICT, unsupported -> NEI, and
partially_supported -> ``--partial`` (NEI by default: a claim only partly covered is
not "supported" in SciFact's sense; chosen on train, see docs/benchmarks.md).
``--tune`` grid-searches the judge thresholds on the split it runs on (use it only with
``--split train``) and prints the best setting by macro-F1.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import functools
import hashlib
import itertools
import json
import math
import pathlib
import random
import sys
import time
import typing

import numpy as np

from bench.common import REPO, evaldata, f1_per_class, gold_label, macro_f1
from training import perturb
from training.trees import judge as trees_judge
from citerun.core import db, runs, sql
from citerun.local import embedded
from citerun.pipeline import embed, judge, pdf, retrieval
from citerun.pipeline.settings import RetrievalConfig

DATA = evaldata() / "scifact"
_PIPE = sql.load("citerun.worker", "tasks.sql")
LABELS = ("SUPPORT", "CONTRADICT", "NEI")


def digest_of(doc_id: int) -> str:
    return hashlib.sha256(f"scifact:{doc_id}".encode()).hexdigest()


class CachingEmbedder:
    """WordLlama with a memo: the threshold grid re-judges the same sentences."""

    def __init__(self, inner: embed.WordLlamaEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, texts: typing.Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing)):
                self._memo[text] = vector
        return np.stack([self._memo[t] for t in texts])


async def load_corpus(pool: typing.Any, embedder: embed.WordLlamaEmbedder,
                      only: set[int] | None = None) -> int:
    """Store every abstract once, as parse_document would; return the document count.
    ``only``: these abstracts alone (a smoke run's corpus)."""
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    if only is not None:
        corpus = [d for d in corpus if d["doc_id"] in only]
    known = await pool.fetchval("SELECT count(*) FROM documents WHERE state = 'parsed'")
    if known >= len(corpus):
        return len(corpus)
    started = time.perf_counter()
    for start in range(0, len(corpus), 256):
        batch = corpus[start:start + 256]
        texts = {d["doc_id"]: d["title"] + "\n\n" + " ".join(d["abstract"]) for d in batch}
        chunks = {i: pdf.chunk_pages([pdf.Page(1, t)]) for i, t in texts.items()}
        flat = [(i, c) for i, cs in chunks.items() for c in cs]
        vectors = embedder.embed([c.text for _, c in flat])
        async with pool.acquire() as conn, conn.transaction():
            for d in batch:
                raw = texts[d["doc_id"]].encode()
                await runs.store_under(conn, digest_of(d["doc_id"]), f"{d['doc_id']}.txt",
                                       raw, "scifact", "upload")
            await conn.executemany(_PIPE["document_page_insert"],
                                   [(digest_of(i), 1, t, None, None, None, None, None, False)
                                    for i, t in texts.items()])
            await conn.executemany(_PIPE["chunk_insert"], [
                (digest_of(i), c.ordinal, c.page_start, c.page_end, c.text,
                 np.asarray(v, dtype=np.float32), embedder.name, embedder.dim)
                for (i, c), v in zip(flat, vectors)])
            for d in batch:
                await conn.execute(_PIPE["document_mark_parsed"], digest_of(d["doc_id"]),
                                   d["title"], [], None, 1, None, None, None)
    print(f"loaded {len(corpus)} abstracts in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return len(corpus)


# --- (a) retrieval ---------------------------------------------------------------------

def ndcg_at(ranked: list[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


async def eval_retrieval(pool: typing.Any, retriever: retrieval.Retriever,
                         claims: list[dict[str, typing.Any]]) -> None:
    rows = await pool.fetch("SELECT id, digest FROM chunks WHERE digest = ANY($1::text[])",
                            [digest_of(d) for d in all_doc_ids()])
    chunk_doc = {r["id"]: r["digest"] for r in rows}
    digests = sorted(set(chunk_doc.values()))
    scores: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    started = time.perf_counter()
    with_evidence = [c for c in claims if c["evidence"]]
    for claim in claims:
        by_vector, by_bm25 = await retriever.rankings(pool, claim["claim"], digests,
                                                      candidates=200)
        for name, ranking in (("hybrid (RRF)", retriever.fuse(by_vector, by_bm25)),
                              ("BM25 (bm25s)", by_bm25), ("vector (pgvector)", by_vector)):
            ranked = list(dict.fromkeys(chunk_doc[i] for i, _ in ranking))
            # Claims with evidence, evidence abstracts relevant (the task's definition);
            # and every claim with its cited abstracts relevant (BEIR's qrels).
            for suffix, relevant in (("", {digest_of(int(d)) for d in claim["evidence"]}),
                                     (" [BEIR]", {digest_of(d) for d in claim["cited_doc_ids"]})):
                if relevant:
                    recall = len(relevant & set(ranked[:10])) / len(relevant)
                    scores[name + suffix].append((ndcg_at(ranked, relevant), recall))
    seconds = time.perf_counter() - started
    print(f"\nRetrieval over {len(digests)} abstracts, {len(claims)} claims, {len(with_evidence)} "
          f"with evidence ({seconds / max(len(claims), 1) * 1000:.0f} ms per claim, all three "
          "rankings); [BEIR] = every claim, its cited abstracts relevant")
    print(f"{'ranking':<27} {'claims':>6} {'nDCG@10':>8} {'recall@10':>10}")
    for name in sorted(scores, key=lambda n: ("BEIR" in n, n)):
        values = scores[name]
        print(f"{name:<27} {len(values):>6} {np.mean([v[0] for v in values]):>8.3f} "
              f"{np.mean([v[1] for v in values]):>10.3f}")


@functools.cache
def all_doc_ids() -> tuple[int, ...]:
    return tuple(json.loads(line)["doc_id"] for line in (DATA / "corpus.jsonl").open())


# --- (b) judge -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Pair:
    claim: str
    doc_id: int
    gold: str
    passages: tuple[judge.Passage, ...]


async def retrieve_pairs(pool: typing.Any, retriever: retrieval.Retriever,
                         claims: list[dict[str, typing.Any]]) -> list[Pair]:
    pairs = []
    for claim in claims:
        for doc_id in claim["cited_doc_ids"]:
            passages = await retriever.search(pool, claim["claim"], [digest_of(doc_id)])
            pairs.append(Pair(claim["claim"], doc_id, gold_label(claim, doc_id), tuple(passages)))
    return pairs


def to_label(verdict: judge.Verdict, partial: str) -> str:
    if verdict == judge.Verdict.SUPPORTED:
        return "SUPPORT"
    if verdict == judge.Verdict.CONTRADICTED:
        return "CONTRADICT"
    if verdict == judge.Verdict.PARTIALLY_SUPPORTED:
        return partial
    return "NEI"


@dataclasses.dataclass
class Timing:
    pairs: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0


async def judge_pairs(pairs: list[Pair], the_judge: typing.Any,
                      timing: Timing | None = None) -> list[judge.Judgement]:
    out = []
    for pair in pairs:
        cpu, wall = time.process_time(), time.perf_counter()
        out.append(await the_judge.judge(pair.claim, pair.passages))
        if timing is not None:
            timing.pairs += 1
            timing.cpu_s += time.process_time() - cpu
            timing.wall_s += time.perf_counter() - wall
    return out


def metrics(gold: list[str], predicted: list[str]) -> tuple[float, float, dict[str, float]]:
    accuracy = sum(g == p for g, p in zip(gold, predicted)) / max(len(gold), 1)
    f1s = dict(zip(LABELS, f1_per_class(gold, predicted, LABELS)))
    return accuracy, macro_f1(list(f1s.values())), f1s


RESAMPLES = 2000


def bootstrap(pairs: list[Pair], predicted: list[str], seed: int = 20261201
              ) -> tuple[tuple[float, float], tuple[float, float]]:
    """2.5th and 97.5th percentiles of (macro-F1, F1 CONTRADICT) over resamples of the
    claims with replacement (a claim's pairs go together: they share its wording), seeded:
    how far the figures would move on another 300 claims like these."""
    by_claim: dict[str, list[int]] = collections.defaultdict(list)
    for index, pair in enumerate(pairs):
        by_claim[pair.claim].append(index)
    groups = list(by_claim.values())
    rng = random.Random(seed)
    macros, contradictions = [], []
    for _ in range(RESAMPLES):
        chosen = [i for _ in groups for i in rng.choice(groups)]
        _, macro, f1s = metrics([pairs[i].gold for i in chosen], [predicted[i] for i in chosen])
        macros.append(macro)
        contradictions.append(f1s["CONTRADICT"])
    macros.sort()
    contradictions.sort()
    low, high = int(0.025 * RESAMPLES), int(0.975 * RESAMPLES) - 1
    return (macros[low], contradictions[low]), (macros[high], contradictions[high])


def print_judge(pairs: list[Pair], judgements: list[judge.Judgement], partial: str,
                timing: Timing, title: str = "") -> None:
    gold = [p.gold for p in pairs]
    verdicts = [j.verdict for j in judgements]
    predicted = [to_label(v, partial) for v in verdicts]
    accuracy, macro, f1s = metrics(gold, predicted)
    print(f"\nJudge{title} on {len(pairs)} (claim, cited abstract) pairs; partially_supported -> "
          f"{partial}; judge alone {timing.pairs / max(timing.cpu_s, 1e-9):.1f} pairs per CPU-second "
          f"({timing.pairs / max(timing.wall_s, 1e-9):.1f} pairs/s wall)")
    print(f"| accuracy | macro-F1 | F1 SUPPORT | F1 CONTRADICT | F1 NEI |\n|---:|---:|---:|---:|---:|\n"
          f"| {accuracy:.3f} | {macro:.3f} | " + " | ".join(f"{v:.3f}" for v in f1s.values()) + " |")
    low, high = bootstrap(pairs, predicted)
    print(f"(95% intervals, bootstrap over the {len({p.claim for p in pairs})} claims, {RESAMPLES} resamples: "
          f"macro-F1 {low[0]:.3f}-{high[0]:.3f}, F1 CONTRADICT {low[1]:.3f}-{high[1]:.3f})")
    print("\n| gold \\ verdict | " + " | ".join(v.value for v in _JUDGE_VERDICTS) + " |\n|---|"
          + "---:|" * len(_JUDGE_VERDICTS))
    counts = collections.Counter(zip(gold, verdicts))
    for label in LABELS:
        print(f"| {label} ({gold.count(label)}) | " + " | ".join(
            str(counts[(label, v)]) for v in _JUDGE_VERDICTS) + " |")


def print_reliability(pairs: list[Pair], judgements: list[judge.Judgement], partial: str) -> None:
    """Confidence bins against how often the verdict's label is the gold label."""
    edges = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)
    rows = []
    ece = 0.0
    for low, high in zip(edges[:-1], edges[1:]):
        inside = [(p, j) for p, j in zip(pairs, judgements) if low <= j.confidence < high]
        if not inside:
            continue
        right = sum(to_label(j.verdict, partial) == p.gold for p, j in inside) / len(inside)
        mean = sum(j.confidence for _, j in inside) / len(inside)
        ece += len(inside) / len(pairs) * abs(right - mean)
        rows.append(f"| {low:.1f}-{min(high, 1.0):.1f} | {len(inside)} | {mean:.3f} | {right:.3f} |")
    print("\nReliability (confidence of the verdict vs how often it is right; expected "
          f"calibration error {ece:.3f})\n| confidence | pairs | mean confidence | accuracy |"
          "\n|---|---:|---:|---:|")
    print("\n".join(rows))


_JUDGE_VERDICTS = (judge.Verdict.SUPPORTED, judge.Verdict.PARTIALLY_SUPPORTED,
                   judge.Verdict.UNSUPPORTED, judge.Verdict.CONTRADICTED)


async def eval_negations(pool: typing.Any, retriever: retrieval.Retriever, the_judge: typing.Any,
                         pairs: list[Pair], judgements: list[judge.Judgement]) -> None:
    """Supported claims against their negation (perturb.negate): do the verdicts differ?"""
    rows = []
    for pair, judgement in zip(pairs, judgements):
        negated = perturb.negate(pair.claim) if pair.gold == "SUPPORT" else None
        if negated is None:
            continue
        passages = await retriever.search(pool, negated, [digest_of(pair.doc_id)])
        other = await the_judge.judge(negated, passages)
        rows.append((judgement.verdict, other.verdict))
    differ = sum(a != b for a, b in rows)
    flipped = sum(a == judge.Verdict.SUPPORTED and b == judge.Verdict.CONTRADICTED for a, b in rows)
    print(f"\nNegation set: {len(rows)} supported (claim, abstract) pairs whose claim perturb.negate "
          f"can negate; verdicts differ on {differ} ({differ / max(len(rows), 1):.0%}); "
          f"supported -> contradicted on {flipped} ({flipped / max(len(rows), 1):.0%})")


GERMAN_SETS = (
    # (file in tests/data, what it is): see tests/data/README.md for their provenance.
    ("scifact_dev_german.jsonl", "set 1 (the glossary was written with it in view)"),
    ("scifact_dev_german_heldout.jsonl", "set 2 (held out: translated after the glosser was fixed)"),
)


async def eval_german(pool: typing.Any, retriever: retrieval.Retriever, judges: dict[str, typing.Any],
                      partial: str) -> None:
    """The German test sets: each claim in English and in German against the English abstract.

    ``judges``: the judge under test, and for the embedded judge the same judge without
    Ding's dictionary (glossary only; retrieval glosses the query with Ding either way)."""
    print("\nGerman test sets (English abstracts; claims in English, then their German translations)")
    print("| set | claims | judged as | accuracy | macro-F1 | right |")
    print("|---|---|---|---:|---:|---:|")
    for name, what in GERMAN_SETS:
        items = [json.loads(line) for line in (REPO / "tests" / "data" / name).open(encoding="utf-8")]
        rows = [("claim_en", "English", judges["main"])]
        rows += [("claim_de", f"German, {kind}", other) for kind, other in judges.items() if kind != "main"]
        rows.append(("claim_de", "German, glossary + Ding" if len(judges) > 1 else "German", judges["main"]))
        for language, label, the_judge in rows:
            pairs = []
            for item in items:
                passages = await retriever.search(pool, item[language], [digest_of(item["doc_id"])])
                pairs.append(Pair(item[language], item["doc_id"], item["gold"], tuple(passages)))
            judgements = await judge_pairs(pairs, the_judge)
            predicted = [to_label(j.verdict, partial) for j in judgements]
            accuracy, macro, _ = metrics([p.gold for p in pairs], predicted)
            right = sum(p.gold == q for p, q in zip(pairs, predicted))
            print(f"| {what} | {len(pairs)} | {label} | {accuracy:.3f} | {macro:.3f} | {right} |")


GRID = {
    "supported": (0.6, 0.65, 0.7, 0.75),
    "partially_supported": (0.45, 0.5, 0.55),
    "partial_coverage": (0.3, 0.5, 1.0),  # 1.0: the coverage rule is off
    "contradiction_coverage": (0.5, 0.6, 0.7),
}


async def tune(pairs: list[Pair], embedder: typing.Any) -> None:
    """Grid-search the rule judge's thresholds (``--judge rules``) on this split."""
    gold = [p.gold for p in pairs]
    results = []
    for values in itertools.product(*GRID.values()):
        settings = dict(zip(GRID, values))
        if settings["partially_supported"] > settings["supported"]:
            continue
        the_judge = judge.RulesJudge(embedder, judge.RulesJudgeConfig(**settings))
        verdicts = [j.verdict for j in await judge_pairs(pairs, the_judge)]
        for partial in ("SUPPORT", "NEI"):
            _, macro, _ = metrics(gold, [to_label(v, partial) for v in verdicts])
            results.append((macro, partial, settings))
    results.sort(key=lambda r: -r[0])
    print(f"\nThreshold grid on this split ({len(results)} settings), best five by macro-F1:")
    for macro, partial, settings in results[:5]:
        print(f"  macro-F1 {macro:.3f}  partial->{partial}  {settings}")


def make_judge(args: argparse.Namespace, embedder: typing.Any) -> typing.Any:
    if args.judge == "rules":
        return judge.RulesJudge(embedder, judge.RulesJudgeConfig(**args.config))
    if args.judge == "openai":
        config = judge.JudgeConfig(kind="openai", openai=judge.OpenAIConfig(**{
            "base_url": args.openai_base_url, "model": args.openai_model, "token_budget": None,
            **args.config}))
        return judge.make_judge(config, embedder)
    return trees_judge.make(embedder, args.config)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "train"), default="dev")
    parser.add_argument("--limit", type=int, default=None, help="first N claims only")
    parser.add_argument("--corpus-limit", type=int, default=None, metavar="N",
                        help="store only the abstracts the claims cite and the corpus's first N "
                        "(a smoke run; its own database: a cache of the whole corpus is not reused)")
    parser.add_argument("--data-dir", type=pathlib.Path, default=None,
                        help="the database's directory (a cache; default: one per version of "
                        "the migrations, so an old database is never migrated again)")
    parser.add_argument("--judge", choices=("embedded", "rules", "openai"), default="embedded",
                        help="embedded: the trained judge (default); rules: the rule judge; "
                        "openai: any OpenAI-compatible endpoint (key from OPENAI_API_KEY)")
    parser.add_argument("--openai-base-url", default="https://api.openai.com")
    parser.add_argument("--openai-model", default="gpt-4o-mini")
    parser.add_argument("--partial", choices=("SUPPORT", "NEI"), default="SUPPORT",
                        help="label of partially_supported; SUPPORT for the trained judge, whose "
                        "partially_supported is an unsure SUPPORT decision")
    parser.add_argument("--config", type=json.loads, default={},
                        help='judge config overrides as JSON, e.g. \'{"supported_min": 0.6}\'')
    parser.add_argument("--tune", action="store_true", help="grid-search rule-judge thresholds")
    parser.add_argument("--skip-retrieval", action="store_true")
    parser.add_argument("--negations", action="store_true", help="also the negation test set")
    parser.add_argument("--german", action="store_true", help="also the German test sets")
    args = parser.parse_args()
    claims = [json.loads(line) for line in
              (DATA / f"claims_{args.split}.jsonl").open(encoding="utf-8")][: args.limit]

    if args.data_dir is None:
        schema = hashlib.sha256("".join(m.checksum for m in db.available_migrations()).encode())
        smoke = "" if args.corpus_limit is None else f"-smoke{args.corpus_limit}"
        args.data_dir = pathlib.Path(f"/tmp/citerun-scifact-{schema.hexdigest()[:12]}{smoke}")
    server = embedded.EmbeddedPostgres(args.data_dir)
    server.start()
    await db.migrate(server.url())
    pool = await db.create_pool(server.url())
    try:
        wordllama = embed.WordLlamaEmbedder()
        only = None
        if args.corpus_limit is not None:
            only = set(all_doc_ids()[: args.corpus_limit]) | {
                int(d) for c in claims for d in (c.get("cited_doc_ids") or [])}
        await load_corpus(pool, wordllama, only)
        retriever = retrieval.Retriever(wordllama, RetrievalConfig())
        if not args.skip_retrieval:
            await eval_retrieval(pool, retriever, claims)
        pairs = await retrieve_pairs(pool, retriever, claims)
        chunks = dict(await pool.fetch(
            "SELECT digest, count(*) FROM chunks WHERE digest = ANY($1::text[]) GROUP BY digest",
            [digest_of(p.doc_id) for p in pairs]))
        whole = sum(len(p.passages) == chunks[digest_of(p.doc_id)] for p in pairs)
        print(f"\n{whole} of {len(pairs)} pairs got every chunk of their abstract from retrieval")
        the_judge = make_judge(args, wordllama)
        timing = Timing()
        judgements = await judge_pairs(pairs, the_judge, timing)
        print_judge(pairs, judgements, args.partial, timing, f" ({args.judge})")
        other = "NEI" if args.partial == "SUPPORT" else "SUPPORT"
        _, macro, _ = metrics([p.gold for p in pairs], [to_label(j.verdict, other) for j in judgements])
        print(f"(with partially_supported -> {other}: macro-F1 {macro:.3f})")
        print_reliability(pairs, judgements, args.partial)
        if args.negations:
            await eval_negations(pool, retriever, the_judge, pairs, judgements)
        if args.german:
            judges = {"main": the_judge}
            if args.judge == "embedded":
                judges["glossary only"] = trees_judge.make(wordllama, args.config, german_dictionary={})
            await eval_german(pool, retriever, judges, args.partial)
        if args.tune:
            await tune(pairs, CachingEmbedder(wordllama))
        tokens = sum(j.tokens_used for j in judgements)
        if tokens:
            print(f"\ntokens used: {tokens} ({tokens / len(pairs):.0f} per pair)")
    finally:
        await pool.close()
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
