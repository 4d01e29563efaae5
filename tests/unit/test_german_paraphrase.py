"""A correct German paraphrase of an English source, with the right sentence in the source,
is judged supported (issue 50: a writer's German sentence about map matching was judged
`unsupported` at 78%, "the source is about something else", with exactly that sentence
shown as evidence). The shape of that case: a German definition against the English
sentence it paraphrases, in a passage with other sentences around it."""

from __future__ import annotations

import pytest

from citerun.pipeline import embed, judge
from citerun.pipeline.judging import embedded

SOURCE = ("Map matching is a fundamental step in processing GPS trajectories. It refers to "
          "matching the recorded points to a representation of the underlying road network, "
          "such as a graph of road segments. Errors in positioning make this task difficult "
          "in dense urban areas.")


@pytest.fixture(scope="module")
def the_judge() -> embedded.TrainedJudge:
    return embedded.TrainedJudge(embed.WordLlamaEmbedder(), embedded.TrainedJudgeConfig())


@pytest.mark.parametrize("claim", [
    "Map-Matching bezeichnet die Zuordnung der aufgezeichneten Punkte zu einer Darstellung "
    "des Straßennetzes.",
    pytest.param(
        "Beim Map-Matching werden die aufgezeichneten Punkte einer Darstellung des zugrunde "
        "liegenden Straßennetzes zugeordnet.",
        marks=pytest.mark.xfail(strict=True, reason=(
            "known gap (issue 50, item 5): the word-by-word gloss of a verb-final passive reads "
            "'at Map-matching are the recorded points a representation the zugrunde lying road "
            "network mapped.', which the English reader takes for not enough information (0.51); "
            "a reader trained on German claims, or a gloss that keeps the sentence's shape, "
            "is what would fix it"))),
])
def test_a_german_paraphrase_of_the_source_is_supported(the_judge: embedded.TrainedJudge,
                                                        claim: str) -> None:
    verdict = the_judge.judge_sync(claim, [judge.Passage(1, SOURCE, 1, 1, 1.0)])
    assert verdict.verdict in (judge.Verdict.SUPPORTED, judge.Verdict.PARTIALLY_SUPPORTED), verdict
    assert any("recorded points" in e.quote for e in verdict.evidence), verdict.evidence
