"""Who is who: the user of a request, from the cluster's front door, never from a form.

Two ways in, both configured by the operator of the service (:class:`WebSettings`):

* an authenticating proxy's header (``X-Forwarded-User`` by default), believed only when
  the TCP peer is one of the trusted proxies' addresses: a client that talks to the
  service directly cannot name itself, its header is refused (403);
* an OIDC bearer token (a JWT), checked against the configured issuer: signature with
  the issuer's keys under an allow-list of asymmetric algorithms, ``iss``, ``aud``,
  ``exp`` (and ``nbf``/``iat`` when present).

A bearer token wins over the header (the proxy may pass one through). Any other
``Authorization`` scheme (a proxy's HTTP Basic sign-in, which nginx and oauth2-proxy pass
on by default) is never read: it neither names a user nor stands in the way of the
proxy's header. A request with neither is 401.

A third way, for trying the service on one's own machine only: ``web.local_user``
signs in every request that comes from a loopback peer *and* names a loopback host
(``localhost``, ``127.0.0.1``, ``[::1]``), carries no proxy's forwarding headers and no
identity header, as that one user. The host check keeps a web page that rebinds its own
name to 127.0.0.1 out; :func:`citerun.web.service.serve` refuses to listen on anything
but loopback with it; the kubernetes backend refuses it (:class:`WebSettings`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

if TYPE_CHECKING:
    from joserfc.jwk import KeySet

from citerun.core import errors
from citerun.web.settings import WebSettings

#: Longest header value or token read (a JWT of a few claims is well under 2 KB).
MAX_TOKEN_CHARS = 8192
MAX_USER_CHARS = 256
#: Largest discovery document or JWKS fetched from an issuer.
MAX_KEYS_BYTES = 1_000_000
FETCH_TIMEOUT_S = 5.0


class IdentityError(errors.CiterunError):
    """The request names no user we believe; ``status`` is 401 (who are you?), 403 (a
    claim from someone not allowed to make it) or 503 (the issuer's keys are out of
    reach)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Identity:
    user: str
    via: Literal["proxy", "bearer", "local"]

    @property
    def browser_session(self) -> bool:
        """A browser's own request (the proxy's header, the local user): it comes with
        the browser's cookies, so it needs the session's CSRF token; a bearer call does
        not (a browser never adds that header by itself)."""
        return self.via != "bearer"


def peer_address(peer: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The peer's IP (an IPv4-mapped IPv6 address as IPv4); None for a Unix socket."""
    if not peer:
        return None
    try:
        address = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


#: Forwarding headers a proxy adds; a request carrying one is no local request.
FORWARDING_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-IP")


def loopback_host(host: str) -> bool:
    """Whether a Host header (with or without its port) names this machine's loopback:
    ``localhost`` (or a name under ``.localhost``), 127.0.0.0/8 or ``[::1]``."""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_user(name: str, where: str) -> str:
    """A user name as it will be stored: trimmed, printable, not too long."""
    user = name.strip()
    if not user or len(user) > MAX_USER_CHARS or not user.isprintable():
        raise IdentityError(401, f"{where} is no usable user name")
    return user


class KeySource:
    """The issuer's public keys: a JWKS file read once, or the issuer's ``jwks_uri``
    (from its discovery document) fetched and kept ``refresh_s``. A token signed with a
    key not in the set (a rotation) refetches at most once per ``refresh_s``."""

    def __init__(self, settings: WebSettings) -> None:
        self.settings = settings
        self._keys: KeySet | None = None
        self._fetched_at = -float("inf")
        self._lock = asyncio.Lock()
        if settings.oidc_jwks_file is not None:
            self._keys = self._parse(settings.oidc_jwks_file.read_bytes(),
                                     str(settings.oidc_jwks_file))

    @staticmethod
    def _parse(data: bytes, origin: str) -> KeySet:
        from joserfc import errors as jose_errors
        from joserfc.jwk import KeySet

        try:
            value = json.loads(data)
            keys = KeySet.import_key_set(value)
        except (ValueError, TypeError, KeyError, jose_errors.JoseError) as err:
            raise errors.CiterunError(f"the issuer's keys at {origin} are no JWKS: {err}") from err
        if not keys.keys or any(k.is_private for k in keys.keys):
            raise errors.CiterunError(f"the issuer's keys at {origin}: no keys, or private ones")
        return keys

    async def keys(self, *, refresh: bool = False) -> KeySet:
        if self.settings.oidc_jwks_file is not None:
            assert self._keys is not None
            return self._keys
        async with self._lock:
            age = time.monotonic() - self._fetched_at
            if self._keys is None or age > self.settings.oidc_jwks_refresh_s or (
                    refresh and age > min(30.0, self.settings.oidc_jwks_refresh_s)):
                self._keys = await self._fetch()
                self._fetched_at = time.monotonic()
            return self._keys

    async def _fetch(self) -> KeySet:
        issuer = self.settings.oidc_issuer
        assert issuer is not None
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=False) as client:
            discovery = json.loads(await _get(client, issuer.rstrip("/")
                                              + "/.well-known/openid-configuration"))
            if not isinstance(discovery, dict) or discovery.get("issuer") != issuer:
                raise errors.CiterunError(f"the discovery document of {issuer} names another issuer")
            uri = discovery.get("jwks_uri")
            if not isinstance(uri, str):
                raise errors.CiterunError(f"the discovery document of {issuer} has no jwks_uri")
            return self._parse(await _get(client, uri), uri)


async def _get(client: httpx.AsyncClient, url: str) -> bytes:
    try:
        async with client.stream("GET", url) as response:
            if response.status_code != 200:
                raise errors.CiterunError(f"{url} answered {response.status_code}")
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_KEYS_BYTES:
                    raise errors.CiterunError(f"{url} sent more than {MAX_KEYS_BYTES} bytes")
            return body
    except httpx.HTTPError as err:
        raise errors.CiterunError(f"cannot fetch {url}: {err}") from err


class Authenticator:
    """Turns a request's peer and headers into an :class:`Identity` (or refuses)."""

    def __init__(self, settings: WebSettings, keys: KeySource | None = None) -> None:
        if keys is not None and settings.oidc_issuer is None:
            raise ValueError("keys without web.oidc_issuer")
        self.settings = settings
        self.key_source = keys if keys is not None else (
            KeySource(settings) if settings.oidc_issuer is not None else None)
        self.claims: Any = None
        if self.key_source is not None and settings.oidc_issuer and settings.oidc_audience:
            # joserfc (BSD) only where bearer tokens are accepted.
            from joserfc import jwt

            self.claims = jwt.JWTClaimsRegistry(
                leeway=settings.oidc_leeway_s,
                iss={"essential": True, "value": settings.oidc_issuer},
                aud={"essential": True, "value": settings.oidc_audience},
                exp={"essential": True})

    def trusted(self, peer: str | None) -> bool:
        address = peer_address(peer)
        return address is not None and any(address in net for net in self.settings.trusted_proxies)

    async def identify(self, peer: str | None, headers: Mapping[str, str]) -> Identity:
        # A header given twice is refused, never read first-wins: behind a proxy that
        # appends its own line after the client's, the client would name itself (issue 41).
        getall = getattr(headers, "getall", None)
        for header in ("Authorization", self.settings.identity_header):
            if getall is not None and len(getall(header, [])) > 1:
                raise IdentityError(400, f"the {header} header came more than once")
        authorization = headers.get("Authorization")
        scheme = ""
        if authorization is not None:
            scheme, _, token = authorization.strip().partition(" ")
            if scheme.lower() == "bearer":
                if not token.strip():
                    raise IdentityError(401, "the Authorization header is 'Bearer' with no token")
                return Identity(await self.bearer(token.strip()), "bearer")
            # Any other scheme (Basic from the proxy's own sign-in) is the proxy's business:
            # never read, never a sign-in, never in the way of the proxy's header.
        name = headers.get(self.settings.identity_header)
        if name is not None:
            if not self.trusted(peer):
                raise IdentityError(403, f"the {self.settings.identity_header} header is "
                                    "believed only from the trusted proxy")
            return Identity(check_user(name[:MAX_USER_CHARS + 1], self.settings.identity_header),
                            "proxy")
        local = self.local(peer, headers)
        if local is not None:
            return local
        if scheme:
            raise IdentityError(401, f"sign in first: the Authorization header is "
                                f"{scheme[:20]!r}, which citerun never reads (only 'Bearer "
                                f"<token>'), and no {self.settings.identity_header} header "
                                "came from the trusted proxy")
        raise IdentityError(401, "sign in first: no user identity came with the request"
                            + self._local_hint(peer, headers))

    def local(self, peer: str | None, headers: Mapping[str, str]) -> Identity | None:
        """``web.local_user`` for a request from this machine to a loopback name, with
        no proxy's forwarding headers; None otherwise."""
        user = self.settings.local_user
        address = peer_address(peer)
        if user is None or address is None or not address.is_loopback:
            return None
        if not loopback_host(headers.get("Host", "")):
            return None
        if any(header in headers for header in FORWARDING_HEADERS):
            return None
        return Identity(user, "local")

    def _local_hint(self, peer: str | None, headers: Mapping[str, str]) -> str:
        """For someone who opened ``citerun serve`` directly on their machine: how in."""
        address = peer_address(peer)
        if self.settings.local_user is not None or address is None \
                or not address.is_loopback or not loopback_host(headers.get("Host", "")) \
                or any(header in headers for header in FORWARDING_HEADERS):
            return ""
        return (". Trying citerun on this machine? Start it as CITERUN_WEB__LOCAL_USER=<your "
                "name> citerun serve: one user, loopback only (see the README's 'A web page "
                "for writers')")

    async def bearer(self, token: str) -> str:
        """The user a bearer token names, once signature and claims are checked."""
        if self.key_source is None:
            raise IdentityError(401, "this service accepts no bearer tokens")
        from joserfc import errors as jose_errors
        from joserfc import jwt

        if len(token) > MAX_TOKEN_CHARS:
            raise IdentityError(401, "the bearer token is too long")
        algorithms = list(self.settings.oidc_algorithms)
        try:
            try:
                decoded = jwt.decode(token, await self.key_source.keys(), algorithms=algorithms)
            except jose_errors.InvalidKeyIdError:  # perhaps a rotated key: look once more
                decoded = jwt.decode(token, await self.key_source.keys(refresh=True),
                                     algorithms=algorithms)
            self.claims.validate(decoded.claims)
        except (jose_errors.JoseError, ValueError, TypeError) as err:
            raise IdentityError(401, f"the bearer token is refused: {_reason(err)}") from None
        except errors.CiterunError as err:  # the issuer's keys could not be had
            raise IdentityError(503, f"cannot check bearer tokens now: {err}") from None
        user = decoded.claims.get(self.settings.oidc_user_claim)
        if not isinstance(user, str):
            raise IdentityError(401, f"the bearer token has no {self.settings.oidc_user_claim!r}")
        return check_user(user, f"the token's {self.settings.oidc_user_claim!r}")


def _reason(err: Exception) -> str:
    from joserfc import errors as jose_errors

    if isinstance(err, jose_errors.JoseError):
        return err.error + (f": {err.description}" if err.description else "")
    return type(err).__name__

