"""The evaluation and training data sets, read from their raw files (``$CITERUN_EVALDATA``,
default ``<repo>/../shared/evaldata``; never copied into the repository): one home for the
loaders that ``training`` and ``bench.quality`` both use.

``evalsets.claims`` (the claim-verification sets), ``evalsets.scifact`` (SciFact's claims
against the abstracts they cite), ``evalsets.nli`` (the inference pairs a shipped model may
be trained on) and ``evalsets.metrics`` (per-class and macro F1, as every table reports them).
"""

from __future__ import annotations

import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]


def evaldata() -> pathlib.Path:
    """The evaluation data kept outside the repository (SciFact, claim sets, real PDFs)."""
    return pathlib.Path(os.environ.get("CITERUN_EVALDATA", REPO.parent / "shared" / "evaldata"))
