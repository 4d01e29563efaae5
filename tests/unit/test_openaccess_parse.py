"""Issue 51: each recorded answer of the open-access services read by the client's
parsers (``$CITERUN_EVALDATA/oa_responses``, real answers recorded by other projects'
tests; see its README), and the identifiers of cited works normalised as the services
need them."""

from __future__ import annotations

import json
import pathlib

import pytest

from citerun.pipeline.citations.model import ReferenceEntry
from citerun.pipeline.openaccess import Attempt, Found, WorkIds, parse
from citerun.pipeline.writer.model import LibraryItem
from tests.support.oa_server import RECORDINGS, load_recordings

needs_recordings = pytest.mark.skipif(
    not (RECORDINGS / "index.json").exists(),
    reason=f"recorded answers not found at {RECORDINGS} (set CITERUN_EVALDATA)")


def _json(name: str) -> object:
    return json.loads((RECORDINGS / name).read_text(encoding="utf-8"))


@needs_recordings
def test_unpaywall_with_and_without_url_for_pdf() -> None:
    pnas = parse.unpaywall(_json("unpaywall/v2_10.1073_pnas.1414271111.json"))
    assert pnas.pdfs[0].url == "https://www.pnas.org/content/pnas/111/45/E4832.full.pdf"
    assert pnas.pdfs[0].version == "publishedVersion" and pnas.doi == "10.1073/pnas.1414271111"
    # Every recorded answer: a PDF link only from url_for_pdf, never from a landing page,
    # and none at all for a closed article.
    for path in sorted((RECORDINGS / "unpaywall").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        lead = parse.unpaywall(data)
        wanted = [loc["url_for_pdf"] for loc in [data["best_oa_location"] or {},
                                                  *data["oa_locations"]]
                  if loc.get("url_for_pdf")]
        assert [link.url for link in lead.pdfs] == list(dict.fromkeys(wanted)), path.name
        if data["is_oa"] is False:
            assert lead.pdfs == ()
    landing_only = [p.name for p in (RECORDINGS / "unpaywall").glob("*.json")
                    if (b := json.loads(p.read_text())["best_oa_location"])
                    and not b.get("url_for_pdf")]
    assert landing_only, "the recordings hold a best location without url_for_pdf"


@needs_recordings
def test_openalex_work_list_and_select_answers() -> None:
    work = parse.openalex_work(_json("openalex/work_by_doi_10.1073_pnas.1414271111.json"))
    assert work.doi == "10.1073/pnas.1414271111"
    assert work.pmid == "25349395" and work.pmcid == "PMC4234579"
    # The best location's pdf_url is null here: the open locations' pdf_url (Europe PMC,
    # a repository) come first, open_access.oa_url (a doi.org landing link) last.
    urls = [link.url for link in work.pdfs]
    assert urls[0] == "https://europepmc.org/articles/pmc4234579?pdf=render"
    assert urls[-1] == "https://doi.org/10.1073/pnas.1414271111" and len(urls) == 3
    assert work.abstract and work.abstract.split()[0][0].isupper()
    assert work.year == 2014 and work.authors
    # With select= only the selected fields come back: no title, no abstract, no crash.
    closed = parse.openalex_work(
        _json("openalex/work_by_doi_select_open_access_10.1002_wrna.1370.json"))
    assert closed.pdfs == () and closed.abstract is None
    listed = parse.openalex_list(_json("openalex/works_filter_title_search_list.json"))
    assert listed and all(lead.service == "OpenAlex" for lead in listed)
    assert any(parse.same_work(WorkIds(title="Augmenting large language models with "
                                             "chemistry tools", year=2023), lead)
               for lead in listed)


def test_inverted_abstract_rebuilds_the_word_order() -> None:
    assert parse.inverted_abstract({"Open": [0], "access.": [1]}) is None  # under 20 chars
    index = {"Most": [0], "recent": [1], "articles": [2], "have": [3], "an": [4],
             "open": [5], "copy.": [6]}
    assert parse.inverted_abstract(index) == "Most recent articles have an open copy."


@needs_recordings
def test_crossref_work_and_404_text() -> None:
    plos = parse.crossref_work(_json("crossref/works_10.1371_journal.pone.0033693.json"))
    assert plos.doi == "10.1371/journal.pone.0033693" and plos.year == 2012 and plos.title
    # Its only link is "unspecified" for similarity checking: no PDF link.
    assert plos.pdfs == ()
    with_abstract = [p for p in (RECORDINGS / "crossref").glob("works_10*.json")
                     if "abstract" in json.loads(p.read_text())["message"]]
    for path in with_abstract:
        lead = parse.crossref_work(json.loads(path.read_text()))
        assert lead.abstract and "<" not in lead.abstract and "jats" not in lead.abstract
    assert (RECORDINGS / "crossref/works_404_10.1371_notarealdoi.txt").read_bytes().startswith(
        b"Resource not found")


def test_clean_abstract_strips_jats() -> None:
    text = ("<jats:title>Abstract</jats:title><jats:p>Open copies exist for "
            "<jats:italic>most</jats:italic> articles &amp; preprints .</jats:p>")
    assert parse.clean_abstract(text) == "Open copies exist for most articles & preprints."


@needs_recordings
def test_arxiv_feed_no_result_and_400() -> None:
    leads = parse.arxiv_feed((RECORDINGS / "arxiv/query_id_list_1605.08386.xml").read_bytes())
    assert [lead.arxiv for lead in leads] == ["1605.08386"]
    assert leads[0].pdfs[0].url.startswith("https://arxiv.org/pdf/1605.08386")
    assert leads[0].abstract and leads[0].title and leads[0].year == 2016
    two = parse.arxiv_feed(
        (RECORDINGS / "arxiv/query_id_list_0808.05394_1707.08567.xml").read_bytes())
    # 0808.05394 is no valid id (five digits after the dot only since 2015): one entry.
    assert [lead.arxiv for lead in two] == ["1707.08567"]
    old = parse.arxiv_feed(
        (RECORDINGS / "arxiv/query_id_list_astro-ph_0601001_old_style.xml").read_bytes())
    assert [lead.arxiv for lead in old] == ["astro-ph/0601001"]
    assert parse.arxiv_feed(
        (RECORDINGS / "arxiv/query_id_list_0000.0000_no_result.xml").read_bytes()) == []
    assert parse.arxiv_feed(
        (RECORDINGS / "arxiv/query_id_list_abc_400_error.xml").read_bytes()) == []


@needs_recordings
def test_europepmc_core_lite_and_no_results() -> None:
    core = parse.europepmc(_json("europepmc/search_cancer_core.json"))
    assert len(core) == 25 and all(lead.pmid or lead.pmcid for lead in core)
    data = _json("europepmc/search_cancer_core.json")
    assert isinstance(data, dict)
    open_pdfs = sum(1 for r in data["resultList"]["result"]
                    for u in r.get("fullTextUrlList", {}).get("fullTextUrl", [])
                    if u["documentStyle"] == "pdf" and u["availabilityCode"] in ("OA", "F"))
    assert sum(len(lead.pdfs) for lead in core) == open_pdfs
    assert any(lead.abstract for lead in core)
    lite = parse.europepmc(_json("europepmc/search_cancer_lite.json"))
    assert lite and all(lead.pdfs == () and lead.abstract is None for lead in lite)
    assert parse.europepmc(_json("europepmc/search_no_results.json")) == []


@needs_recordings
def test_semanticscholar_paper_match_and_404() -> None:
    paper = parse.semanticscholar_paper(
        _json("semanticscholar/paper_DOI_10.1073_pnas.1414271111.json"))
    assert paper.pdfs[0].url.endswith(".pdf") and paper.pmid == "25349395"
    arxiv = parse.semanticscholar_paper(_json(
        "semanticscholar/paper_DOI_10.48550_arxiv.2312.07559_fields_externalIds_title.json"))
    assert arxiv.arxiv == "2312.07559" and arxiv.pdfs == ()
    match = parse.semanticscholar_match(_json("semanticscholar/paper_search_match_title.json"))
    assert match[0].arxiv == "2304.05376" and match[0].pmcid == "PMC11116106"
    assert match[0].pdfs[0].licence == "CCBY"
    missing = parse.semanticscholar_paper(_json("semanticscholar/paper_404_unknown_id.json"))
    assert missing.pdfs == () and missing.title is None


@needs_recordings
def test_every_recording_has_a_replay_key() -> None:
    index = json.loads((RECORDINGS / "index.json").read_text(encoding="utf-8"))
    assert len(load_recordings()) == len(index) >= 31


def test_same_work_needs_title_year_and_author() -> None:
    ids = WorkIds(title="Attention is all you need", first_author="Vaswani", year=2017)
    lead = parse.Lead("OpenAlex", title="Attention Is All You Need.", year=2017,
                      authors=("Ashish Vaswani", "Noam Shazeer"))
    assert parse.same_work(ids, lead)
    assert not parse.same_work(ids, parse.Lead("OpenAlex", title="Attention is not all "
                                               "you need", year=2017, authors=("Vaswani",)))
    assert not parse.same_work(ids, parse.Lead("OpenAlex", title=lead.title, year=2012,
                                               authors=lead.authors))
    assert not parse.same_work(ids, parse.Lead("OpenAlex", title=lead.title, year=2017,
                                               authors=("Someone Else",)))


def test_ids_from_a_library_item_and_an_entry() -> None:
    item = LibraryItem(key="smith2020", title="A  Title", authors=("Smith",), year=2020,
                       doi="https://doi.org/10.1000/ABC.1", arxiv="arXiv:2101.01234v3",
                       pmid="PMID: 00042", pmcid="pmc7", isbn="978-3-16-148410-0",
                       url="https://example.org/paper.pdf")
    ids = WorkIds.from_library_item(item)
    assert (ids.doi, ids.arxiv, ids.pmid, ids.pmcid, ids.isbn) == (
        "10.1000/abc.1", "2101.01234", "42", "PMC7", "9783161484100")
    assert ids.key() == "doi:10.1000/abc.1" and ids.title == "A Title"
    assert ids.tried()[:2] == ["DOI 10.1000/abc.1", "arXiv 2101.01234"]
    arxiv_doi = WorkIds.build(doi="10.48550/arXiv.2312.07559")
    assert arxiv_doi.arxiv == "2312.07559"
    entry = ReferenceEntry(index=0, text="Smith, J. (2019). Some title. arXiv preprint "
                           "arXiv:1905.00001. PMID: 123", label="1", authors=("Smith",),
                           year=2019, year_suffix="", title="Some title")
    from_entry = WorkIds.from_entry(entry)
    assert (from_entry.arxiv, from_entry.pmid, from_entry.doi) == ("1905.00001", "123", None)
    titled = WorkIds.from_entry(ReferenceEntry(0, "Müller (2018). Über Dinge.", None,
                                               ("Müller",), 2018, "", "Über Dinge"))
    assert titled.key() == "title:ueber dinge|mueller|2018"
    assert titled.tried() == ["title \u201cÜber Dinge\u201d (Müller, 2018)"]


def test_found_round_trips_through_json() -> None:
    found = Found("pdf", pdf=b"%PDF-1.7", pdf_url="https://x.org/a.pdf", service="Unpaywall",
                  licence="cc-by", version="publishedVersion", abstract="An abstract text.",
                  abstract_service="OpenAlex",
                  attempts=(Attempt("Unpaywall", "DOI 10.1000/x", "a PDF, 8 bytes"),))
    data = json.loads(json.dumps(found.to_json()))
    assert "pdf" not in data
    assert Found.from_json(data, pdf=b"%PDF-1.7") == found
    with pytest.raises(ValueError):
        Found.from_json(data)  # kind "pdf" without its bytes
    with pytest.raises(ValueError):
        Found("abstract")
