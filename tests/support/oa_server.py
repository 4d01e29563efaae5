"""A local HTTPS server that answers as the open-access services do (issue 51).

``with OaServer(works={...}) as srv:`` starts a real TLS server on 127.0.0.2 (a test CA
made in-process; ``srv.settings()`` trusts it through ``ca_bundle`` and allow-lists
127.0.0.2/32 only, as an operator would a mirror, so 127.0.0.1 and every other private
address stay refused). It answers:

* **the recorded answers** of ``$CITERUN_EVALDATA/oa_responses`` (default
  ``<repo>/../shared/evaldata``): status, content type and body as recorded, with the URL
  fields a client may follow (``url_for_pdf``, ``pdf_url``, ``oa_url``, ``url`` ...)
  rewritten to ``/remote/<host>/<path>`` here, so no test leaves the machine; a remote
  path that names a PDF (".pdf", "/pdf", "pdf=render") gets a PDF, any other an HTML
  landing page;
* **the scenario's works** (``works``: a DOI, "arxiv:<id>", "pmid:<n>", "pmcid:PMC<n>" or
  "title:<name>" (a work no service knows an identifier of) to a :class:`Work` or its kind), in the shapes each service documents: open access with
  a PDF, an abstract only, unknown (404s as each service answers them), an HTML page
  instead of the PDF, a redirect to a hostile target, a slow body, a 2 GB body (streamed,
  never built in memory);
* ``throttle={"/unpaywall/": 2}``: the first two requests under that path get 429 (or
  ``throttle_status``: OpenAlex documents 403 for "too fast") with
  ``Retry-After: <retry_after>`` (none when ``retry_after`` is None).

``delay={"/arxiv/": 0.3}`` holds answers under a path that long.
``srv.requests`` counts requests per path (without the query), ``srv.log`` keeps each
full path in order, ``srv.most_in_flight`` the most requests a service had at once.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import pathlib
import re
import ssl
import tempfile
import threading
import time
import typing
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pymupdf
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from citerun.pipeline.openaccess import OpenAccessSettings
from tests.support import oa_shapes
from tests.support.oa_routes import Routes

ROOT = pathlib.Path(__file__).resolve().parents[2]
EVALDATA = pathlib.Path(os.environ.get("CITERUN_EVALDATA", ROOT.parent / "shared" / "evaldata"))
RECORDINGS = EVALDATA / "oa_responses"
HOST = "127.0.0.2"

# "redirect": the PDF link answers 302 to a HOSTILE target; "direct": the metadata's PDF
# link is that target itself.
Kind = typing.Literal["pdf", "abstract", "unknown", "landing", "redirect", "direct", "slow",
                      "huge"]
# The hostile targets a "redirect" work may point its PDF link at.
HOSTILE = {
    "loopback": "https://127.0.0.1:{port}/files/secret.pdf",
    "private": "https://10.0.0.1/files/secret.pdf",
    "metadata": "https://169.254.169.254/latest/meta-data/",
    "cluster": "https://kubernetes.default.svc/api",
    "plain-http": "http://{host}:{port}/files/plain.pdf",
}


def make_pdf(text: str) -> bytes:
    """A one-page PDF saying ``text`` (pymupdf, in memory)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 770), text, fontsize=11)
    data: bytes = doc.tobytes()
    doc.close()
    return data


LANDING_PAGE = (b"<!DOCTYPE html><html><head><title>Article</title></head><body>"
                b"<h1>Article</h1><p>Download PDF</p></body></html>")


@dataclass(frozen=True)
class Work:
    """One work of a scenario and how the services know it."""

    kind: Kind = "pdf"
    title: str = "A study of open access"
    authors: tuple[str, ...] = ("Smith", "Jones")
    year: int = 2021
    abstract: str = ("We study how often cited works have an open copy. Most recent "
                     "articles have one; older books rarely do.")
    text: str = ("Open access copies exist for 47 percent of recent articles. "
                 "This is the full text of the work.")
    hostile: str = "metadata"  # for kind "redirect": a key of HOSTILE
    pmid: str | None = None
    pmcid: str | None = None
    doi: str | None = None  # filled from the scenario key


def _key(name: str) -> str:
    name = name.strip()
    lower = name.lower()
    for prefix in ("arxiv:", "pmid:", "pmcid:", "doi:", "title:"):  # title: no identifier
        if lower.startswith(prefix):
            rest = name[len(prefix):]
            return prefix + (rest.upper() if prefix == "pmcid:" else rest.lower())
    return "doi:" + lower


# -- certificates ---------------------------------------------------------------------

def _certificates(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    """A CA and a server certificate for 127.0.0.2 (and 127.0.0.1, localhost)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "citerun test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=True, key_cert_sign=True, crl_sign=True,
              content_commitment=False, key_encipherment=False, data_encipherment=False,
              key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address(HOST)),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    paths = (directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(cert.public_bytes(pem))
    paths[2].write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


# -- the recordings -------------------------------------------------------------------

@dataclass(frozen=True)
class Recorded:
    file: str
    status: int
    content_type: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


def recorded_key(service: str, path: str, query: Mapping[str, list[str]]) -> str | None:
    """The key a request is replayed by: the service and the id or query it asks."""
    q = {k: v[0] for k, v in query.items() if v}
    if service == "unpaywall" and path.startswith("/v2/"):
        return f"unpaywall {unquote(path[4:]).lower()}"
    if service == "openalex":
        prefix = "/works/https://doi.org/"
        if path.startswith(prefix):
            return f"openalex doi {unquote(path[len(prefix):]).lower()}"
        if path.startswith("/works/doi:"):
            return f"openalex doi {unquote(path[len('/works/doi:'):]).lower()}"
        if path == "/works" and q.get("filter", "").startswith("title.search:"):
            words = q["filter"].split(",", 1)[0][len("title.search:"):]
            return f"openalex title {' '.join(words.lower().split())}"
    if service == "crossref" and path.startswith("/works/"):
        return f"crossref {unquote(path[len('/works/'):]).lower()}"
    if service == "arxiv":
        return f"arxiv {q.get('id_list', '')}"
    if service == "europepmc" and path.endswith("/search"):
        return (f"europepmc {q.get('query', '')} {q.get('format', 'json')} "
                f"{q.get('resultType', 'lite')}")
    if service == "s2":
        if path.endswith("/paper/search/match"):
            return f"s2 match {' '.join(q.get('query', '').lower().split())}"
        if path.startswith("/graph/v1/paper/"):
            return f"s2 paper {unquote(path[len('/graph/v1/paper/'):]).lower()}"
    return None


_SERVICE_OF_HOST = {"api.unpaywall.org": "unpaywall", "api.openalex.org": "openalex",
                    "api.crossref.org": "crossref", "export.arxiv.org": "arxiv",
                    "www.ebi.ac.uk": "europepmc", "api.semanticscholar.org": "s2"}
_PREFIX_OF_SERVICE = {"unpaywall": "/unpaywall", "openalex": "/openalex",
                      "crossref": "/crossref", "arxiv": "/arxiv",
                      "europepmc": "/europepmc", "s2": "/s2"}


def load_recordings(directory: pathlib.Path = RECORDINGS) -> dict[str, Recorded]:
    """Every recorded answer by the key its request has (empty without the data)."""
    index = directory / "index.json"
    if not index.exists():
        return {}
    found: dict[str, Recorded] = {}
    for entry in json.loads(index.read_text(encoding="utf-8")):
        url, _, note = entry["url"].partition(" (")
        if "resultType=lite" in note:  # reconstructed: the default, written beside the URL
            url += "&resultType=lite"
        parts = urlsplit(url)
        service = _SERVICE_OF_HOST[parts.hostname or ""]
        path = parts.path.removeprefix("/europepmc/webservices/rest").removeprefix("/api")
        if service == "arxiv":
            path = "/query"
        key = recorded_key(service, path, parse_qs(parts.query))
        if key is None:
            raise ValueError(f"no replay key for {url}")
        headers = {k: v for k, v in (entry.get("recorded_headers") or {}).items()
                   if k.lower().startswith("x-rate-limit")}
        # arXiv's fixtures kept no headers: its API answers Atom.
        content_type = entry["content_type"] or (
            "application/atom+xml; charset=utf-8" if service == "arxiv" else "text/plain")
        found[key] = Recorded(entry["file"], entry["status"], content_type,
                              (directory / entry["file"]).read_bytes(), headers)
    return found


_URL_KEYS = frozenset({"url_for_pdf", "url_for_landing_page", "url", "pdf_url", "oa_url",
                       "landing_page_url", "URL"})


def rewrite_urls(value: typing.Any, base: str) -> typing.Any:
    """A JSON value with the followable URLs pointed at ``base``/remote/<host>/<path>."""
    if isinstance(value, dict):
        return {k: (_remote(v, base) if k in _URL_KEYS and isinstance(v, str)
                    else rewrite_urls(v, base)) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_urls(v, base) for v in value]
    return value


def _remote(url: str, base: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return url
    rest = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"{base}/remote/{parts.hostname}{rest}"


# -- the server -----------------------------------------------------------------------

HUGE_BYTES = 2 * 1024 ** 3
_CHUNK = b"\0" * (1024 * 1024)


class OaServer:
    """The services on one local HTTPS server; see the module's docstring."""

    def __init__(self, works: Mapping[str, Work | Kind] | None = None, *,
                 throttle: Mapping[str, int] | None = None, retry_after: str | None = "1",
                 throttle_status: int = 429, delay: Mapping[str, float] | None = None,
                 recordings: pathlib.Path | None = None, rate_headers: bool = False) -> None:
        self.shapes = oa_shapes
        self.works: dict[str, Work] = {}
        for name, spec in (works or {}).items():
            key = _key(name)
            work = spec if isinstance(spec, Work) else Work(kind=spec)
            if key.startswith("doi:") and work.doi is None:
                work = Work(**{**work.__dict__, "doi": key[4:]})
            self.works[key] = work
        self.throttle = dict(throttle or {})
        self.retry_after = retry_after
        self.throttle_status = throttle_status
        self.delay = dict(delay or {})
        self.in_flight: Counter[str] = Counter()
        self.most_in_flight: Counter[str] = Counter()
        self.rate_headers = rate_headers
        self.recordings = load_recordings(recordings or RECORDINGS)
        self.requests: Counter[str] = Counter()
        self.log: list[str] = []
        self.user_agents: list[str] = []
        self.huge_sent = 0
        self._throttled: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="oa-server-")
        self.ca, self._cert, self._key = _certificates(pathlib.Path(self._tmp.name))
        self.port = 0
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base(self) -> str:
        return f"https://{HOST}:{self.port}"

    def __enter__(self) -> OaServer:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self._cert, self._key)
        server = self

        class Handler(_Handler):
            srv = server

        httpd = ThreadingHTTPServer((HOST, 0), Handler)
        httpd.daemon_threads = True
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True,
                                           do_handshake_on_connect=False)
        self.port = httpd.server_address[1]
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        self._tmp.cleanup()

    def settings(self, **overrides: typing.Any) -> OpenAccessSettings:
        """Settings pointing every base URL here, trusting the test CA, 127.0.0.2/32
        allowed, no pacing (a test that measures pacing sets the intervals)."""
        values: dict[str, typing.Any] = dict(
            enabled=True, email="tests@citerun.invalid",
            unpaywall_url=f"{self.base}/unpaywall/v2", openalex_url=f"{self.base}/openalex",
            crossref_url=f"{self.base}/crossref",
            arxiv_api_url=f"{self.base}/arxiv/api/query", arxiv_pdf_url=f"{self.base}/arxiv/pdf",
            europepmc_url=f"{self.base}/europepmc/webservices/rest",
            semanticscholar_url=f"{self.base}/s2/graph/v1", ca_bundle=str(self.ca),
            allow_networks=(f"{HOST}/32",), unpaywall_interval_s=0, openalex_interval_s=0,
            crossref_interval_s=0, arxiv_interval_s=0, europepmc_interval_s=0,
            semanticscholar_interval_s=0, semanticscholar_keyless_interval_s=0, pdf_interval_s=0,
            retry_after_cap_s=5.0)
        values.update(overrides)
        return OpenAccessSettings(**values)

    # -- what a work looks like here -------------------------------------------------

    def pdf_url(self, key: str, work: Work) -> str | None:
        """The PDF link the services give for ``work`` (None: no open copy)."""
        if work.kind == "pdf":
            return f"{self.base}/files/pdf/{quote(key, safe='')}"
        if work.kind == "landing":
            return f"{self.base}/files/landing/{quote(key, safe='')}"
        if work.kind == "redirect":
            return f"{self.base}/redirect/{work.hostile}"
        if work.kind == "direct":
            return HOSTILE[work.hostile].format(port=self.port, host=HOST)
        if work.kind in ("slow", "huge"):
            return f"{self.base}/{work.kind}"
        return None

    def landing(self, key: str) -> str:
        return f"{self.base}/files/landing/{quote(key, safe='')}"

    def find(self, **ids: str | None) -> tuple[str, Work] | None:
        """The scenario's work with one of these ids (doi, arxiv, pmid, pmcid)."""
        for name, value in ids.items():
            if not value:
                continue
            for key, work in self.works.items():
                if key == f"{name}:{value}" or getattr(work, name, None) == value:
                    return key, work
        return None

    def by_title(self, words: str) -> list[tuple[str, Work]]:
        wanted = set(re.findall(r"\w+", words.lower()))
        return [(k, w) for k, w in self.works.items()
                if wanted and wanted <= set(re.findall(r"\w+", w.title.lower())) | {
                    str(w.year), *(a.lower() for a in w.authors)}]

    def arxiv_of(self, key: str, work: Work) -> str | None:
        return key[len("arxiv:"):] if key.startswith("arxiv:") else None


class _Handler(Routes, BaseHTTPRequestHandler):
    srv: OaServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: typing.Any) -> None:  # noqa: A002
        return

    def setup(self) -> None:
        super().setup()
        try:
            typing.cast(ssl.SSLSocket, self.connection).do_handshake()
        except (ssl.SSLError, OSError):
            self.close_connection = True

    def send(self, status: int, body: bytes, content_type: str,
             headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (OSError, ssl.SSLError):
            pass

    def send_json(self, status: int, data: typing.Any) -> None:
        self.send(status, json.dumps(data).encode(), "application/json")

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        srv = self.srv
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        with srv._lock:
            srv.requests[path] += 1
            srv.log.append(self.path)
            srv.user_agents.append(self.headers.get("User-Agent", ""))
            for prefix, times in srv.throttle.items():
                if path.startswith(prefix) and srv._throttled[prefix] < times:
                    srv._throttled[prefix] += 1
                    # send_response adds the Retry-After of every throttled answer
                    self.send_json(srv.throttle_status, {"error": "Rate limit exceeded"})
                    return
        segment, _, rest = path.lstrip("/").partition("/")
        route = getattr(self, f"route_{segment}", None)
        if route is None:
            self.send(404, b"not found", "text/plain")
            return
        with srv._lock:
            srv.in_flight[segment] += 1
            srv.most_in_flight[segment] = max(srv.most_in_flight[segment],
                                              srv.in_flight[segment])
        try:
            time.sleep(next((d for prefix, d in srv.delay.items()
                             if path.startswith(prefix)), 0.0))
            route("/" + rest, query)
        finally:
            with srv._lock:
                srv.in_flight[segment] -= 1

    def send_response(self, code: int, message: str | None = None) -> None:
        super().send_response(code, message)
        if code == self.srv.throttle_status and self.srv.retry_after is not None:
            self.send_header("Retry-After", self.srv.retry_after)

    # -- replay ------------------------------------------------------------------------

    def replay(self, service: str, path: str, query: Mapping[str, list[str]]) -> bool:
        key = recorded_key(service, path, query)
        found = self.srv.recordings.get(key or "")
        if found is None:
            return False
        body = found.body
        if found.content_type.startswith("application/json") and found.status == 200:
            body = json.dumps(rewrite_urls(json.loads(body), self.srv.base)).encode()
        self.send(found.status, body, found.content_type, found.headers)
        return True

    def not_found(self, service: str, ident: str) -> None:
        shapes = self.srv.shapes
        if service == "unpaywall":
            self.send_json(404, shapes.unpaywall_404(ident))
        elif service == "s2":
            self.send_json(404, shapes.semanticscholar_404(ident))
        elif service == "crossref":
            self.send(404, b"Resource not found.", "text/plain")
        else:
            self.send(404, b"<!DOCTYPE html><html><body><h1>404 Not Found</h1></body></html>",
                      "text/html; charset=utf-8")
