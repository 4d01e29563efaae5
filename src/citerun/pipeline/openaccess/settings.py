"""What the open-access client may do, and where: every base URL, key, e-mail, cap,
rate and address rule is a field here, and none is needed while ``enabled`` is False.

``PipelineSettings.openaccess`` holds it (``CITERUN_OPENACCESS__*``). The rates are the
services' published limits (docs/openaccess.md names each page and the date it was read);
an operator with a key or an agreement raises them.
"""

from __future__ import annotations

import pydantic

_POLITE = "Seconds between two requests to {name}, whatever the run: {why}."


class OpenAccessSettings(pydantic.BaseModel):
    """The open-access client (issue 51): looking up cited works that have no PDF, and
    fetching open-access PDFs and abstracts for them. Off unless ``enabled``."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    enabled: bool = pydantic.Field(
        False, description="Look up and fetch open-access copies of cited works without a "
        "PDF. Off: nothing is sent to any service.")
    email: str | None = pydantic.Field(
        None, description="The operator's contact e-mail: sent to Unpaywall (required "
        "there: without it Unpaywall is skipped), to OpenAlex and Crossref as `mailto` "
        "(their polite pools) and in the User-Agent.")

    # -- the services ------------------------------------------------------------------
    unpaywall_url: str = pydantic.Field(
        "https://api.unpaywall.org/v2", description="Unpaywall's REST API (GET /<doi>).")
    openalex_url: str = pydantic.Field(
        "https://api.openalex.org", description="OpenAlex's API (GET /works/...).")
    openalex_key: str | None = pydantic.Field(
        None, description="OpenAlex API key (`api_key`); optional.")
    crossref_url: str = pydantic.Field(
        "https://api.crossref.org", description="Crossref's REST API (GET /works/...).")
    crossref_token: str | None = pydantic.Field(
        None, description="Crossref Metadata Plus token (`Crossref-Plus-API-Token`); "
        "optional.")
    arxiv_api_url: str = pydantic.Field(
        "https://export.arxiv.org/api/query", description="arXiv's query API.")
    arxiv_pdf_url: str = pydantic.Field(
        "https://arxiv.org/pdf", description="Where arXiv serves a paper's PDF "
        "(<base>/<id>).")
    europepmc_url: str = pydantic.Field(
        "https://www.ebi.ac.uk/europepmc/webservices/rest",
        description="Europe PMC's REST API (GET /search).")
    semanticscholar_url: str = pydantic.Field(
        "https://api.semanticscholar.org/graph/v1",
        description="Semantic Scholar's Academic Graph API.")
    semanticscholar_key: str | None = pydantic.Field(
        None, description="Semantic Scholar API key (`x-api-key`); optional.")
    services: tuple[str, ...] = pydantic.Field(
        ("arxiv", "unpaywall", "openalex", "europepmc", "semanticscholar", "crossref"),
        description="The services asked, any of arxiv, unpaywall, openalex, europepmc, "
        "semanticscholar, crossref; one left out is never contacted.")
    try_library_urls: bool = pydantic.Field(
        True, description="Try the URL a library item names (its `url` field) as a PDF "
        "link when no service found one.")

    # -- transport ---------------------------------------------------------------------
    require_https: bool = pydantic.Field(
        True, description="Refuse plain-http service URLs, PDF links and redirects.")
    ca_bundle: str | None = pydantic.Field(
        None, description="A PEM file of CA certificates to trust instead of the system's "
        "(an internal mirror, the tests' server).")
    proxy: str | None = pydantic.Field(
        None, description="An HTTP(S) proxy every request goes through (the chart's egress "
        "proxy); the environment's proxy variables are never read.")
    allow_networks: tuple[str, ...] = pydantic.Field(
        (), description="Networks (CIDR) that may be reached although private, loopback or "
        "link-local (an internal mirror); empty: public addresses only.")
    deny_networks: tuple[str, ...] = pydantic.Field(
        (), description="Extra networks (CIDR) never reached: the cluster's pod and "
        "service ranges.")
    deny_host_suffixes: tuple[str, ...] = pydantic.Field(
        ("svc", "cluster.local", "internal", "local", "localhost"),
        description="DNS suffixes refused before resolving: a cluster's own names.")
    pdf_max_bytes: int = pydantic.Field(
        50 * 1024 * 1024, ge=1024, description="Largest PDF fetched; a longer body is cut "
        "there and refused.")
    api_max_bytes: int = pydantic.Field(
        5 * 1024 * 1024, ge=1024, description="Largest API answer read.")
    pdf_timeout_s: float = pydantic.Field(
        60.0, gt=0, description="Seconds one PDF download may take, redirects included.")
    api_timeout_s: float = pydantic.Field(
        20.0, gt=0, description="Seconds one API request may take.")
    work_timeout_s: float = pydantic.Field(
        300.0, gt=0, description="Seconds the lookups of one cited work may take in all, "
        "rate-limit waits included.")
    max_pdf_links: int = pydantic.Field(
        4, ge=1, description="PDF links tried per work before settling for the abstract.")
    retry_attempts: int = pydantic.Field(
        3, ge=1, description="Attempts per request (429, 5xx, no answer), the first "
        "included.")
    retry_after_cap_s: float = pydantic.Field(
        60.0, gt=0, description="Longest `Retry-After` honoured; a service asking more "
        "gets its request given up for this run.")

    # -- per-host rates (seconds between requests) ---------------------------------------
    unpaywall_interval_s: float = pydantic.Field(
        1.0, ge=0, description=_POLITE.format(
            name="Unpaywall", why="it asks for at most 100,000 calls a day (about 1.2/s)"))
    openalex_interval_s: float = pydantic.Field(
        0.1, ge=0, description=_POLITE.format(
            name="OpenAlex", why="10 requests per second at most"))
    crossref_interval_s: float = pydantic.Field(
        0.2, ge=0, description=_POLITE.format(
            name="Crossref", why="5 per second in the public pool (10 with mailto); its "
            "x-rate-limit headers win when stricter"))
    arxiv_interval_s: float = pydantic.Field(
        3.0, ge=0, description=_POLITE.format(
            name="arXiv", why="one request every three seconds"))
    europepmc_interval_s: float = pydantic.Field(
        0.2, ge=0, description=_POLITE.format(
            name="Europe PMC", why="it names no number; kept modest"))
    semanticscholar_interval_s: float = pydantic.Field(
        1.0, ge=0, description=_POLITE.format(
            name="Semantic Scholar with a key", why="a key's introductory rate is 1 "
            "request per second"))
    semanticscholar_keyless_interval_s: float = pydantic.Field(
        3.0, ge=0, description=_POLITE.format(
            name="Semantic Scholar without a key", why="unauthenticated callers share one "
            "pool (about 100 requests per 5 minutes)"))
    pdf_interval_s: float = pydantic.Field(
        1.0, ge=0, description="Seconds between two PDF downloads from the same host.")
