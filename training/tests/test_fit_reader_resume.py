"""Training the reader on this machine's CPUs (issue 50): a resumed run ends with the same
weights as an unbroken one, and ``bench.train_speed`` runs.

PyTorch is a training-time tool: the project's own interpreter usually lacks it, Debian's
``python3-torch`` (``/usr/bin/python3``) has it. Each check runs in this interpreter where
it imports ``torch``, else under ``/usr/bin/python3`` where that one does, and is skipped
(saying so) only where neither has PyTorch.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys

import pytest

from training import cpu

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEBIAN_PYTHON = "/usr/bin/python3"


def _torch_python() -> str | None:
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    if shutil.which(DEBIAN_PYTHON) and subprocess.run(
            [DEBIAN_PYTHON, "-c", "import torch, numpy"], capture_output=True, check=False).returncode == 0:
        return DEBIAN_PYTHON
    return None


PYTHON = _torch_python()
needs_torch = pytest.mark.skipif(
    PYTHON is None, reason="PyTorch is importable neither by this python nor by /usr/bin/python3 "
    "(apt-get install python3-torch libopenblas0-pthread)")


def _run(*args: str) -> str:
    assert PYTHON is not None
    done = subprocess.run([PYTHON, *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@needs_torch
def test_a_resumed_training_run_ends_with_the_same_weights_as_an_unbroken_one(tmp_path: pathlib.Path) -> None:
    out = _run("-m", "training.tests.resume_check", str(tmp_path))
    assert "the same weights as an unbroken one" in out


@needs_torch
def test_the_training_speed_bench_prints_a_row_per_setting() -> None:
    out = _run("-m", "bench.train_speed", "--small", "--steps", "1", "--batch", "4", "--threads", "1")
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 7, out
    bf16 = rows[-1]
    assert ("not on this CPU" in bf16) == (not cpu.has_bf16()), out
    assert "flags:" in out and "threads" in out


def test_bf16_is_used_only_where_the_cpu_has_bf16_matrix_units() -> None:
    assert cpu.has_bf16({"avx2", "amx_bf16", "amx_tile"})
    assert cpu.has_bf16({"avx512f", "avx512_bf16"})
    assert not cpu.has_bf16({"avx2", "fma", "avx512f"})
    assert cpu.cores() >= 1


_TORCH_LOGITS = """
import json, pathlib, sys, numpy, torch
from training.fit_reader import LAYERS, load_weights
from training.fit_cross_encoder import CrossEncoder
state = torch.load(sys.argv[1], map_location="cpu")
model = CrossEncoder(load_weights(pathlib.Path(state["config"]["weights"])), LAYERS, dropout=0.0)
model.load_state_dict(state["model"])
model.eval()
ids = torch.tensor([[2, 7, 9, 4, 0], [3, 5, 8, 1, 6]])
with torch.no_grad():
    print(json.dumps(model(ids, torch.zeros_like(ids), torch.ones_like(ids)).tolist()))
"""


@needs_torch
def test_a_snapshot_of_a_running_trainings_checkpoint_reads_as_the_checkpoint_does(tmp_path: pathlib.Path) -> None:
    """training.snapshot exports the model a checkpoint holds (issue 50: screening a long run
    while it goes on); onnxruntime reads it to the same logits as PyTorch from the checkpoint."""
    import json

    import numpy

    onnxruntime = pytest.importorskip("onnxruntime")
    from training.tests.resume_check import arguments, tiny_data

    data, weights = tiny_data(tmp_path)
    args = arguments(data, weights, tmp_path / "run", stop_after_steps=3)
    flags = ["--weights", str(args.weights), "--out", str(args.out), "--epochs", "2", "--batch", "4",
             "--bucket", "2", "--lr", "1e-3", "--seed", "11", "--precision", "fp32", "--threads", "1",
             "--checkpoint-dir", str(tmp_path / "run"), "--stop-after-steps", "3"]
    _run("-m", "training.fit_reader", "train", str(data), *flags)
    checkpoint = tmp_path / "run" / "checkpoint.pt"
    graph = tmp_path / "snap" / "reader.fp32.onnx"
    _run("-m", "training.snapshot", str(checkpoint), str(graph))
    where = json.loads(graph.with_suffix(".json").read_text(encoding="utf-8"))
    assert where["batch"] == 3 and where["batches"] == 10
    expected = numpy.array(json.loads(_run("-c", _TORCH_LOGITS, str(checkpoint))))
    session = onnxruntime.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    ids = numpy.array([[2, 7, 9, 4, 0], [3, 5, 8, 1, 6]], dtype=numpy.int64)
    got = session.run(["logits"], {"ids": ids, "types": numpy.zeros_like(ids), "mask": numpy.ones_like(ids)})[0]
    assert got.shape == (2, 3)
    numpy.testing.assert_allclose(got, expected, atol=1e-4)
