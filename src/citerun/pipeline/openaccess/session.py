"""The client's connection to the services: :class:`Session`.

One ``httpx.AsyncClient`` (the operator's CA bundle, an explicit proxy, no environment
proxies, no redirects of its own) used through :func:`citerun.pipeline.fetch.fetch`, so
every request, redirect and metadata-supplied PDF link is resolved and checked against
the address policy, HTTPS-only by default, size- and time-capped. Each host gets its own
gate: at most one request per its interval (the service's published rate; arXiv's hosts
also one connection at a time), and a
``Retry-After`` closes the gate for everyone until then. A request that gets 429, a 5xx
or no answer is retried under :mod:`citerun.core.retry`'s one policy, waiting what the
server asked; a wait over ``retry_after_cap_s`` gives the host up for the session.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlsplit

import httpx

import citerun
from citerun.core import retry
from citerun.pipeline import fetch
from citerun.pipeline.openaccess.settings import OpenAccessSettings

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


class ServiceFailed(Exception):
    """A request that got no usable answer; ``str()`` says why in plain words, ``status``
    is the HTTP status where there was one (404: the service does not know the work)."""

    def __init__(self, outcome: str, *, status: int | None = None) -> None:
        super().__init__(outcome)
        self.status = status


_REASONS = {
    "blocked_address": "refused: a private, loopback, link-local or cluster address",
    "bad_scheme": "refused: not an https URL",
    "bad_url": "refused: a malformed URL",
    "bad_redirect": "refused: a malformed redirect",
    "too_many_redirects": "refused: too many redirects",
    "too_large": "refused: over the size cap",
    "timeout": "gave up: over the time cap",
    "dns": "no answer: the name does not resolve",
    "network": "no answer: the connection failed",
}


def describe(err: fetch.DownloadError) -> str:
    """A download error in the report's plain words."""
    if err.reason == "http_error":
        if err.status == 404:
            return "not found (404)"
        return f"refused by the server (HTTP {err.status})"
    return _REASONS.get(err.reason, err.reason)


class _Gate:
    """When a host may next be asked."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.next_at = 0.0
        self.closed_until = 0.0


class Session:
    """``async with Session(settings) as session``: the HTTP client, the per-host gates
    and the counters a bench or test reads (``requests`` per host, ``waits`` in seconds).

    ``sleep`` and ``clock`` are for tests that count the waits without taking them.
    """

    def __init__(self, settings: OpenAccessSettings, *, sleep: Sleep | None = None,
                 clock: Clock | None = None) -> None:
        self.settings = settings
        self.sleep: Sleep = sleep or asyncio.sleep
        self.clock: Clock = clock or time.monotonic
        self.policy = fetch.AddressPolicy.from_strings(
            settings.allow_networks, settings.deny_networks, settings.deny_host_suffixes)
        contact = f" (mailto:{settings.email})" if settings.email else ""
        self.user_agent = f"citerun/{citerun.__version__}{contact}"
        self.requests: Counter[str] = Counter()
        self.waits: list[float] = []
        self._gates: dict[str, _Gate] = {}
        # arXiv asks for one connection at a time besides its interval.
        self._one_at_a_time = {_host(url): asyncio.Semaphore(1) for url in (
            settings.arxiv_api_url, settings.arxiv_pdf_url)}
        self._intervals = self._service_intervals(settings)
        self._client: httpx.AsyncClient | None = None
        self._retry = retry.RetryPolicy(
            base_s=1.0, cap_s=settings.retry_after_cap_s, max_attempts=settings.retry_attempts,
            retry_after_cap_s=settings.retry_after_cap_s)

    @staticmethod
    def _service_intervals(s: OpenAccessSettings) -> dict[str, float]:
        pairs = ((s.unpaywall_url, s.unpaywall_interval_s),
                 (s.openalex_url, s.openalex_interval_s),
                 (s.crossref_url, s.crossref_interval_s),
                 (s.arxiv_api_url, s.arxiv_interval_s),
                 (s.arxiv_pdf_url, s.arxiv_interval_s),
                 (s.europepmc_url, s.europepmc_interval_s),
                 (s.semanticscholar_url, s.semanticscholar_interval_s if s.semanticscholar_key
                  else s.semanticscholar_keyless_interval_s))
        intervals: dict[str, float] = {}
        for url, interval in pairs:
            host = _host(url)
            intervals[host] = max(intervals.get(host, 0.0), interval)
        return intervals

    async def __aenter__(self) -> Session:
        verify: ssl.SSLContext | bool = True
        if self.settings.ca_bundle:
            verify = ssl.create_default_context(cafile=self.settings.ca_bundle)
        self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False,
                                         verify=verify, proxy=self.settings.proxy)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- the gates ------------------------------------------------------------------

    def interval_of(self, host: str) -> float:
        """Seconds between two requests to ``host``: its service's rate, else the PDF rate."""
        return self._intervals.get(host, self.settings.pdf_interval_s)

    def slow_down(self, host: str, interval_s: float) -> None:
        """A service says its rate is lower than configured (Crossref's x-rate-limit
        headers): keep to the stricter of the two for the rest of the session."""
        self._intervals[host] = max(self.interval_of(host), interval_s)

    async def _pass_gate(self, host: str) -> None:
        gate = self._gates.setdefault(host, _Gate())
        async with gate.lock:
            now = self.clock()
            if gate.closed_until > now + self.settings.retry_after_cap_s:
                raise ServiceFailed("gave up: the service asked to wait longer than "
                                    f"{self.settings.retry_after_cap_s:g} s")
            wait = max(gate.next_at, gate.closed_until) - now
            if wait > 0:
                self.waits.append(wait)
                await self.sleep(wait)
                now = self.clock()
            gate.next_at = now + self.interval_of(host)

    def _close_gate(self, host: str, seconds: float) -> None:
        gate = self._gates.setdefault(host, _Gate())
        gate.closed_until = max(gate.closed_until, self.clock() + seconds)

    # -- requests ---------------------------------------------------------------------

    async def get(self, url: str, *, params: Mapping[str, str] | None = None,
                  accept: str = "application/json", pdf: bool = False,
                  headers: Mapping[str, str] | None = None,
                  too_fast: frozenset[int] = frozenset()) -> fetch.Fetched:
        """GET ``url`` (with ``params``) through the gate of its host, retried under
        the one retry policy; raises :class:`ServiceFailed` with the outcome.
        ``too_fast`` are statuses this service documents as "too fast" besides the
        retry policy's own (OpenAlex answers 403 when a client exceeds its rate)."""
        if self._client is None:
            raise RuntimeError("use the Session as `async with Session(settings)`")
        client = self._client
        full = str(httpx.URL(url, params=params)) if params else url
        host = _host(full)
        s = self.settings
        send = {"User-Agent": self.user_agent, **(headers or {})}

        async def attempt() -> fetch.Fetched:
            one = self._one_at_a_time.get(host)
            if one is None:
                return await request()
            async with one:
                return await request()

        async def request() -> fetch.Fetched:
            await self._pass_gate(host)
            self.requests[host] += 1
            try:
                return await fetch.fetch(
                    full, client=client, policy=self.policy, headers=send, accept=accept,
                    require_https=s.require_https,
                    max_bytes=s.pdf_max_bytes if pdf else s.api_max_bytes,
                    timeout_s=s.pdf_timeout_s if pdf else s.api_timeout_s)
            except fetch.DownloadError as err:
                asked = retry.retry_after_seconds(err.retry_after)
                if asked is not None:
                    self._close_gate(host, asked)
                    if asked > s.retry_after_cap_s:
                        raise ServiceFailed(
                            f"gave up: asked to wait {asked:g} s (HTTP {err.status})",
                            status=err.status) from err
                if (err.status is not None and (self._retry.retryable(err.status)
                                                or err.status in too_fast)) or (
                        err.reason in ("network", "timeout") and not pdf):
                    raise retry.TryAgain(describe(err), status=err.status,
                                         retry_after=err.retry_after) from err
                raise ServiceFailed(describe(err), status=err.status) from err

        async def waited(seconds: float) -> None:
            # The retry policy's wait (the server's Retry-After, else its backoff) closes
            # the host's gate: the next attempt, and every other request to the host,
            # waits it out there, once.
            self._close_gate(host, seconds)

        try:
            got = await retry.retrying(self._retry, f"open-access request to {host}",
                                       attempt, errors=(retry.TryAgain,), sleep=waited)
        except retry.TryAgain as err:
            raise ServiceFailed(f"{err} (after {s.retry_attempts} tries)",
                                status=err.status) from err
        self._heed_rate_headers(host, got.headers)
        return got

    def _heed_rate_headers(self, host: str, headers: Mapping[str, str]) -> None:
        """Crossref's ``x-rate-limit-limit`` requests per ``x-rate-limit-interval``
        ("1s"): the interval it implies, when stricter than the configured one."""
        limit, interval = headers.get("x-rate-limit-limit"), headers.get(
            "x-rate-limit-interval")
        if not limit or not interval:
            return
        try:
            count = int(limit)
            seconds = float(interval.strip().rstrip("s"))
        except ValueError:
            return
        if count > 0 and seconds > 0:
            self.slow_down(host, seconds / count)


def _host(url: str) -> str:
    """The host[:port] of ``url``, lower case (the gate's key)."""
    try:
        parts = urlsplit(url)
        return (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return ""
