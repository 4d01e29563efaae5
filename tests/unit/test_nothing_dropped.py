"""Nothing is dropped silently (issue 24, item 7): a generated thesis of 200 numbered
citations whose entries all have one shape is read whole, and what is not taken as a
citation, or missing from the list, is counted with its reason."""

from __future__ import annotations

import pathlib
import tempfile

from citerun.pipeline import citations, pdf
from examples import pdfwriter

HEADER = "A generated thesis"


def _thesis(numbers: range, listed: set[int], extra: str = "") -> list[tuple[int, str]]:
    blocks = list(pdfwriter.front_matter(HEADER, ("Writer",), "A thesis, 2024"))
    sentences = [f"Claim number {n} about the topic is stated here [{n}]." for n in numbers]
    for start in range(0, len(sentences), 8):
        blocks.append(pdfwriter.Block("paragraph", " ".join(sentences[start:start + 8])))
    if extra:
        blocks.append(pdfwriter.Block("paragraph", extra))
    blocks += [pdfwriter.Block("pagebreak"), pdfwriter.Block("heading", "References")]
    blocks += [pdfwriter.Block("reference", f"[{n}] Source document {n}.") for n in sorted(listed)]
    spec = pdfwriter.DocumentSpec(filename="generated.pdf", title=HEADER, authors=("Writer",),
                                  year=2024, blocks=tuple(blocks), running_header=HEADER)
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / spec.filename
        pdfwriter.write_pdf(spec, path)
        parsed = pdf.parse_pdf(path.read_bytes(), max_bytes=50_000_000)
    return [(p.number, p.text) for p in parsed.pages]


def test_two_hundred_uniform_entries_are_not_running_heads() -> None:
    pages = _thesis(range(1, 201), set(range(1, 201)))
    assert len(pages) >= 8  # the list runs over several pages, an entry at each edge
    # The real running head is still dropped from every page after the first.
    assert not any(HEADER in text for _, text in pages[1:])
    extraction = citations.extract(pages)
    assert [e.label for e in extraction.references] == [str(n) for n in range(1, 201)]
    assert [c.key for c in extraction.citations] == [str(n) for n in range(1, 201)]
    assert extraction.skipped == ()


def test_a_list_short_of_its_labels_is_explained_and_its_citations_kept() -> None:
    listed = set(range(1, 201)) - set(range(37, 51))
    pages = _thesis(range(1, 201), listed,
                    extra="The bound holds on the interval [250] of the second kind.")
    extraction = citations.extract(pages)
    keys = [c.key for c in extraction.citations]
    assert keys == [str(n) for n in range(1, 201)]  # 37-50 kept: reported unresolved
    mapped = citations.map_citations(extraction, [])
    assert sum(m.reference is None for m in mapped) == 14
    short = [s for s in extraction.skipped if s.where.startswith("reference list")]
    assert len(short) == 1 and "entries 37, 38, 39" in short[0].text
    assert "(14 of 200)" in short[0].text
    beyond = [s for s in extraction.skipped if s.text == "[250]"]
    assert len(beyond) == 1 and "does not hold" in beyond[0].reason
    assert beyond[0].where.startswith("page ")
