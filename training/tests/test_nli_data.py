"""The reader's inference pairs (issue 38): labels as the judge reads them, FEVER's built
NEI pairs on topic and never the claim's own evidence, the merge with the claim pairs, and
the length-bucketed batches of the training loop."""

from __future__ import annotations

import json
import pathlib
import random

import numpy
import pytest

from evalsets import nli
from training import fit_reader, nli_data


@pytest.fixture
def nli_root(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A small ``nli/`` folder in the shapes the shared one holds."""
    root = tmp_path / "evaldata"
    (root / "nli" / "scitail").mkdir(parents=True)
    (root / "nli" / "wice").mkdir(parents=True)
    lines = [{"premise": "Plants  make food by photosynthesis.", "hypothesis": "Plants photosynthesise.",
              "label": "entailment"},
             {"premise": "Cells divide by mitosis.", "hypothesis": "Plants photosynthesise.",
              "label": "not_entailment"}]
    (root / "nli" / "scitail" / "test.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    wice = [{"premise": "p1", "hypothesis": "h1", "label": "supported"},
            {"premise": "p2", "hypothesis": "h2", "label": "partially_supported"},
            {"premise": "p3", "hypothesis": "h3", "label": "not_supported"}]
    for name in ("dev", "test"):
        (root / "nli" / "wice" / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in wice))
    monkeypatch.setenv("CITERUN_EVALDATA", str(root))
    return root


def test_labels_map_to_the_judges_and_a_two_way_set_says_what_not_entailment_is(nli_root: pathlib.Path) -> None:
    scitail = list(nli.rows(nli.SOURCES["scitail"]))
    assert scitail == [("Plants photosynthesise.", "Plants make food by photosynthesis.", "SUPPORT"),
                       ("Plants photosynthesise.", "Cells divide by mitosis.", "NEI")]
    # WiCE's partial support is the judge's "check this", not a class: left out.
    assert [r[2] for r in nli.rows(nli.SOURCES["wice"])] == ["SUPPORT", "NEI"] * 2


def test_fever_nei_is_another_claims_evidence_on_the_nearest_topic() -> None:
    pool = [{"premise": "Paris is the capital of France . It lies on the Seine .",
             "hypothesis": "Paris is the capital of France.", "label": "entailment"},
            {"premise": "Paris hosted the Summer Olympics in 1900 and 1924 .",
             "hypothesis": "Paris hosted the Olympics.", "label": "entailment"},
            {"premise": "The Danube flows through Vienna and Budapest .",
             "hypothesis": "The Danube flows through Vienna.", "label": "entailment"}]
    rows = [(p["hypothesis"], p["premise"], "SUPPORT", "fever", 1.0) for p in pool]
    built = nli_data.fever_nei(random.Random(1), rows[:1], pool, 1)
    assert built == [("Paris is the capital of France.", "Paris hosted the Summer Olympics in 1900 and 1924 .",
                      "NEI", "fever", 1.0)]


def test_the_merge_keeps_the_claim_pairs_and_names_every_set() -> None:
    claims = {"ids": numpy.ones((2, 5), numpy.uint16), "types": numpy.zeros((2, 5), numpy.uint8),
              "mask": numpy.ones((2, 5), numpy.uint8), "labels": numpy.array([0, 2]),
              "weights": numpy.array([1.0, 0.5]), "sets": numpy.array([0, 0]),
              "set_names": numpy.array(["scifact"])}
    merged = nli_data.merge(claims, [("A claim.", "Its evidence, a little longer than the claim.", "CONTRADICT",
                                      "fever", 1.0)])
    names = [str(n) for n in merged["set_names"]]
    assert names[0] == "scifact" and "fever" in names and "mnli" in names
    assert merged["labels"].tolist() == [0, 2, 1]
    assert names[int(merged["sets"][2])] == "fever"
    assert merged["ids"].shape[0] == 3 and (merged["ids"][:2, 5:] == 0).all()


def test_bucketed_batches_cover_every_row_once_and_are_deterministic() -> None:
    lengths = numpy.random.RandomState(0).randint(5, 128, size=1000)
    first = fit_reader.batches(numpy.random.RandomState(7), lengths, 32, 10)
    again = fit_reader.batches(numpy.random.RandomState(7), lengths, 32, 10)
    assert all((a == b).all() for a, b in zip(first, again, strict=True))
    assert sorted(numpy.concatenate(first).tolist()) == list(range(1000))
    # Within a batch the lengths are close: less padding than a plain shuffle.
    spread = numpy.mean([lengths[b].max() - lengths[b].min() for b in first])
    plain = fit_reader.batches(numpy.random.RandomState(7), lengths, 32, 1)
    assert spread < 0.5 * numpy.mean([lengths[b].max() - lengths[b].min() for b in plain])
