"""Citations that name a work (issue 23, item 5): ``citerun verify`` on PDFs made here.

"Bigtable relies on a ... lock service called Chubby [8]" attributes one thing to [8]:
that it is the Chubby paper. The three sentences below were judged `contradicted` or
`unsupported` on real papers against the very work they name; with the sources made
like the real papers (title, authors, abstract), each must now say that the source is
the work the citation names, and none may alarm.
"""

from __future__ import annotations

import pathlib
import typing

import pytest

from examples import pdfwriter as mk  # a folder of scripts: a namespace package
from tests.e2e.test_verify_demo import verify

CHUBBY = ("Bigtable relies on a highly-available and persistent distributed lock service "
          "called Chubby [8].")
GAN = ("A Generative Adversarial Network (GAN) is a type of neural network architecture "
       "for generative modeling [32].")
MAPREDUCE = ("Training on large corpora can be sped up by parallelization in the framework "
             "of MapReduce (Dean and Ghemawat, 2004).")

#: The list must be numbered 1, 2, 3 ... to be read as numbered; these two are cited.
_NUMBERED = {
    8: "[8] M. Burrows. The Chubby lock service for loosely-coupled distributed systems. "
       "In Proceedings of OSDI, 2006.",
    32: "[32] I. Goodfellow, J. Pouget-Abadie, M. Mirza, B. Xu, D. Warde-Farley, S. Ozair, "
        "A. Courville, and Y. Bengio. Generative adversarial nets. In Advances in Neural "
        "Information Processing Systems, 2014.",
}

NUMERIC = mk.DocumentSpec(
    filename="thesis_numeric.pdf", title="Storage and Learning at Scale",
    authors=("Ada Student",), year=2024,
    blocks=(
        *mk.front_matter("Storage and Learning at Scale", ("Ada Student",), "Master's thesis, 2024"),
        mk.Block("heading", "1. Background"),
        *mk.paragraphs(
            "Large web services keep their data in distributed storage systems. " + CHUBBY
            + " Its clients use it to elect a master and to store small amounts of metadata.",
            "Generative models learn the distribution of their training data. " + GAN
            + " Such models have been applied to images, audio and text."),
        mk.Block("pagebreak"),  # the whole list on one page
        mk.Block("heading", "References"),
        *(mk.Block("reference", _NUMBERED.get(n, f"[{n}] A. Writer. Further work on storage, "
                                                  f"part {n}. Journal of Systems, 2010."))
          for n in range(1, 33)),
    ))

AUTHOR_YEAR = mk.DocumentSpec(
    filename="thesis.pdf", title="Scaling Language Model Training",
    authors=("Ada Student",), year=2024,
    blocks=(
        *mk.front_matter("Scaling Language Model Training", ("Ada Student",), "Master's thesis, 2024"),
        mk.Block("heading", "1. Methods"),
        *mk.paragraphs(
            "Counting n-grams over billions of words takes days on a single machine. "
            + MAPREDUCE + " Each worker counts the n-grams of its own shard of the corpus."),
        mk.Block("heading", "References"),
        mk.Block("reference", "Dean, J. and Ghemawat, S. (2004). MapReduce: Simplified data "
                              "processing on large clusters. In Proceedings of OSDI, 137-150."),
    ))


def _source(filename: str, title: str, authors: tuple[str, ...], year: int, venue: str,
            abstract: str, body: str) -> mk.DocumentSpec:
    return mk.DocumentSpec(
        filename=f"sources/{filename}", title=title, authors=authors, year=year,
        blocks=(*mk.front_matter(title, authors, venue), mk.Block("heading", "Abstract"),
                *mk.paragraphs(abstract), mk.Block("heading", "1 Introduction"),
                *mk.paragraphs(body)))


SOURCES = (
    _source("burrows2006.pdf", "The Chubby lock service for loosely-coupled distributed systems",
            ("Mike Burrows",), 2006, "OSDI '06: 7th USENIX Symposium, 2006",
            """We describe our experiences with the Chubby lock service, which is intended to
            provide coarse-grained locking as well as reliable (though low-volume) storage for
            a loosely-coupled distributed system. Chubby provides an interface much like a
            distributed file system with advisory locks, but the design emphasis is on
            availability and reliability, as opposed to high performance. Many instances of
            the service have been used for over a year, with several of them each handling a
            few tens of thousands of clients concurrently. The paper describes the initial
            design and expected use, compares it with actual use, and explains how the design
            had to be modified to accommodate the differences.""",
            """This paper describes a lock service called Chubby. It is intended for use
            within a loosely-coupled distributed system consisting of moderately large numbers
            of small machines connected by a high-speed network."""),
    _source("goodfellow2014.pdf", "Generative Adversarial Nets",
            ("Ian J. Goodfellow", "Jean Pouget-Abadie", "Mehdi Mirza", "Bing Xu",
             "David Warde-Farley", "Sherjil Ozair", "Aaron Courville", "Yoshua Bengio"),
            2014, "Advances in Neural Information Processing Systems 27, 2014",
            """We propose a new framework for estimating generative models via an adversarial
            process, in which we simultaneously train two models: a generative model G that
            captures the data distribution, and a discriminative model D that estimates the
            probability that a sample came from the training data rather than G. The training
            procedure for G is to maximize the probability of D making a mistake. This
            framework corresponds to a minimax two-player game. In the case where G and D are
            defined by multilayer perceptrons, the entire system can be trained with
            backpropagation. Experiments demonstrate the potential of the framework through
            qualitative and quantitative evaluation of the generated samples.""",
            """The promise of deep learning is to discover rich, hierarchical models that
            represent probability distributions over the kinds of data encountered in
            artificial intelligence applications."""),
    _source("dean2004.pdf", "MapReduce: Simplified Data Processing on Large Clusters",
            ("Jeffrey Dean", "Sanjay Ghemawat"), 2004, "OSDI '04: 6th Symposium, 2004",
            """MapReduce is a programming model and an associated implementation for
            processing and generating large data sets. Users specify a map function that
            processes a key/value pair to generate a set of intermediate key/value pairs, and a
            reduce function that merges all intermediate values associated with the same
            intermediate key. Many real world tasks are expressible in this model, as shown in
            the paper. Programs written in this functional style are automatically
            parallelized and executed on a large cluster of commodity machines.""",
            """Over the past five years, the authors and many others at Google have implemented
            hundreds of special-purpose computations that process large amounts of raw
            data."""),
)

#: The sentence of each citation and the name its rationale must give.
NAMED = {CHUBBY: "Chubby", GAN: "Generative Adversarial Network", MAPREDUCE: "MapReduce"}


@pytest.fixture(scope="module")
def reports(server_tmp: typing.Callable[[str], pathlib.Path]) -> list[dict[str, typing.Any]]:
    root = server_tmp("named")
    for spec in (NUMERIC, AUTHOR_YEAR, *SOURCES):
        mk.write_pdf(spec, root / spec.filename)
    built = []
    for thesis in (NUMERIC, AUTHOR_YEAR):
        run = verify(root / "data", str(root / thesis.filename), "--sources",
                     str(root / "sources"), "--out",
                     str(root / f"{pathlib.Path(thesis.filename).stem}.html"), cwd=root)
        assert run.returncode == 0, run.stderr
        built.append(run.report())
    return built


@pytest.mark.parametrize("sentence", list(NAMED), ids=list(NAMED.values()))
def test_a_citation_of_the_work_it_names_does_not_alarm(
        reports: list[dict[str, typing.Any]], sentence: str) -> None:
    cut = " ".join(sentence.split("[")[0].split("(Dean")[0].split())  # the claim keeps no marker
    hits = [c for r in reports for c in r["citations"] if cut in " ".join(c["claim"].split())]
    assert len(hits) == 1, [c["claim"] for r in reports for c in r["citations"]]
    found = hits[0]
    assert found["source"] is not None, found
    assert found["verdict"] not in ("contradicted", "unsupported"), found["rationale"]
    assert found["verdict"] == "supported", found["rationale"]
    assert "the source is that work" in found["rationale"], found["rationale"]
    assert NAMED[sentence] in found["rationale"], found["rationale"]
    shown = found["evidence"]
    assert shown and shown[0]["boxes"], shown  # the title, highlighted on the source's page
    assert shown[0]["quote"] == found["source"]["title"], shown
