"""The trained embedded judge: what it must tell apart (the trees it replaced and their
features: training/tests/test_trees.py)."""

from __future__ import annotations

import os
import pathlib

import numpy
import pytest

from citerun.pipeline import embed, judge
from citerun.pipeline.judging import german, sentences

Verdict = judge.Verdict

@pytest.fixture(scope="module")
def trained() -> judge.TrainedJudge:
    return judge.TrainedJudge(embed.WordLlamaEmbedder())


def _passage(text: str, chunk_id: int = 1) -> judge.Passage:
    return judge.Passage(chunk_id=chunk_id, text=text, page_start=3, page_end=3, score=0.03)


_ABSTRACT = _passage(
    "Statins and Cardiovascular Events in Older Adults. We followed 12,000 adults aged 65 "
    "and over for eight years. Statin therapy reduced the risk of myocardial infarction by "
    "27% compared with placebo. Adverse events were rare and mostly mild."
)


async def test_a_claim_and_its_negation_get_different_verdicts(trained: judge.TrainedJudge) -> None:
    claim = "Statin therapy reduces the risk of myocardial infarction in older adults."
    negated = "Statin therapy does not reduce the risk of myocardial infarction in older adults."
    first = await trained.judge(claim, [_ABSTRACT])
    second = await trained.judge(negated, [_ABSTRACT])
    assert first.verdict in (Verdict.SUPPORTED, Verdict.PARTIALLY_SUPPORTED)
    assert second.verdict != first.verdict
    assert first.evidence and "reduced the risk" in first.evidence[0].quote
    assert 0.0 <= first.confidence <= 1.0 and "P(support)" in first.rationale


async def test_an_unrelated_source_is_not_enough(trained: judge.TrainedJudge) -> None:
    unrelated = _passage("Soil bacteria fix nitrogen in the roots of legumes. Yields rose in dry years.")
    result = await trained.judge("Statin therapy reduces the risk of myocardial infarction.", [unrelated])
    assert result.verdict == Verdict.UNSUPPORTED


async def test_no_passage_is_unsupported(trained: judge.TrainedJudge) -> None:
    result = await trained.judge("Statin therapy reduces the risk of myocardial infarction.", [])
    assert result.verdict == Verdict.UNSUPPORTED and result.evidence == ()


async def test_a_german_claim_is_judged_like_its_english_original(trained: judge.TrainedJudge) -> None:
    english = await trained.judge("Statin therapy reduces the risk of myocardial infarction.", [_ABSTRACT])
    deutsch = await trained.judge("Eine Statintherapie verringert das Risiko eines Myokardinfarkts.",
                                  [_ABSTRACT])
    # Read through its English gloss ("a statin therapy reduces the risk a cardiac
    # infarction"), the reader finds the German claim supported as well, if less surely.
    supporting = (Verdict.SUPPORTED, Verdict.PARTIALLY_SUPPORTED)
    assert english.verdict == Verdict.SUPPORTED and deutsch.verdict in supporting


def test_german_is_detected_and_glossed() -> None:
    assert german.is_german("Die Behandlung verringert das Risiko nicht.")
    assert not german.is_german("The treatment does not reduce the risk.")
    glossed = german.to_english("Die Behandlung verringert das Risiko nicht.")
    assert "treatment" in glossed and "reduces" in glossed and "risk" in glossed and "not" in glossed
    assert german.gloss("Brustkrebs") == "breast cancer"  # a compound of two entries
    assert german.gloss("CX3CR1") == "CX3CR1"  # names stay


def test_the_factory_makes_the_trained_judge_by_default() -> None:
    made = judge.make_judge(judge.JudgeConfig(), embed.WordLlamaEmbedder())
    assert isinstance(made, judge.TrainedJudge)
    rules = judge.make_judge(judge.JudgeConfig(kind="rules"), embed.WordLlamaEmbedder())
    assert isinstance(rules, judge.RulesJudge)


async def test_a_claim_negated_inside_a_word_is_contradicted(trained: judge.TrainedJudge) -> None:
    source = _passage("Cognitive behavioural therapy for insomnia in older adults. In a randomised trial "
                      "of 46 adults, cognitive behavioural therapy improved sleep efficiency and was "
                      "effective in treating chronic insomnia, with benefits lasting six months.")
    ineffective = await trained.judge("Cognitive behavioural therapy is ineffective for insomnia in older "
                                      "adults.", [source])
    effective = await trained.judge("Cognitive behavioural therapy is effective for insomnia in older "
                                    "adults.", [source])
    # An accusation needs P(contradict) >= 0.7; just under it the same sentence is shown to
    # be checked (the reader reads "ineffective" against "effective" at about 0.69).
    assert "effective in treating" in ineffective.evidence[0].quote
    assert ineffective.verdict == Verdict.CONTRADICTED or (
        ineffective.verdict == Verdict.UNSUPPORTED and "check this citation" in ineffective.rationale)
    assert effective.verdict == Verdict.SUPPORTED


@pytest.mark.skipif(not (pathlib.Path("/usr/share/wordnet") / "data.adj").exists() and not os.environ.get("CI"),
                    reason="Debian's wordnet-base is not installed (scripts/test installs it)")
def test_the_antonym_lexicon_is_what_wordnet_gives() -> None:
    from training import antonyms as make

    assert (sentences.ANTONYMS.read_text(encoding="utf-8")
            == make.render(make.pairs())), "run python -m training.antonyms"
    assert sentences.ANTONYMS.with_suffix(".LICENSE").read_text(encoding="utf-8") == make.licence()
    rows = {(a, b): n for a, b, n in make.pairs()}
    assert rows[("effective", "ineffective")] == "ineffective" and rows[("decrease", "increase")] == ""
    assert rows[("harmful", "harmless")] == "harmless"


def test_the_perturbations_that_make_training_contradictions() -> None:
    from training import perturb

    assert perturb.negate("Statins reduce the risk of stroke.") == "Statins do not reduce the risk of stroke."
    assert perturb.swap_group("Women with low birth weight develop cancer.") == (
        "Men with low birth weight develop cancer.")
    assert perturb.renumber("One in 5 trials stop early.") == "One in 10 trials stop early."
    assert perturb.renumber("Deaths fell by 80% in 2010.") == "Deaths fell by 40% in 2010."
    assert perturb.renumber("In 2010 deaths fell.") is None  # a year is left alone
    assert perturb.antonym("Microcin J25 encourages NTP binding.") == "Microcin J25 inhibits NTP binding."
    assert perturb.antonym("Nothing to change here.") is None


def test_the_cross_encoder_experiment_reads_a_claim_sentence_by_sentence() -> None:
    from training import cross_encoder

    claim = "Statin therapy reduces the risk of myocardial infarction."
    sentences = [f"Sentence {i} about statins." for i in range(6)]
    pairs = cross_encoder.pairs_of(claim, sentences)
    assert pairs == tuple((claim, s) for s in sentences[:cross_encoder.SENTENCES])
    rows = numpy.log(numpy.array([[0.7, 0.1, 0.2], [0.1, 0.3, 0.6], [0.05, 0.05, 0.9]], numpy.float32))
    # The strongest support, the strongest contradiction, the least NEI of any sentence.
    assert numpy.allclose(cross_encoder.aggregate(rows), numpy.log([0.7, 0.3, 0.2]))
    assert numpy.allclose(cross_encoder.aggregate(rows[:0]), numpy.log([1 / 3] * 3))


def test_the_cross_encoder_experiment_trains_on_rationale_sentences() -> None:
    import random

    from training import judge as train_judge

    abstract = ["Background sentence.", "Statins reduced infarctions by 27%.", "Methods were used.",
                "Funding came from grants.", "Tables are shown."]
    corpus = {7: {"doc_id": 7, "title": "T", "abstract": abstract},
              8: {"doc_id": 8, "title": "U", "abstract": ["Other text here.", "More other text."]}}
    claims = [{"id": 1, "claim": "Statins reduce infarctions.", "cited_doc_ids": [7, 8],
               "evidence": {"7": [{"sentences": [1], "label": "SUPPORT"}]}}]
    made = train_judge.sentence_examples(claims, corpus, random.Random(0), 0.5)
    labelled = {(c, s): (label, w) for c, s, label, group, w in made}
    assert labelled[("Statins reduce infarctions.", abstract[1])] == ("SUPPORT", 1.0)
    assert labelled[("Statins do not reduce infarctions.", abstract[1])] == ("CONTRADICT", 0.5)
    nei = [(c, s) for (c, s), (label, _) in labelled.items() if label == "NEI"]
    # Two other sentences of each cited abstract, never the rationale; all of claim 1.
    assert len(nei) == 2 * train_judge.NEI_SENTENCES and abstract[1] not in {s for _, s in nei}
    assert {group for *_, group, _ in made} == {1}


def test_the_dev_figures_carry_a_bootstrap_interval_over_claims() -> None:
    from bench.quality import scifact as evaluate

    pairs = [evaluate.Pair(f"claim {i // 2}", i, gold, ()) for i, gold in
             enumerate(["SUPPORT", "CONTRADICT", "NEI", "SUPPORT"] * 25)]
    perfect = [p.gold for p in pairs]
    assert evaluate.bootstrap(pairs, perfect) == ((1.0, 1.0), (1.0, 1.0))
    noisy = perfect[:]
    for i in range(0, len(noisy), 7):
        noisy[i] = "NEI"
    low, high = evaluate.bootstrap(pairs, noisy)
    assert low == evaluate.bootstrap(pairs, noisy)[0]  # seeded
    _, macro, f1s = evaluate.metrics(perfect, noisy)
    assert low[0] <= macro <= high[0] and low[1] <= f1s["CONTRADICT"] <= high[1] and low[0] < high[0]


async def test_contradicted_only_with_a_sentence_that_states_the_opposite() -> None:
    """Issue 23, the default (calibration + gate): `contradicted` shows a sentence stating
    the opposite; a source that only seems to disagree is "check this"."""
    gated = judge.TrainedJudge(embed.WordLlamaEmbedder())
    source = _passage("Cognitive behavioural therapy for insomnia in older adults. In a randomised trial "
                      "of 46 adults, cognitive behavioural therapy improved sleep efficiency and was "
                      "effective in treating chronic insomnia, with benefits lasting six months.")
    ineffective = await gated.judge("Cognitive behavioural therapy is ineffective for insomnia in older "
                                    "adults.", [source])
    assert ineffective.verdict in (Verdict.CONTRADICTED, Verdict.UNSUPPORTED)
    assert "effective in treating" in ineffective.evidence[0].quote
    lower = judge.TrainedJudge(embed.WordLlamaEmbedder(), judge.TrainedJudgeConfig(contradicted_min=0.5))
    accused = await lower.judge("Cognitive behavioural therapy is ineffective for insomnia in older "
                                "adults.", [source])
    assert accused.verdict == Verdict.CONTRADICTED and "effective in treating" in accused.evidence[0].quote
    other = _passage("Heat and hospital admissions of older adults. Admissions of adults aged 75 "
                     "and over were recorded in six cities from 2005 to 2016.")
    vague = await gated.judge("Hospital admissions of older adults are driven by air pollution.",
                              [other])
    assert vague.verdict != Verdict.CONTRADICTED and "P(contradict)" in vague.rationale


async def test_a_sentence_stating_the_opposite_is_shown_when_the_judge_leans_the_other_way(
        trained: judge.TrainedJudge) -> None:
    """The demo's "admissions fall" claim: the trees lean (not clearly) towards support on
    the closest sentences, but one nearly as close says admissions rose. Not "partially
    supported" then: that sentence, shown to be checked (issue 23)."""
    source = _passage(
        "We linked daily emergency hospital admissions of adults aged 75 and over in six "
        "cities to daily maximum temperature from 2005 to 2016. For every degree Celsius by "
        "which the daily maximum temperature exceeded 30 °C, emergency admissions of adults "
        "aged 75 and over rose by 12 percent. Older adults are more vulnerable to heat because "
        "the body's ability to regulate its temperature declines with age. Deaths during heat "
        "waves are well documented; hospital admissions, which show the burden on health "
        "services, less so.")
    found = await trained.judge("Hospital admissions of older adults fall during heat waves, "
                                "because older people then stay at home.", [source])
    assert found.verdict in (Verdict.CONTRADICTED, Verdict.UNSUPPORTED)
    assert "rose by 12 percent" in found.evidence[0].quote
    if found.verdict == Verdict.UNSUPPORTED:
        assert found.confidence <= 0.5 and "check this citation" in found.rationale
