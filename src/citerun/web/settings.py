"""The web service's settings, read like every other citerun setting (``CITERUN_`` prefix,
``__`` between a group and its field: the group here is ``web``).

A separate tree from :class:`citerun.core.settings.Settings` because only ``citerun serve``
reads it; the CLI checks the environment against it too, so a mistyped name stops the
process at start.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerun.web import spool

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Signature algorithms a bearer token may use. ``none`` and the HMAC family are never
#: accepted: an issuer's public keys must not double as a shared secret.
SAFE_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                   "ES512", "EdDSA")

MB = 1_000_000

_TEMPLATE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class WebSettings(BaseModel):
    """Who may call the service, and how much one user may hold at once."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    identity_header: str = Field(
        "X-Forwarded-User", min_length=1, max_length=100, description="The header an "
        "authenticating proxy (oauth2-proxy, an ingress's auth) names the user in; "
        "believed only from trusted_proxies.")
    trusted_proxies: tuple[Network, ...] = Field(
        (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("::1/128")),
        description="TCP peers whose identity header is believed (CIDRs). From any other "
        "peer the header is refused (403): a client cannot name itself. On a cluster: the "
        "proxy's pod network, never 0.0.0.0/0.")
    oidc_issuer: str | None = Field(
        None, description="Issuer whose bearer tokens (JWT) identify a user; None accepts "
        "no bearer token. Its 'iss' must equal this exactly.")
    oidc_audience: str | None = Field(
        None, description="The 'aud' a token must carry (this service's client id); "
        "required with oidc_issuer.")
    oidc_jwks_file: Path | None = Field(
        None, description="The issuer's public keys (a JWKS file); None fetches them from "
        "the issuer's discovery document (jwks_uri).")
    oidc_algorithms: tuple[str, ...] = Field(
        ("RS256", "ES256"), min_length=1, description="Signature algorithms accepted "
        "(a subset of the asymmetric ones; never 'none' or HS*).")
    oidc_user_claim: str = Field(
        "sub", min_length=1, description="The claim that names the user (stable: 'sub'; "
        "'preferred_username' or 'email' when the proxy names users so too).")
    oidc_leeway_s: int = Field(
        30, ge=0, le=300, description="Clock skew allowed on exp/nbf/iat, in seconds.")
    oidc_jwks_refresh_s: float = Field(
        300.0, gt=0, description="Seconds fetched keys are reused; an unknown 'kid' "
        "refetches them at most this often (a key rotation), never per request.")
    public_origin: str | None = Field(
        None, description="The origin browsers see (https://citerun.example.org); POSTs "
        "from a browser session must come from it. None: the request's own Host (or, with "
        "trust_forwarded_origin, what the trusted proxy forwards). Behind a proxy that "
        "does not pass the browser's Host (nginx's default), set this.")
    trust_forwarded_origin: bool = Field(
        False, description="Read the origin browsers see from X-Forwarded-Proto and "
        "X-Forwarded-Host, only from trusted_proxies and only when public_origin is unset "
        "(one value each; a list is refused). Off by default: a header is believed only "
        "where the operator said a proxy that sets it (rather than passes the client's "
        "on) stands in front.")
    local_user: str | None = Field(
        None, min_length=1, max_length=256, description="For trying citerun on one's own "
        "machine: every request from loopback to a loopback name (localhost, 127.0.0.1, "
        "[::1]), with no proxy's headers, is this user, with no sign-in. citerun serve "
        "refuses it unless it listens on loopback only, and with the kubernetes backend. "
        "Anyone with a login on the machine can reach loopback: one person's machine only.")
    max_active_runs: int = Field(
        3, ge=1, description="Runs one user may have running at once (429 above).")
    max_staged_bytes: int = Field(
        120 * MB, ge=1, description="Bytes of uploads one user's running runs may hold "
        "staged in Postgres (413 above); the bytes go when each document is parsed.")
    max_upload_bytes: int = Field(
        120 * MB, ge=1024, description="Largest request body (one thesis with its sources).")
    max_files: int = Field(
        200, ge=2, description="Most files in one upload (a thesis and its sources).")
    upload_memory_bytes: int = Field(
        500 * MB, ge=4 * 1024, description="Bytes of uploads the process holds in memory "
        "at once, all users together (issue 48): an upload is spooled to disk as it "
        "arrives ($TMPDIR) and read back to be staged only within this budget, holding "
        "its bytes, its thesis once more (bundled with its libraries) and 3 MiB (the "
        "copies of the piece being sent to Postgres); at least twice max_upload_bytes and "
        "3 MiB. The web pod's memory limit must hold about 300 MiB more than this.")
    upload_wait_s: float = Field(
        30.0, ge=0, le=300, description="Seconds an upload already received waits for "
        "its turn within upload_memory_bytes (first come, first served) before it is "
        "answered 503 with Retry-After: under a proxy's read timeout.")
    tenant: str = Field(
        "default", min_length=1, description="The tenant (queue fair share, tenant caps) "
        "of the runs this service creates locally.")
    list_limit: int = Field(200, ge=1, le=10_000, description="Runs one listing shows.")
    fetch_sources: bool = Field(
        False, description="Offer the form's checkbox that looks for open-access copies of "
        "the cited works no uploaded PDF matches (issue 51; a run's spec then asks "
        "fetchSources). The workers fetch only where CITERUN_OPENACCESS__ENABLED is true: "
        "citerun serve turns it on for its own local workers.")
    keep_days: float | None = Field(
        30.0, gt=0, le=3650, description="Days an ended run of a web user (its report, its "
        "documents' names and what nothing else uses of them) is kept after it ended; then "
        "the service deletes it as its owner's Delete would. The pages say so where files "
        "are uploaded. Null: kept until its owner deletes it.")
    backend: Literal["local", "kubernetes"] = Field(
        "local", description="Where an upload becomes a run: 'local' creates it in the "
        "service's database; 'kubernetes' stages the upload in the (shared) database and "
        "creates a CitationRun with the service's own ServiceAccount, for the operator.")
    namespace: str | None = Field(
        None, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="With the kubernetes backend: the namespace (the department's) every "
        "user's CitationRuns go to (one of namespace and namespace_template is required "
        "with that backend).")
    namespace_template: str | None = Field(
        None, max_length=40, description="With the kubernetes backend: each user's own "
        "namespace, '{user}' replaced by the user name made a DNS label (lower case, "
        "[a-z0-9-]; a name that had to change, or that ends as a changed one does, gets 16 "
        "hex digits of its sha256, so two users never share one), e.g. 'thesis-{user}'. "
        "The namespaces must exist. A fixed part is required, and one from which a user's "
        "name could make a namespace of Kubernetes (default, kube-system, kube-public, "
        "kube-node-lease) is refused; the service's own namespace is refused per upload.")
    resource_timeout_s: float = Field(
        20.0, gt=0, le=120, description="Seconds one Kubernetes API call may take.")

    @model_validator(mode="after")
    def _oidc_complete(self) -> WebSettings:
        if self.oidc_issuer is not None and not self.oidc_audience:
            raise ValueError("web.oidc_audience is required with web.oidc_issuer")
        unsafe = sorted(set(self.oidc_algorithms) - set(SAFE_ALGORITHMS))
        if unsafe:
            raise ValueError(f"web.oidc_algorithms: {unsafe} not allowed; choose from "
                             f"{list(SAFE_ALGORITHMS)}")
        if self.public_origin is not None and self.public_origin.rstrip("/") != self.public_origin:
            raise ValueError("web.public_origin is an origin: no path, no trailing slash")
        if self.public_origin is not None and not re.match(
                r"^https?://[^/?#@\s]+$", self.public_origin):
            raise ValueError("web.public_origin is an origin: http:// or https:// and a "
                             "host (with its port if not the scheme's), e.g. "
                             "https://citerun.example.org")
        if self.local_user is not None:
            if self.backend == "kubernetes":
                raise ValueError("web.local_user is for one machine, not the kubernetes backend")
            if self.local_user.strip() != self.local_user or not self.local_user.isprintable():
                raise ValueError("web.local_user: a printable name without surrounding spaces")
        if self.upload_memory_bytes < spool.memory_cost([self.max_upload_bytes],
                                                        self.max_upload_bytes):
            raise ValueError(f"web.upload_memory_bytes ({self.upload_memory_bytes}) must be "
                             "at least twice web.max_upload_bytes "
                             f"({self.max_upload_bytes}) and {spool.SEND_COST} bytes: one "
                             "largest upload must fit in it")
        if self.namespace is not None and self.namespace_template is not None:
            raise ValueError("web.namespace and web.namespace_template: set one, not both")
        if self.backend == "kubernetes" and self.namespace is None \
                and self.namespace_template is None:
            raise ValueError("web.backend 'kubernetes' needs web.namespace or "
                             "web.namespace_template: where the CitationRuns go")
        if self.namespace_template is not None and (
                self.namespace_template.count("{user}") != 1
                or not _TEMPLATE.match(self.namespace_template.replace("{user}", "u"))):
            raise ValueError("web.namespace_template: a DNS label with '{user}' once, "
                             "e.g. 'thesis-{user}'")
        if self.namespace_template is not None:
            _check_template(self.namespace_template)
        return self


#: Kubernetes' own namespaces: no user's runs may go there (issue 48).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def template_reaches(template: str, namespace: str) -> bool:
    """Whether some user's label (a DNS label) put in ``template`` gives ``namespace``."""
    prefix, _, suffix = template.partition("{user}")
    if (len(namespace) <= len(prefix) + len(suffix) or not namespace.startswith(prefix)
            or not namespace.endswith(suffix)):
        return False
    return bool(_TEMPLATE.match(namespace[len(prefix):len(namespace) - len(suffix)]))


def _check_template(template: str) -> None:
    """A template with no fixed part names a namespace after the user alone (a user named
    ``kube-system``, or the service's own namespace, would run there as its tenant); one
    from which a user's name can make one of Kubernetes' own is refused too."""
    if template == "{user}":
        raise ValueError("web.namespace_template '{user}' names the namespace after the "
                         "user alone: a user named 'kube-system', 'default' or the "
                         "service's own namespace would run there as its tenant; give it "
                         "a fixed part, e.g. 'thesis-{user}'")
    reached = [name for name in SYSTEM_NAMESPACES if template_reaches(template, name)]
    if reached:
        raise ValueError(f"web.namespace_template {template!r} can name Kubernetes' own "
                         f"namespace {reached[0]!r} (a user named to fit it would run "
                         "there); choose a fixed part no such name fits, e.g. "
                         "'thesis-{user}'")


class ServeSettings(BaseSettings):
    """The environment ``citerun serve`` reads besides :class:`citerun.core.settings.Settings`."""

    model_config = SettingsConfigDict(
        env_prefix="CITERUN_", env_nested_delimiter="__", frozen=True, extra="ignore")

    web: WebSettings = Field(default_factory=WebSettings)
