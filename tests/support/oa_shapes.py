"""The answers of the open-access services in the shapes their documentation gives
(docs/openaccess.md names each page and the date read), for the works of an
:class:`~tests.support.oa_server.OaServer` scenario. Only documented fields are filled.
"""

from __future__ import annotations

import typing
from xml.sax.saxutils import escape

if typing.TYPE_CHECKING:
    from tests.support.oa_server import Work

Json = dict[str, typing.Any]


def _location(pdf_url: str | None, landing: str) -> Json:
    # Unpaywall "OA Location object": url, url_for_pdf, url_for_landing_page, license,
    # version, host_type, is_best, evidence.
    return {"url": pdf_url or landing, "url_for_pdf": pdf_url, "url_for_landing_page": landing,
            "license": "cc-by", "version": "publishedVersion", "host_type": "publisher",
            "is_best": True, "evidence": "open (via page says license)", "pmh_id": None,
            "endpoint_id": None, "repository_institution": None, "oa_date": "2021-01-01",
            "updated": "2021-01-01T00:00:00"}


def unpaywall(work: Work, pdf_url: str | None, landing: str) -> Json:
    """``GET /v2/<doi>``: the DOI object."""
    location = _location(pdf_url, landing) if pdf_url else None
    return {"doi": work.doi, "doi_url": f"https://doi.org/{work.doi}", "title": work.title,
            "genre": "journal-article", "is_paratext": False, "published_date": f"{work.year}-01-01",
            "year": work.year, "journal_name": "Journal of Tests", "journal_issns": None,
            "journal_is_oa": False, "journal_is_in_doaj": False, "publisher": "Test Press",
            "is_oa": location is not None, "oa_status": "hybrid" if location else "closed",
            "has_repository_copy": False, "best_oa_location": location,
            "first_oa_location": location, "oa_locations": [location] if location else [],
            "oa_locations_embargoed": [], "data_standard": 2,
            "z_authors": [{"family": a, "given": "A."} for a in work.authors],
            "updated": "2021-01-01T00:00:00"}


def unpaywall_404(doi: str) -> Json:
    return {"HTTP_status_code": 404, "error": True,
            "message": f"'{doi}' is an invalid doi. See https://doi.org/{doi}"}


def inverted_index(text: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index


def openalex(work: Work, pdf_url: str | None, landing: str) -> Json:
    """A Work object: ids, open_access, best_oa_location, locations, authorships,
    abstract_inverted_index."""
    location = {"is_oa": pdf_url is not None, "landing_page_url": landing, "pdf_url": pdf_url,
                "source": None, "license": "cc-by" if pdf_url else None,
                "license_id": None, "version": "publishedVersion" if pdf_url else None,
                "is_accepted": True, "is_published": True}
    ids: Json = {"openalex": "https://openalex.org/W1"}
    if work.doi:
        ids["doi"] = f"https://doi.org/{work.doi}"
    if work.pmid:
        ids["pmid"] = f"https://pubmed.ncbi.nlm.nih.gov/{work.pmid}"
    if work.pmcid:
        ids["pmcid"] = f"https://www.ncbi.nlm.nih.gov/pmc/articles/{work.pmcid[3:]}"
    return {"id": "https://openalex.org/W1",
            "doi": f"https://doi.org/{work.doi}" if work.doi else None,
            "title": work.title, "display_name": work.title, "publication_year": work.year,
            "ids": ids, "primary_location": location,
            "open_access": {"is_oa": pdf_url is not None,
                            "oa_status": "gold" if pdf_url else "closed",
                            "oa_url": pdf_url, "any_repository_has_fulltext": False},
            "authorships": [{"author_position": "first" if i == 0 else "middle",
                             "author": {"id": f"https://openalex.org/A{i}",
                                        "display_name": f"A. {a}"}}
                            for i, a in enumerate(work.authors)],
            "locations": [location], "best_oa_location": location if pdf_url else None,
            "abstract_inverted_index": inverted_index(work.abstract)}


def openalex_list(works: list[Json]) -> Json:
    return {"meta": {"count": len(works), "db_response_time_ms": 5, "page": 1,
                     "per_page": 25, "groups_count": None},
            "results": works, "group_by": []}


def crossref(work: Work) -> Json:
    """``GET /works/<doi>``: the envelope and its work message (abstract as JATS)."""
    return {"status": "ok", "message-type": "work", "message-version": "1.0.0",
            "message": crossref_item(work)}


def crossref_item(work: Work) -> Json:
    return {"DOI": work.doi, "type": "journal-article", "title": [work.title],
            "author": [{"family": a, "given": "A.", "sequence": "first" if i == 0 else
                        "additional"} for i, a in enumerate(work.authors)],
            "issued": {"date-parts": [[work.year, 1, 1]]},
            "abstract": f"<jats:p>{escape(work.abstract)}</jats:p>",
            "URL": f"https://doi.org/{work.doi}",
            "license": [{"URL": "https://www.elsevier.com/tdm/userlicense/1.0/",
                         "content-version": "tdm", "delay-in-days": 0}],
            "link": [{"URL": "https://api.elsevier.com/content/article/X",
                      "content-type": "text/xml", "content-version": "vor",
                      "intended-application": "text-mining"}]}


def crossref_list(items: list[Json]) -> Json:
    return {"status": "ok", "message-type": "work-list", "message-version": "1.0.0",
            "message": {"facets": {}, "total-results": len(items), "items": items,
                        "items-per-page": 5, "query": {"start-index": 0}}}


def arxiv_feed(entries: list[tuple[str, Work]], query: str) -> bytes:
    """The Atom feed of ``/api/query``: opensearch totals and one entry per work."""
    body = []
    for arxiv_id, work in entries:
        authors = "".join(f"<author><name>A. {escape(a)}</name></author>" for a in work.authors)
        body.append(
            f"<entry><id>http://arxiv.org/abs/{arxiv_id}v1</id>"
            f"<updated>{work.year}-01-02T00:00:00Z</updated>"
            f"<published>{work.year}-01-01T00:00:00Z</published>"
            f"<title>{escape(work.title)}</title><summary>{escape(work.abstract)}</summary>"
            f"{authors}<link href=\"https://arxiv.org/abs/{arxiv_id}v1\" rel=\"alternate\" "
            f"type=\"text/html\"/><link title=\"pdf\" href=\"https://arxiv.org/pdf/{arxiv_id}v1\" "
            f"rel=\"related\" type=\"application/pdf\"/>"
            f"<arxiv:primary_category term=\"cs.DL\"/><category term=\"cs.DL\"/></entry>")
    return ("<?xml version='1.0' encoding='UTF-8'?>\n"
            "<feed xmlns=\"http://www.w3.org/2005/Atom\" "
            "xmlns:opensearch=\"http://a9.com/-/spec/opensearch/1.1/\" "
            "xmlns:arxiv=\"http://arxiv.org/schemas/atom\">"
            f"<id>https://arxiv.org/api/test</id><title>arXiv Query: {escape(query)}</title>"
            "<updated>2026-04-12T00:00:00Z</updated>"
            f"<opensearch:itemsPerPage>1</opensearch:itemsPerPage>"
            f"<opensearch:totalResults>{len(entries)}</opensearch:totalResults>"
            "<opensearch:startIndex>0</opensearch:startIndex>"
            + "".join(body) + "</feed>").encode()


def europepmc(results: list[tuple[Work, str | None]], query: str) -> Json:
    """``/search?...&resultType=core&format=json``."""
    listed = []
    for work, pdf_url in results:
        urls = [{"availability": "Open access", "availabilityCode": "OA",
                 "documentStyle": "pdf", "site": "Europe_PMC", "url": pdf_url}] if pdf_url else []
        urls.append({"availability": "Subscription required", "availabilityCode": "S",
                     "documentStyle": "doi", "site": "DOI",
                     "url": f"https://doi.org/{work.doi}"})
        listed.append({"id": work.pmid or "", "source": "MED", "pmid": work.pmid,
                       "pmcid": work.pmcid, "doi": work.doi, "title": work.title,
                       "authorString": ", ".join(f"{a} A" for a in work.authors) + ".",
                       "pubYear": str(work.year), "abstractText": work.abstract,
                       "isOpenAccess": "Y" if pdf_url else "N", "inEPMC": "Y" if pdf_url else "N",
                       "hasPDF": "Y" if pdf_url else "N", "license": "cc by" if pdf_url else None,
                       "fullTextUrlList": {"fullTextUrl": urls}})
    return {"version": "6.9", "hitCount": len(listed), "nextCursorMark": "AoE=",
            "request": {"queryString": query, "resultType": "core", "cursorMark": "*",
                        "pageSize": 1, "sort": "", "synonym": False},
            "resultList": {"result": listed}}


def semanticscholar(work: Work, pdf_url: str | None, arxiv_id: str | None) -> Json:
    """``/graph/v1/paper/<id>?fields=...`` with the fields the client asks."""
    external: Json = {"DOI": work.doi} if work.doi else {}
    if arxiv_id:
        external["ArXiv"] = arxiv_id
    if work.pmid:
        external["PubMed"] = work.pmid
    return {"paperId": "0" * 40, "externalIds": external,
            "url": "https://www.semanticscholar.org/paper/" + "0" * 40,
            "title": work.title, "abstract": work.abstract, "year": work.year,
            "openAccessPdf": {"url": pdf_url, "status": "GOLD", "license": "CCBY"}
            if pdf_url else {"url": "", "status": None, "license": None},
            "authors": [{"authorId": str(i), "name": f"A. {a}"}
                        for i, a in enumerate(work.authors)]}


def semanticscholar_404(paper_id: str) -> Json:
    return {"error": f"Paper with id {paper_id} not found"}
