"""The reader as a training run's checkpoint holds it now, exported to ONNX: to screen a
long run while it goes on (issue 50), without stopping it.

Usage (PyTorch's interpreter for the export, onnxruntime's for the int8 step)::

    /usr/bin/python3 -m training.snapshot /work/ckpt/reader/checkpoint.pt /tmp/snap/reader.fp32.onnx
    python -m training.fit_reader quantise /tmp/snap/reader.fp32.onnx /tmp/snap/reader.int8.onnx
    python -m training.screen_reader score INPUTS.npz /tmp/snap/reader.int8.onnx ...

The checkpoint is read, never written: the run that writes it goes on. A checkpoint taken
mid-epoch is a model whose learning rate has not decayed yet; its figures say how the run
is going, not what the finished run gives.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from training.fit_reader import LAYERS, export, load_weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=pathlib.Path, help="a checkpoint.pt of fit_reader train")
    parser.add_argument("target", type=pathlib.Path, help="the fp32 ONNX graph to write")
    args = parser.parse_args()
    import torch  # noqa: PLC0415 - a training-time tool

    from training.fit_cross_encoder import CrossEncoder  # noqa: PLC0415 - needs PyTorch

    state = torch.load(args.checkpoint, map_location="cpu")
    model = CrossEncoder(load_weights(pathlib.Path(state["config"]["weights"])), LAYERS, dropout=0.0)
    model.load_state_dict(state["model"])
    model.eval()
    args.target.parent.mkdir(parents=True, exist_ok=True)
    export(model, args.target)
    plan = state["plan"]
    where = {"epoch": state["epoch"] + 1, "batch": state["position"],
             "batches": len(plan) if plan is not None else None,
             "seconds_trained": round(state["elapsed"], 1), "config": state["config"]}
    args.target.with_suffix(".json").write_text(json.dumps(where, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.target} from {args.checkpoint} ({json.dumps(where)})", file=sys.stderr)


if __name__ == "__main__":
    main()
