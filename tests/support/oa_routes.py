"""The routes of :class:`~tests.support.oa_server.OaServer`: each service's paths,
answered for the scenario's works first, then from the recordings, then with the
service's documented "not found"."""

from __future__ import annotations

import json
import re
import time
import typing
from collections.abc import Mapping
from urllib.parse import unquote

from tests.support import oa_shapes as shapes

if typing.TYPE_CHECKING:
    from tests.support.oa_server import OaServer

Query = Mapping[str, list[str]]


def _q(query: Query, name: str) -> str:
    values = query.get(name)
    return values[0] if values else ""


class Routes:
    srv: OaServer

    # the base class (BaseHTTPRequestHandler subclass) provides these
    def send(self, status: int, body: bytes, content_type: str,
             headers: Mapping[str, str] | None = None) -> None: ...
    def send_json(self, status: int, data: typing.Any) -> None: ...
    def replay(self, service: str, path: str, query: Query) -> bool: ...
    def not_found(self, service: str, ident: str) -> None: ...

    # -- services ----------------------------------------------------------------------

    def route_unpaywall(self, path: str, query: Query) -> None:
        doi = unquote(path.removeprefix("/v2/")).lower()
        hit = self.srv.find(doi=doi)
        if hit and hit[1].kind != "unknown":
            key, work = hit
            self.send_json(200, shapes.unpaywall(work, self.srv.pdf_url(key, work),
                                                 self.srv.landing(key)))
        elif not self.replay("unpaywall", path, query):
            self.not_found("unpaywall", doi)

    def route_openalex(self, path: str, query: Query) -> None:
        srv = self.srv
        if path == "/works":
            where = _q(query, "filter")
            words = where.split(",", 1)[0].removeprefix("title.search:")
            hits = srv.by_title(words)
            if hits or not self.replay("openalex", path, query):
                self.send_json(200, shapes.openalex_list([
                    shapes.openalex(w, srv.pdf_url(k, w), srv.landing(k))
                    for k, w in hits if w.kind != "unknown"]))
            return
        doi = unquote(path.removeprefix("/works/https://doi.org/").removeprefix(
            "/works/doi:")).lower()
        hit = srv.find(doi=doi)
        if hit and hit[1].kind != "unknown":
            key, work = hit
            self.send_json(200, shapes.openalex(work, srv.pdf_url(key, work), srv.landing(key)))
        elif not self.replay("openalex", path, query):
            self.not_found("openalex", doi)

    def route_crossref(self, path: str, query: Query) -> None:
        srv = self.srv
        headers = {"x-rate-limit-limit": "5", "x-rate-limit-interval": "1s"} \
            if srv.rate_headers else None
        if path == "/works":
            hits = srv.by_title(_q(query, "query.bibliographic"))
            self.send(200, json.dumps(shapes.crossref_list(
                [shapes.crossref_item(w) for _, w in hits if w.kind != "unknown"])).encode(),
                "application/json", headers)
            return
        doi = unquote(path.removeprefix("/works/")).lower()
        hit = srv.find(doi=doi)
        if hit and hit[1].kind != "unknown":
            self.send(200, json.dumps(shapes.crossref(hit[1])).encode(), "application/json",
                      headers)
        elif not self.replay("crossref", path, query):
            self.not_found("crossref", doi)

    def route_arxiv(self, path: str, query: Query) -> None:
        srv = self.srv
        if path.startswith("/pdf/"):
            arxiv_id = re.sub(r"v\d+$", "", path.removeprefix("/pdf/"))
            hit = srv.find(arxiv=arxiv_id)
            if hit and hit[1].kind != "unknown":
                self.route_files(f"/pdf/arxiv:{arxiv_id}", query)
            else:
                self.not_found("arxiv", arxiv_id)
            return
        ids = [i for i in _q(query, "id_list").split(",") if i]
        hits = [(i, hit[1]) for i in ids if (hit := srv.find(arxiv=re.sub(r"v\d+$", "", i)))
                and hit[1].kind != "unknown"]
        if hits or not self.replay("arxiv", "/query", query):
            self.send(200, shapes.arxiv_feed(hits, _q(query, "id_list")),
                      "application/atom+xml; charset=utf-8")

    def route_europepmc(self, path: str, query: Query) -> None:
        srv = self.srv
        text = _q(query, "query")
        match = re.match(r'(?:PMCID:(PMC\d+)|EXT_ID:(\d+) AND SRC:MED|DOI:"([^"]+)")$', text)
        hit = None
        if match:
            hit = srv.find(pmcid=match[1], pmid=match[2], doi=(match[3] or "").lower() or None)
        if hit and hit[1].kind != "unknown":
            key, work = hit
            self.send_json(200, shapes.europepmc([(work, srv.pdf_url(key, work))], text))
        elif not self.replay("europepmc", path.removeprefix("/webservices/rest"), query):
            self.send_json(200, shapes.europepmc([], text))

    def route_s2(self, path: str, query: Query) -> None:
        srv = self.srv
        if path.endswith("/paper/search/match"):
            hits = [h for h in srv.by_title(_q(query, "query")) if h[1].kind != "unknown"]
            if hits:
                key, work = hits[0]
                paper = shapes.semanticscholar(work, srv.pdf_url(key, work),
                                               srv.arxiv_of(key, work))
                self.send_json(200, {"data": [{**paper, "matchScore": 200.0}]})
            elif not self.replay("s2", path, query):
                self.send_json(404, {"error": "Title match not found"})
            return
        paper_id = unquote(path.removeprefix("/graph/v1/paper/"))
        kind, _, value = paper_id.partition(":")
        lookup = {"DOI": "doi", "ARXIV": "arxiv", "PMID": "pmid", "PMCID": "pmcid"}
        name = lookup.get(kind.upper())
        hit = srv.find(**{name: value.lower() if name == "doi" else
                          ("PMC" + value if name == "pmcid" else value)}) if name else None
        if hit and hit[1].kind != "unknown":
            key, work = hit
            self.send_json(200, shapes.semanticscholar(work, srv.pdf_url(key, work),
                                                       srv.arxiv_of(key, work)))
        elif not self.replay("s2", path, query):
            self.not_found("s2", paper_id)

    # -- files ---------------------------------------------------------------------------

    def route_files(self, path: str, query: Query) -> None:
        from tests.support.oa_server import LANDING_PAGE, make_pdf
        kind, _, key = path.lstrip("/").partition("/")
        work = self.srv.works.get(unquote(key))
        if kind == "pdf" and work is not None:
            self.send(200, make_pdf(f"{work.title}\n\n{work.text}"), "application/pdf")
        elif kind == "landing":
            self.send(200, LANDING_PAGE, "text/html; charset=utf-8")
        else:
            self.send(404, b"not found", "text/plain")

    def route_remote(self, path: str, query: Query) -> None:
        """A recorded answer's link, served here: a PDF where the link names one."""
        from tests.support.oa_server import LANDING_PAGE, make_pdf
        raw = path + ("?" + "&".join(f"{k}={v[0]}" for k, v in query.items()) if query else "")
        if re.search(r"\.pdf$|/pdf\b|pdf=render", raw, re.IGNORECASE):
            self.send(200, make_pdf(f"Recorded open-access copy at {raw}"), "application/pdf")
        else:
            self.send(200, LANDING_PAGE, "text/html; charset=utf-8")

    def route_redirect(self, path: str, query: Query) -> None:
        from tests.support.oa_server import HOSTILE, HOST
        target = HOSTILE[path.strip("/")].format(port=self.srv.port, host=HOST)
        self.send(302, b"", "text/plain", {"Location": target})

    def route_slow(self, path: str, query: Query) -> None:
        """A PDF whose body trickles: one byte every 0.2 s for up to a minute."""
        wfile = typing.cast(typing.Any, self).wfile
        try:
            typing.cast(typing.Any, self).send_response(200)
            typing.cast(typing.Any, self).send_header("Content-Type", "application/pdf")
            typing.cast(typing.Any, self).end_headers()
            wfile.write(b"%PDF-1.7\n")
            wfile.flush()
            for _ in range(300):
                time.sleep(0.2)
                wfile.write(b"%")
                wfile.flush()
        except OSError:
            return

    def route_huge(self, path: str, query: Query) -> None:
        """2 GB, streamed in 1 MiB chunks of one buffer (never built in memory); with
        ``?length=1`` its Content-Length is declared."""
        from tests.support.oa_server import HUGE_BYTES, _CHUNK
        handler = typing.cast(typing.Any, self)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/pdf")
            if _q(query, "length"):
                handler.send_header("Content-Length", str(HUGE_BYTES))
            handler.end_headers()
            handler.wfile.write(b"%PDF-1.7\n")
            sent = 0
            while sent < HUGE_BYTES:
                handler.wfile.write(_CHUNK)
                sent += len(_CHUNK)
                with self.srv._lock:
                    self.srv.huge_sent = sent
        except OSError:
            return
