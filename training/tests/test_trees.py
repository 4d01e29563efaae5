"""The trees (issue 50: out of the shipped package, kept for the benches that compare with
them): their artifact and model code, their features, their calibration, and the judge
with the research switches the shipped one dropped (training/trees/)."""

from __future__ import annotations

import hashlib
import json
import pathlib

import numpy
import pytest

from citerun.pipeline import embed, judge
from training.trees import features, model
from training.trees import judge as trees_judge

Verdict = judge.Verdict

# The sha256 of the trees, as training.judge wrote them. A retrain changes it on purpose:
# update it together with docs/benchmarks.md and training/trees/README.md.
ARTIFACT_SHA256 = "5238a726157623a91097bf605d6c79fa6bd894949bad85ba6b0ee96f617f591a"


def _passage(text: str, chunk_id: int = 1) -> judge.Passage:
    return judge.Passage(chunk_id=chunk_id, text=text, page_start=3, page_end=3, score=0.03)


def test_the_trees_are_the_ones_trained() -> None:
    data = model.ARTIFACT.read_bytes()
    assert hashlib.sha256(data).hexdigest() == ARTIFACT_SHA256
    assert len(data) < 25 * 1024 * 1024


def test_the_artifact_fits_the_features_and_has_its_card_and_licence() -> None:
    loaded = model.Model.load()
    assert loaded.names == features.NAMES
    assert loaded.trees is not None and int(loaded.trees.feature.max()) < len(features.NAMES)
    card = (model.ARTIFACT.parent / "README.md").read_text(encoding="utf-8")
    assert "CC BY 4.0" in card and "ODC-By" in card and "training.judge" in card


def test_a_model_trained_on_other_features_is_refused(tmp_path: pathlib.Path) -> None:
    data = json.loads(model.ARTIFACT.read_text(encoding="utf-8"))
    data["names"] = data["names"][:-1] + ["something_else"]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="other features"):
        model.Model.load(path)
    with pytest.raises(judge.JudgeConfigError, match="cannot read"):
        model.Model.load(tmp_path / "missing.json")


def test_trees_are_evaluated_like_a_hand_walk() -> None:
    loaded = model.Model.load()
    assert loaded.trees is not None
    x = numpy.random.RandomState(5).normal(size=(4, len(features.NAMES)))
    trees = loaded.trees
    expected = numpy.zeros((4, 3))
    for r in range(4):
        for t in range(trees.feature.shape[0]):
            node = 0
            while trees.feature[t, node] >= 0:
                go_left = x[r, trees.feature[t, node]] <= trees.threshold[t, node]
                node = trees.left[t, node] if go_left else trees.right[t, node]
            expected[r, t % 3] += trees.value[t, node]
    assert numpy.allclose(loaded.logits(x), expected)


def test_training_is_deterministic_and_probabilities_are_calibrated(tmp_path: pathlib.Path) -> None:
    rng = numpy.random.RandomState(7)
    x = rng.normal(size=(300, len(features.NAMES))).astype(numpy.float32)
    y = numpy.argmax(x[:, :3] + 0.5 * rng.normal(size=(300, 3)), axis=1)
    weights = numpy.ones(300)
    paths = []
    for name in ("a.json", "b.json"):
        fitted = model.fit(x, y, weights, epochs=50, seed=3)
        fitted.save(tmp_path / name)
        paths.append(tmp_path / name)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    loaded = model.Model.load(paths[0])
    p = loaded.probabilities(x[:10])
    assert numpy.allclose(p.sum(axis=1), 1.0, atol=1e-5)
    hotter = model.Model(loaded.names, loaded.mean, loaded.scale, loaded.layers, temperature=3.0)
    assert hotter.probabilities(x[:10]).max() < p.max()  # a higher temperature is less sure


def test_the_contradiction_cues_of_the_features() -> None:
    featurizer = features.Featurizer(embed.WordLlamaEmbedder())
    source = _passage(
        "One in five surgical randomised controlled trials are discontinued early. Here we "
        "report a robust UCP1-independent thermogenic mechanism in beige fat. Monoclonal "
        "antibody targeting of N-cadherin inhibits prostate cancer growth and metastasis. "
        "Omnivorous women produced more TMAO than vegans did.")

    def named(claim: str) -> dict[str, float]:
        found = featurizer.features(claim, [source])
        assert found is not None
        return dict(zip(features.NAMES, found.vector.tolist()))

    assert named("One in two surgical randomized controlled trials are discontinued early.")[
        "number_conflict"] >= 1  # number words are numbers
    assert named("One in five surgical randomized controlled trials are discontinued early.")[
        "number_conflict"] == 0
    assert named("Ca2+ cycling is a UCP1-dependent thermogenic mechanism.")["prefix_antonym"] >= 1
    assert named("Ca2+ cycling is a UCP1-independent thermogenic mechanism.")["prefix_antonym"] == 0
    encourages = named("Monoclonal antibody targeting of N-cadherin encourages metastasis.")
    inhibits = named("Monoclonal antibody targeting of N-cadherin inhibits metastasis.")
    assert encourages["effect_conflict_top"] >= 1 and inhibits["effect_conflict_top"] == 0
    assert inhibits["effect_agree_top"] >= 1
    assert named("Omnivorous men produced more TMAO than vegans.")["group_swap"] == 1
    assert named("Omnivorous women produced more TMAO than vegans.")["group_swap"] == 0


def test_the_lexicon_and_alignment_cues_of_the_features() -> None:
    featurizer = features.Featurizer(embed.WordLlamaEmbedder())

    def named(claim: str, evidence: str) -> dict[str, float]:
        found = featurizer.features(claim, [_passage(evidence)])
        assert found is not None
        return dict(zip(features.NAMES, found.vector.tolist()))

    works = "In a trial of 46 older adults, cognitive behavioural therapy was effective for insomnia."
    fails = "In a trial of 46 older adults, cognitive behavioural therapy was ineffective for insomnia."
    claim = "Cognitive behavioural therapy is ineffective for insomnia in older adults."
    against = named(claim, works)  # WordNet: effective/ineffective, the second negated by its prefix
    assert against["wordnet_antonym_conflict"] >= 1 and against["affix_negative_claim_only"] == 1
    agrees = named(claim, fails)
    assert agrees["wordnet_antonym_conflict"] == 0 and agrees["affix_negative_claim_only"] == 0
    assert named("Cognitive behavioural therapy is effective for insomnia.", fails)[
        "affix_negative_evidence_only"] == 1
    # A substitution: "slows" is missing from the evidence, its closest word there is
    # "accelerated", missing from the claim, and their effects have opposite signs.
    slows = named("In mice, IL-6 slows tumour growth.", "In mice, IL-6 accelerated tumour growth.")
    assert slows["subst_sim"] > 0 and slows["subst_effect_conflict"] == 1
    same = named("In mice, IL-6 accelerates tumour growth.", "In mice, IL-6 accelerated tumour growth.")
    assert same["subst_sim"] == 0 and same["align_min"] > slows["align_min"]


def test_the_trees_calibration_belongs_to_the_trees(tmp_path: pathlib.Path) -> None:
    """The out-of-domain calibration (issue 23) loads for the trees beside it, softens them
    and is refused when missing, malformed, out of range or fitted to another model."""
    loaded = model.Recalibration.load()
    data = json.loads(model.CALIBRATION.read_text(encoding="utf-8"))
    assert data["model_sha256"] == ARTIFACT_SHA256 and "SciTab" in data["fitted_on"]
    sure = numpy.array([[0.96, 0.02, 0.02]])
    assert loaded.apply(sure).max() < sure.max()  # softened
    assert abs(float(loaded.apply(sure).sum()) - 1.0) < 1e-9
    path = tmp_path / "calibration.json"
    with pytest.raises(judge.JudgeConfigError, match="cannot read"):
        model.Recalibration.load(path)
    path.write_text(json.dumps({**data, "weight": -1.0}), encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="out of range"):
        model.Recalibration.load(path)
    other = tmp_path / "model.json"
    other.write_bytes(model.ARTIFACT.read_bytes() + b"\n")
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="another model"):
        model.Recalibration.load(path, other)
    # Where the trees decide (`reader: false`): these trees with their calibration; none
    # when turned off, nor for trees of one's own without a calibration of their own.
    embedder = embed.WordLlamaEmbedder()
    trees = trees_judge.ResearchJudge(embedder, research=trees_judge.Research(reader=False))
    assert trees.calibration is not None and trees.calibration.weight == loaded.weight
    off = trees_judge.ResearchJudge(embedder, research=trees_judge.Research(reader=False, calibrated=False))
    own = trees_judge.ResearchJudge(embedder, research=trees_judge.Research(reader=False, model_file=other))
    assert off.calibration is None and own.calibration is None
    with pytest.raises(judge.JudgeConfigError, match="another model"):
        trees_judge.ResearchJudge(embedder, research=trees_judge.Research(
            reader=False, model_file=other, calibration_file=path))



async def test_the_trees_still_judge_when_the_reader_is_off() -> None:
    trees = trees_judge.make(embed.WordLlamaEmbedder(), {"reader": False, "contradicted_min": 0.5})
    assert isinstance(trees, trees_judge.ResearchJudge) and trees.calibration is not None
    found = await trees.judge("Statin therapy reduces the risk of myocardial infarction.",
                              [_passage("Statin therapy reduced the risk of myocardial infarction "
                                        "by 27% compared with placebo.")])
    assert found.verdict in (Verdict.SUPPORTED, Verdict.PARTIALLY_SUPPORTED)


def test_without_a_research_switch_the_benches_build_the_shipped_judge() -> None:
    """``make`` (the benches' ``--config``): the shipped settings alone give the shipped
    judge itself, not a look-alike; a research field gives the research judge."""
    embedder = embed.WordLlamaEmbedder()
    assert type(trees_judge.make(embedder, {})) is judge.TrainedJudge
    assert type(trees_judge.make(embedder, {"contradicted_min": 0.5})) is judge.TrainedJudge
    assert type(trees_judge.make(embedder, {"calibrated": False})) is trees_judge.ResearchJudge
    with pytest.raises(ValueError, match="reader_fil"):
        trees_judge.make(embedder, {"reader_fil": "x.onnx"})  # a typo is an error, not ignored


async def test_the_trees_are_read_only_where_they_count(tmp_path: pathlib.Path) -> None:
    """Where the reader decides alone, trees of one's own are not read (a missing file does
    not matter); where they decide, it does."""
    missing = tmp_path / "no-trees.json"
    embedder = embed.WordLlamaEmbedder()
    reading = trees_judge.ResearchJudge(embedder, research=trees_judge.Research(model_file=missing))
    found = await reading.judge("Daily aspirin reduces the risk of a first heart attack.",
                                [_passage("Daily aspirin reduced the risk of a first myocardial infarction.")])
    assert found.verdict in (Verdict.SUPPORTED, Verdict.PARTIALLY_SUPPORTED) and reading.calibration is None
    with pytest.raises(judge.JudgeConfigError, match="cannot read"):
        trees_judge.ResearchJudge(embedder, research=trees_judge.Research(model_file=missing, reader=False))


def test_a_reader_of_ones_own_and_its_calibration(tmp_path: pathlib.Path) -> None:
    """A reader of one's own without a calibration of its own runs uncalibrated; the
    shipped reader with a calibration fitted to another reader is refused."""
    from citerun.pipeline.judging import reader

    embedder = embed.WordLlamaEmbedder()
    copy = tmp_path / "copy.onnx"
    copy.write_bytes(reader.MODEL.read_bytes())
    own = trees_judge.ResearchJudge(embedder, research=trees_judge.Research(reader_file=copy))
    assert own.reader.calibration.temperature == 1.0
    path = tmp_path / "calibration.json"
    data = json.loads(reader.CALIBRATION.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "model_sha256": "0" * 64}), encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="another model"):
        trees_judge.ResearchJudge(embedder, research=trees_judge.Research(reader_calibration_file=path))


def test_the_trees_read_the_sentences_the_shipped_judge_ranks() -> None:
    """The features are computed from the shipped judge's ranking: the same sentences, in
    the same order, as the reader reads."""
    embedder = embed.WordLlamaEmbedder()
    source = _passage("Statins and cardiovascular events. We followed 12,000 adults aged 65 and over "
                      "for eight years. Statin therapy reduced the risk of myocardial infarction by "
                      "27% compared with placebo. Adverse events were rare.")
    claim = "Statin therapy reduces the risk of myocardial infarction in older adults."
    found = features.Featurizer(embedder).features(claim, [source])
    ranked = judge.TrainedJudge(embedder).ranker.rank(claim, [source])
    assert found is not None and ranked is not None
    assert [s.candidate.sentence for s in found.sentences] == [s.candidate.sentence for s in ranked.sentences]
    assert found.vector.shape == (len(features.NAMES),)
