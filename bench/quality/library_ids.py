"""What open-access fetching could reach (issue 51): the identifiers the four real
theses' libraries carry.

Usage::

    python -m bench.quality.library_ids [--write-docs] [--json OUT] [--server]

Each thesis of ``$CITERUN_EVALDATA/theses`` is read as ``citerun verify`` reads it (the
CLI's staging, then the writer's readers), and each library item is sorted by the best
identifier it carries, as :class:`citerun.pipeline.openaccess.WorkIds` normalises them:
a DOI; else an arXiv id; else a PMID or PMCID; else an ISBN; else only a URL; else a
title (with author and year: a title lookup); else nothing. "cited" counts only the
items a citation of the thesis names. No request is made to any real service.

``--server`` also looks every cited item up with the client against the local test
server (tests/support/oa_server.py), each identified work listed there as open access
with a PDF and each title unknown, the library's own URLs not followed (they name real
hosts): the requests a run would send, the client's own wall
time with pacing off, and the least time the services' published rates would take (per
host, its requests times its default interval; the hosts in parallel).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import time
from collections import Counter
from urllib.parse import urlsplit

from bench import machine
from citerun.cli import verify
from citerun.pipeline import openaccess
from citerun.pipeline.openaccess import WorkIds
from citerun.pipeline.writer import formats
from citerun.pipeline.writer.model import LibraryItem
from evalsets import evaldata

# (name, main file, library or None): as bench/pipeline/theses.py runs them.
THESES = (
    ("humanimal", "humanimal_bachelor_de/thesis.tex", "humanimal_bachelor_de/literatur.bib"),
    ("fabiank", "fabiank_bachelor_de/bachelorarbeit.tex", "fabiank_bachelor_de/literatur.bib"),
    ("cdeckert", "cdeckert_masterarbeit_de/latex/main.tex",
     "cdeckert_masterarbeit_de/latex/literatur.bib"),
    ("steffen", "steffen_bachelor_docx_de/thesis.docx", None),
)
CLASSES = ("DOI", "arXiv", "PMID/PMCID", "ISBN only", "URL only", "title only", "nothing")
SECTION = "## Issue 51: identifiers in the theses' libraries (what fetching could reach)"


def classify(item: LibraryItem) -> str:
    """The best identifier an item carries, one of :data:`CLASSES`."""
    ids = WorkIds.from_library_item(item)
    if ids.doi:
        return "DOI"
    if ids.arxiv:
        return "arXiv"
    if ids.pmid or ids.pmcid:
        return "PMID/PMCID"
    if ids.isbn:
        return "ISBN only"
    if ids.url:
        return "URL only"
    return "title only" if ids.title else "nothing"


def cited_items(main: str, library: str | None) -> tuple[dict[str, LibraryItem], set[str]]:
    root = evaldata() / "theses"
    bibs = [root / library] if library else []
    thesis = formats.read_thesis(verify.load_thesis(root / main, bibs).data)
    cited_keys = {key for citation in thesis.citations for key in citation.keys}
    return {item.key: item for item in thesis.library}, cited_keys


def count(main: str, library: str | None) -> dict[str, object]:
    started = time.process_time()
    items, cited_keys = cited_items(main, library)
    every = Counter(classify(item) for item in items.values())
    carrying: Counter[str] = Counter()
    for item in items.values():
        ids = WorkIds.from_library_item(item)
        carrying.update(name for name, value in (
            ("DOI", ids.doi), ("arXiv", ids.arxiv), ("PMID/PMCID", ids.pmid or ids.pmcid),
            ("ISBN", ids.isbn), ("URL", ids.url)) if value)
    cited = Counter(classify(item) for key, item in items.items() if key in cited_keys)
    return {"items": len(items), "cited_items": sum(cited.values()),
            "all": dict(every), "cited": dict(cited), "carrying": dict(carrying),
            "read_cpu_s": round(time.process_time() - started, 2)}


def table(rows: dict[str, dict[str, object]], which: str) -> list[str]:
    lines = [f"| thesis | {'items' if which == 'all' else 'cited items'} | "
             + " | ".join(CLASSES) + " |", "|---|" + "---:|" * (len(CLASSES) + 1)]
    totals: Counter[str] = Counter()
    for name, row in rows.items():
        counts = row[which]
        assert isinstance(counts, dict)
        total = sum(counts.values())
        totals.update(counts)
        totals["_"] += total
        lines.append(f"| {name} | {total} | " + " | ".join(
            str(counts.get(c, 0)) for c in CLASSES) + " |")
    lines.append(f"| **all four** | **{totals['_']}** | " + " | ".join(
        f"**{totals[c]}**" for c in CLASSES) + " |")
    return lines


CARRIED = ("DOI", "arXiv", "PMID/PMCID", "ISBN", "URL")


def carried(rows: dict[str, dict[str, object]]) -> list[str]:
    lines = ["| thesis | items | " + " | ".join(CARRIED) + " |",
             "|---|" + "---:|" * (len(CARRIED) + 1)]
    for name, row in rows.items():
        counts = row["carrying"]
        assert isinstance(counts, dict)
        lines.append(f"| {name} | {row['items']} | "
                     + " | ".join(str(counts.get(c, 0)) for c in CARRIED) + " |")
    return lines


def report(rows: dict[str, dict[str, object]]) -> str:
    return "\n".join([
        SECTION, "",
        "`python -m bench.quality.library_ids --write-docs`: each library item of the four",
        "real theses (`$CITERUN_EVALDATA/theses`, read as `citerun verify` reads them) by the",
        "best identifier it carries (`openaccess.WorkIds`): a DOI; else an arXiv id; else a",
        "PMID or PMCID; else an ISBN; else only a URL; else a title for a title lookup",
        "(OpenAlex, Semantic Scholar, Crossref); else nothing. No request is made.", "",
        "Every item of each library:", "", *table(rows, "all"), "",
        "Only the items the thesis cites (what a run would look up):", "",
        *table(rows, "cited"), "",
        "Items carrying each identifier at all (one item may carry several; a `doi.org`",
        "link counts as the DOI):", "", *carried(rows), "",
        machine.summary_line() + ".", ""])


async def _look_up(ids: list[WorkIds], settings: openaccess.OpenAccessSettings
                   ) -> tuple[Counter[str], Counter[str], float]:
    started = time.monotonic()
    async with openaccess.Session(settings) as session:
        found = [await openaccess.find_source(work, session) for work in ids]
    paths: Counter[str] = Counter()
    for f in found:
        paths.update(a.service for a in f.attempts if not a.identifier.startswith("http"))
        paths.update("PDF" for a in f.attempts if a.identifier.startswith("http"))
    return Counter(f.kind for f in found), paths, time.monotonic() - started


def server_run(rows: dict[str, dict[str, object]]) -> str:
    """Every cited item looked up against the local test server (see the docstring)."""
    from tests.support.oa_server import OaServer  # noqa: PLC0415 - a test server, on demand

    lines = ["| thesis | works | PDF | abstract | none | requests | client wall s (pacing "
             "off) | least s at the published rates |", "|---|" + "---:|" * 7]
    defaults = openaccess.OpenAccessSettings()
    for name, main_file, library in THESES:
        if name not in rows:
            continue
        items, cited_keys = cited_items(main_file, library)
        ids = list({w.key(): w for w in (WorkIds.from_library_item(items[k])
                                         for k in sorted(cited_keys) if k in items)}.values())
        works = {(f"doi:{w.doi}" if w.doi else f"arxiv:{w.arxiv}" if w.arxiv else
                  f"pmcid:{w.pmcid}" if w.pmcid else f"pmid:{w.pmid}"): "pdf"
                 for w in ids if w.has_identifier()}
        with OaServer(works) as srv:
            # The library's own URLs name real hosts: never followed here (loopback only).
            kinds, _, wall = asyncio.run(_look_up(ids, srv.settings(try_library_urls=False)))
            per_host: Counter[str] = Counter()
            for path, n in srv.requests.items():
                per_host[_real_host(path, defaults)] += n
        least = max((n * _interval(host, defaults) for host, n in per_host.items()),
                    default=0.0)
        lines.append(f"| {name} | {len(ids)} | {kinds['pdf']} | {kinds['abstract']} | "
                     f"{kinds['none']} | {sum(per_host.values())} | {wall:.1f} | {least:.0f} |")
    return "\n".join(lines)


_PREFIXES = (("/unpaywall/", "unpaywall_url"), ("/openalex/", "openalex_url"),
             ("/crossref/", "crossref_url"), ("/arxiv/api/", "arxiv_api_url"),
             ("/arxiv/pdf/", "arxiv_pdf_url"), ("/europepmc/", "europepmc_url"),
             ("/s2/", "semanticscholar_url"))


def _real_host(path: str, settings: openaccess.OpenAccessSettings) -> str:
    """The real service's host a test-server path stands for ("pdf" for a PDF host)."""
    for prefix, field in _PREFIXES:
        if path.startswith(prefix):
            return urlsplit(getattr(settings, field)).hostname or field
    return "pdf"


def _interval(host: str, settings: openaccess.OpenAccessSettings) -> float:
    async def interval() -> float:
        async with openaccess.Session(settings) as session:
            return session.interval_of(host)
    return asyncio.run(interval())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write-docs", action="store_true",
                        help="write the table into docs/benchmarks.md")
    parser.add_argument("--json", type=pathlib.Path, help="write the counts as JSON")
    parser.add_argument("--only", help="comma-separated thesis names")
    parser.add_argument("--server", action="store_true",
                        help="also look the cited items up against the local test server")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else None
    rows = {name: count(main_file, library) for name, main_file, library in THESES
            if wanted is None or name in wanted}
    text = report(rows)
    if args.server:
        text = text.replace("\n" + machine.summary_line().split(";")[0], "\n" + "\n".join([
            "The cited items looked up with the client against the local test server",
            "(`--server`): each identified work listed there as open access with a PDF, each",
            "title unknown, the library's own URLs not followed (they name real hosts);",
            "requests as a run would send them; the client's wall time with pacing off; the",
            "least time at the services' published rates (the busiest host's requests times",
            "its default interval):", "",
            server_run(rows), "", machine.summary_line().split(";")[0]]), 1)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    machine.write_section_if(args.write_docs, SECTION, text)


if __name__ == "__main__":
    main()
