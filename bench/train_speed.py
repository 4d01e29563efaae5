"""Training speed of the judge's reader on this machine's CPUs (issue 50): pairs per second.

Usage::

    /usr/bin/python3 -m bench.train_speed [--steps 6] [--batch 32] [--threads N] [--data PAIRS.npz]

An encoder of the reader's shape (``training.fit_cross_encoder.CrossEncoder``: 6 layers,
384 wide, 12 heads, 30,522 WordPieces, mean-pooled 3-class head; random weights, which
cost what trained ones cost), AdamW with gradient clipping as ``training.fit_reader``
trains, timed for ``--steps`` optimiser steps after one step of warm-up, per setting:

- fp32, dropout 0.1, batches of random pairs (how ``fit_reader`` trained before issue 50);
- fp32, dropout 0;
- dropout 0 and the word embeddings frozen (11.7 M of the 22.7 M parameters: no
  gradient, no optimizer update);
- the same with AdamW's multi-tensor (``foreach``) update;
- the same with batches bucketed by length (``fit_reader.batches``, runs of 16 batches
  sorted by length: less padding);
- bf16 autocast (``torch.autocast("cpu", dtype=torch.bfloat16)`` around the forward, the
  loss in fp32), only where the CPU has bf16 units (``amx_bf16`` or ``avx512_bf16`` in
  /proc/cpuinfo); elsewhere the row says so.

The pairs' lengths are those of ``--data`` (a ``training.reader_data``/``nli_data`` .npz)
or, without it, a fixed sample shaped like them (median about 60 WordPieces, cut at 128).
It prints the CPU, its flags that matter, the threads, the BLAS mapped, and one row per
setting: pairs per second (wall) and per CPU-second. PyTorch is a training-time tool:
run it with the interpreter that has it (Debian's ``python3-torch``: ``/usr/bin/python3``).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import numpy

from training.cpu import FLAGS, blas_in_use, blas_threads, cores, cpu_flags, cpu_model, has_bf16, quiet_waits

def sample_lengths(count: int = 4096, seed: int = 0) -> numpy.ndarray:
    """Pair lengths shaped like the training data's (a log-normal around 60 WordPieces)."""
    rng = numpy.random.RandomState(seed)
    return numpy.clip(numpy.round(rng.lognormal(numpy.log(60), 0.45, count)), 12, 128).astype(numpy.int64)


def settings(bf16: bool) -> list[dict[str, object]]:
    base = {"dropout": 0.1, "freeze_words": False, "foreach": False, "bucket": 1, "bf16": False, "threads": 0}
    rows = [("fp32, dropout 0.1 (before issue 50)", {}),
            ("fp32, dropout 0", {"dropout": 0.0}),
            ("fp32, dropout 0, word embeddings frozen", {"dropout": 0.0, "freeze_words": True}),
            ("fp32, dropout 0, words frozen, foreach AdamW", {"dropout": 0.0, "freeze_words": True, "foreach": True}),
            ("fp32, dropout 0, words frozen, foreach, bucketed by length",
             {"dropout": 0.0, "freeze_words": True, "foreach": True, "bucket": 16}),
            ("fp32, dropout 0, words frozen, foreach, bucketed, 1 thread (PyTorch and BLAS)",
             {"dropout": 0.0, "freeze_words": True, "foreach": True, "bucket": 16, "threads": 1}),
            ("bf16 autocast, dropout 0, words frozen, foreach, bucketed",
             {"dropout": 0.0, "freeze_words": True, "foreach": True, "bucket": 16, "bf16": True})]
    return [{"name": name, **base, **change, "skip": None if bf16 or not change.get("bf16") else
             "not on this CPU (no amx_bf16 / avx512_bf16)"} for name, change in rows]


def random_weights(vocab: int = 30522, hidden: int = 384, layers: int = 6, positions: int = 512,
                   seed: int = 0) -> dict[str, numpy.ndarray]:
    """Weights of the reader's shape, under the names ``CrossEncoder`` reads."""
    rng = numpy.random.RandomState(seed)

    def w(*shape: int) -> numpy.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(numpy.float32)

    out = {"embeddings.word_embeddings.weight": w(vocab, hidden),
           "embeddings.position_embeddings.weight": w(positions, hidden),
           "embeddings.token_type_embeddings.weight": w(2, hidden),
           "embeddings.LayerNorm.weight": numpy.ones(hidden, numpy.float32),
           "embeddings.LayerNorm.bias": numpy.zeros(hidden, numpy.float32)}
    shapes = {"attention.self.query": (hidden, hidden), "attention.self.key": (hidden, hidden),
              "attention.self.value": (hidden, hidden), "attention.output.dense": (hidden, hidden),
              "intermediate.dense": (4 * hidden, hidden), "output.dense": (hidden, 4 * hidden)}
    for i in range(layers):
        for name, shape in shapes.items():
            out[f"encoder.layer.{i}.{name}.weight"] = w(*shape)
            out[f"encoder.layer.{i}.{name}.bias"] = numpy.zeros(shape[0], numpy.float32)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[f"encoder.layer.{i}.{norm}.weight"] = numpy.ones(hidden, numpy.float32)
            out[f"encoder.layer.{i}.{norm}.bias"] = numpy.zeros(hidden, numpy.float32)
    return out


def measure(setting: dict[str, object], weights: dict[str, numpy.ndarray], lengths: numpy.ndarray,
            steps: int, batch: int, seed: int = 0) -> tuple[float, float, float]:
    """(pairs per second, pairs per CPU-second, mean padded length) of ``steps`` steps."""
    import torch  # noqa: PLC0415 - a training-time tool
    from torch import nn  # noqa: PLC0415

    from training.fit_cross_encoder import CrossEncoder  # noqa: PLC0415 - needs PyTorch
    from training.fit_reader import batches  # noqa: PLC0415

    torch.manual_seed(seed)
    model = CrossEncoder(weights, 6, dropout=float(setting["dropout"]))  # type: ignore[arg-type]
    if setting["freeze_words"]:
        model.words.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=4e-5,
                                  foreach=bool(setting["foreach"]))
    rng = numpy.random.RandomState(seed)
    plan = batches(rng, lengths, batch, int(setting["bucket"]))[:steps + 1]  # type: ignore[call-overload]
    vocab = weights["embeddings.word_embeddings.weight"].shape[0]
    model.train()
    wall = cpu = 0.0
    padded = 0
    for step, pick in enumerate(plan):
        width = int(lengths[pick].max())
        mask = torch.from_numpy((numpy.arange(width)[None, :] < lengths[pick][:, None]).astype(numpy.int64))
        ids = torch.randint(1000, vocab, (len(pick), width), generator=torch.Generator().manual_seed(step)) * mask
        types = torch.zeros_like(ids)
        labels = torch.from_numpy(numpy.arange(len(pick)) % 3)
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(setting["bf16"])):
            logits = model(ids, types, mask)
        loss = nn.functional.cross_entropy(logits.float(), labels)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
        if step:  # the first step warms up (allocations, BLAS threads)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            padded += len(pick) * width
    pairs = sum(len(p) for p in plan[1:])
    return pairs / wall, pairs / max(cpu, 1e-9), padded / pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="timed optimiser steps per setting")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="0: one per core")
    parser.add_argument("--data", type=pathlib.Path, help="take the pairs' lengths from this .npz")
    parser.add_argument("--small", action="store_true", help="a tiny encoder (the tests' smoke run)")
    parser.add_argument("--spin", action="store_true",
                        help="leave OpenMP's waiting threads spinning (as before issue 50)")
    parser.add_argument("--only", default="", metavar="TEXT", help="only the settings whose name has TEXT")
    args = parser.parse_args(argv)
    if not args.spin:
        quiet_waits()
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        raise SystemExit("bench.train_speed needs PyTorch: run it with /usr/bin/python3 "
                         "(apt-get install python3-torch libopenblas0-pthread)") from None
    threads = args.threads or cores()
    torch.set_num_threads(threads)
    flags = cpu_flags()
    if args.data:
        with numpy.load(args.data) as data:
            lengths = data["mask"].sum(1).astype(numpy.int64)
        source = f"{args.data.name} ({len(lengths)} pairs)"
    else:
        lengths = sample_lengths()
        source = "a log-normal sample"
    weights = random_weights(vocab=1200, hidden=24, layers=6, positions=130) if args.small else random_weights()
    torch.ones((8, 8)) @ torch.ones((8, 8))
    blas_threads(threads)
    print(f"CPU: {cpu_model()}, {cores()} cores; flags: "
          f"{' '.join(f for f in FLAGS if f in flags) or 'none of ' + ', '.join(FLAGS)}")
    print(f"PyTorch {torch.__version__}, {threads} threads (unless a row says otherwise), "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, BLAS: {', '.join(blas_in_use()) or 'none mapped'}")
    print(f"bf16 units: {'yes' if has_bf16(flags) else 'no (training runs in fp32)'}")
    print(f"lengths: {source}, median {numpy.median(lengths):.0f}, mean {lengths.mean():.1f} WordPieces; "
          f"batch {args.batch}, {args.steps} steps each")
    print()
    print("| setting | pairs/s | pairs per CPU-s | mean padded length |")
    print("|---|---:|---:|---:|")
    for setting in settings(has_bf16(flags)):
        if args.only not in str(setting["name"]):
            continue
        if setting["skip"]:
            print(f"| {setting['name']} | {setting['skip']} | | |", flush=True)
            continue
        count = int(setting["threads"]) or threads  # type: ignore[call-overload]
        torch.set_num_threads(count)
        blas_threads(count)
        rate, per_cpu, width = measure(setting, weights, lengths, args.steps, args.batch)
        print(f"| {setting['name']} | {rate:.1f} | {per_cpu:.1f} | {width:.0f} |", flush=True)
    if sys.stdout.isatty():
        print()


if __name__ == "__main__":
    main()
