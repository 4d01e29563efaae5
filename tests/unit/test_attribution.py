"""Citations that name a work: which markers name one, and when a source is that work."""

from __future__ import annotations

import pytest

from citerun.pipeline import judge
from citerun.pipeline.citations import attribution, markers


def _named(sentence: str) -> list[str | None]:
    return [attribution.named_work(sentence, m, (0, len(sentence)))
            for m in markers.find_markers(sentence)]


@pytest.mark.parametrize(("sentence", "name"), [
    ("Bigtable relies on a highly-available and persistent distributed lock service "
     "called Chubby [8].", "Chubby"),
    ("A Generative Adversarial Network (GAN) is a type of neural network architecture for "
     "generative modeling [32].", "Generative Adversarial Network (GAN)"),
    ("We train a Generative Adversarial Network (GAN) [32] on the images.",
     "Generative Adversarial Network (GAN)"),
    ("It is sped up by parallelization in the framework of MapReduce (Dean and Ghemawat, "
     "2004).", "MapReduce"),
    ("We encode the sentences with BERT [5].", "BERT"),
    ("The encoder is trained as in Vaswani et al. (2017).", "Vaswani et al."),
])
def test_a_marker_attached_to_a_name_names_the_work(sentence: str, name: str) -> None:
    assert _named(sentence) == [name]


@pytest.mark.parametrize("sentence", [
    "Tree cover lowers the surface temperature [3].",
    "Pretraining improves BERT [3].",          # a claim about BERT, not its name
    "Anaemia rates rose in the USA [3].",      # a place
    "Six RCTs [25] provided haemoglobin data.",  # a kind of study, not a work
    "Chubby [8] is used by Bigtable.",         # a capitalised word without a cue
    "Vaswani et al. (2017) showed that attention suffices.",
    "Following Smith et al. (2020), we set the dropout to 0.5.",
])
def test_a_marker_that_cites_a_claim_names_nothing(sentence: str) -> None:
    assert _named(sentence) == [None]


def test_the_source_is_the_named_work_by_its_title_acronym_authors_or_first_page() -> None:
    title = "Generative Adversarial Nets"
    by_title = attribution.found_in("Generative Adversarial Network (GAN)", title, (), "")
    assert by_title is not None and by_title.where == "its title"
    assert attribution.found_in("GAN", title, (), "") is not None  # the acronym's words
    by_authors = attribution.found_in("Vaswani et al.", "Attention is all you need",
                                      ("Ashish Vaswani",), "")
    assert by_authors is not None and by_authors.where == "its authors"
    found = attribution.found_in("Chubby", "Distributed locking",
                                 (), "Abstract. We describe the Chubby lock service. It is old.")
    assert found is not None and found.quote == "We describe the Chubby lock service."
    assert attribution.found_in("Spanner", "Span trees", (), "We study span trees.") is None


def test_a_named_work_found_is_supported_and_says_what_was_checked() -> None:
    judged = judge.judge_named("MapReduce", "MapReduce: Simplified Data Processing on Large "
                               "Clusters", ("Jeffrey Dean",), "")
    assert judged is not None and judged.verdict == judge.Verdict.SUPPORTED
    assert "the source is that work" in judged.rationale and "MapReduce" in judged.rationale
    assert judged.evidence[0].quote.startswith("MapReduce:")
    # Not found: no verdict here, the ordinary judge reads the sentence.
    assert judge.judge_named("MapReduce", "Cool roofs", ("A. Author",), "Roofs.") is None
