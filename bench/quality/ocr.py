"""OCR of scanned sources (issue 46): character error rate and CPU seconds per page.

    python -m bench.quality.ocr [--dpi 150,200,300] [--pages N] [--scan-dpi 300]

Each page is scanned as a scanner would give it back (the born-digital page rendered to a
grey image at ``--scan-dpi``, no text layer: ``tests/unit/pdf_fixtures.scan_of``'s way)
and read by citerun's parse with OCR at each ``--dpi``
(:class:`citerun.pipeline.pdf.ocr.OcrSettings`), one thread. Truth is the same page's
born-digital text as citerun reads it (its layout reading, columns and running heads
handled alike). Two error rates, because a figure's words, a column break or a table
read in another order move whole blocks: **CER** is the Levenshtein distance of the two
texts over the truth's characters (order counts); **line CER** matches each truth line to
its closest OCR line (rapidfuzz) and sums their distances (misread characters, not the
order of blocks); **words missed** is the share of the truth's words (as a bag) that OCR
did not give. The pages: a known single-column page (the unit test's) and the first
``--pages`` pages of the shared real PDFs (``$CITERUN_EVALDATA/realpdf/pdfs``) that have
text. Results: docs/benchmarks.md ("OCR of scanned sources").
"""

# pymupdf's annotations are partial; its untyped calls are fine in a bench.
# mypy: disable-error-code="no-untyped-call,no-any-return"

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import sys
import time

import pymupdf
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from bench.common import load_average
from evalsets import evaldata
from citerun.pipeline.pdf import ocr, parse_pdf

MAX_BYTES = 200 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Row:
    page: str
    dpi: int
    cer: float
    line_cer: float
    words_missed: float
    cpu_s: float


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def scores(truth: str, read: str) -> tuple[float, float, float]:
    """CER, line CER and the share of words missed (see the module's docstring)."""
    a, b = _norm(truth), _norm(read)
    cer = Levenshtein.distance(a, b) / max(len(a), 1)
    truth_lines = [_norm(line) for line in truth.splitlines() if line.strip()]
    read_lines = [_norm(line) for line in read.splitlines() if line.strip()] or [""]
    edits = sum(Levenshtein.distance(line, process.extractOne(
        line, read_lines, scorer=Levenshtein.normalized_distance)[0]) for line in truth_lines)
    line_cer = edits / max(sum(len(line) for line in truth_lines), 1)
    words, got = collections.Counter(a.split()), collections.Counter(b.split())
    missed = 1 - sum((words & got).values()) / max(sum(words.values()), 1)
    return cer, line_cer, missed


def scan(doc: pymupdf.Document, number: int, dpi: int) -> bytes:
    """Page ``number`` (0-based) of ``doc`` as a grey image, no text layer."""
    page = doc[number]
    out = pymupdf.open()
    scanned = out.new_page(width=page.rect.width, height=page.rect.height)
    scanned.insert_image(scanned.rect, stream=page.get_pixmap(
        dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png"))
    return out.tobytes()


def pages(limit: int) -> list[tuple[str, bytes]]:
    """(name, one-page born-digital PDF): the known page, then real pages with text."""
    from tests.unit import pdf_fixtures  # noqa: PLC0415 - the unit test's known page
    from tests.unit.test_ocr import KNOWN  # noqa: PLC0415

    found = [("known page (unit test)", pdf_fixtures.text_pdf([KNOWN]))]
    folder = evaldata() / "realpdf" / "pdfs"
    if limit and folder.is_dir():
        for path in sorted(folder.glob("*.pdf")):
            with pymupdf.open(path) as doc:
                for number in range(min(doc.page_count, 3)):
                    if len(doc[number].get_text().split()) > 200 and len(found) <= limit:
                        one = pymupdf.open()
                        one.insert_pdf(doc, from_page=number, to_page=number)
                        found.append((f"{path.stem} p.{number + 1}", one.tobytes()))
                        break
    return found


def run(dpis: list[int], limit: int, scan_dpi: int) -> list[Row]:
    os.environ["OMP_THREAD_LIMIT"] = "1"
    rows = []
    for name, data in pages(limit):
        truth = parse_pdf(data, max_bytes=MAX_BYTES).pages[0].text
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            scanned = scan(doc, 0, scan_dpi)
        for dpi in dpis:
            started = time.process_time()
            read = parse_pdf(scanned, max_bytes=MAX_BYTES, ocr=ocr.OcrSettings(dpi=dpi))
            seconds = time.process_time() - started
            rows.append(Row(name, dpi, *scores(truth, read.pages[0].text), seconds))
            print(f"  {name} at {dpi} dpi: {seconds:.1f} s", file=sys.stderr, flush=True)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| page | OCR dpi | CER | line CER | words missed | CPU s |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.page} | {r.dpi} | {r.cer:.3f} | {r.line_cer:.3f} | {r.words_missed:.3f} | {r.cpu_s:.1f} |"
              for r in rows]
    for dpi in sorted({r.dpi for r in rows}):
        at = [r for r in rows if r.dpi == dpi]
        lines.append(f"| **mean of {len(at)}** | {dpi} | {sum(r.cer for r in at) / len(at):.3f} | "
                     f"{sum(r.line_cer for r in at) / len(at):.3f} | "
                     f"{sum(r.words_missed for r in at) / len(at):.3f} | "
                     f"{sum(r.cpu_s for r in at) / len(at):.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpi", default="150,200,300")
    parser.add_argument("--pages", type=int, default=9, help="real pages (0: the known page only)")
    parser.add_argument("--scan-dpi", type=int, default=300)
    args = parser.parse_args()
    before = load_average()
    rows = run([int(d) for d in args.dpi.split(",")], args.pages, args.scan_dpi)
    print(table(rows))
    print(f"\nscanned at {args.scan_dpi} dpi; Tesseract {ocr.tessdata()}; load {before} -> {load_average()}")


if __name__ == "__main__":
    main()
