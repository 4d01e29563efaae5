"""One request per function, each as its service documents it (docs/openaccess.md names
the page and the date read): the URL, the parameters, the identifying headers. Each
returns the :class:`~.parse.Lead` s of its answer; a 404 is an empty list (the service
does not know the work); every other failure is a :class:`~.session.ServiceFailed`.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from citerun.pipeline.openaccess import parse
from citerun.pipeline.openaccess.session import ServiceFailed, Session

# The fields asked of Semantic Scholar: only those asked come back.
S2_FIELDS = "title,year,authors,abstract,externalIds,openAccessPdf,url"


# OpenAlex documents 403 as "rate limit exceeded; slow down" (429: the daily allowance).
OPENALEX_TOO_FAST = frozenset({403})


async def _json(session: Session, url: str, params: dict[str, str],
                headers: dict[str, str] | None = None,
                too_fast: frozenset[int] = frozenset()) -> parse.Json | None:
    """The JSON answer of ``url``; None for a 404."""
    try:
        got = await session.get(url, params=params, headers=headers, too_fast=too_fast)
    except ServiceFailed as err:
        if err.status == 404:
            return None
        raise
    try:
        return json.loads(got.body)
    except (UnicodeDecodeError, ValueError) as err:
        raise ServiceFailed("an answer that is not JSON") from err


def _mailto(session: Session) -> dict[str, str]:
    email = session.settings.email
    return {"mailto": email} if email else {}


async def unpaywall(session: Session, doi: str) -> list[parse.Lead]:
    """``GET /v2/<doi>?email=<operator>`` (the e-mail is required)."""
    email = session.settings.email
    if not email:
        raise ServiceFailed("skipped: no operator e-mail is set (Unpaywall requires one)")
    data = await _json(session, f"{session.settings.unpaywall_url}/{quote(doi, safe='/:;()')}",
                       {"email": email})
    return [] if data is None else [parse.unpaywall(data)]


def _openalex_params(session: Session) -> dict[str, str]:
    params = _mailto(session)
    if session.settings.openalex_key:
        params["api_key"] = session.settings.openalex_key
    return params


async def openalex_doi(session: Session, doi: str) -> list[parse.Lead]:
    """``GET /works/https://doi.org/<doi>`` (the DOI as a URL, its slash escaped)."""
    data = await _json(session, f"{session.settings.openalex_url}/works/https://doi.org/"
                       f"{quote(doi, safe='')}", _openalex_params(session),
                       too_fast=OPENALEX_TOO_FAST)
    return [] if data is None else [parse.openalex_work(data)]


def _filter_words(title: str) -> str:
    """A title as one ``title.search`` filter value: commas and colons separate
    filters and values there, so they go."""
    return " ".join(title.replace(",", " ").replace(":", " ").replace("|", " ").split())


async def openalex_title(session: Session, title: str, year: int | None
                         ) -> list[parse.Lead]:
    """``GET /works?filter=title.search:<words>[,publication_year:<y-1>-<y+1>]``."""
    where = f"title.search:{_filter_words(title)}"
    if year:
        where += f",publication_year:{year - 1}-{year + 1}"
    data = await _json(session, f"{session.settings.openalex_url}/works",
                       {"filter": where, "per-page": "5", **_openalex_params(session)},
                       too_fast=OPENALEX_TOO_FAST)
    return [] if data is None else parse.openalex_list(data)


def _crossref_headers(session: Session) -> dict[str, str]:
    token = session.settings.crossref_token
    return {"Crossref-Plus-API-Token": f"Bearer {token}"} if token else {}


async def crossref_doi(session: Session, doi: str) -> list[parse.Lead]:
    """``GET /works/<doi>?mailto=<operator>``."""
    data = await _json(session, f"{session.settings.crossref_url}/works/{quote(doi, safe='')}",
                       _mailto(session), _crossref_headers(session))
    return [] if data is None else [parse.crossref_work(data)]


async def crossref_title(session: Session, title: str, author: str | None,
                         year: int | None) -> list[parse.Lead]:
    """``GET /works?query.bibliographic=<title author year>&rows=5``."""
    words = " ".join(str(x) for x in (title, author, year) if x)
    data = await _json(session, f"{session.settings.crossref_url}/works",
                       {"query.bibliographic": words, "rows": "5", **_mailto(session)},
                       _crossref_headers(session))
    return [] if data is None else parse.crossref_list(data)


async def arxiv(session: Session, arxiv_id: str) -> list[parse.Lead]:
    """``GET /api/query?id_list=<id>&max_results=1``: an Atom feed (a malformed id is
    a 400 with an error entry; an unknown one an empty feed)."""
    got = await session.get(session.settings.arxiv_api_url,
                            params={"id_list": arxiv_id, "max_results": "1"},
                            accept="application/atom+xml")
    return parse.arxiv_feed(got.body)


def arxiv_pdf_url(session: Session, arxiv_id: str) -> str:
    """Where arXiv serves the PDF of ``arxiv_id`` (its newest version)."""
    return f"{session.settings.arxiv_pdf_url}/{arxiv_id}"


async def europepmc(session: Session, *, pmid: str | None = None, pmcid: str | None = None,
                    doi: str | None = None) -> list[parse.Lead]:
    """``GET /search?query=<EXT_ID:pmid AND SRC:MED | PMCID:pmcid | DOI:"doi">
    &resultType=core&format=json``."""
    if pmcid:
        query = f"PMCID:{pmcid}"
    elif pmid:
        query = f"EXT_ID:{pmid} AND SRC:MED"
    elif doi:
        query = f'DOI:"{doi}"'
    else:
        return []
    data = await _json(session, f"{session.settings.europepmc_url}/search",
                       {"query": query, "resultType": "core", "format": "json",
                        "pageSize": "1"})
    return [] if data is None else parse.europepmc(data)[:1]


def _s2_headers(session: Session) -> dict[str, str]:
    key = session.settings.semanticscholar_key
    return {"x-api-key": key} if key else {}


async def semanticscholar(session: Session, paper_id: str) -> list[parse.Lead]:
    """``GET /paper/<DOI:x | ARXIV:x | PMID:x | PMCID:x>?fields=...``."""
    data = await _json(session, f"{session.settings.semanticscholar_url}/paper/"
                       f"{quote(paper_id, safe='/:;()')}", {"fields": S2_FIELDS},
                       _s2_headers(session))
    return [] if data is None else [parse.semanticscholar_paper(data)]


async def semanticscholar_title(session: Session, title: str) -> list[parse.Lead]:
    """``GET /paper/search/match?query=<title>&fields=...`` (404 when nothing matches)."""
    data = await _json(session, f"{session.settings.semanticscholar_url}/paper/search/match",
                       {"query": title, "fields": S2_FIELDS}, _s2_headers(session))
    return [] if data is None else parse.semanticscholar_match(data)
