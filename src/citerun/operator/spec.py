"""The CitationRun spec as the operator sees it: the one model in :mod:`citerun.runspec`.

Kept as a module so ``citerun.operator.spec`` stays the operator's import point; the
model, its rules and the generated CRD schema have one owner, ``src/citerun/runspec.py``.
"""

from __future__ import annotations

from citerun.runspec import (
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    DocumentRef,
    JudgeSpec,
    KeyRef,
    OpenAISpec,
    RetrievalSpec,
    RunSpec,
    SourceRef,
    validation_message,
)

CitationRunSpec = RunSpec

__all__ = ["GROUP", "KIND", "PLURAL", "VERSION", "CitationRunSpec", "DocumentRef", "JudgeSpec",
           "KeyRef", "OpenAISpec", "RetrievalSpec", "RunSpec", "SourceRef", "validation_message"]
