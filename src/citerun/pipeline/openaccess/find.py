"""Finding the best open copy of one cited work: :func:`find_source`.

The order, and why (docs/openaccess.md says the same at more length):

1. **By title, only when there is no identifier**: OpenAlex ``title.search``, then
   Semantic Scholar ``search/match``, then Crossref ``query.bibliographic``; a result
   counts only when its folded title nearly equals the cited one and its year and first
   author agree (:func:`.parse.same_work`): a wrong paper is worse than none. Its ids
   then drive the steps below.
2. **arXiv**, when the work has an arXiv id: the author's own full text, always free,
   from one well-known host; its feed also carries the abstract.
3. **Unpaywall**, by DOI (needs the operator's e-mail; skipped, and said so, without
   one): the index built for exactly this question, its ``url_for_pdf`` links ranked
   best first (publisher's version over repository copies).
4. **OpenAlex**, by DOI: Unpaywall's data and more locations (repositories), the
   abstract as an inverted index, and the work's PubMed and arXiv ids, which open the
   next steps (an arXiv id learnt here goes back to step 2).
5. **Europe PMC**, by PMCID or PMID (given or learnt): PubMed Central's open PDFs and
   the PubMed abstract for biomedicine.
6. **Semantic Scholar** last of the PDF sources: its ``openAccessPdf`` is often a
   landing page, and without a key it shares one request per second with every
   unauthenticated user.
7. **The library's own URL field**, when no service named a PDF.
8. **Abstract** when no PDF was found: the abstracts already in hand, the author's
   (arXiv) and PubMed's (Europe PMC) first, Semantic Scholar's, then OpenAlex's
   rebuilt word order; only if none, one more request: Crossref, whose ``abstract``
   is the publisher's deposited JATS (and whose Creative Commons PDF links are tried
   first).

A PDF link is metadata of a third party and treated as hostile: fetched through the
address policy, HTTPS only, redirects bounded, size and time capped, and kept only when
it starts like a PDF; an HTML page instead is an attempt "not a PDF" and the search goes
on. Requests stop at the first PDF. Nothing is sent anywhere while the settings are not
``enabled``. Service and network failures are attempts, never exceptions.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable

from citerun.core import pdfmagic
from citerun.pipeline.openaccess import parse, services
from citerun.pipeline.openaccess.ids import WorkIds
from citerun.pipeline.openaccess.model import Attempt, Found
from citerun.pipeline.openaccess.session import ServiceFailed, Session

# Which lead's abstract is preferred when several are in hand (step 8).
_ABSTRACT_ORDER = ("arXiv", "Europe PMC", "Crossref", "Semantic Scholar", "OpenAlex")


async def find_source(ids: WorkIds, session: Session) -> Found:
    """The best open copy of the work ``ids`` names: a PDF, else an abstract, else
    nothing; with every attempt made. Never raises for a network or service failure."""
    settings = session.settings
    if not settings.enabled:
        return Found("none", attempts=(Attempt(
            "citerun", "; ".join(ids.tried()) or ids.key(),
            "not looked up: fetching sources is off"),))
    finder = _Finder(ids, session)
    try:
        async with asyncio.timeout(settings.work_timeout_s):
            await finder.run()
    except TimeoutError:
        finder.note("citerun", ids.key(),
                    f"gave up: over {settings.work_timeout_s:g} s for one work")
    return finder.result()


@dataclasses.dataclass
class _Pdf:
    body: bytes
    link: parse.PdfLink
    service: str


class _Finder:
    def __init__(self, ids: WorkIds, session: Session) -> None:
        self.ids = ids
        self.session = session
        self.on = set(session.settings.services)
        self.attempts: list[Attempt] = []
        self.leads: list[parse.Lead] = []
        self.pdf: _Pdf | None = None
        self.tried_urls: set[str] = set()
        self.asked: set[tuple[str, str]] = set()

    def note(self, service: str, identifier: str, outcome: str) -> None:
        self.attempts.append(Attempt(service, identifier, outcome))

    async def ask(self, service: str, identifier: str,
                  call: Callable[[], Awaitable[list[parse.Lead]]]) -> list[parse.Lead]:
        """One request, its outcome noted; a failure is an empty answer."""
        if (service, identifier) in self.asked:
            return []
        self.asked.add((service, identifier))
        try:
            leads = await call()
        except ServiceFailed as err:
            self.note(service, identifier, str(err))
            return []
        if not leads:
            self.note(service, identifier, "not known to the service")
            return []
        pdfs = sum(len(lead.pdfs) for lead in leads)
        has_abstract = any(lead.abstract for lead in leads)
        self.note(service, identifier, (
            f"{pdfs} open-access PDF link{'s' if pdfs != 1 else ''}" if pdfs
            else "no open-access PDF") + ("; an abstract" if has_abstract else ""))
        self.leads.extend(leads)
        return leads

    async def try_links(self, service: str, links: tuple[parse.PdfLink, ...]) -> None:
        """Fetch the links in order until one is a PDF (or the per-work limit is hit)."""
        for link in links:
            if self.pdf or len(self.tried_urls) >= self.session.settings.max_pdf_links:
                return
            if link.url in self.tried_urls:
                continue
            self.tried_urls.add(link.url)
            try:
                got = await self.session.get(link.url, accept="application/pdf", pdf=True)
            except ServiceFailed as err:
                self.note(service, link.url, str(err))
                continue
            if not pdfmagic.is_pdf(got.body):
                head = got.body[:1024].lstrip().lower()
                what = " (an HTML page)" if head.startswith((b"<!doctype html", b"<html")) \
                    or b"<html" in head else ""
                self.note(service, link.url, f"not a PDF{what}")
                continue
            self.note(service, link.url, f"a PDF, {len(got.body):,} bytes")
            self.pdf = _Pdf(got.body, link, service)

    def learn(self, leads: list[parse.Lead]) -> None:
        """Ids a service gave that the work lacked (an arXiv id, a PMCID)."""
        ids = self.ids
        for lead in leads:
            ids = dataclasses.replace(
                ids, doi=ids.doi or lead.doi, arxiv=ids.arxiv or lead.arxiv,
                pmid=ids.pmid or lead.pmid, pmcid=ids.pmcid or lead.pmcid)
        self.ids = ids

    async def run(self) -> None:
        if not self.ids.has_identifier() and self.ids.title:
            await self.by_title()
        ids = self.ids
        if ids.is_empty():
            self.note("citerun", "-", "nothing to look up: no identifier, no title")
            return
        await self.arxiv()
        if self.pdf is None and self.ids.doi and "unpaywall" in self.on:
            doi = self.ids.doi
            leads = await self.ask("Unpaywall", f"DOI {doi}",
                                   lambda: services.unpaywall(self.session, doi))
            for lead in leads:
                await self.try_links("Unpaywall", lead.pdfs)
        if self.pdf is None and self.ids.doi and "openalex" in self.on:
            doi = self.ids.doi
            leads = await self.ask("OpenAlex", f"DOI {doi}",
                                   lambda: services.openalex_doi(self.session, doi))
            self.learn(leads)
            for lead in leads:
                await self.try_links("OpenAlex", lead.pdfs)
            await self.arxiv()
        await self.europepmc()
        await self.semanticscholar()
        if self.pdf is None and self.ids.url and self.session.settings.try_library_urls:
            await self.try_links("library", (parse.PdfLink(self.ids.url),))
        if self.pdf is None and not self.abstract_in_hand():
            await self.crossref()
        if not self.attempts:  # an ISBN alone, or every service that could was left out
            self.note("citerun", "; ".join(self.ids.tried()) or self.ids.key(),
                      "no service asked: none looks works up by the identifiers given")

    async def arxiv(self) -> None:
        arxiv_id = self.ids.arxiv
        if self.pdf is not None or not arxiv_id or "arxiv" not in self.on:
            return
        leads = await self.ask("arXiv", f"arXiv {arxiv_id}",
                               lambda: services.arxiv(self.session, arxiv_id))
        if leads:
            link = parse.PdfLink(services.arxiv_pdf_url(self.session, arxiv_id))
            await self.try_links("arXiv", (link,))

    async def europepmc(self) -> None:
        ids = self.ids
        if self.pdf is not None or "europepmc" not in self.on or not (ids.pmid or ids.pmcid):
            return
        label = f"PMCID {ids.pmcid}" if ids.pmcid else f"PMID {ids.pmid}"
        leads = await self.ask("Europe PMC", label, lambda: services.europepmc(
            self.session, pmid=ids.pmid, pmcid=ids.pmcid))
        self.learn(leads)
        for lead in leads:
            await self.try_links("Europe PMC", lead.pdfs)

    async def semanticscholar(self) -> None:
        ids = self.ids
        if self.pdf is not None or "semanticscholar" not in self.on:
            return
        paper = (f"DOI:{ids.doi}" if ids.doi else f"ARXIV:{ids.arxiv}" if ids.arxiv
                 else f"PMID:{ids.pmid}" if ids.pmid else
                 f"PMCID:{ids.pmcid.removeprefix('PMC')}" if ids.pmcid else None)
        if paper is None:
            return
        leads = await self.ask("Semantic Scholar", paper.replace(":", " ", 1),
                               lambda: services.semanticscholar(self.session, paper))
        self.learn(leads)
        for lead in leads:
            await self.try_links("Semantic Scholar", lead.pdfs)
        await self.arxiv()

    async def crossref(self) -> None:
        doi = self.ids.doi
        if not doi or "crossref" not in self.on:
            return
        leads = await self.ask("Crossref", f"DOI {doi}",
                               lambda: services.crossref_doi(self.session, doi))
        for lead in leads:
            await self.try_links("Crossref", lead.pdfs)

    async def by_title(self) -> None:
        ids = self.ids
        title = ids.title or ""
        label = f"title \u201c{title}\u201d"
        searches: list[tuple[str, str, Callable[[], Awaitable[list[parse.Lead]]]]] = [
            ("OpenAlex", "openalex", lambda: services.openalex_title(
                self.session, title, ids.year)),
            ("Semantic Scholar", "semanticscholar", lambda: services.semanticscholar_title(
                self.session, title)),
            ("Crossref", "crossref", lambda: services.crossref_title(
                self.session, title, ids.first_author, ids.year))]
        for service, name, call in searches:
            if name not in self.on:
                continue
            try:
                leads = await call()
            except ServiceFailed as err:
                self.note(service, label, str(err))
                continue
            match = next((lead for lead in leads if parse.same_work(ids, lead)), None)
            if match is None:
                self.note(service, label, f"no matching work among {len(leads)} results")
                continue
            self.learn([match])
            self.leads.append(match)
            found = "; ".join(WorkIds(doi=match.doi, arxiv=match.arxiv, pmid=match.pmid,
                                      pmcid=match.pmcid).tried()) or "no identifier"
            self.note(service, label, f"matched \u201c{match.title}\u201d: {found}")
            if self.ids.has_identifier():
                return
            # A match without an identifier leads nowhere else: its own links now.
            await self.try_links(service, match.pdfs)
            if self.pdf is not None:
                return

    def abstract_in_hand(self) -> parse.Lead | None:
        ranked = sorted((lead for lead in self.leads if lead.abstract),
                        key=lambda lead: _ABSTRACT_ORDER.index(lead.service)
                        if lead.service in _ABSTRACT_ORDER else len(_ABSTRACT_ORDER))
        return ranked[0] if ranked else None

    def result(self) -> Found:
        attempts = tuple(self.attempts)
        abstract = self.abstract_in_hand()
        landing = next((lead.landing_url for lead in self.leads if lead.landing_url), None)
        text = abstract.abstract if abstract else None
        source = abstract.service if abstract else None
        if self.pdf is not None:
            link = self.pdf.link
            return Found("pdf", pdf=self.pdf.body, pdf_url=link.url, landing_url=landing,
                         service=self.pdf.service, licence=link.licence,
                         version=link.version, abstract=text, abstract_service=source,
                         attempts=attempts)
        if text:
            return Found("abstract", landing_url=landing, service=source, abstract=text,
                         abstract_service=source, attempts=attempts)
        return Found("none", landing_url=landing, attempts=attempts)
