"""Hostile theses for matching (issue 27), written with the demo's PDF writer.

* :func:`big_bibliography` - a thesis of about 200 pages with ``references`` author-year
  entries and ``markers`` markers citing them (``Surname (Year)`` and ``(Surname, Year)``),
  the input that made mapping citations to sources take minutes on the worker's loop.
* :func:`many_authors_source` - a short source whose PDF metadata lists ``authors``
  authors (the input that made scoring one entry against it take seconds).

Both are pure functions of their arguments (no randomness), so a failure reproduces.
"""

from __future__ import annotations

import pathlib
import tempfile

from examples import pdfwriter  # a folder of scripts: a namespace package from the root

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "do", "fa", "gu",
              "ha", "je", "ko", "li")
_TOPICS = ("urban heat", "street trees", "cool roofs", "green roofs", "water bodies",
           "building density", "ventilation", "facade materials", "irrigation", "parks")


def surname(number: int) -> str:
    """A distinct made-up surname per number ("Kalomi", "Kalone", ...)."""
    parts = []
    for _ in range(3):
        parts.append(_SYLLABLES[number % len(_SYLLABLES)])
        number //= len(_SYLLABLES)
    return "".join(parts).capitalize()


def reference(number: int, surnames: int) -> tuple[str, int]:
    """The ``number``-th entry: (text, year). ``surnames`` distinct first authors share
    the entries, so one surname has several entries in different years."""
    name = surname(number % surnames)
    year = 1980 + (number // surnames) % 40
    topic = _TOPICS[number % len(_TOPICS)]
    text = (f"{name}, A., & {surname(number + 7)}, B. ({year}). On {topic} in {surname(number + 11)}. "
            f"Urban Studies, {number % 90 + 1}, 1-20.")
    return text, year


def big_bibliography_spec(references: int = 3000, markers: int = 6000, surnames: int = 1000,
                          filler_pages: int = 23) -> pdfwriter.DocumentSpec:
    blocks: list[pdfwriter.Block] = list(pdfwriter.front_matter(
        "Heat in cities: a long thesis", ("Hostile Writer",), "A thesis, 2024"))
    entries = [reference(n, surnames) for n in range(references)]
    sentences = []
    for m in range(markers):
        n = (m * 7919) % references  # every entry cited, in a scattered order
        name, year = surname(n % surnames), entries[n][1]
        topic = _TOPICS[m % len(_TOPICS)]
        sentences.append(f"{name} ({year}) found that {topic} matter in summer." if m % 2 else
                         f"The {topic} lowered heat stress at night ({name}, {year}).")
    for start in range(0, len(sentences), 6):
        blocks.append(pdfwriter.Block("paragraph", " ".join(sentences[start:start + 6])))
    for page in range(filler_pages):  # chapters of prose without markers: 201 pages in all
        blocks += [pdfwriter.Block("pagebreak"),
                   pdfwriter.Block("paragraph", f"Chapter {page + 1} describes the measurements "
                                   "taken at the sites, without citing anything.")]
    blocks += [pdfwriter.Block("pagebreak"), pdfwriter.Block("heading", "References")]
    blocks += [pdfwriter.Block("reference", text) for text, _ in entries]
    return pdfwriter.DocumentSpec(filename="hostile-thesis.pdf", title="Heat in cities",
                                  authors=("Hostile Writer",), year=2024,
                                  blocks=tuple(blocks), running_header="Heat in cities")


def _write(spec: pdfwriter.DocumentSpec) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / spec.filename
        pdfwriter.write_pdf(spec, path)
        return path.read_bytes()


def big_bibliography(references: int = 3000, markers: int = 6000, surnames: int = 1000,
                     filler_pages: int = 23) -> bytes:
    """The thesis as PDF bytes (201 pages at the defaults)."""
    return _write(big_bibliography_spec(references, markers, surnames, filler_pages))


def many_authors_source(authors: int = 20_000) -> bytes:
    """A one-page source whose metadata lists ``authors`` authors: 20 names over and over,
    each printed on the page, so the parser believes the list (it keeps a metadata
    author only when the first page names it)."""
    names = tuple(f"{surname(n % 20)}, A." for n in range(authors))
    spec = pdfwriter.DocumentSpec(
        filename="many-authors.pdf", title="On urban heat and street trees", authors=names,
        year=2020, blocks=(pdfwriter.Block("title", "On urban heat and street trees"),
                           pdfwriter.Block("byline", ", ".join(surname(n) for n in range(20))),
                           *pdfwriter.paragraphs("Street trees lowered the air temperature "
                                                 "of the street by two degrees in summer.")))
    return _write(spec)


def cited_source(number: int, surnames: int = 1000) -> tuple[str, bytes]:
    """The source PDF of :func:`big_bibliography`'s ``number``-th entry (its title,
    authors and year as the entry gives them), with a page of prose on its topic:
    (file name, bytes)."""
    name, year = surname(number % surnames), reference(number, surnames)[1]
    topic = _TOPICS[number % len(_TOPICS)]
    title = f"On {topic} in {surname(number + 11)}"
    spec = pdfwriter.DocumentSpec(
        filename=f"{name.lower()}{year}.pdf", title=title,
        authors=(f"A. {name}", f"B. {surname(number + 7)}"), year=year,
        blocks=(*pdfwriter.front_matter(title, (f"A. {name}", f"B. {surname(number + 7)}"),
                                        f"Urban Studies, {year}"),
                *pdfwriter.paragraphs(
                    f"We measured how {topic} change heat stress in summer at night.",
                    f"In {surname(number + 11)}, {topic} lowered heat stress at night by "
                    "two degrees, and they matter in summer most of all.")))
    return spec.filename, _write(spec)


def cited_numbers(count: int, references: int = 3000, markers: int = 6000) -> list[int]:
    """``count`` entries that :func:`big_bibliography_spec` cites (each about twice)."""
    cited = sorted({(m * 7919) % references for m in range(markers)})
    return cited[:: max(1, len(cited) // count)][:count]


def pages_of(spec: pdfwriter.DocumentSpec) -> list[tuple[int, str]]:
    """A spec's text as numbered pages (the blocks the PDF is written from), for the
    tests that map without writing the PDF."""
    pages: list[list[str]] = [[]]
    for block in spec.blocks:
        if block.kind == "pagebreak":
            pages.append([])
        elif block.text:
            pages[-1].append(block.text)
    return [(number, "\n\n".join(texts)) for number, texts in enumerate(pages, 1)]
