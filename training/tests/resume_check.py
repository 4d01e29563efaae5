"""The resumed-run check of ``training.fit_reader`` (issue 50), run by
``test_fit_reader_resume`` in whichever interpreter has PyTorch: a tiny encoder (random
weights, 6 layers 24 wide) on 40 pairs, trained unbroken and trained in three calls
stopped and resumed from its checkpoints (one stop inside an epoch, one across an epoch's
end), must end with exactly the same weights.

    /usr/bin/python3 -m training.tests.resume_check DIR
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

import numpy


def tiny_data(directory: pathlib.Path, count: int = 40) -> tuple[pathlib.Path, pathlib.Path]:
    from bench.train_speed import random_weights  # noqa: PLC0415

    weights = random_weights(vocab=60, hidden=24, layers=6, positions=32, seed=3)
    weights_path = directory / "weights.npz"
    numpy.savez(weights_path, **weights)
    rng = numpy.random.RandomState(5)
    width = 24
    lengths = rng.randint(5, width + 1, count)
    mask = (numpy.arange(width)[None, :] < lengths[:, None]).astype(numpy.uint8)
    ids = (rng.randint(1, 60, (count, width)) * mask).astype(numpy.uint16)
    types = ((numpy.arange(width)[None, :] > lengths[:, None] // 2) * mask).astype(numpy.uint8)
    data_path = directory / "pairs.npz"
    numpy.savez(data_path, ids=ids, types=types, mask=mask, labels=rng.randint(0, 3, count).astype(numpy.int64),
                weights=rng.uniform(0.5, 1.5, count), sets=rng.randint(0, 2, count).astype(numpy.int64),
                set_names=numpy.array(["a", "b"]))
    return data_path, weights_path


def arguments(data: pathlib.Path, weights: pathlib.Path, checkpoints: pathlib.Path, **change: object) -> argparse.Namespace:
    args = argparse.Namespace(
        data=data, weights=weights, out=checkpoints / "out", leave_out=[], set_weight=["b=0.5"], epochs=2,
        freeze=-1, freeze_words=False, batch=4, bucket=2, lr=1e-3, smoothing=0.05, seed=11,
        dropout=0.1, foreach=False, precision="fp32", threads=1, device="cpu", limit=0,
        checkpoint_dir=checkpoints, checkpoint_every=600.0, resume=False, stop_after_steps=0)
    for key, value in change.items():
        setattr(args, key, value)
    return args


def check(directory: pathlib.Path) -> None:
    import torch  # noqa: PLC0415

    from training.fit_reader import fit  # noqa: PLC0415

    data, weights = tiny_data(directory)
    whole = fit(arguments(data, weights, directory / "whole"))
    assert whole is not None
    broken = directory / "broken"
    assert fit(arguments(data, weights, broken, stop_after_steps=7)) is None  # inside epoch 1 (10 batches)
    assert (broken / "checkpoint.pt").exists() and not list(broken.glob(".*.tmp"))
    assert fit(arguments(data, weights, broken, resume=True, stop_after_steps=6)) is None  # across its end
    resumed = fit(arguments(data, weights, broken, resume=True))
    assert resumed is not None
    a, b = whole[0].state_dict(), resumed[0].state_dict()
    assert a.keys() == b.keys()
    differ = [k for k in a if not torch.equal(a[k], b[k])]
    assert not differ, f"a resumed run ends with other weights: {differ}"
    # Each epoch's loss, the same to the digit; its seconds are the machine's (load).
    losses = [[re.sub(r" \(\d+ s\)$", "", line) for line in run[1]["log"]]
              for run in (whole, resumed)]
    assert losses[0] == losses[1] and len(losses[0]) == 2, losses
    assert resumed[1]["resumed"] == 2 and whole[1]["resumed"] == 0
    # Another run's checkpoint is not resumed.
    try:
        fit(arguments(data, weights, broken, resume=True, lr=2e-3))
    except SystemExit as stop:
        assert "lr" in str(stop)
    else:
        raise AssertionError("a checkpoint of another learning rate was resumed")
    print("resumed run: the same weights as an unbroken one")


if __name__ == "__main__":
    check(pathlib.Path(sys.argv[1]))
