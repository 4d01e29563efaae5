"""Generate a large synthetic thesis (150 pages, 80 citations, 30 sources) for benchmarks.

Usage: ``python -m bench.pipeline.large_thesis OUT_DIR [--seed N]`` writes ``OUT_DIR/thesis.pdf``
and ``OUT_DIR/sources/*.pdf``. The text is assembled from sentence templates about
urban climate, so it reads like prose to the tokenizer and the sentence splitter (real
words, citations, numbers, abbreviations), while the output stays a pure function of
the seed. The output is not committed; it is a few megabytes and quick to rebuild.

Page layout reuses ``examples/pdfwriter.py`` (the demo's) so that the benchmark parses the same
kind of PDF as the demo (running header, page numbers, wrapped paragraphs).
"""

# pymupdf's annotations are partial; its untyped calls are fine in this script.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import argparse
import pathlib
import random

import pymupdf

from examples import pdfwriter  # a folder of scripts: a namespace package from the root

THESIS_PAGES = 150
CITATIONS = 80
SOURCES = 30
# One body page holds about this many characters at 11 pt on A4 with our margins.
PAGE_CHARS = 2900

SURNAMES = [
    "Alvarez", "Becker", "Chen", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito",
    "Jensen", "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor", "Petrov", "Quinn",
    "Rossi", "Schmidt", "Tanaka", "Umar", "Varga", "Wei", "Xu", "Yilmaz", "Zimmermann",
    "Mitchell", "Keller", "Santos", "Nakamura", "Olsen", "Brennan",
]
GIVEN = ["Anna", "Ben", "Carla", "David", "Eva", "Felix", "Grace", "Hugo", "Ines", "Jonas",
         "Kira", "Lukas", "Mara", "Nils", "Olga", "Paul", "Rosa", "Sven", "Tara", "Umberto"]
TOPICS = [
    "street trees", "cool roofs", "green roofs", "urban parks", "water bodies",
    "building density", "sky view factor", "anthropogenic heat", "asphalt pavements",
    "shading devices", "ventilation corridors", "facade materials", "irrigation",
    "heat warning systems", "social housing", "older adults", "night-time temperature",
    "land surface temperature", "air conditioning", "urban morphology",
]
OUTCOMES = [
    "air temperature", "surface temperature", "indoor temperature", "heat stress",
    "hospital admissions", "energy demand", "thermal comfort", "sleep quality",
    "mortality during heat waves", "outdoor activity",
]
CITIES = ["Seville", "Lagos", "Berlin", "Athens", "Madrid", "Vienna", "Tokyo", "Chicago",
          "Melbourne", "Delhi", "Cairo", "Lyon", "Warsaw", "Phoenix", "Singapore"]
VERBS_UP = ["raised", "increased", "worsened", "amplified"]
VERBS_DOWN = ["lowered", "reduced", "softened", "mitigated"]
CHAPTERS = [
    "Introduction", "Urban heat islands", "Measuring urban heat", "Heat and health",
    "Vegetation", "Roofs and facades", "Water and irrigation", "Urban form",
    "Energy and cooling", "Policy and planning", "Case studies", "Discussion", "Conclusion",
]

SENTENCES = [
    "In {city}, {topic} {verb} {outcome} by {num} percent compared with the reference sites.",
    "The effect of {topic} on {outcome} was largest in summer, i.e. between June and August.",
    "Several studies, e.g. those in {city}, report that {topic} shape {outcome} in dense districts.",
    "Fig. {small} shows how {outcome} changes with {topic} over a typical summer day.",
    "A difference of {deg} °C in {outcome} is large enough to matter for residents.",
    "Planners in {city} have therefore begun to treat {topic} as part of the heat strategy.",
    "It is not clear whether {topic} affect {outcome} in the same way in cooler climates.",
    "The data for {city} cover {small} summers and {num} measurement sites.",
    "Where {topic} were absent, {outcome} rose by {deg} °C on the hottest days.",
    "This chapter compares {topic} with other measures that target {outcome}.",
    "Costs matter: {topic} are cheaper to install than most alternatives, cf. Table {small}.",
    "The evidence on {topic} and {outcome} is stronger for daytime than for night-time.",
    "Measurements were taken every {small} minutes at a height of {small} m above ground.",
    "Older residents are more exposed, because {outcome} depends on housing quality too.",
]


def sentence(rng: random.Random) -> str:
    return rng.choice(SENTENCES).format(
        city=rng.choice(CITIES),
        topic=rng.choice(TOPICS),
        outcome=rng.choice(OUTCOMES),
        verb=rng.choice(VERBS_UP + VERBS_DOWN),
        num=rng.randint(3, 45),
        deg=f"{rng.uniform(0.3, 6.5):.1f}",
        small=rng.randint(2, 12),
    )


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def make_sources(rng: random.Random) -> list[pdfwriter.DocumentSpec]:
    specs = []
    surnames = rng.sample(SURNAMES, SOURCES)
    for index, surname in enumerate(surnames):
        coauthors = rng.sample([s for s in SURNAMES if s != surname], rng.randint(0, 2))
        authors = tuple(f"{rng.choice(GIVEN)} {name}" for name in [surname, *coauthors])
        year = rng.randint(2005, 2023)
        topic, outcome = rng.choice(TOPICS), rng.choice(OUTCOMES)
        title = f"{topic.capitalize()} and {outcome}: evidence from {rng.choice(CITIES)}"
        blocks: list[pdfwriter.Block] = [
            *pdfwriter.front_matter(title, authors, f"Journal of Urban Climate, {year}"),
            pdfwriter.Block("heading", "Abstract"),
            pdfwriter.Block("paragraph", paragraph(rng, 5)),
        ]
        for number, heading in enumerate(["Introduction", "Methods", "Results", "Discussion"], 1):
            blocks.append(pdfwriter.Block("heading", f"{number}. {heading}"))
            for _ in range(rng.randint(2, 4)):
                blocks.append(pdfwriter.Block("paragraph", paragraph(rng, rng.randint(4, 8))))
        specs.append(
            pdfwriter.DocumentSpec(
                filename=f"sources/{index:02d}_{surname.lower()}{year}.pdf",
                title=title,
                authors=authors,
                year=year,
                blocks=tuple(blocks),
                running_header=f"Journal of Urban Climate ({year})",
            )
        )
    return specs


def cite(spec: pdfwriter.DocumentSpec) -> str:
    surnames = [author.split()[-1] for author in spec.authors]
    if len(surnames) == 1:
        return f"{surnames[0]}, {spec.year}"
    if len(surnames) == 2:
        return f"{surnames[0]} & {surnames[1]}, {spec.year}"
    return f"{surnames[0]} et al., {spec.year}"


def reference(spec: pdfwriter.DocumentSpec) -> str:
    names = [f"{a.split()[-1]}, {a.split()[0][0]}." for a in spec.authors]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + ", & " + names[-1]
    return f"{joined} ({spec.year}). {spec.title}. Journal of Urban Climate."


def make_thesis(rng: random.Random, sources: list[pdfwriter.DocumentSpec]) -> pdfwriter.DocumentSpec:
    body_pages = THESIS_PAGES - 2  # the 30 references fill the last two pages
    # Which body pages carry a citation, and whom they cite: every source at least once.
    cited = [*sources, *rng.choices(sources, k=CITATIONS - len(sources))]
    rng.shuffle(cited)
    citation_pages = sorted(rng.sample(range(1, body_pages), CITATIONS))
    citations_on = dict(zip(citation_pages, cited))

    blocks: list[pdfwriter.Block] = [
        *pdfwriter.front_matter(
            "Heat in the Compact City: A Synthetic Thesis for Benchmarks",
            ("Bench Mark",),
            "Doctoral thesis, Urban Climate, 2024",
        ),
        pdfwriter.Block("heading", "Abstract"),
        pdfwriter.Block("paragraph", paragraph(rng, 8)),
    ]
    chapter_every = body_pages // len(CHAPTERS) + 1
    for page in range(1, body_pages):
        blocks.append(pdfwriter.Block("pagebreak"))
        if page % chapter_every == 1:
            number = page // chapter_every + 1
            blocks.append(pdfwriter.Block("heading", f"{number}. {CHAPTERS[number - 1]}"))
        written = 0
        while written < PAGE_CHARS - 600:
            text = paragraph(rng, rng.randint(3, 6))
            if page in citations_on and written == 0:
                claim = sentence(rng).rstrip(".")
                text = f"{claim} ({cite(citations_on[page])}). {text}"
            blocks.append(pdfwriter.Block("paragraph", text))
            written += len(text)
    blocks.append(pdfwriter.Block("pagebreak"))
    blocks.append(pdfwriter.Block("heading", "References"))
    for spec in sorted(sources, key=lambda s: (s.authors[0].split()[-1], s.year)):
        blocks.append(pdfwriter.Block("reference", reference(spec)))
    return pdfwriter.DocumentSpec(
        filename="thesis.pdf",
        title="Heat in the Compact City: A Synthetic Thesis for Benchmarks",
        authors=("Bench Mark",),
        year=2024,
        blocks=tuple(blocks),
        running_header="B. Mark - Heat in the Compact City",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("--seed", type=int, default=20240501)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sources = make_sources(rng)
    thesis = make_thesis(rng, sources)
    for spec in [*sources, thesis]:
        pdfwriter.write_pdf(spec, args.out_dir / spec.filename)
    with pymupdf.open(args.out_dir / "thesis.pdf") as doc:
        pages = doc.page_count
    source_pages = 0
    for spec in sources:
        with pymupdf.open(args.out_dir / spec.filename) as doc:
            source_pages += doc.page_count
    print(
        f"wrote {args.out_dir}/thesis.pdf ({pages} pages, {CITATIONS} citations) and "
        f"{len(sources)} sources ({source_pages} pages)"
    )


if __name__ == "__main__":
    main()
