"""What chooses and calibrates a reader (issue 23): the SciTab halves a reader is trained
and calibrated on, and the screen that compares candidates per set."""

from __future__ import annotations

import numpy

from evalsets import claims
from training import screen_reader


def _pairs(n: int) -> list[claims.Pair]:
    """Three claims a table, as SciTab has several claims on one table."""
    return [claims.Pair("scitab", f"claim-{i}", f"claim {i}", f"table {i // 3}", "SUPPORT") for i in range(n)]


def test_the_halves_split_every_pair_once_by_its_evidence_and_the_same_way_each_time() -> None:
    pairs = _pairs(300)
    first, second = claims.halves(pairs)
    assert {p.id for p in first}.isdisjoint({p.id for p in second})
    assert len(first) + len(second) == 300
    assert 90 < len(first) < 210  # a hash, not a cut of the list's head
    # No table in both halves: a claim is never calibrated on a table the reader trained on.
    assert {p.evidence for p in first}.isdisjoint({p.evidence for p in second})
    # A pair's half depends on its evidence alone: the same with other pairs around it.
    again, _ = claims.halves(list(reversed(pairs)) + _pairs(450)[300:])
    assert {p.id for p in first} <= {p.id for p in again}


def test_the_screen_gates_contradiction_and_answers_nei_where_nothing_was_found() -> None:
    logits = numpy.array([[3.0, 0.0, 0.0], [0.0, 1.0, 0.6], [0.0, 4.0, 0.0], [5.0, 0.0, 0.0]])
    found = numpy.array([True, True, True, False])
    assert screen_reader.predictions(logits, found, None).tolist() == [0, 1, 1, 2]
    # Calibrated: a contradiction below the gate (0.7) is NEI, a sure one stays.
    assert screen_reader.predictions(logits, found, (1.0, numpy.zeros(3))).tolist() == [0, 2, 1, 2]


def test_the_screen_scores_macro_f1_over_the_labels_a_set_has() -> None:
    data = {"set_names": numpy.array(["a", "b", screen_reader.CALIBRATION]),
            "sets": numpy.array([0, 0, 0, 0, 1, 1, 2]),
            "gold": numpy.array([0, 1, 2, 2, 0, 1, 0])}
    predicted = numpy.array([0, 1, 2, 0, 0, 0, 1])
    cells, mean, accusations = screen_reader.table(data, predicted, {"a"})
    # a: F1 SUPPORT 2/3, CONTRADICT 1, NEI 2/3; b has no NEI: (2/3 + 0) / 2.
    assert cells == ["0.778 in", "0.333"]
    assert abs(mean - 1 / 3) < 1e-9  # the mean leaves out the set trained on
    # CONTRADICT said once in a (right), never in b; the calibration row is no set.
    assert accusations == ["1 / 1", "0 / 0"]


def test_the_frozen_screen_splits_each_pair_into_its_two_sides_and_fits_a_regression() -> None:
    from training import screen_frozen

    # [CLS] c1 c2 [SEP] e1 e2 e3 [SEP] pad, as reader.encode lays a pair out.
    ids = numpy.array([[101, 11, 12, 102, 21, 22, 23, 102, 0]])
    types = numpy.array([[0, 0, 0, 0, 1, 1, 1, 1, 0]])
    mask = numpy.array([[1, 1, 1, 1, 1, 1, 1, 1, 0]])
    (claim, claim_mask), (evidence, evidence_mask) = screen_frozen.sides(ids, types, mask)
    assert list(claim[0][claim_mask[0] == 1]) == [101, 11, 12, 102]
    assert list(evidence[0][evidence_mask[0] == 1]) == [101, 21, 22, 23, 102]
    # Three classes apart on the features: the fit finds them, the same weights each time.
    rng = numpy.random.RandomState(0)
    centres = numpy.eye(3) * 4
    y = numpy.repeat(numpy.arange(3), [40, 10, 25])  # unbalanced, as the training sets are
    x = numpy.hstack([centres[y] + rng.normal(size=(len(y), 3)), numpy.ones((len(y), 1))])
    weights = screen_frozen.fit(x, y, 1e-3)
    assert ((x @ weights).argmax(1) == y).mean() > 0.9
    assert numpy.array_equal(weights, screen_frozen.fit(x, y, 1e-3))
    u = numpy.array([[1.0, 0.0]])
    assert screen_frozen.features(u, u).tolist() == [[1.0, 0.0, 0.0, 0.0, 1.0, 1.0]]
