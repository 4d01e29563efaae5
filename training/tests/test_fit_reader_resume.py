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
