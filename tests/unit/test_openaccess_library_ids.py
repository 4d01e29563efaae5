"""Issue 51: the identifiers a writer's library states beyond the DOI (arXiv id, PMID,
PMCID, ISBN, URL) read from BibTeX/BibLaTeX, CSL-JSON and Paperpile's field data, and
the bench that counts them in the real theses' libraries."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from citerun.pipeline.openaccess import WorkIds
from citerun.pipeline.writer import fields, formats

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("CITERUN_EVALDATA", ROOT.parent / "shared" / "evaldata"))

BIB = rb"""
@article{vaswani2017, title={Attention Is All You Need}, author={Vaswani, Ashish},
  year={2017}, eprint={1706.03762}, archivePrefix={arXiv}, primaryClass={cs.CL}}
@online{old, title={Old style}, author={Witten, E.}, year={1998},
  eprinttype={arxiv}, eprint={hep-th/9802150v2}}
@article{med, title={A trial}, author={Doe, J.}, year={2015}, pmid={26068643},
  pmcid={PMC4470000}, url={https://www.ncbi.nlm.nih.gov/pmc/articles/PMC4470000/}}
@book{book, title={A Book}, author={Roe, R.}, year={1957}, isbn={978-0-691-07951-6}}
@misc{web, title={A page}, author={Poe, P.}, year={2020}, url={http://example.org/a\_b.pdf}}
@misc{ssrn, title={Not arXiv}, author={Loe, L.}, year={2020}, eprint={12345},
  eprinttype={ssrn}}
@proceedings{conf, title={Proceedings}, year={2019}, url={https://conf.example.org/},
  eprint={1901.00001}}
@inproceedings{paper, title={A paper}, author={Koe, K.}, crossref={conf}}
"""


def _ids(files: dict[str, bytes]) -> dict[str, WorkIds]:
    items, _ = formats.read_library(files)
    return {item.key: WorkIds.from_library_item(item) for item in items}


def test_bibtex_states_arxiv_pubmed_isbn_and_url() -> None:
    ids = _ids({"refs.bib": BIB})
    assert ids["vaswani2017"].arxiv == "1706.03762"
    assert ids["vaswani2017"].key() == "arxiv:1706.03762"
    assert ids["old"].arxiv == "hep-th/9802150"
    assert (ids["med"].pmid, ids["med"].pmcid) == ("26068643", "PMC4470000")
    assert ids["book"].isbn == "9780691079516"
    assert ids["web"].url == "http://example.org/a_b.pdf"
    assert ids["ssrn"].arxiv is None
    # A crossref parent's URL and eprint name the parent, not the paper.
    assert ids["paper"].url is None and ids["paper"].arxiv is None


def test_csl_json_states_pmid_url_and_zoteros_arxiv_number() -> None:
    csl = [{"id": "a", "type": "article", "title": "A preprint", "number": "2101.01234",
            "publisher": "arXiv", "URL": "http://arxiv.org/abs/2101.01234"},
           {"id": "b", "type": "article-journal", "title": "Medicine", "PMID": "123",
            "PMCID": "PMC9", "ISBN": "0-306-40615-2"},
           {"id": "c", "type": "article-journal", "title": "Numbered", "number": "7"}]
    ids = _ids({"refs.json": json.dumps(csl).encode()})
    assert ids["a"].arxiv == "2101.01234" and ids["a"].url == "http://arxiv.org/abs/2101.01234"
    assert (ids["b"].pmid, ids["b"].pmcid, ids["b"].isbn) == ("123", "PMC9", "0306406152")
    assert ids["c"].arxiv is None


def test_paperpile_items_state_pmid_pmc_arxiv_and_their_first_url() -> None:
    item = fields._paperpile_item({
        "title": "T", "author": [{"last": "Doe"}], "published": {"year": "2012"},
        "pmid": "26068643", "pmc": "PMC1", "arxivid": "1211.1323", "isbn": "9780941938051",
        "url": ["http://dx.doi.org/10.5465/amp.25.1.6", "https://example.org/x"]}, "k")
    ids = WorkIds.from_library_item(item)
    assert (ids.pmid, ids.pmcid, ids.arxiv, ids.isbn) == (
        "26068643", "PMC1", "1211.1323", "9780941938051")
    # A doi.org link is the DOI itself.
    assert ids.url == "http://dx.doi.org/10.5465/amp.25.1.6" and ids.doi == "10.5465/amp.25.1.6"


def test_the_library_ids_bench_counts_every_item() -> None:
    if not (DATA / "theses" / "steffen_bachelor_docx_de").exists():
        message = f"the theses are not at {DATA / 'theses'} (set CITERUN_EVALDATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [sys.executable, "-m", "bench.quality.library_ids", "--only", "steffen,fabiank",
         "--server", "--json", "/dev/stdout"], cwd=ROOT, capture_output=True, text=True,
        timeout=600,
        env={**os.environ, "CITERUN_EVALDATA": str(DATA)})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert set(rows) == {"steffen", "fabiank"}
    for row in rows.values():
        assert sum(row["all"].values()) == row["items"] > 0
        assert sum(row["cited"].values()) == row["cited_items"] <= row["items"]
    assert rows["steffen"]["all"]["DOI"] > 0 and rows["fabiank"]["all"]["ISBN only"] > 0
    # --server: every cited work looked up against the local test server; each one with
    # an identifier is found there as a PDF, each title-only one is not.
    # (the last row of each thesis is the --server table's: works, PDF, abstract, none, ...)
    server = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
              for line in done.stdout.splitlines()
              if line.startswith("| steffen |") or line.startswith("| fabiank |")}
    identified = sum(rows["steffen"]["cited"].get(c, 0) for c in ("DOI", "arXiv", "PMID/PMCID"))
    assert int(server["steffen"][1]) == identified > 0
    assert int(server["fabiank"][1]) == 0 and int(server["fabiank"][3]) == int(server["fabiank"][0])
