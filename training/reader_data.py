"""The reader's training pairs: (claim, evidence) -> SUPPORT / CONTRADICT / NEI, from every
set whose terms allow a shipped model to be trained on it, tokenised as the judge reads.

Usage::

    CITERUN_EVALDATA=../shared/evaldata python -m training.reader_data OUT.npz

The evidence is what the judge gives the reader at run time: a few sentences joined by
:func:`citerun.pipeline.judging.reader.evidence_text`, the pair cut by its tokenizer
(:func:`citerun.pipeline.judging.reader.encode`). Each row records its set (``sets``) so
that ``training.fit_reader --leave-out SET`` trains the leave-one-set-out models.

Sets and terms:

- ``scifact`` -- **SciFact train** claims (CC BY 4.0) against their cited abstracts
  (ODC-By 1.0): the gold rationale sentences with one other sentence of the abstract, with
  the claim's label; the same evidence against the claim perturbed
  (:func:`training.judge.opposites` with the extra perturbations: a negated, flipped,
  group-swapped, renumbered or antonym-swapped supported claim is contradicted; a
  contradicted claim un-negated or flipped is supported); three sentences of the abstract
  that are not its rationale as NEI, and the best sentences of the nearest abstract the
  claim does not cite as a *hard* NEI (on topic, not evidence). SciFact dev is never read.
- ``scifact_corpus`` -- generated from the **SciFact corpus** abstracts (ODC-By 1.0)
  that no dev claim cites: a sentence of an abstract, with its reporting frame ("We found
  that", "In conclusion,") and parentheses taken off (half of them cut to their first
  clause), is a claim; against that sentence
  and another of its abstract it is SUPPORT; perturbed as above it is CONTRADICT; against
  three other sentences of its abstract it is NEI (on topic, not stated). And each such
  abstract's title that states a finding (``scifact_titles``) as a claim: against the three sentences of its abstract closest to it
  SUPPORT (the same finding in other words), perturbed CONTRADICT, against the closest
  sentences of the nearest other abstract NEI.
- ``scifact_contrast`` -- the same titles' counter-examples (:func:`contrast_rows`): a
  perturbed title against the nearest other abstract is NEI, and a negated title against
  its abstract with the closest sentence negated too is SUPPORT (the title as it stands
  against that, CONTRADICT), so that a "not" alone does not read as a contradiction.
- ``scifact_read``, ``scitab_read`` -- the same SciFact train claims and SciTab half, each
  against what the reader reads at run time (:func:`read_rows`: the judge's featurizer's
  best sentences of the cited abstract or of the table's text, the pair's gold label),
  and perturbed against them.
- ``scitab`` -- **SciTab** (MIT): each claim against its table's caption and cells as
  text: one half (:func:`evalsets.claims.halves`) of the claims
  ``bench.quality.out_of_domain`` does not sample to measure on; the other half is kept
  for the calibration.

Not used: HealthVer, Climate-FEVER, COVID-Fact and NLI4CT (no licence stated: measure
only), HealthFC (CC BY-NC-ND: no derivatives), XNLI (CC BY-NC: a model shipped under
Apache-2.0 does not take non-commercial terms), RTE3-DE (German, which the model's English
WordPiece vocabulary does not read; German claims are glossed into English first).

Deterministic: the same data and seed write the same arrays.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import pathlib
import random
import re
import sys

import numpy

from evalsets import claims as claim_sets
from evalsets import evaldata, scifact
from training import judge as trees
from training import perturb
from citerun.pipeline import embed
from citerun.pipeline.judging import embedded, language, reader

LABELS = reader.LABELS
SETS = ("scifact", "scifact_corpus", "scifact_titles", "scitab", "scifact_read", "scitab_read",
        "scifact_contrast")
SEED = 20261204
#: A generated pair counts less than a real claim's: a sentence against itself least (its
#: support is a copy), a title against its abstract more (its support is in other words).
CORPUS_WEIGHT = 0.3
TITLE_WEIGHT = 0.6
Row = tuple[str, str, str, str, float]  # claim, evidence, label, set, weight

_FRAME = re.compile(
    r"^(?:(?:in (?:conclusion|summary|addition|contrast)|together|taken together|overall|"
    r"furthermore|moreover|however|thus|therefore|finally|importantly|notably|here|collectively)"
    r",?\s+)?(?:(?:these|our|the)\s+(?:results|findings|data|observations|studies)\s+"
    r"(?:suggest|show|indicate|demonstrate|reveal|confirm|support)|we\s+(?:found|show|report|"
    r"demonstrate|observed|conclude|propose|find)|(?:it was|it is)\s+(?:found|shown|concluded))"
    r"\s+that\s+", re.IGNORECASE)
_LEAD = re.compile(r"^(?:in (?:conclusion|summary|addition)|conclusions?|results?|"
                   r"importantly|furthermore|moreover|however|thus|therefore|finally|overall)"
                   r"\s*[,:]\s*", re.IGNORECASE)
#: A title that states a finding has a verb of one ("X promotes Y", "X is required for Y").
_VERBS = ("activate affect alter attenuate block cause confer contribute control correlate decrease delay determine drive enhance exacerbate facilitate impair improve increase induce inhibit limit lead lower mediate modulate predict prevent promote protect raise reduce regulate require restore reverse suppress trigger underlie worsen accelerate act bind depend elevate enable encode govern influence link maintain mitigate prolong shorten target")
_STATES = re.compile(
    r"\b(?:(?:is|are|was|were)\s+(?:not\s+)?\w+|(?:does|do|did|can|may)\s+(?:not\s+)?\w+|"
    r"(?:" + "|".join(_VERBS.split()) + r")(?:s|es|d|ed)?)\b", re.IGNORECASE)
_HEADING = re.compile(r"\b[A-Z]{4,}\b(?:\s+[A-Z]{3,}\b)*\s+[A-Z][a-z]")
_PAREN = re.compile(r"\s*[(\[][^()\[\]]{0,120}[)\]]")


def _corpus() -> dict[int, dict[str, object]]:
    out = {}
    for line in (evaldata() / "scifact" / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        out[int(doc["doc_id"])] = doc
    return out


def _claims(split: str) -> list[dict[str, object]]:
    path = evaldata() / "scifact" / f"claims_{split}.jsonl"
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def _sentences(doc: dict[str, object]) -> list[str]:
    return [" ".join(str(s).split()) for s in doc["abstract"] if str(s).strip()]  # type: ignore[attr-defined]


def as_claim(sentence: str) -> str | None:
    """A sentence of an abstract as a thesis would state it, or None when it is no claim."""
    text = _PAREN.sub("", sentence).strip()
    text = _FRAME.sub("", text, count=1)
    text = _LEAD.sub("", text, count=1).strip()
    words = text.split()
    if not 6 <= len(words) <= 40 or not re.search(r"[a-z]", text) or text.endswith("?"):
        return None
    if re.match(r"^(?:we|this study|this paper|the aim|the purpose|objective|background|methods?)\b",
                text, re.IGNORECASE):
        return None  # what a paper did, not what it found
    return text[0].upper() + text[1:]


def shortened(claim: str) -> str:
    """The claim's first clause when it stands alone (a thesis cites a part of a finding)."""
    match = re.search(r",\s+(?:and|but|whereas|while|which|although)\s|;\s", claim)
    if match and len(claim[:match.start()].split()) >= 6:
        return claim[:match.start()].rstrip(" ,;") + "."
    return claim


def _contradictions(claim: str) -> list[str]:
    made = (perturb.negate(claim), perturb.flip(claim), perturb.antonym(claim),
            perturb.renumber(claim), perturb.swap_group(claim))
    return [m for m in made if m and m != claim]


def scifact_rows(rng: random.Random, corpus: dict[int, dict[str, object]],
                 embedder: embed.WordLlamaEmbedder) -> list[Row]:
    claims = _claims("train")
    out: list[Row] = []
    for claim in claims:
        text = str(claim["claim"])
        for doc_id in (int(d) for d in claim["cited_doc_ids"]):  # type: ignore[attr-defined]
            abstract = _sentences(corpus[doc_id])
            rationale: dict[int, str] = {}
            for evidence in claim["evidence"].get(str(doc_id), []):  # type: ignore[attr-defined]
                for index in evidence["sentences"]:
                    if index < len(abstract):
                        rationale[int(index)] = str(evidence["label"])
            rest = [i for i in range(len(abstract)) if i not in rationale]
            if rationale:
                label = next(iter(rationale.values()))
                chosen = sorted(rationale)[:2]
                other = rng.sample(rest, min(1, len(rest)))
                order = chosen + other
                rng.shuffle(order)
                evidence_sets = [[abstract[i] for i in order], [abstract[i] for i in chosen]]
                for sentences in evidence_sets:
                    ev = reader.evidence_text(sentences)
                    out.append((text, ev, label, "scifact", 1.0))
                    flipped, variants = trees.opposites(text, label, extra=True)
                    out += [(v, ev, flipped, "scifact", 0.5) for v in variants]
            picked = rng.sample(rest, min(3, len(rest)))
            if picked:
                out.append((text, reader.evidence_text([abstract[i] for i in picked]), "NEI", "scifact", 1.0))
    # Hard NEI: the nearest abstract the claim does not cite, its best sentences.
    doc_ids = sorted(corpus)
    doc_vectors = embedder.embed([str(corpus[d]["title"]) + " " + " ".join(_sentences(corpus[d]))
                                  for d in doc_ids])
    texts = [str(c["claim"]) for c in claims]
    claim_vectors = embedder.embed(texts)
    nearest = numpy.argsort(-(claim_vectors @ doc_vectors.T), axis=1)[:, :10]
    for index, claim in enumerate(claims):
        cited = {int(d) for d in claim["cited_doc_ids"]}  # type: ignore[attr-defined]
        doc = corpus[next(doc_ids[j] for j in nearest[index] if doc_ids[j] not in cited)]
        sentences = _sentences(doc)
        if sentences:
            vectors = embedder.embed(sentences)
            best = numpy.argsort(-(vectors @ claim_vectors[index]))[:reader.SENTENCES]
            out.append((texts[index], reader.evidence_text([sentences[i] for i in best]), "NEI",
                        "scifact", 1.0))
    return out


def corpus_rows(rng: random.Random, corpus: dict[int, dict[str, object]], per_abstract: int) -> list[Row]:
    dev_docs = {int(d) for c in _claims("dev") for d in c["cited_doc_ids"]}  # type: ignore[attr-defined]
    out: list[Row] = []
    for doc_id in sorted(corpus):
        if doc_id in dev_docs:
            continue
        abstract = _sentences(corpus[doc_id])
        if len(abstract) < 4:
            continue
        # Findings are stated near the end of an abstract: prefer its second half.
        candidates = [i for i in range(len(abstract) // 2, len(abstract)) if as_claim(abstract[i])]
        for i in rng.sample(candidates, min(per_abstract, len(candidates))):
            claim = as_claim(abstract[i])
            assert claim is not None
            if rng.random() < 0.5:
                claim = shortened(claim)
            others = [j for j in range(len(abstract)) if j != i]
            beside = rng.sample(others, 1)
            order = [i] + beside
            rng.shuffle(order)
            ev = reader.evidence_text([abstract[j] for j in order])
            out.append((claim, ev, "SUPPORT", "scifact_corpus", CORPUS_WEIGHT))
            variants = _contradictions(claim)
            if variants:
                out.append((rng.choice(variants), ev, "CONTRADICT", "scifact_corpus", CORPUS_WEIGHT))
            away = [j for j in others if abs(j - i) > 1] or others
            out.append((claim, reader.evidence_text([abstract[j] for j in rng.sample(away, min(3, len(away)))]),
                        "NEI", "scifact_corpus", CORPUS_WEIGHT))
    return out


@dataclasses.dataclass(frozen=True)
class Title:
    """A SciFact corpus title that states a finding, as a claim: the sentences of its own
    abstract closest to it, and those of the nearest other abstract (best first)."""

    claim: str
    own: list[str]
    other: list[str]
    variants: list[str]  # the claim perturbed (:func:`_contradictions`), made once for both sets


def titles(corpus: dict[int, dict[str, object]], embedder: embed.WordLlamaEmbedder) -> list[Title]:
    """Each abstract's title that states a finding (a verb of one; not a topic such as
    "Effect of X on Y" or "X: a review"), of abstracts no SciFact dev claim cites."""
    dev_docs = {int(d) for c in _claims("dev") for d in c["cited_doc_ids"]}  # type: ignore[attr-defined]
    doc_ids = [d for d in sorted(corpus) if d not in dev_docs and len(_sentences(corpus[d])) >= 3]
    names = [" ".join(str(corpus[d]["title"]).split()).rstrip(".") for d in doc_ids]
    title_vectors = embedder.embed(names)
    doc_vectors = embedder.embed([" ".join(_sentences(corpus[d])) for d in doc_ids])
    out = []
    for index, doc_id in enumerate(doc_ids):
        title = names[index]
        if len(title.split()) < 6 or "?" in title or ":" in title or not _STATES.search(title):
            continue
        scores = doc_vectors @ title_vectors[index]
        scores[index] = -numpy.inf
        other = doc_ids[int(numpy.argmax(scores))]
        claim = title[0].upper() + title[1:] + "."
        out.append(Title(claim,
                         _closest(_sentences(corpus[doc_id]), title_vectors[index], embedder),
                         _closest(_sentences(corpus[other]), title_vectors[index], embedder),
                         _contradictions(claim)))
    return out


def title_rows(rng: random.Random, items: list[Title]) -> list[Row]:
    """A paper's title states its finding in other words than its abstract: the title
    against the abstract's sentences closest to it is SUPPORT, perturbed CONTRADICT, and
    against the closest sentences of the nearest other abstract NEI (on topic, not stated)."""
    out: list[Row] = []
    for item in items:
        own = reader.evidence_text(item.own)
        out.append((item.claim, own, "SUPPORT", "scifact_titles", TITLE_WEIGHT))
        if item.variants:
            out.append((rng.choice(item.variants), own, "CONTRADICT", "scifact_titles", TITLE_WEIGHT))
        out.append((item.claim, reader.evidence_text(item.other), "NEI", "scifact_titles", TITLE_WEIGHT))
    return out


def contrast_rows(rng: random.Random, items: list[Title]) -> list[Row]:
    """The counter-examples :func:`title_rows` lacks, so that a negation or a changed word is
    not read as a contradiction by itself: the perturbed title against the nearest other
    abstract is NEI (a negated claim the source does not address is not contradicted);
    and, where the closest sentence of its own abstract restates the title
    (:func:`_restates`) and can be negated too, the negated
    title against that negated sentence is SUPPORT (both say "not") and the title as it
    stands against it CONTRADICT (the source says "not", the claim does not)."""
    out: list[Row] = []
    for item in items:
        if item.variants:
            out.append((rng.choice(item.variants), reader.evidence_text(item.other), "NEI",
                        "scifact_contrast", TITLE_WEIGHT))
        negated_claim = perturb.negate(item.claim)
        stated = as_claim(item.own[0])  # its reporting frame ("Here we show that") off
        negated_best = perturb.negate(stated) if stated and _restates(stated, item.claim) else None
        if negated_claim and negated_best:
            own = reader.evidence_text([negated_best, *item.own[1:]])
            out.append((negated_claim, own, "SUPPORT", "scifact_contrast", TITLE_WEIGHT))
            out.append((item.claim, own, "CONTRADICT", "scifact_contrast", TITLE_WEIGHT))
    return out


def _restates(sentence: str, claim: str) -> bool:
    """Whether ``sentence`` (a finding, :func:`as_claim`) has at least half of ``claim``'s
    content words and no heading run into it ("CONCLUSIONS These results"): negating it
    then says the opposite of the claim, rather than of something beside it."""
    words = language.content_words(claim)
    found = set(language.content_words(sentence))
    return not _HEADING.search(sentence) and sum(w in found for w in words) >= len(words) / 2


def _closest(sentences: list[str], vector: numpy.ndarray, embedder: embed.WordLlamaEmbedder) -> list[str]:
    order = numpy.argsort(-(embedder.embed(sentences) @ vector))[:reader.SENTENCES]
    return [sentences[i] for i in order]


def scitab_rows(train: list[claim_sets.Pair]) -> list[Row]:
    """``train``: the first of the two halves of SciTab's unmeasured claims; the second is
    what the reader's calibration is fitted on (``training.fit_reader_calibration --half``)."""
    return [(p.claim, p.evidence, p.gold, "scitab", 1.0) for p in train]


def read_rows(embedder: embed.WordLlamaEmbedder, pairs: list[claim_sets.Pair], name: str) -> list[Row]:
    """Each pair as the reader reads it at run time: the claim (glossed when German)
    against the best sentences the judge's featurizer ranks in the source, with its gold
    label; the claim perturbed against the same sentences with the opposite label (half
    weight), as :func:`scifact_rows` does."""
    judge = embedded.TrainedJudge(embedder)
    out: list[Row] = []
    for pair in pairs:
        signals = judge.signals(pair.claim, claim_sets.passages(pair.evidence), read=False)
        if signals is None:
            continue
        claim, evidence = signals.read_pair()
        out.append((claim, evidence, pair.gold, name, 1.0))
        if pair.gold != "NEI":
            flipped, variants = trees.opposites(claim, pair.gold, extra=True)
            out += [(v, evidence, flipped, name, 0.5) for v in variants]
    return out


def build(per_abstract: int = 2) -> list[Row]:
    rng = random.Random(SEED)
    corpus = _corpus()
    embedder = embed.WordLlamaEmbedder()
    rows = scifact_rows(rng, corpus, embedder)
    rows += corpus_rows(rng, corpus, per_abstract)
    items = titles(corpus, embedder)
    rows += title_rows(rng, items)
    scitab_train, _ = claim_sets.halves(claim_sets.unmeasured("scitab"))
    rows += scitab_rows(scitab_train)
    rows += read_rows(embedder, scifact.pairs(None, "train"), "scifact_read")
    rows += read_rows(embedder, scitab_train, "scitab_read")
    rows += contrast_rows(random.Random(SEED + 1), items)  # its own draws: the sets above stay as they were
    # The claim as the judge reads it (its reporting frame and a glued heading number off).
    out = []
    for claim, evidence, label, name, weight in rows:
        parts = language.claim_parts(claim)
        out.append((parts[0].text if parts else claim, evidence, label, name, weight))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--per-abstract", type=int, default=2,
                        help="claims generated from each SciFact corpus abstract")
    args = parser.parse_args()
    rows = build(args.per_abstract)
    ids, types, mask = reader.encode([(c, e) for c, e, *_ in rows])
    numpy.savez_compressed(
        args.out, ids=ids.astype(numpy.uint16), types=types.astype(numpy.uint8),
        mask=mask.astype(numpy.uint8),
        labels=numpy.array([LABELS.index(r[2]) for r in rows], dtype=numpy.int64),
        weights=numpy.array([r[4] for r in rows], dtype=numpy.float64),
        sets=numpy.array([SETS.index(r[3]) for r in rows], dtype=numpy.int64),
        set_names=numpy.array(SETS))
    with (args.out.with_suffix(".jsonl")).open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = collections.Counter((r[3], r[2]) for r in rows)
    for name in SETS:
        print(f"{name}: " + ", ".join(f"{k} {counts[(name, k)]}" for k in LABELS), file=sys.stderr)
    print(f"wrote {args.out}: {len(rows)} pairs, mean {mask.sum(1).mean():.0f} tokens", file=sys.stderr)


if __name__ == "__main__":
    main()
