"""Evaluate parsing, reference lists, markers and mapping on real published PDFs.

Usage::

    python bench/eval_realpdf.py            # print the tables
    python bench/eval_realpdf.py --write    # and replace the section in docs/benchmarks.md
    python bench/eval_realpdf.py --entries papermage_lo2023.pdf   # dump one parsed list

Reads ``$CITERUN_EVALDATA/realpdf`` (default ``<repo>/../shared/evaldata/realpdf``; see
its README). Per document: pages, seconds per page for parse + extract, markers and
citations found, reference entries found against the true count (the two CERMINE
articles from their JATS gold lists, the others counted once by hand and kept in
``TRUE_ENTRIES``), and how many entries have the right first surname and year (gold for
the CERMINE articles; for the others an entry counts when its first surname stands in
the entry's first author and its year is printed in it: a weaker check, said so in the
table). Then each pair of ``PAIRS.tsv``: the citing paper's extraction mapped against
the cited PDF alone, and whether the pair's marker maps to it.

Three documents are held out of tuning (``HELD_OUT``) and reported on their own rows.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import pathlib
import re
import sys
import time
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import machine  # noqa: E402

from citerun.worker.pipeline import citations, pdf  # noqa: E402

# Reference entries counted by hand in each PDF (the CERMINE ones come from gold/).
TRUE_ENTRIES: dict[str, int] = {
    "beyond_summarization_shen2023.pdf": 32,
    # The PDF prints 40 entries; its JATS gold list has 44 because it splits four
    # (e.g. a URL line as an entry of its own). The gold is used for surname + year.
    "cermine_test5.pdf": 40,
    "citesee_chang2023.pdf": 65,
    "dont_stop_pretraining_gururangan2020.pdf": 55,
    "longeval_krishna2023.pdf": 66,
    "multilexsum_shen2022.pdf": 64,
    "paper_plain_august2022.pdf": 111,
    "papermage_lo2023.pdf": 53,
}
# Not looked at while the rules were written; reported separately.
HELD_OUT = frozenset({"longeval_krishna2023.pdf", "paper_plain_august2022.pdf", "cermine_test5.pdf"})
SECTION = "## Real PDFs: reference lists, markers, mapping"


def evaldata() -> pathlib.Path:
    return pathlib.Path(os.environ.get("CITERUN_EVALDATA", ROOT.parent / "shared" / "evaldata"))


@dataclasses.dataclass
class DocResult:
    name: str
    pages: int
    seconds: float
    markers: int
    citations: int
    entries: int
    true_entries: int | None
    correct: int
    gold: bool
    plausible: int
    bracket_groups: int | None


def _gold(path: pathlib.Path) -> list[tuple[str, int | None]]:
    """(first surname, year) of each entry of a JATS gold reference list."""
    tree = ET.parse(path)
    result: list[tuple[str, int | None]] = []
    for ref in tree.iter("ref"):
        surname = next((s.text or "" for s in ref.iter("surname")), "")
        if not surname:
            collab = next((c.text or "" for c in ref.iter("collab")), "")
            surname = collab.split()[0] if collab.split() else ""
        year_text = next((y.text or "" for y in ref.iter("year")), "")
        year_match = re.search(r"\d{4}", year_text)
        result.append((surname, int(year_match.group()) if year_match else None))
    return result


def _plausible(entry: citations.ReferenceEntry) -> bool:
    """First surname within the entry's opening words and its year printed in it."""
    if not entry.authors or entry.year is None:
        return False
    head = citations.fold(entry.text[:80])
    return citations.fold(entry.authors[0]) in head and str(entry.year) in entry.text


_BRACKET_GROUP = re.compile(r"\[\s*\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\s*\]")


def bracket_groups(path: pathlib.Path) -> int:
    """Numeric bracket groups ("[8, 9, 14]") in MuPDF's plain text: an independent
    count of a numbered paper's markers."""
    import pymupdf  # noqa: PLC0415

    with pymupdf.open(path) as doc:  # type: ignore[no-untyped-call]
        text = "".join(doc[i].get_text() for i in range(doc.page_count))
    # Everywhere (appendices cite too) except at a line start, where the list's own
    # labels stand.
    groups = [m for m in _BRACKET_GROUP.finditer(text)
              if text[:m.start()].rstrip(" \t")[-1:] not in ("\n", "")]
    return len(groups)


def _parse(path: pathlib.Path) -> tuple[pdf.ParsedDocument, float]:
    start = time.perf_counter()
    doc = pdf.parse_pdf(path.read_bytes(), max_bytes=200 * 1024 * 1024)
    return doc, time.perf_counter() - start


def evaluate_document(path: pathlib.Path, gold_dir: pathlib.Path) -> tuple[DocResult, citations.Extraction]:
    doc, parse_s = _parse(path)
    start = time.perf_counter()
    extraction = citations.extract([(p.number, p.text) for p in doc.pages])
    seconds = parse_s + time.perf_counter() - start
    gold_file = gold_dir / f"{path.stem}-content.xml"
    gold = _gold(gold_file) if gold_file.exists() else None
    entries = extraction.references
    plausible = sum(1 for e in entries if _plausible(e))
    if gold is not None:
        wanted = {(citations.fold(s), y) for s, y in gold}
        correct = sum(
            1 for e in entries
            if e.authors and (citations.fold(e.authors[0]), e.year) in wanted
        )
    else:
        correct = plausible
    markers = len({(c.page, c.marker, c.claim) for c in extraction.citations})
    groups: int | None = None
    if any(e.label and e.label.isdigit() for e in entries) and any(
            c.marker.startswith("[") for c in extraction.citations):
        groups = bracket_groups(path)  # compare like with like: bracketed markers
        markers = len({(c.page, c.marker, c.claim) for c in extraction.citations
                       if c.marker.startswith("[")})
    return DocResult(
        name=path.name,
        pages=doc.page_count,
        seconds=seconds,
        markers=markers,
        citations=len(extraction.citations),
        entries=len(entries),
        true_entries=TRUE_ENTRIES.get(path.name, len(gold) if gold is not None else None),
        correct=correct,
        gold=gold is not None,
        plausible=plausible,
        bracket_groups=groups,
    ), extraction


@dataclasses.dataclass
class PairResult:
    citing: str
    cited: str
    marker: str
    mapped_keys: list[str]
    ok: bool
    reason: str


def _source_info(path: pathlib.Path) -> citations.SourceInfo:
    doc, _ = _parse(path)
    return citations.SourceInfo(
        document_id=path.name, filename=path.name, title=doc.title, authors=doc.authors,
        year=doc.year, doi=doc.doi, arxiv_id=doc.arxiv_id,
    )


def evaluate_pair(row: dict[str, str], pdfs: pathlib.Path,
                  extractions: dict[str, citations.Extraction]) -> PairResult:
    extraction = extractions[row["citing"]]
    source = _source_info(pdfs / row["cited"])
    mapped = citations.map_citations(extraction, [source])
    wanted = " ".join(row["marker"].split())
    hits = [m for m in mapped if m.document_id == source.document_id]
    at_marker = [m for m in hits if " ".join(m.citation.marker.split()) == wanted]
    reason = at_marker[0].reason if at_marker and at_marker[0].reason else ""
    return PairResult(
        citing=row["citing"], cited=row["cited"], marker=wanted,
        mapped_keys=sorted({m.citation.key for m in hits}), ok=bool(at_marker), reason=reason,
    )


def _machine_line() -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return ("Machine: " + ", ".join(f"{k} {v}" for k, v in machine.basics().items())
            + f"; load average {load} (other jobs share the 2 cores: times are inflated)")


def _pct(part: int, whole: int | None) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "–"


def render(docs: list[DocResult], pairs: list[PairResult]) -> str:
    lines = [
        SECTION,
        "",
        "`python bench/eval_realpdf.py --write` over `../shared/evaldata/realpdf/` (9 real",
        "papers: ACL two-column author-year, ACM numbered, arXiv preprints, journal",
        "articles). *entries ok*: first surname and year right. For the two CERMINE",
        "articles against their JATS gold lists (CERMINE's own output: test5's splits entries",
        "and drops names, so it undercounts); everywhere the weaker *plausible* check that",
        "the parsed first surname opens the entry and the year is printed in it. *held out*:",
        "not looked at while the rules were first written (cermine_test5 was looked at after",
        "its first run: superscript markers, label lines). Seconds per page are parse",
        "(layout) + extract. *bracket groups in text*: for papers that cite `[n]`, the",
        "numeric bracket groups in MuPDF's plain text not at a line start (where the list's",
        "labels stand), an independent count of the markers (*markers* then counts the",
        "bracketed ones found; intervals like `[0, 1]` would count there, not here).",
        "",
        "| document | set | pages | s/page | markers | bracket groups in text | citations | entries found / true | entries ok |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for held in (False, True):
        for d in docs:
            if (d.name in HELD_OUT) != held:
                continue
            true = d.true_entries if d.true_entries is not None else "?"
            ok = f"{d.correct} ({_pct(d.correct, d.entries)})"
            if d.gold:
                ok += f" vs gold; {d.plausible} ({_pct(d.plausible, d.entries)}) plausible"
            lines.append(
                f"| {d.name} | {'held out' if held else 'tuned on'} | {d.pages} | "
                f"{d.seconds / max(d.pages, 1):.3f} | {d.markers} | "
                f"{d.bracket_groups if d.bracket_groups is not None else '–'} | {d.citations} | "
                f"{d.entries} / {true} | {ok} |"
            )
    lines += [
        "",
        "| citing | cited | marker | maps to the cited PDF | keys mapped | why |",
        "|---|---|---|---|---|---|",
    ]
    for p in pairs:
        lines.append(
            f"| {p.citing} | {p.cited} | `{p.marker}` | {'yes' if p.ok else '**no**'} | "
            f"{', '.join(p.mapped_keys) or '–'} | {p.reason or '–'} |"
        )
    lines += ["", _machine_line(), ""]
    return "\n".join(lines)


def layout_cost(path: pathlib.Path) -> list[tuple[str, float]]:
    """Seconds for one PDF: MuPDF's block order (the old parser's text step), the layout
    step (``get_text("dict")`` lines, columns, paragraphs), the page renderings, the whole
    ``parse_pdf`` and ``extract``."""
    import pymupdf  # noqa: PLC0415 (only this measurement needs it directly)

    from citerun.worker.pipeline import layout  # noqa: PLC0415

    data = path.read_bytes()
    timings: list[tuple[str, float]] = []
    with pymupdf.open(stream=data, filetype="pdf") as doc:  # type: ignore[no-untyped-call]
        start = time.perf_counter()
        for index in range(doc.page_count):
            doc[index].get_text("blocks", flags=layout.TEXT_FLAGS, sort=True)
        timings.append(("MuPDF blocks, sorted (old text step)", time.perf_counter() - start))
        start = time.perf_counter()
        layout.read_document(doc)
        timings.append(("layout: dict lines, columns, paragraphs", time.perf_counter() - start))
        start = time.perf_counter()
        pdf._render(doc)
        timings.append(("render every page (grey JPEG, 0.6x)", time.perf_counter() - start))
    start = time.perf_counter()
    parsed = pdf.parse_pdf(data, max_bytes=500 * 1024 * 1024)
    timings.append(("parse_pdf (as the worker runs it)", time.perf_counter() - start))
    start = time.perf_counter()
    citations.extract([(p.number, p.text) for p in parsed.pages])
    timings.append(("extract", time.perf_counter() - start))
    return timings


LAYOUT_SECTION = "## Layout step: pymupdf4llm vs line geometry"


def time_pymupdf4llm(count: int, write: bool) -> int:
    """Seconds per page of pymupdf4llm's layout model against this module's layout step."""
    import pymupdf  # noqa: PLC0415
    import pymupdf4llm  # type: ignore[import-not-found]  # noqa: PLC0415

    from citerun.worker.pipeline import layout  # noqa: PLC0415

    paths = sorted((evaldata() / "realpdf" / "pdfs").glob("*.pdf"), key=lambda p: p.stat().st_size)
    lines = [
        LAYOUT_SECTION,
        "",
        "`python bench/eval_realpdf.py --pymupdf4llm 3 --write`: pymupdf 2's own layout",
        "analysis (`pymupdf4llm.to_markdown(doc, use_ocr=False)`, an ONNX model shipped in",
        "the wheel) against `worker/pipeline/layout.py` (`get_text(\"dict\")` lines, columns,",
        "paragraphs) on the smallest real PDFs, same process, same machine.",
        "",
        "| document | pages | pymupdf4llm s/page | layout step s/page |",
        "|---|---:|---:|---:|",
    ]
    print("\n".join(lines))
    for path in paths[:count]:
        with pymupdf.open(path) as doc:  # type: ignore[no-untyped-call]
            start = time.perf_counter()
            pymupdf4llm.to_markdown(doc, use_ocr=False, show_progress=False)
            model = time.perf_counter() - start
            start = time.perf_counter()
            layout.read_document(doc)
            ours = time.perf_counter() - start
            lines.append(f"| {path.name} | {doc.page_count} | {model / doc.page_count:.2f} | "
                         f"{ours / doc.page_count:.3f} |")
            print(lines[-1], flush=True)
    lines += [
        "",
        "Chosen: the line geometry. The model is one to two orders of magnitude slower per",
        "page (a 150-page thesis would take minutes, over the 30 s budget for parse +",
        "extract), and it returns Markdown without the line boxes that the report needs to",
        "highlight evidence; the geometry gives reading order across columns, line starts,",
        "hanging indents and boxes directly. The model stays an option for layouts the",
        "geometry misreads (three columns, text wrapped around figures).",
        "",
        _machine_line(),
        "",
    ]
    if write:
        machine.write_section(LAYOUT_SECTION, "\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--entries", metavar="PDF", help="print the parsed list of one PDF")
    parser.add_argument("--large", metavar="PDF", type=pathlib.Path,
                        help="time the layout step on one PDF (make_large_thesis.py's thesis)")
    parser.add_argument("--pymupdf4llm", metavar="N", type=int, default=0,
                        help="also time pymupdf's own layout analysis (pymupdf4llm.to_markdown, "
                        "use_ocr=False) on the N smallest real PDFs")
    args = parser.parse_args(argv)
    if args.pymupdf4llm:
        return time_pymupdf4llm(args.pymupdf4llm, args.write)
    large: list[str] = []
    if args.large:
        pages = pdf.parse_pdf(args.large.read_bytes(), max_bytes=500 * 1024 * 1024).page_count
        large = [
            "",
            f"Layout step on `make_large_thesis.py`'s thesis ({pages} pages; `--large`):",
            "",
            "| step | s | ms/page |",
            "|---|---:|---:|",
        ]
        for stage, seconds in layout_cost(args.large):
            large.append(f"| {stage} | {seconds:.2f} | {1000 * seconds / pages:.1f} |")
        if not args.write:
            print("\n".join(large))
            return 0
    data = evaldata() / "realpdf"
    if not data.is_dir():
        print(f"no evaluation data at {data} (set CITERUN_EVALDATA)", file=sys.stderr)
        return 2
    pdfs, gold_dir = data / "pdfs", data / "gold"
    if args.entries:
        _, extraction = evaluate_document(pdfs / args.entries, gold_dir)
        for entry in extraction.references:
            print(f"{entry.label or entry.index}\t{entry.authors[:2]}\t{entry.year}\t{entry.title}\t| {entry.text[:150]}")
        for c in extraction.citations:
            print(f"p{c.page}\t{c.key}\t{c.marker}")
        return 0
    docs: list[DocResult] = []
    extractions: dict[str, citations.Extraction] = {}
    for path in sorted(pdfs.glob("*.pdf")):
        result, extraction = evaluate_document(path, gold_dir)
        docs.append(result)
        extractions[path.name] = extraction
    with (data / "PAIRS.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    pairs = [evaluate_pair(row, pdfs, extractions) for row in rows]
    text = render(docs, pairs) + "\n".join(large) + ("\n" if large else "")
    print(text)
    if args.write:
        machine.write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
