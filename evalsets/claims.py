"""The claim-verification sets beside SciFact, read from their raw files as their projects
publish them (``$CITERUN_EVALDATA/claims/``), as (claim, evidence, label) pairs.

Every set is converted in code here, never by hand, into :class:`Pair` rows with the
judge's three labels. What each set's labels mean and how they map:

==============  =====================================================  =================
set             pair                                                   labels
==============  =====================================================  =================
healthver       claim, its abstract sentences (test split)             Supports/Refutes/Neutral
climate_fever   claim, its five Wikipedia sentences joined; DISPUTED   SUPPORTS/REFUTES/
                claims left out (no single label)                      NOT_ENOUGH_INFO
covidfact       claim, its 1-5 evidence sentences                      SUPPORTED/REFUTED
scitab          claim, the table's caption and its cells as text       supports/refutes/NEI
nli4ct          statement, the cited section(s) of the trial report    Entailment/Contradiction
                (Gold_test)
healthfc_en     English claim, the top sentences of the explanation    0 Supported, 1 NEI,
healthfc_de     the German claim of the same rows, against the same    2 Refuted
                English sentences (a German thesis citing an English
                source)
==============  =====================================================  =================

HealthFC's ``label`` column: 0 = supported, 1 = not enough evidence, 2 = refuted. That is
what its ``de_verdict`` column says for each code ("wahrscheinlich Ja" / "wissenschaftliche
Belege fehlen" / "wahrscheinlich Nein"); the shared README's "0/1/2 = Supported / Refuted /
NEI" has 1 and 2 the other way round.

Licences (the README of the folder): HealthFC is CC BY-NC-ND (measure only); the sets
whose projects state no licence (HealthVer, Climate-FEVER, COVID-Fact, NLI4CT) may be
measured, not trained on; SciTab is MIT. :data:`SETS` records it per set.

A set is sampled (seeded) down to ``limit`` pairs, keeping the label mix, so that one
bench run fits the 2-core machine; claims that appear in more than one set are left out
of every set (HealthVer, COVID-Fact and HealthFC share COVID-19 claims).
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import json
import pathlib
import random
import re
import typing
import zipfile
import zlib

from evalsets import evaldata

LABELS = ("SUPPORT", "CONTRADICT", "NEI")
SEED = 20261202


@dataclasses.dataclass(frozen=True)
class Pair:
    """One claim against its evidence text, with the gold label in :data:`LABELS`."""

    set: str
    id: str
    claim: str
    evidence: str
    gold: str
    language: str = "en"


@dataclasses.dataclass(frozen=True)
class ClaimSet:
    name: str
    title: str
    trainable: bool
    terms: str
    read: typing.Callable[[pathlib.Path], list[Pair]]


def claims_dir() -> pathlib.Path:
    return evaldata() / "claims"


def _healthver(root: pathlib.Path, split: str = "test") -> list[Pair]:
    mapping = {"Supports": "SUPPORT", "Refutes": "CONTRADICT", "Neutral": "NEI"}
    name = "healthver" if split == "test" else f"healthver_{split}"
    with (root / "healthver" / f"healthver_{split}.csv").open(encoding="utf-8") as f:
        return [Pair(name, row["id"], row["claim"], row["evidence"], mapping[row["label"]])
                for row in csv.DictReader(f)]


def _climate_fever(root: pathlib.Path) -> list[Pair]:
    mapping = {"SUPPORTS": "SUPPORT", "REFUTES": "CONTRADICT", "NOT_ENOUGH_INFO": "NEI"}
    out = []
    for line in (root / "climate_fever" / "climate-fever.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["claim_label"] not in mapping:  # DISPUTED: the sentences disagree
            continue
        evidence = " ".join(e["evidence"].strip() for e in row["evidences"])
        out.append(Pair("climate_fever", row["claim_id"], row["claim"], evidence,
                        mapping[row["claim_label"]]))
    return out


def _covidfact(root: pathlib.Path) -> list[Pair]:
    mapping = {"SUPPORTED": "SUPPORT", "REFUTED": "CONTRADICT"}
    out = []
    for i, line in enumerate((root / "covidfact" / "COVIDFACT_dataset.jsonl").open(encoding="utf-8")):
        row = json.loads(line)
        out.append(Pair("covidfact", str(i), row["claim"], " ".join(row["evidence"]),
                        mapping[row["label"]]))
    return out


def _table_text(row: dict[str, typing.Any]) -> str:
    lines = [row["table_caption"].strip(), " | ".join(row["table_column_names"])]
    lines += [" | ".join(str(c) for c in cells) for cells in row["table_content_values"]]
    return "\n".join(lines)


def _scitab(root: pathlib.Path) -> list[Pair]:
    mapping = {"supports": "SUPPORT", "refutes": "CONTRADICT", "not enough info": "NEI"}
    rows = json.loads((root / "scitab" / "sci_tab.json").read_text(encoding="utf-8"))
    return [Pair("scitab", row["id"], row["claim"], _table_text(row), mapping[row["label"]])
            for row in rows]


def _nli4ct(root: pathlib.Path) -> list[Pair]:
    mapping = {"Entailment": "SUPPORT", "Contradiction": "CONTRADICT"}
    with zipfile.ZipFile(root / "nli4ct" / "Complete_dataset.zip") as z:
        gold = json.loads(z.read("Complete_dataset/Gold_test.json"))

        def section(trial: str, name: str) -> str:
            report = json.loads(z.read(f"Complete_dataset/CT json/{trial}.json"))
            return "\n".join(line.strip() for line in report[name] if line.strip())

        out = []
        for key, row in gold.items():
            text = section(row["Primary_id"], row["Section_id"])
            if row.get("Secondary_id"):
                text = ("Primary trial: " + text + "\nSecondary trial: "
                        + section(row["Secondary_id"], row["Section_id"]))
            out.append(Pair("nli4ct", key, row["Statement"], text, mapping[row["Label"]]))
    return out


_HEALTHFC = {"0": "SUPPORT", "1": "NEI", "2": "CONTRADICT"}


def _healthfc(root: pathlib.Path, language: str) -> list[Pair]:
    with (root / "healthfc" / "Datensatz.csv").open(encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    return [Pair(f"healthfc_{language}", str(i), row[f"{language}_claim"],
                 row["en_top_sentences"], _HEALTHFC[row["label"]], language)
            for i, row in enumerate(rows)]


SETS: dict[str, ClaimSet] = {s.name: s for s in (
    ClaimSet("healthver", "HealthVer test", False, "no licence stated: measure only", _healthver),
    ClaimSet("climate_fever", "Climate-FEVER", False, "no licence stated: measure only",
             _climate_fever),
    ClaimSet("covidfact", "COVID-Fact", False, "no licence stated: measure only", _covidfact),
    ClaimSet("scitab", "SciTab", True, "MIT", _scitab),
    ClaimSet("nli4ct", "NLI4CT Gold test", False, "no licence stated: measure only", _nli4ct),
    ClaimSet("healthfc_en", "HealthFC (English)", False, "CC BY-NC-ND 4.0: measure only",
             lambda root: _healthfc(root, "en")),
    ClaimSet("healthfc_de", "HealthFC (German)", False, "CC BY-NC-ND 4.0: measure only",
             lambda root: _healthfc(root, "de")),
)}

#: Kept out of every tuning loop (issue 23): not in the bench's default sets, measured once
#: a judge is chosen (``--sets healthver_dev``). HealthVer's dev split, no licence stated.
HELD_OUT: dict[str, ClaimSet] = {s.name: s for s in (
    ClaimSet("healthver_dev", "HealthVer dev (held out)", False, "no licence stated: measure only",
             lambda root: _healthver(root, "dev")),
)}

_WORD = re.compile(r"\w+")


def claim_key(text: str) -> str:
    """A claim's wording with case, punctuation and spacing folded: the overlap test."""
    return " ".join(_WORD.findall(text.lower()))


def load(names: typing.Iterable[str], *, limit: int | None = 600,
         root: pathlib.Path | None = None) -> dict[str, list[Pair]]:
    """The pairs of each named set, overlapping claims out, sampled to ``limit``."""
    root = root or claims_dir()
    known = {**SETS, **HELD_OUT}
    sets = {name: known[name].read(root) for name in names}
    seen: dict[str, set[str]] = collections.defaultdict(set)
    for name, pairs in sets.items():
        family = name.split("_")[0]  # healthfc_en and healthfc_de are one set
        for pair in pairs:
            seen[claim_key(pair.claim)].add(family)
    out = {}
    for name, pairs in sets.items():
        kept = [p for p in pairs if len(seen[claim_key(p.claim)]) == 1]
        out[name] = sample(kept, limit)
    return out


def unmeasured(name: str, *, limit: int | None = 600) -> list[Pair]:
    """The pairs of set ``name`` that :func:`load` does not sample at ``limit``: what a
    calibration may be fitted on while the sample stays a measure."""
    measured = {p.id for p in load([name], limit=limit)[name]}
    return [p for p in SETS[name].read(claims_dir()) if p.id not in measured]


def halves(pairs: list[Pair]) -> tuple[list[Pair], list[Pair]]:
    """``pairs`` cut in two by a hash of their evidence (stable across runs and machines):
    one half a reader is trained on, the other its calibration is fitted on. Claims on the
    same evidence (SciTab: 624 claims on 192 tables) fall in the same half, so that the
    second half is not read against tables the first taught."""
    first = [p for p in pairs if zlib.crc32(p.evidence.encode("utf-8")) % 2 == 0]
    second = [p for p in pairs if zlib.crc32(p.evidence.encode("utf-8")) % 2 == 1]
    return first, second


def sample(pairs: list[Pair], limit: int | None) -> list[Pair]:
    """``limit`` pairs drawn per label in proportion (seeded), in the set's order."""
    if limit is None or len(pairs) <= limit:
        return pairs
    rng = random.Random(SEED)
    by_label: dict[str, list[int]] = collections.defaultdict(list)
    for index, pair in enumerate(pairs):
        by_label[pair.gold].append(index)
    chosen: list[int] = []
    for label, indices in sorted(by_label.items()):
        chosen += rng.sample(indices, round(limit * len(indices) / len(pairs)))
    return [pairs[i] for i in sorted(chosen)]


def passages(text: str) -> list[typing.Any]:
    """A pair's evidence as the judge reads a source: chunked by ``pdf.chunk_pages`` exactly
    as a parsed page is, every chunk a passage (retrieval skipped: the evidence is given)."""
    from citerun.pipeline import judge, pdf  # noqa: PLC0415 - the judge's reading of a pair

    chunks = pdf.chunk_pages([pdf.Page(1, text)])
    return [judge.Passage(i, c.text, c.page_start, c.page_end, 1.0) for i, c in enumerate(chunks)]
