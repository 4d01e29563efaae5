"""Measure parsing (pages/s), chunking and offline embedding (chunks/s) on one machine.

Usage: ``python -m bench.pipeline.large_thesis /tmp/large && python -m bench.pipeline.parse_embed
/tmp/large``. Prints one table. Each stage runs ``--repeat`` times and the best run is
reported, since the question is what the code can do, not how noisy the machine is;
the one-off model load is reported on its own row. Reading and chunking are the recipe's
stages a run uses (:func:`citerun.pipeline.recipe.read` within the default limits,
:func:`~citerun.pipeline.recipe.passages`: a document's chunks without its own reference
list).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import time
import typing

from citerun.pipeline import embed, pdf, recipe
from citerun.pipeline.settings import DocumentSettings, LimitSettings

T = typing.TypeVar("T")


def best_of(repeat: int, work: typing.Callable[[], T]) -> tuple[float, T]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=pathlib.Path, help="output of bench.pipeline.large_thesis")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    thesis_bytes = (args.directory / "thesis.pdf").read_bytes()
    source_bytes = [p.read_bytes() for p in sorted((args.directory / "sources").glob("*.pdf"))]
    limit, limits, settings = 200_000_000, LimitSettings(), DocumentSettings()

    rows: list[tuple[str, int, str, float]] = []

    seconds, thesis = best_of(args.repeat, lambda: recipe.read(thesis_bytes, limits, limit))
    rows.append(("parse thesis", thesis.page_count, "pages", seconds))

    seconds, sources = best_of(
        args.repeat, lambda: [recipe.read(b, limits, limit) for b in source_bytes]
    )
    rows.append((f"parse {len(sources)} sources", sum(s.page_count for s in sources), "pages", seconds))

    documents = [thesis, *sources]
    seconds, chunk_sets = best_of(args.repeat,
                                  lambda: [recipe.passages(d, settings) for d in documents])
    chunks = [c.text for chunk_set in chunk_sets for c in chunk_set]
    rows.append(("chunk all (900/150 chars)", len(chunks), "chunks", seconds))

    seconds, claim_sentences = best_of(
        args.repeat, lambda: [s for p in thesis.pages for s in pdf.sentences(p.text)]
    )
    rows.append(("split thesis sentences", len(claim_sentences), "sentences", seconds))

    started = time.perf_counter()
    embedder = embed.WordLlamaEmbedder()
    embedder.embed(["warm up"])
    rows.append(("load WordLlama (once)", 1, "loads", time.perf_counter() - started))

    seconds, _ = best_of(args.repeat, lambda: embedder.embed(chunks))
    rows.append(("embed chunks (WordLlama)", len(chunks), "chunks", seconds))

    seconds, _ = best_of(args.repeat, lambda: embedder.embed(claim_sentences))
    rows.append(("embed sentences (WordLlama)", len(claim_sentences), "sentences", seconds))

    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, best of {args.repeat}"
    )
    print(f"{'stage':<30} {'items':>7} {'unit':<10} {'seconds':>8} {'per second':>11}")
    print("-" * 70)
    for stage, items, unit, secs in rows:
        print(f"{stage:<30} {items:>7} {unit:<10} {secs:>8.3f} {items / secs:>11.1f}")


if __name__ == "__main__":
    main()
