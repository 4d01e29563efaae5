"""Downloading a document from a URL, safely: addresses, redirects, size and time caps.

A CitationRun's ``url`` documents are chosen by whoever may create a run, so the worker
must not become their proxy into the cluster (issue 12, attack 4):

* only http and https;
* the host is resolved here and every address checked against :class:`AddressPolicy`:
  loopback, private, link-local (cloud metadata 169.254.169.254 included), CGNAT/shared,
  multicast, reserved and unspecified addresses are refused, as are the configured
  cluster ranges, unless an operator allow-lists a network explicitly;
* the connection goes to the address that was checked (the URL's host is kept for the
  Host header, TLS SNI and certificate checks), so a DNS answer that changes between the
  check and the connect (rebinding) cannot slip through;
* redirects are followed by hand, at most :data:`MAX_REDIRECTS`, each target checked
  like the first URL;
* the body is streamed and aborted past the size cap; the whole download, redirects
  included, has one deadline; environment proxies are ignored.

Every failure is a :class:`DownloadError` with a stable ``reason`` (for logs, metrics
and the retry decision) and one generic message for the user, so that error texts do
not tell an open port from a closed one, or a refused address from a missing host.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from citerun import errors

MAX_REDIRECTS = 5
GENERIC_MESSAGE = "the document could not be downloaded from its URL"

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Refused even though some are "global" by the IANA registries: shared address space
# (CGNAT, often used for cluster pods/services), the IPv4/IPv6 translation and 6to4
# relay prefixes (which can embed an internal IPv4 address), and well-known metadata
# addresses of cloud providers.
_ALWAYS_DENIED = tuple(ipaddress.ip_network(n) for n in (
    "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "64:ff9b::/96", "64:ff9b:1::/48",
    "2002::/16", "169.254.0.0/16", "fd00:ec2::254/128", "fe80::/10"))


class DownloadError(errors.CiterunError):
    """The document could not be downloaded; ``str()`` is safe to show the user."""

    def __init__(self, reason: str, message: str = GENERIC_MESSAGE, *,
                 permanent: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.permanent = permanent


@dataclass(frozen=True)
class AddressPolicy:
    """Which resolved addresses a download may connect to.

    ``allow`` wins over everything (e.g. an internal mirror, or 127.0.0.1 in a test);
    ``deny`` adds ranges (the cluster's pod and service CIDRs) to the built-in refusals.
    """

    allow: tuple[IPNetwork, ...] = ()
    deny: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_strings(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> AddressPolicy:
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in allow),
                   tuple(ipaddress.ip_network(n, strict=False) for n in deny))

    def permits(self, address: IPAddress) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address in net for net in self.allow if net.version == address.version):
            return True
        if any(address in net for net in (*_ALWAYS_DENIED, *self.deny)
               if net.version == address.version):
            return False
        return address.is_global and not address.is_multicast


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
    except (socket.gaierror, UnicodeError) as err:
        raise DownloadError("dns", permanent=False) from err
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


async def _target(url: str, policy: AddressPolicy) -> _Target:
    """Check ``url`` and pin it to an allowed address of its host."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:
        raise DownloadError("bad_url", permanent=True) from err
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise DownloadError("bad_scheme", "only http and https URLs are fetched",
                            permanent=True)
    host = parts.hostname
    if not host or parts.username is not None or parts.password is not None:
        raise DownloadError("bad_url", permanent=True)
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


async def download(url: str, *, max_bytes: int, timeout_s: float,
                   client: httpx.AsyncClient | None = None,
                   policy: AddressPolicy = DEFAULT_POLICY) -> bytes:
    """The body of ``url``; raises :class:`DownloadError` with a reason."""
    own = client is None
    client = client or httpx.AsyncClient(follow_redirects=False, trust_env=False)
    try:
        async with asyncio.timeout(timeout_s):
            current = url
            for _ in range(MAX_REDIRECTS + 1):
                target = await _target(current, policy)
                extensions = {"sni_hostname": target.sni} if target.sni else {}
                async with client.stream(
                        "GET", target.url, follow_redirects=False, extensions=extensions,
                        headers={"Host": target.host_header, "Accept": "application/pdf"},
                ) as resp:
                    if resp.status_code in (301, 302, 303, 307, 308):
                        location = resp.headers.get("location")
                        if not location:
                            raise DownloadError("http_error", permanent=True)
                        current = urljoin(current, location)
                        continue
                    return await _body(resp, max_bytes)
            raise DownloadError("too_many_redirects", permanent=True)
    except TimeoutError as err:
        raise DownloadError("timeout", permanent=False) from err
    except httpx.HTTPError as err:
        raise DownloadError("network", permanent=False) from err
    finally:
        if own:
            await client.aclose()


async def _body(resp: httpx.Response, max_bytes: int) -> bytes:
    if resp.status_code >= 400:
        permanent = resp.status_code < 500 and resp.status_code not in (408, 429)
        raise DownloadError("http_error", permanent=permanent)
    if resp.status_code != 200:
        raise DownloadError("http_error", permanent=True)
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
