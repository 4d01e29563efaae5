"""The judge's reader (issue 23): the shipped cross-encoder, its calibration, what it reads,
and the verdicts the judge draws from it."""

from __future__ import annotations

import hashlib
import json
import pathlib

import numpy
import pytest

from citerun.pipeline import embed, judge
from citerun.pipeline.judging import reader

Verdict = judge.Verdict

# The sha256 of the shipped reader, as training.fit_reader wrote it. A retrain changes
# it on purpose: update it with the calibration, docs/benchmarks.md and MODEL_CARD.md.
READER_SHA256 = "4821779e528877eecfcd383c3b936605d5ea15dfaa2947c478cf970110bb6107"


@pytest.fixture(scope="module")
def shipped() -> judge.TrainedJudge:
    return judge.TrainedJudge(embed.WordLlamaEmbedder())


def _passage(text: str, chunk_id: int = 1) -> judge.Passage:
    return judge.Passage(chunk_id=chunk_id, text=text, page_start=2, page_end=2, score=0.03)


def test_the_shipped_reader_is_small_documented_and_the_one_trained() -> None:
    data = reader.MODEL.read_bytes()
    assert hashlib.sha256(data).hexdigest() == READER_SHA256
    assert len(data) <= 30 * 1024 * 1024  # issue 23: model file <= 30 MB
    card = (reader.HERE / "MODEL_CARD.md").read_text(encoding="utf-8")
    for needed in ("reader.int8.onnx", "all-MiniLM-L6-v2", "Apache-2.0", "ODC-By", "SciTab", "MIT",
                   "training.fit_reader", "training.reader_data"):
        assert needed in card, needed
    tokenizer = json.loads(reader.TOKENIZER.read_text(encoding="utf-8"))
    assert tokenizer["model"]["type"] == "WordPiece"


def test_a_pair_is_cut_to_the_token_budget_with_the_claim_kept() -> None:
    claim = "Statins reduce myocardial infarction in older adults."
    long_evidence = " ".join(["The trial followed twelve thousand adults for eight years."] * 40)
    ids, types, mask = reader.encode([(claim, long_evidence), (claim, "Short.")])
    assert ids.shape == (2, reader.MAX_TOKENS) and mask[0].sum() == reader.MAX_TOKENS
    assert mask[1].sum() < 30 and types[0].max() == 1
    # The claim survives the cut whole (the longer side is cut first).
    claim_ids = reader.tokenizer().encode(claim).ids[1:-1]
    assert list(ids[0, 1:1 + len(claim_ids)]) == claim_ids
    # What the reader reads at run time is what it was trained on: the best three sentences.
    assert reader.evidence_text(["A  b.", "C.", "D.", "E."]) == "A b. C. D."


def test_the_shipped_calibration_belongs_to_the_shipped_reader(tmp_path: pathlib.Path) -> None:
    """Fitted on claims the reader never saw; refused when missing, malformed, out of
    range, or fitted to another reader."""
    loaded = reader.Calibration.load()
    data = json.loads(reader.CALIBRATION.read_text(encoding="utf-8"))
    assert data["model_sha256"] == READER_SHA256 and data["fitted_on"] == ["scitab"]
    probabilities = loaded.apply(numpy.array([[4.0, -2.0, -1.0]]))
    assert abs(float(probabilities.sum()) - 1.0) < 1e-9
    assert probabilities[0, 0] < reader.softmax(numpy.array([4.0, -2.0, -1.0]))[0]  # softened
    path = tmp_path / "calibration.json"
    with pytest.raises(judge.JudgeConfigError, match="cannot read"):
        reader.Calibration.load(path)
    path.write_text("{]", encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="cannot read"):
        reader.Calibration.load(path)
    path.write_text(json.dumps({**data, "temperature": 0.0}), encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="out of range"):
        reader.Calibration.load(path)
    other = tmp_path / "reader.onnx"
    other.write_bytes(reader.MODEL.read_bytes() + b"\0")
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="another model"):
        reader.Calibration.load(path, other)
    # A calibration that joins the trees' probabilities: the trees are not shipped (issue 50),
    # so the shipped judge cannot apply it.
    path.write_text(json.dumps({**data, "trees_weight": 0.5, "trees_sha256": "0" * 64}), encoding="utf-8")
    with pytest.raises(judge.JudgeConfigError, match="joins the trees"):
        reader.Calibration.load(path)


def test_a_broken_model_file_is_a_clear_error(tmp_path: pathlib.Path) -> None:
    broken = tmp_path / "reader.onnx"
    broken.write_bytes(b"not an onnx graph")
    with pytest.raises(judge.JudgeConfigError, match="cannot load the reader model"):
        reader.Reader(broken)
    with pytest.raises(judge.JudgeConfigError, match="tokenizer"):
        reader.Reader(reader.MODEL, tmp_path / "missing.json")


def test_the_reader_reads_the_claim_against_the_evidence() -> None:
    """The same evidence: the claim it states is read as support, the claim negated as
    contradiction, a claim on another matter less as support. (A direction flipped by
    another verb, "increases" against "reduced", it reads as support still: see
    docs/benchmarks.md, "The reader", what it cannot do.)"""
    read = reader.shipped()
    evidence = ["In a randomised trial of 2,400 adults, daily aspirin reduced the risk of a "
                "first myocardial infarction by 32 percent compared with placebo."]

    def probabilities(claim: str) -> numpy.ndarray:
        return read.calibration.apply(read.read(claim, evidence)[None, :])[0]

    stated = probabilities("Daily aspirin reduces the risk of a first heart attack.")
    flipped = probabilities("Daily aspirin does not reduce the risk of a first myocardial infarction.")
    other = probabilities("Daily aspirin reduces the risk of colorectal cancer in women.")
    assert int(numpy.argmax(stated)) == 0
    assert int(numpy.argmax(flipped)) == 1 and flipped[0] < stated[0]
    assert other[0] < stated[0]
    # Each sentence alone: the one that states the opposite is found among others.
    each = read.each("Daily aspirin does not reduce the risk of a first myocardial infarction.",
                     ["Participants were recruited in 14 hospitals.", evidence[0]])
    assert int(numpy.argmax(each[:, 1])) == 1


async def test_contradicted_shows_the_sentence_that_states_the_opposite(shipped: judge.TrainedJudge) -> None:
    source = _passage("Aspirin and first myocardial infarction. Participants were recruited in 14 "
                      "hospitals between 2001 and 2004. In a randomised trial of 2,400 adults, daily "
                      "aspirin reduced the risk of a first myocardial infarction by 32 percent "
                      "compared with placebo. Bleeding was rare.")
    found = await shipped.judge("Daily aspirin does not reduce the risk of a first myocardial "
                                "infarction.", [source])
    # A claim that negates what the source states, with the sentence stating it found: an
    # accusation, shown with that sentence (issue 38: this test passed whatever the verdict).
    assert found.verdict == Verdict.CONTRADICTED, found.rationale
    assert "reduced the risk" in found.evidence[0].quote and found.confidence >= 0.7
    assert "check this citation" not in found.rationale


async def test_an_unsure_contradiction_is_check_this_not_an_accusation(shipped: judge.TrainedJudge) -> None:
    """With the bar for `contradicted` above anything the reader can give, a contradiction
    it reads is "unsupported" and marked for checking, with the sentence it read."""
    strict = judge.TrainedJudge(embed.WordLlamaEmbedder(), judge.TrainedJudgeConfig(contradicted_min=1.0))
    source = _passage("In a randomised trial of 2,400 adults, daily aspirin reduced the risk of a "
                      "first myocardial infarction by 32 percent compared with placebo.")
    claim = "Daily aspirin does not reduce the risk of a first myocardial infarction."
    found = await strict.judge(claim, [source])
    assert found.verdict == Verdict.UNSUPPORTED
    assert "check this citation" in found.rationale and "P(contradict)" in found.rationale
    assert found.evidence and "aspirin" in found.evidence[0].quote
    default = await shipped.judge(claim, [source])
    assert default.verdict == Verdict.CONTRADICTED  # the same reading, under the shipped bar


def test_a_claim_not_stated_shows_the_close_sentence_that_states_the_opposite(shipped: judge.TrainedJudge) -> None:
    """The reader reads "not enough info", and a sentence about as close as the best says
    admissions rose where the claim says they fall: that sentence is the one shown, to be
    checked, not the closest sentence on another matter."""
    source = _passage("We linked daily emergency hospital admissions of adults aged 75 and over in "
                      "six cities to daily maximum temperature. For every degree Celsius above 30 °C, "
                      "emergency admissions of adults aged 75 and over rose by 12 percent. Deaths "
                      "during heat waves are well documented; hospital admissions, which show the "
                      "burden on health services, less so.")
    claim = "Hospital admissions of older adults fall during heat waves, because older people then stay at home."
    found = shipped.ranker.rank(claim, [source])
    assert found is not None
    made = shipped._read(claim, [source], found, numpy.array([0.2, 0.1, 0.7]))
    assert made.verdict == Verdict.UNSUPPORTED
    assert "rose by 12 percent" in made.evidence[0].quote
    assert "may say the opposite" in made.rationale and "check this citation" in made.rationale


def test_every_trained_file_of_the_package_is_in_its_manifest_as_it_is() -> None:
    """MANIFEST.json names every file training wrote into the judge's package with its
    sha256, what made it, the command, the machine, how long it took and the data it was
    made from with their terms (issues 38 and 50); a file changed without the manifest, or
    a packaged file the manifest does not name, fails here."""
    import tomllib

    here = pathlib.Path(reader.__file__).parent
    manifest = json.loads((here / "MANIFEST.json").read_text(encoding="utf-8"))["files"]
    for name, entry in manifest.items():
        data = (here / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], f"{name} differs from MANIFEST.json"
        assert len(data) == entry["bytes"] and entry["made_by"]
        assert entry["machine"] and entry["seconds"] is not None, name  # a figure, or "not recorded"
        assert all(d["name"] and d["terms"] for d in entry["data"]), name
    pyproject = tomllib.loads((pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    shipped = set(pyproject["tool"]["setuptools"]["package-data"]["citerun.pipeline.judging"])
    written_by_hand = {"MODEL_CARD.md", "antonyms.LICENSE", "MANIFEST.json", "cache.sql"}
    assert shipped - written_by_hand == set(manifest)


def test_the_judge_package_holds_only_what_it_ships(tmp_path: pathlib.Path) -> None:
    """Issue 50: the judge's folder holds its modules and the files the wheel ships, no
    more (the trees, their features and calibration live in training/trees/, which the
    benches import), and the shipped judge runs where training cannot be imported."""
    import os
    import subprocess
    import sys
    import tomllib

    here = pathlib.Path(reader.__file__).parent
    pyproject = tomllib.loads((pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    shipped = set(pyproject["tool"]["setuptools"]["package-data"]["citerun.pipeline.judging"])
    files = {p.name for p in here.iterdir() if p.is_file() and p.suffix != ".py"}
    assert files <= shipped, files - shipped
    # From an empty folder (the repository's root, where training/ is, not on the path).
    done = subprocess.run(
        [sys.executable, "-P", "-c", "from citerun.pipeline import embed, judge; "
         "print(judge.TrainedJudge(embed.WordLlamaEmbedder()).judge_sync('Aspirin reduces pain.', "
         "[judge.Passage(1, 'Aspirin reduced pain in a trial.', 1, 1, 0.0)]).verdict.value)"],
        capture_output=True, text=True, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() in ("supported", "partially_supported")
