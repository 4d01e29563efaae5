"""The reader's generated training pairs (issue 23): the counter-examples that keep a
negation from reading as a contradiction by itself, and the per-pair dump of the
out-of-domain bench that showed the need for them."""

from __future__ import annotations

import io
import json
import random

from bench.quality import out_of_domain
from evalsets import claims
from training import reader_data
from citerun.pipeline.judging import reader
from citerun.pipeline.judging.types import Evidence, Judgement
from citerun.core.verdicts import Verdict

TITLE = reader_data.Title(
    "Statin therapy reduces the risk of myocardial infarction.",
    ["Statin therapy reduces the risk of myocardial infarction in older adults.",
     "Patients were followed for five years.", "Adverse events were rare."],
    ["Exercise lowers blood pressure in adults with hypertension.",
     "The trial enrolled 400 adults.", "Sodium intake was recorded daily."],
    reader_data._contradictions("Statin therapy reduces the risk of myocardial infarction."),
)


def test_a_perturbed_title_against_another_abstract_is_not_enough_info() -> None:
    rows = reader_data.contrast_rows(random.Random(1), [TITLE])
    nei = [r for r in rows if r[2] == "NEI"]
    assert len(nei) == 1
    claim, evidence, _, name, _ = nei[0]
    # The claim is a perturbation (it would be CONTRADICT against its own abstract) ...
    assert claim != TITLE.claim and claim in reader_data._contradictions(TITLE.claim)
    # ... read against the other abstract: a "not" or a flipped word the source does not
    # address is no contradiction.
    assert evidence == reader.evidence_text(TITLE.other) and name == "scifact_contrast"


def test_a_negated_title_against_its_negated_finding_is_support_and_the_title_contradicted() -> None:
    rows = reader_data.contrast_rows(random.Random(1), [TITLE])
    labelled = {r[2]: r for r in rows if r[2] != "NEI"}
    assert set(labelled) == {"SUPPORT", "CONTRADICT"}
    support, contradict = labelled["SUPPORT"], labelled["CONTRADICT"]
    assert support[0] == "Statin therapy does not reduce the risk of myocardial infarction."
    assert support[1].startswith("Statin therapy does not reduce the risk")  # both say "not"
    assert support[1] == contradict[1]
    assert contradict[0] == TITLE.claim  # the source says "not", the claim does not


def test_a_closest_sentence_that_does_not_restate_the_title_is_not_negated() -> None:
    heading = reader_data.Title(TITLE.claim, ["CONCLUSIONS These results show statins reduce infarction risk.",
                                              *TITLE.own[1:]], TITLE.other, TITLE.variants)
    aside = reader_data.Title(TITLE.claim, ["Patients were randomly assigned to two groups.",
                                            *TITLE.own[1:]], TITLE.other, TITLE.variants)
    for item in (heading, aside):
        rows = reader_data.contrast_rows(random.Random(1), [item])
        assert [r[2] for r in rows] == ["NEI"]


def test_the_out_of_domain_bench_writes_one_line_per_judged_pair() -> None:
    class Judge:
        def judge_sync(self, claim: str, passages: list[object]) -> Judgement:
            verdict = Verdict.CONTRADICTED if "not" in claim else Verdict.SUPPORTED
            return Judgement(verdict, 0.8, (Evidence("a sentence", 1, 1, 0.5, 0),), "because")

    pairs = [claims.Pair("x", "1", "A does not cause B.", "A causes B.", "CONTRADICT"),
             claims.Pair("x", "2", "A causes B.", "A causes B.", "SUPPORT")]
    dump = io.StringIO()
    rows = out_of_domain.run(Judge(), {"x": pairs}, set(), dump, "cfg")
    lines = [json.loads(line) for line in dump.getvalue().splitlines()]
    assert [(d["id"], d["gold"], d["verdict"]) for d in lines] == [
        ("1", "CONTRADICT", "contradicted"), ("2", "SUPPORT", "supported")]
    assert lines[0]["config"] == "cfg" and lines[0]["evidence"] == ["a sentence"]
    assert rows[0].accuracy == 1.0 and rows[0].contradicted_precision == 1.0
