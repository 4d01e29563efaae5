"""Downloading a document from a URL, safely: addresses, redirects, size and time caps.

A CitationRun's ``url`` documents are chosen by whoever may create a run, so the worker
must not become their proxy into the cluster (issue 12, attack 4):

* only http and https;
* the host is resolved here and every address checked against :class:`AddressPolicy`:
  loopback, private, link-local (cloud metadata 169.254.169.254 included), CGNAT/shared,
  multicast, reserved, site-local and unspecified addresses are refused, as are the
  configured cluster ranges, unless an operator allow-lists a network explicitly; an IPv6
  address that carries an IPv4 one (mapped, compatible, translated, NAT64, 6to4, Teredo)
  is judged by the IPv4 inside, since that is where a translator or relay delivers it
  (issue 27);
* the connection goes to the address that was checked (the URL's host is kept for the
  Host header, TLS SNI and certificate checks), so a DNS answer that changes between the
  check and the connect (rebinding) cannot slip through;
* redirects are followed by hand, at most :data:`MAX_REDIRECTS`, each target checked
  like the first URL; a Location that parsers may read differently (backslashes, a
  scheme without a host, whitespace or control characters, over :data:`MAX_URL_CHARS`)
  or that does not parse is refused as ``bad_redirect`` before any request (issue 27);
* the body is streamed and aborted past the size cap; the whole download, redirects
  included, has one deadline; environment proxies are ignored.

The open-access client (:mod:`citerun.pipeline.openaccess`, issue 51) downloads through
the same function, for its API answers and for the PDF links those answers name, with
three more refusals it turns on: a plain ``http`` URL or redirect (``require_https``), a
host name under a cluster's private suffixes (``svc``, ``cluster.local``, refused
before it is even resolved: :attr:`AddressPolicy.deny_host_suffixes`) and an explicit
proxy (the only egress a cluster may give its workers). An HTTP error keeps its status
and ``Retry-After`` (:attr:`DownloadError.status`, :attr:`DownloadError.retry_after`) so
a caller can tell "not found" from "slow down".

Every failure is a :class:`DownloadError` with a stable ``reason`` (for logs, metrics
and the retry decision) and one generic message for the user, so that error texts do
not tell an open port from a closed one, or a refused address from a missing host.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from citerun.core import errors

MAX_REDIRECTS = 5
MAX_URL_CHARS = 2048  # the CRD's maxLength for a source URL; a redirect gets no more
_REDIRECTS = (301, 302, 303, 307, 308)
GENERIC_MESSAGE = "the document could not be downloaded from its URL"

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Refused even though some are "global" by the IANA registries: shared address space
# (CGNAT, often used for cluster pods/services), the local-use NAT64 prefix (RFC 8215:
# a network's own translator, whose IPv4 sits at a position only that network knows, so
# it cannot be judged by the IPv4 inside), site-local (deprecated, still routed by some
# networks) and well-known metadata addresses of cloud providers.
_ALWAYS_DENIED = tuple(ipaddress.ip_network(n) for n in (
    "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "64:ff9b:1::/48",
    "169.254.0.0/16", "fd00:ec2::254/128", "fe80::/10", "fec0::/10"))

# IPv6 prefixes whose last 32 bits are an IPv4 address the packet ends up at (besides
# the stdlib's ipv4_mapped, sixtofour and teredo): IPv4-compatible (RFC 4291, ::/96, :: and
# ::1 included, which carry 0.0.0.0 and 0.0.0.1), IPv4-translated (RFC 2765,
# ::ffff:0:0:0/96) and the well-known NAT64 prefix (RFC 6052, 64:ff9b::/96).
_LAST_32_IS_IPV4 = tuple(ipaddress.ip_network(n) for n in (
    "::/96", "::ffff:0:0:0/96", "64:ff9b::/96"))
# ASCII controls, space and backslash: URL parsers disagree on them (WHATWG reads a
# backslash as a slash, urllib keeps it in the path; some strip whitespace, some do not).
_AMBIGUOUS_URL_CHARS = frozenset(map(chr, (*range(0x21), 0x5C, 0x7F)))


class DownloadError(errors.CiterunError):
    """The document could not be downloaded; ``str()`` is safe to show the user."""

    def __init__(self, reason: str, message: str = GENERIC_MESSAGE, *,
                 permanent: bool, status: int | None = None,
                 retry_after: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.permanent = permanent
        #: The HTTP status of an ``http_error`` (None for every other reason).
        self.status = status
        #: The server's ``Retry-After`` of an ``http_error``, as sent.
        self.retry_after = retry_after


@dataclass(frozen=True)
class AddressPolicy:
    """Which resolved addresses a download may connect to.

    ``allow`` wins over everything (e.g. an internal mirror, or 127.0.0.1 in a test);
    ``deny`` adds ranges (the cluster's pod and service CIDRs) to the built-in refusals.
    ``deny_host_suffixes`` are DNS suffixes ("svc", "cluster.local") whose names are
    refused before they are resolved, whatever they resolve to: a cluster's own names.
    """

    allow: tuple[IPNetwork, ...] = ()
    deny: tuple[IPNetwork, ...] = ()
    deny_host_suffixes: tuple[str, ...] = ()

    @classmethod
    def from_strings(cls, allow: Iterable[str] = (), deny: Iterable[str] = (),
                     deny_host_suffixes: Iterable[str] = ()) -> AddressPolicy:
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in allow),
                   tuple(ipaddress.ip_network(n, strict=False) for n in deny),
                   tuple(s.strip(".").lower() for s in deny_host_suffixes if s.strip(".")))

    def permits_host(self, host: str) -> bool:
        """Whether a host name is outside every denied suffix ("kubernetes.default.svc"
        and "svc" itself are under "svc"; a trailing dot and the case do not matter)."""
        name = host.rstrip(".").lower()
        return not any(name == s or name.endswith("." + s) for s in self.deny_host_suffixes)

    def permits(self, address: IPAddress) -> bool:
        if any(address in net for net in self.allow if net.version == address.version):
            return True
        if any(address in net for net in (*_ALWAYS_DENIED, *self.deny)
               if net.version == address.version):
            return False
        if isinstance(address, ipaddress.IPv6Address):
            inside = embedded_ipv4(address)
            if inside:
                return all(self.permits(v4) for v4 in inside)
            if address.is_reserved:  # unassigned space; site-local is denied above
                return False
        return address.is_global and not address.is_multicast


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries (both ends of a Teredo one), or ()."""
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo
    if any(address in net for net in _LAST_32_IS_IPV4):
        return (ipaddress.IPv4Address(int(address) & 0xFFFFFFFF),)
    return ()


DEFAULT_POLICY = AddressPolicy()


@dataclass(frozen=True)
class _Target:
    url: str          # the URL with the checked address in place of the host
    host_header: str  # the original host[:port]
    sni: str | None   # the original host name for TLS (None for plain http)


async def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError) as err:
        raise DownloadError("dns", permanent=False) from err
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


async def _target(url: str, policy: AddressPolicy, require_https: bool = False) -> _Target:
    """Check ``url`` and pin it to an allowed address of its host."""
    if len(url) > MAX_URL_CHARS or any(c.isascii() and not c.isprintable() for c in url):
        raise DownloadError("bad_url", permanent=True)  # httpx refuses controls: say so first
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:
        raise DownloadError("bad_url", permanent=True) from err
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise DownloadError("bad_scheme", "only http and https URLs are fetched",
                            permanent=True)
    if require_https and scheme != "https":
        raise DownloadError("bad_scheme", "only https URLs are fetched", permanent=True)
    host = parts.hostname
    if not host or parts.username is not None or parts.password is not None:
        raise DownloadError("bad_url", permanent=True)
    if not policy.permits_host(host):
        raise DownloadError("blocked_address", permanent=True)
    port = port or (443 if scheme == "https" else 80)
    addresses = await _resolve(host, port)
    # Every address must be allowed: a name that resolves to one public and one internal
    # address is refused rather than raced.
    if not addresses or not all(policy.permits(a) for a in addresses):
        raise DownloadError("blocked_address", permanent=True)
    address = addresses[0]
    literal = f"[{address}]" if address.version == 6 else str(address)
    pinned = parts._replace(netloc=f"{literal}:{port}", fragment="").geturl()
    default_port = (scheme == "https" and port == 443) or (scheme == "http" and port == 80)
    host_header = host if default_port else f"{host}:{port}"
    if ":" in host and not host.startswith("["):
        host_header = f"[{host}]" if default_port else f"[{host}]:{port}"
    return _Target(pinned, host_header, host if scheme == "https" else None)


def _check_location(location: str | None) -> str:
    """``location`` if every URL parser reads it alike, else ``bad_redirect``.

    Refused: nothing, over :data:`MAX_URL_CHARS`, ambiguous characters, a scheme or a
    ``//`` without a host (urllib resolves ``http:///x`` on the old host, browsers on
    host ``x``), and anything urllib or httpx cannot parse.
    """
    if not location or len(location) > MAX_URL_CHARS or not _AMBIGUOUS_URL_CHARS.isdisjoint(
            location):
        raise DownloadError("bad_redirect", permanent=True)
    try:
        parts = urlsplit(location)
        parts.port  # noqa: B018 - a port that is no number raises here
        httpx.URL(location)
    except (ValueError, httpx.InvalidURL) as err:
        raise DownloadError("bad_redirect", permanent=True) from err
    has_authority = location[len(parts.scheme) + 1 if parts.scheme else 0:].startswith("//")
    if (parts.scheme and not has_authority) or (has_authority and not parts.hostname):
        raise DownloadError("bad_redirect", permanent=True)
    return location


async def _refuse_bad_location(response: httpx.Response) -> None:
    """httpx parses a redirect's Location even when it does not follow it, and raises
    ``InvalidURL`` or ``RemoteProtocolError`` on its own terms; this response hook checks
    it first so that every malformed one is the same permanent ``bad_redirect``."""
    if response.status_code in _REDIRECTS:
        _check_location(response.headers.get("location"))


def _with_location_check(client: httpx.AsyncClient) -> None:
    hooks = client.event_hooks
    if _refuse_bad_location not in hooks["response"]:
        client.event_hooks = {**hooks, "response": [_refuse_bad_location, *hooks["response"]]}


@dataclass(frozen=True)
class Fetched:
    """A successful download: the body, the answer's headers (names in lower case) and
    the URL it came from after redirects."""

    body: bytes
    headers: dict[str, str]
    url: str


async def download(url: str, *, max_bytes: int, timeout_s: float,
                   client: httpx.AsyncClient | None = None,
                   policy: AddressPolicy = DEFAULT_POLICY,
                   headers: Mapping[str, str] | None = None,
                   accept: str = "application/pdf",
                   require_https: bool = False) -> bytes:
    """The body of ``url``; raises :class:`DownloadError` with a reason.

    A ``client`` passed in gets this module's Location check added to its response hooks.
    ``headers`` are sent with every request (a ``User-Agent``); ``require_https`` refuses
    a plain-http URL and every plain-http redirect.
    """
    fetched = await fetch(url, max_bytes=max_bytes, timeout_s=timeout_s, client=client,
                          policy=policy, headers=headers, accept=accept,
                          require_https=require_https)
    return fetched.body


async def fetch(url: str, *, max_bytes: int, timeout_s: float,
                client: httpx.AsyncClient | None = None,
                policy: AddressPolicy = DEFAULT_POLICY,
                headers: Mapping[str, str] | None = None,
                accept: str = "application/pdf",
                require_https: bool = False) -> Fetched:
    """:func:`download` with the answer's headers and final URL."""
    own = client is None
    client = client or httpx.AsyncClient(follow_redirects=False, trust_env=False)
    _with_location_check(client)
    try:
        async with asyncio.timeout(timeout_s):
            current = url
            for _ in range(MAX_REDIRECTS + 1):
                target = await _target(current, policy, require_https)
                extensions = {"sni_hostname": target.sni} if target.sni else {}
                async with client.stream(
                        "GET", target.url, follow_redirects=False, extensions=extensions,
                        headers={**(headers or {}), "Host": target.host_header,
                                 "Accept": accept},
                ) as resp:
                    if resp.status_code in _REDIRECTS:
                        location = _check_location(resp.headers.get("location"))
                        try:
                            current = urljoin(current, location)
                        except ValueError as err:
                            raise DownloadError("bad_redirect", permanent=True) from err
                        continue
                    body = await _body(resp, max_bytes)
                    return Fetched(body, {k.lower(): v for k, v in resp.headers.items()},
                                   current)
            raise DownloadError("too_many_redirects", permanent=True)
    except TimeoutError as err:
        raise DownloadError("timeout", permanent=False) from err
    except httpx.HTTPError as err:
        raise DownloadError("network", permanent=False) from err
    except httpx.InvalidURL as err:  # a URL (or joined redirect) only httpx finds malformed
        raise DownloadError("bad_url", permanent=True) from err
    finally:
        if own:
            await client.aclose()


async def _body(resp: httpx.Response, max_bytes: int) -> bytes:
    status = resp.status_code
    if status >= 400:
        permanent = status < 500 and status not in (408, 429)
        raise DownloadError("http_error", permanent=permanent, status=status,
                            retry_after=resp.headers.get("retry-after"))
    if status != 200:
        raise DownloadError("http_error", permanent=True, status=status)
    too_large = f"the document is over the size cap of {max_bytes} bytes"
    declared = resp.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise DownloadError("too_large", too_large, permanent=True)
    body = bytearray()
    async for part in resp.aiter_bytes():
        body.extend(part)
        if len(body) > max_bytes:
            raise DownloadError("too_large", too_large, permanent=True)
    return bytes(body)
