"""The demo's page layout, by hand: word wrap with pymupdf's font metrics, a running header
and a page number on every page, so the parser's header/footer removal gets exercised.
Used by ``examples/make_examples.py``, ``bench/pipeline/large_thesis.py`` and tests that
make PDFs of their own. The output is byte-for-byte reproducible (fixed metadata dates,
no random document id)."""

# pymupdf's annotations are partial; its untyped calls are fine here.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import dataclasses
import pathlib
import typing

import pymupdf

PAGE_WIDTH, PAGE_HEIGHT = pymupdf.paper_size("a4")
MARGIN = 72.0
BODY_FONT, BOLD_FONT = "helv", "hebo"

BlockKind = typing.Literal["title", "byline", "heading", "paragraph", "reference", "pagebreak"]

_STYLE: dict[str, tuple[str, float, float]] = {
    # kind: (font, size, space before)
    "title": (BOLD_FONT, 18.0, 0.0),
    "byline": (BODY_FONT, 12.0, 6.0),
    "heading": (BOLD_FONT, 13.0, 14.0),
    "paragraph": (BODY_FONT, 11.0, 8.0),
    "reference": (BODY_FONT, 10.0, 5.0),
}


@dataclasses.dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str = ""


@dataclasses.dataclass(frozen=True)
class DocumentSpec:
    """One PDF to write: its metadata and its blocks of text."""

    filename: str
    title: str
    authors: tuple[str, ...]
    year: int
    blocks: tuple[Block, ...]
    running_header: str | None = None


def _wrap(text: str, font: str, size: float, width: float) -> list[str]:
    # Base-14 fonts have no kerning, so a line's width is the sum of its words' widths.
    space = pymupdf.get_text_length(" ", fontname=font, fontsize=size)
    lines: list[str] = []
    words: list[str] = []
    used = 0.0
    for word in text.split():
        word_width = pymupdf.get_text_length(word, fontname=font, fontsize=size)
        if words and used + space + word_width > width:
            lines.append(" ".join(words))
            words, used = [], 0.0
        used += word_width + (space if words else 0.0)
        words.append(word)
    if words:
        lines.append(" ".join(words))
    return lines


def write_pdf(spec: DocumentSpec, path: pathlib.Path) -> None:
    """Lay out ``spec`` on A4 pages and save it reproducibly to ``path``."""
    for block in spec.blocks:
        bad = sorted({ch for ch in block.text if ord(ch) > 0xFF})
        if bad:  # the base-14 fonts only cover Latin-1
            raise ValueError(f"{spec.filename}: characters outside Latin-1: {bad}")
    doc = pymupdf.open()
    width = PAGE_WIDTH - 2 * MARGIN
    bottom = PAGE_HEIGHT - MARGIN
    page: pymupdf.Page | None = None
    y = 0.0

    def new_page() -> pymupdf.Page:
        nonlocal y
        fresh = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
        number = doc.page_count
        if spec.running_header:
            fresh.insert_text((MARGIN, MARGIN - 30), spec.running_header, fontname=BODY_FONT,
                              fontsize=9)
        fresh.insert_text((PAGE_WIDTH / 2 - 5, PAGE_HEIGHT - MARGIN + 30), str(number),
                          fontname=BODY_FONT, fontsize=9)
        y = MARGIN
        return fresh

    page = new_page()
    for block in spec.blocks:
        if block.kind == "pagebreak":
            page = new_page()
            continue
        font, size, before = _STYLE[block.kind]
        leading = size * 1.35
        indent = 18.0 if block.kind == "reference" else 0.0
        lines = _wrap(block.text, font, size, width - indent)
        y += before
        for index, line in enumerate(lines):
            if y + leading > bottom:
                page = new_page()
            y += leading
            x = MARGIN + (indent if index > 0 else 0.0)
            page.insert_text((x, y), line, fontname=font, fontsize=size)
    date = f"D:{spec.year}0101000000Z"
    doc.set_metadata(
        {
            "title": spec.title,
            "author": "; ".join(spec.authors),
            "subject": "",
            "keywords": "",
            "creator": "citerun examples/make_examples.py",
            "producer": "PyMuPDF",
            "creationDate": date,
            "modDate": date,
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(doc.tobytes(garbage=3, deflate=True, no_new_id=True))
    doc.close()


def paragraphs(*texts: str) -> tuple[Block, ...]:
    return tuple(Block("paragraph", " ".join(text.split())) for text in texts)


def front_matter(title: str, authors: tuple[str, ...], byline: str) -> tuple[Block, ...]:
    return (Block("title", title), Block("byline", ", ".join(authors)), Block("byline", byline))
