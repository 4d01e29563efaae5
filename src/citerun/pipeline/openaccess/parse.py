"""The services' answers read into one shape, :class:`Lead`: pure functions of the body.

Each reader takes the fields its service documents (docs/openaccess.md names the page
and date) and tolerates what the recorded answers show beside them: fields missing, null,
"deprecated" or of another type are skipped, never trusted. Nothing here makes a
request; :mod:`.services` does, and :mod:`.find` decides what to try next.
"""

from __future__ import annotations

import dataclasses
import html
import re
import typing
from xml.etree.ElementTree import Element

import defusedxml  # type: ignore[import-untyped]
import defusedxml.ElementTree as SafeET  # type: ignore[import-untyped]
from rapidfuzz import fuzz

from citerun.pipeline import normalize
from citerun.pipeline.openaccess import ids as idmod

Json = typing.Any


@dataclasses.dataclass(frozen=True)
class PdfLink:
    """A link a service says leads to a PDF (it is checked when fetched)."""

    url: str
    licence: str | None = None
    version: str | None = None


@dataclasses.dataclass(frozen=True)
class Lead:
    """What one answer says about one work."""

    service: str
    pdfs: tuple[PdfLink, ...] = ()
    landing_url: str | None = None
    abstract: str | None = None
    title: str | None = None
    year: int | None = None
    authors: tuple[str, ...] = ()
    doi: str | None = None
    arxiv: str | None = None
    pmid: str | None = None
    pmcid: str | None = None


def _obj(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def _list(value: Json) -> list[Json]:
    return value if isinstance(value, list) else []


def _str(value: Json) -> str | None:
    if isinstance(value, str) and value.strip() and value.strip() != "deprecated":
        return value.strip()
    return None


def _int(value: Json) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _http(value: Json) -> str | None:
    text = _str(value)
    return text if text and text.lower().startswith(("https://", "http://")) else None


_TAG = re.compile(r"<[^>]{0,2000}>")
_LEADING_HEADING = re.compile(r"^\s*(?:abstract|summary)\s*[:.]?\s+", re.IGNORECASE)


def clean_abstract(text: str | None) -> str | None:
    """Markup (JATS, HTML) removed, entities undone, whitespace collapsed, a leading
    "Abstract" heading dropped; None when nothing is left."""
    if not text:
        return None
    plain = html.unescape(_TAG.sub(" ", text))
    plain = _LEADING_HEADING.sub("", " ".join(plain.split()))
    plain = re.sub(r"\s+([,.;:!?)])", r"\1", plain)
    return plain if len(plain) >= 20 else None


def inverted_abstract(index: Json) -> str | None:
    """OpenAlex's ``abstract_inverted_index`` (word -> positions) as text."""
    words: dict[int, str] = {}
    for word, positions in _obj(index).items():
        for position in _list(positions):
            if isinstance(position, int) and 0 <= position < 100_000:
                words[position] = str(word)
    return clean_abstract(" ".join(words[i] for i in sorted(words))) if words else None


# -- Unpaywall ------------------------------------------------------------------------

def unpaywall(data: Json) -> Lead:
    """``GET /v2/<doi>``: the best location's ``url_for_pdf`` first, then the other
    ``oa_locations``' PDF links; a closed article (``is_oa`` false) has none."""
    d = _obj(data)
    links: list[PdfLink] = []
    best = _obj(d.get("best_oa_location"))
    for location in [best, *map(_obj, _list(d.get("oa_locations")))]:
        url = _http(location.get("url_for_pdf"))
        if url and url not in {link.url for link in links}:
            links.append(PdfLink(url, _str(location.get("license")),
                                 _str(location.get("version"))))
    landing = _http(best.get("url_for_landing_page")) or _http(d.get("doi_url"))
    authors = tuple(a for a in (_str(_obj(x).get("family")) for x in _list(d.get("z_authors")))
                    if a)
    return Lead("Unpaywall", tuple(links) if d.get("is_oa") is not False else (), landing,
                None, _str(d.get("title")), _int(d.get("year")), authors,
                idmod.doi_of(_str(d.get("doi"))))


# -- OpenAlex -------------------------------------------------------------------------

def openalex_work(data: Json) -> Lead:
    """A work (``GET /works/https://doi.org/<doi>`` or one of a list's ``results``):
    ``best_oa_location.pdf_url``, the other open locations' ``pdf_url``, and
    ``open_access.oa_url`` last (often a landing page); the abstract from
    ``abstract_inverted_index``; PubMed and arXiv ids from ``ids`` and the locations."""
    d = _obj(data)
    links: list[PdfLink] = []
    best = _obj(d.get("best_oa_location"))
    locations = [best, *(loc for loc in map(_obj, _list(d.get("locations")))
                         if loc.get("is_oa") is True)]
    arxiv = None
    for location in locations:
        url = _http(location.get("pdf_url"))
        if url and url not in {link.url for link in links}:
            links.append(PdfLink(url, _str(location.get("license")),
                                 _str(location.get("version"))))
        arxiv = arxiv or idmod.arxiv_of(_http(location.get("landing_page_url")))
    open_access = _obj(d.get("open_access"))
    oa_url = _http(open_access.get("oa_url"))
    if oa_url and open_access.get("is_oa") is not False and oa_url not in {
            link.url for link in links}:
        links.append(PdfLink(oa_url, _str(best.get("license")), _str(best.get("version"))))
    known = _obj(d.get("ids"))
    authors = tuple(name for name in (
        _str(_obj(_obj(a).get("author")).get("display_name"))
        for a in _list(d.get("authorships"))) if name)
    return Lead("OpenAlex", tuple(links), _http(best.get("landing_page_url")),
                inverted_abstract(d.get("abstract_inverted_index")),
                _str(d.get("title")) or _str(d.get("display_name")),
                _int(d.get("publication_year")), authors,
                idmod.doi_of(_str(d.get("doi")) or _str(known.get("doi"))), arxiv,
                idmod.pmid_of(_last_segment(known.get("pmid"))),
                idmod.pmcid_of(_last_segment(known.get("pmcid"))))


def openalex_list(data: Json) -> list[Lead]:
    """``GET /works?filter=...``: the ``results`` of the list envelope."""
    return [openalex_work(work) for work in _list(_obj(data).get("results"))]


def _last_segment(value: Json) -> str | None:
    text = _str(value)
    return text.rstrip("/").rsplit("/", 1)[-1] if text else None


# -- Crossref -------------------------------------------------------------------------

def crossref_work(data: Json) -> Lead:
    """``GET /works/<doi>`` (``message``) or one item of a query's ``message.items``:
    the abstract (a JATS string), title, year, authors; a PDF link of ``link[]`` only
    where the work carries a Creative Commons licence (a text-mining link of a closed
    article is no open copy)."""
    d = _obj(data)
    message = _obj(d.get("message")) if d.get("message-type") == "work" else d
    licences = [u for u in (_str(_obj(x).get("URL")) for x in _list(message.get("license")))
                if u]
    open_licence = next((u for u in licences if "creativecommons.org" in u.lower()), None)
    links = tuple(PdfLink(url, open_licence) for url in (
        _http(_obj(x).get("URL")) for x in _list(message.get("link"))
        if _obj(x).get("content-type") == "application/pdf") if url and open_licence)
    year = None
    for field in ("issued", "published", "published-print", "published-online", "created"):
        parts = _list(_obj(message.get(field)).get("date-parts"))
        year = _int(_list(parts[0])[0]) if parts and _list(parts[0]) else None
        if year:
            break
    titles = [t for t in map(_str, _list(message.get("title"))) if t]
    authors = tuple(a for a in (_str(_obj(x).get("family")) or _str(_obj(x).get("name"))
                                for x in _list(message.get("author"))) if a)
    return Lead("Crossref", links, _http(message.get("URL")),
                clean_abstract(_str(message.get("abstract"))),
                titles[0] if titles else None, year, authors,
                idmod.doi_of(_str(message.get("DOI"))))


def crossref_list(data: Json) -> list[Lead]:
    """``GET /works?query.bibliographic=...``: ``message.items``."""
    return [crossref_work(item) for item in _list(_obj(_obj(data).get("message")).get("items"))]


# -- arXiv ----------------------------------------------------------------------------

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV_NS = "{http://arxiv.org/schemas/atom}"


def arxiv_feed(body: bytes) -> list[Lead]:
    """The Atom feed of ``/api/query?id_list=...``: one lead per entry; the error entry
    of a malformed id (title "Error") and an empty feed give none."""
    try:
        root: Element = SafeET.fromstring(body)
    except (SafeET.ParseError, ValueError, defusedxml.DefusedXmlException):
        return []
    leads: list[Lead] = []
    for entry in root.findall(f"{_ATOM}entry"):
        title = _text(entry, f"{_ATOM}title")
        entry_id = _text(entry, f"{_ATOM}id") or ""
        arxiv = idmod.arxiv_of(entry_id)
        if not arxiv or title == "Error":
            continue
        pdfs = tuple(PdfLink(href) for link in entry.findall(f"{_ATOM}link")
                     if (href := _http(link.get("href"))) and (
                         link.get("title") == "pdf" or link.get("type") == "application/pdf"))
        published = _text(entry, f"{_ATOM}published") or ""
        year = int(published[:4]) if published[:4].isdigit() else None
        authors = tuple(n for n in (_text(a, f"{_ATOM}name")
                                    for a in entry.findall(f"{_ATOM}author")) if n)
        leads.append(Lead("arXiv", pdfs, entry_id if entry_id.startswith("http") else None,
                          clean_abstract(_text(entry, f"{_ATOM}summary")), title, year,
                          authors, idmod.doi_of(_text(entry, f"{_ARXIV_NS}doi")), arxiv))
    return leads


def _text(element: Element, path: str) -> str | None:
    found = element.find(path)
    return " ".join(found.text.split()) if found is not None and found.text else None


# -- Europe PMC -----------------------------------------------------------------------

def europepmc(data: Json) -> list[Lead]:
    """``GET /search?...&resultType=core&format=json``: each result's PDF links of
    ``fullTextUrlList`` that are open (``availabilityCode`` OA or F), its
    ``abstractText``, ids and title."""
    leads = []
    for result in map(_obj, _list(_obj(_obj(data).get("resultList")).get("result"))):
        urls = _list(_obj(result.get("fullTextUrlList")).get("fullTextUrl"))
        links = tuple(PdfLink(url, _str(result.get("license"))) for url in (
            _http(_obj(u).get("url")) for u in urls
            if _obj(u).get("documentStyle") == "pdf"
            and _obj(u).get("availabilityCode") in ("OA", "F")) if url)
        authors = tuple(a.strip().rsplit(" ", 1)[0] for a in
                        (_str(result.get("authorString")) or "").rstrip(".").split(",")
                        if a.strip())
        leads.append(Lead("Europe PMC", links, None,
                          clean_abstract(_str(result.get("abstractText"))),
                          _str(result.get("title")), _int(result.get("pubYear")), authors,
                          idmod.doi_of(_str(result.get("doi"))),
                          None, idmod.pmid_of(_str(result.get("pmid"))),
                          idmod.pmcid_of(_str(result.get("pmcid")))))
    return leads


# -- Semantic Scholar -------------------------------------------------------------------

def semanticscholar_paper(data: Json) -> Lead:
    """``GET /paper/<id>?fields=...``: ``openAccessPdf.url`` (sometimes a landing
    page: it is checked when fetched), ``abstract``, ``externalIds``."""
    d = _obj(data)
    pdf = _obj(d.get("openAccessPdf"))
    url = _http(pdf.get("url"))
    external = _obj(d.get("externalIds"))
    authors = tuple(n for n in (_str(_obj(a).get("name")) for a in _list(d.get("authors")))
                    if n)
    return Lead("Semantic Scholar", (PdfLink(url, _str(pdf.get("license"))),) if url else (),
                _http(d.get("url")), clean_abstract(_str(d.get("abstract"))),
                _str(d.get("title")), _int(d.get("year")), authors,
                idmod.doi_of(_str(external.get("DOI"))),
                idmod.arxiv_of(_str(external.get("ArXiv"))),
                idmod.pmid_of(_str(external.get("PubMed"))),
                idmod.pmcid_of(_str(external.get("PubMedCentral"))))


def semanticscholar_match(data: Json) -> list[Lead]:
    """``GET /paper/search/match?query=...``: the papers of ``data``."""
    return [semanticscholar_paper(p) for p in _list(_obj(data).get("data"))]


# -- a title looked up ------------------------------------------------------------------

def same_work(ids: idmod.WorkIds, lead: Lead, *, min_title: float = 92.0) -> bool:
    """Whether a lead found by title is the cited work: the folded titles nearly equal
    (a subtitle or punctuation may differ, a different paper may not), the years at
    most one apart where both are known (preprint and journal), and the first author's
    surname among the lead's authors where both are known."""
    if not ids.title or not lead.title:
        return False
    ours, theirs = normalize.fold_words(ids.title), normalize.fold_words(lead.title)
    if not ours or not theirs:
        return False
    shorter, longer = sorted((ours, theirs), key=len)
    # "Title" against "Title: a subtitle": the cited title is all of the start.
    subtitle = longer.startswith(shorter + " ") and len(shorter.split()) >= 4
    if not subtitle:
        if fuzz.ratio(ours, theirs) < min_title:
            return False
        # Nearly equal strings may still say the opposite ("... is not all you need"):
        # each word of one must be in the other, or spelt nearly alike there.
        mine, yours = set(ours.split()), set(theirs.split())
        for word, other in [*((w, yours) for w in mine - yours),
                            *((w, mine) for w in yours - mine)]:
            if not any(fuzz.ratio(word, o) >= 80 for o in other - (mine & yours)):
                return False
    if ids.year and lead.year and abs(ids.year - lead.year) > 1:
        return False
    if ids.first_author and lead.authors:
        surname = normalize.fold_words(ids.first_author).split()
        names = {w for author in lead.authors for w in normalize.fold_words(author).split()}
        if surname and not any(w in names for w in surname if len(w) > 1):
            return False
    return True
