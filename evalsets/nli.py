"""The inference pairs a shipped model may be trained on (``$CITERUN_EVALDATA/nli/``; its
README gives each set's terms, labels and overlaps), read as (claim, evidence, label) with
the judge's three labels. Mostly dev/test splits of their corpora: train on them, never
report a score on them as a test figure.

The hypothesis is the claim, the premise the evidence. ``entailment`` is SUPPORT,
``contradiction`` CONTRADICT, ``neutral`` NEI; WiCE's ``supported`` SUPPORT and
``not_supported`` NEI (its ``partially_supported`` is the judge's "check this", not a class:
left out); a two-way set's ``not_entailment`` is taken only where a :class:`Source` says
which class it stands for (SciTail: a related science sentence that does not state the
answer, NEI). Not read: FEVER's RTE dev and FEVER-Symmetric v0.1 (they overlap v0.2 and each
other), QNLI (questions, not claims), SummEdits (its ``not_entailment`` mixes contradicted
and unstated), e-SNLI's dev (= ``snli_dev``) and TaxiNLI's MNLI dev copies.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

from evalsets import evaldata

LABELS = {"entailment": "SUPPORT", "contradiction": "CONTRADICT", "neutral": "NEI",
          "supported": "SUPPORT", "not_supported": "NEI"}


@dataclasses.dataclass(frozen=True)
class Source:
    """One set as read: its files under ``nli/`` and what its ``not_entailment`` means."""

    name: str
    files: tuple[str, ...]
    not_entailment: str | None = None


SOURCES = {s.name: s for s in (
    Source("mnli", ("mnli_dev_matched/dev_matched.jsonl", "mnli_dev_mismatched/dev_mismatched.jsonl",
                    "taxinli_mnli/mnli_train.jsonl")),
    Source("snli", ("snli_dev/dev.jsonl", "esnli/test.jsonl")),
    Source("cad_snli", tuple(f"cad_snli/{split}_{part}.jsonl" for split in ("train", "dev", "test")
                             for part in ("original", "revised_hypothesis", "revised_premise"))),
    Source("conjnli", ("conjnli/adversarial_train.jsonl", "conjnli/dev.jsonl")),
    Source("breaking_nli", ("breaking_nli/test.jsonl",)),
    Source("monotonicity", ("med/all.jsonl", "help/leskexppmb_and.jsonl", "help/leskexppmb_or.jsonl")),
    Source("fever", ("fever_train/train.jsonl",)),
    Source("fever_symmetric", ("fever_symmetric/v0.2_dev.jsonl", "fever_symmetric/v0.2_test.jsonl")),
    Source("scitail", ("scitail/test.jsonl",), not_entailment="NEI"),
    Source("wice", ("wice/dev.jsonl", "wice/test.jsonl")),
    Source("ambient", ("ambient/dev.jsonl", "ambient/test.jsonl", "wanli_sample/train_sample.jsonl")),
)}


def raw(source: Source) -> Iterator[dict[str, str]]:
    """The set's lines as its files hold them."""
    for name in source.files:
        with (evaldata() / "nli" / name).open(encoding="utf-8") as f:
            yield from (json.loads(line) for line in f if line.strip())


def rows(source: Source) -> Iterator[tuple[str, str, str]]:
    """(claim, evidence, label) of every pair with a label taken, whitespace normalised."""
    for item in raw(source):
        label = source.not_entailment if item["label"] == "not_entailment" else LABELS.get(item["label"])
        claim, evidence = " ".join(item["hypothesis"].split()), " ".join(item["premise"].split())
        if label is not None and claim and evidence:
            yield claim, evidence, label
