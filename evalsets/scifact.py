"""SciFact (Wadden et al. 2020; claims CC BY 4.0, abstracts ODC-By 1.0): each claim against
each abstract it cites, with SciFact's label of that pair."""

from __future__ import annotations

import collections
import json
import typing

from evalsets import claims, evaldata


def gold_label(claim: dict[str, typing.Any], doc_id: int) -> str:
    """SciFact's label of a claim against one abstract it cites: the most common label of
    the abstract's evidence sets (SUPPORT or CONTRADICT), NEI when it has none."""
    sets = claim["evidence"].get(str(doc_id), [])
    if not sets:
        return "NEI"
    return str(collections.Counter(s["label"] for s in sets).most_common(1)[0][0])


def pairs(limit: int | None, split: str = "dev") -> list[claims.Pair]:
    """Each claim of SciFact's ``split`` against each abstract it cites, with its gold label
    (set name ``scifact`` for dev, ``scifact_<split>`` otherwise), sampled to ``limit``."""
    data = evaldata() / "scifact"
    corpus = {}
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        corpus[doc["doc_id"]] = doc["title"] + "\n\n" + " ".join(doc["abstract"])
    out = []
    name = "scifact" if split == "dev" else f"scifact_{split}"
    for line in (data / f"claims_{split}.jsonl").open(encoding="utf-8"):
        claim = json.loads(line)
        for doc_id in claim["cited_doc_ids"]:
            out.append(claims.Pair(name, f"{claim['id']}/{doc_id}", claim["claim"],
                                   corpus[int(doc_id)], gold_label(claim, int(doc_id))))
    return claims.sample(out, limit)
