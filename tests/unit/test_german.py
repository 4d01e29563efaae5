"""German claims: the glossary, Ding's dictionary, and the choices the glosser makes."""

from __future__ import annotations

import logging
import os
import pathlib

import pytest

from citerun.pipeline.judging import german

# Lines in Ding's format (written for this test: a noun with its plural, a verb with its
# participles and several senses, an adjective, an abbreviation, a noun that is also a
# compound tail).
_DING = """\
# Version :: test
Träger {m}; Überträger {m} [med.] | Träger {pl}; Überträger {pl} :: carrier; vector | carriers; vectors
jdn. vorladen; zitieren {vt} | vorladend; zitierend | vorgeladen; zitiert :: to summon sb. | summoning | summoned
etw. zitieren (erwähnen) {vt} | zitierend | zitiert | er/sie zitiert :: to cite sth. | citing | cited | he/she cites
infektiös; ansteckend {adj} [med.] :: infectious; contagious
Europäische Arzneimittel-Agentur {f} /EMA/ :: European Medicines Agency /EMA/
Maler {m}; Malerin {f} | Maler {pl} :: painter | painters
malen {vt} | malend | gemalt :: to paint | painting | painted
Transfusion {f} [med.] | Transfusionen {pl} :: transfusion | transfusions
Erythrozyt {m} [med.] | Erythrozyten {pl} :: erythrocyte | erythrocytes
"""


@pytest.fixture(scope="module")
def ding() -> german.Dictionary:
    return german.parse_ding(_DING.splitlines())


def test_ding_lines_give_each_form_its_aligned_translation(ding: german.Dictionary) -> None:
    assert ding["träger"].split("\t")[0] == "carrier"  # the singular; "Träger" is its own plural too
    assert "carriers" in ding["träger"].split("\t")
    assert ding["überträger"].split("\t")[0] == "carrier"
    assert ding["zitiert"].split("\t") == ["summoned", "cited", "cites"]  # objects and pronouns dropped
    assert ding["infektiös"] == "infectious"
    assert "version" not in ding  # comments are no entries
    assert "arzneimittel-agentur" not in ding  # phrases are no words


def test_the_source_chooses_among_a_words_translations(ding: german.Dictionary) -> None:
    assert german.gloss("zitiert", frozenset({"cited", "journals"}), ding) == "cited"
    # Without a context word to go by: the translation most entries give ("cited": 1,
    # "summoned": 1, "cites": 1), then the first.
    assert german.gloss("zitiert", frozenset(), ding) == "summoned"


def test_inflected_words_compounds_and_what_stays(ding: german.Dictionary) -> None:
    assert german.gloss("infektiöser", dictionary=ding) == "infectious"  # an inflection ending
    assert german.gloss("Erythrozytentransfusionen", dictionary=ding) == "erythrocytes transfusions"
    # Only nouns are split: "mesenchymalen" is no "mesenchy" + "malen" ("paint").
    assert german.gloss("mesenchymalen", dictionary=ding) == "mesenchymalen"
    # Abbreviations and names are never translated.
    assert german.gloss("EMA ApoE", dictionary=ding) == "EMA ApoE"
    # Short words come from the glossary only (Ding's "Tau" is "dew").
    assert german.gloss("nicht zu", dictionary={"tau": "dew"}) == "not to"
    assert german.gloss("Tau", dictionary={"tau": "dew"}) == "Tau"


def test_a_latin_greek_word_becomes_the_sources_cognate() -> None:
    source = frozenset({"hyperfibrinogenemia", "femoropopliteal", "rate"})
    assert german.gloss("Hyperfibrinogenämie femoropoplitealer", source, {}) == \
        "hyperfibrinogenemia femoropopliteal"
    assert german.gloss("Ratte", source, {}) == "Ratte"  # too short to be sure


def test_without_ding_the_glossary_still_glosses(tmp_path: pathlib.Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        missing = german.ding(tmp_path / "de-en")
    assert missing == {}
    assert "apt-get install trans-de-en" in caplog.text
    assert german.gloss("Die Behandlung verringert das Risiko nicht.", dictionary=missing) == \
        "the treatment reduces the risk not."


@pytest.mark.skipif(not german.DING.exists() and not os.environ.get("CI"),
                    reason="Debian's trans-de-en is not installed (scripts/test installs it)")
def test_the_installed_ding_dictionary() -> None:
    assert german.DING.exists(), "scripts/test installs trans-de-en"
    source = frozenset({"articles", "cited", "journals", "traditional"})
    glossed = german.to_english("Open-Access-Artikel werden häufiger zitiert als Artikel in "
                                "traditionellen Zeitschriften.", source)
    assert "cited" in glossed and "journals" in glossed and "traditional" in glossed
    # "-reich" makes an adjective ("leukocyte-rich"), not the noun Reich ("empire"); a
    # female carrier of an allele keeps her sex in the gloss.
    rich = german.to_english("Leukozytenreiches Blut erhöht die Zahl der Komplikationen.").split()
    assert "rich" in rich and "empire" not in rich
    assert german.to_english("Trägerinnen des Allels haben ein erhöhtes Risiko.").startswith("female carriers")
