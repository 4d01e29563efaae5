"""Who is who for the web service: the proxy's header only from a trusted peer, OIDC bearer
tokens only when signed by the issuer's keys with an allowed algorithm and the right
claims. Real keys (joserfc), real JWKS files and a real issuer on loopback."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

from citerun.web import identity
from citerun.web.identity import Authenticator, IdentityError
from citerun.web.settings import WebSettings

ISSUER = "https://login.example.org/realms/uni"
AUDIENCE = "citerun"


@pytest.fixture(scope="module")
def rsa_key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "k-rsa"})


@pytest.fixture(scope="module")
def ec_key() -> ECKey:
    return ECKey.generate_key("P-256", parameters={"kid": "k-ec"})


@pytest.fixture
def jwks_file(tmp_path: Path, rsa_key: RSAKey, ec_key: ECKey) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(KeySet([rsa_key, ec_key]).as_dict(private=False)))
    return path


def _settings(jwks: Path | None = None, **changes: Any) -> WebSettings:
    base: dict[str, Any] = {"oidc_issuer": ISSUER, "oidc_audience": AUDIENCE,
                            "oidc_jwks_file": jwks}
    return WebSettings(**{**base, **changes})


def _claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER, "aud": AUDIENCE, "sub": "student-17", "iat": now,
            "exp": now + 300, **changes}


def _token(key: Any, alg: str = "RS256", **claims: Any) -> str:
    return jwt.encode({"alg": alg, "kid": key.kid}, _claims(**claims), key)


def _b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


# -- the proxy's header ---------------------------------------------------------------------

async def test_the_header_is_believed_from_a_trusted_peer_only() -> None:
    auth = Authenticator(WebSettings())
    who = await auth.identify("127.0.0.1", {"X-Forwarded-User": " alice "})
    assert who == identity.Identity("alice", "proxy")
    assert (await auth.identify("::1", {"X-Forwarded-User": "alice"})).user == "alice"
    # An IPv4 peer on a dual-stack socket is seen as ::ffff:a.b.c.d.
    assert (await auth.identify("::ffff:127.0.0.1", {"X-Forwarded-User": "bob"})).user == "bob"
    for peer in ("10.1.2.3", "192.168.0.7", "2001:db8::1", None, ""):
        with pytest.raises(IdentityError) as refused:
            await auth.identify(peer, {"X-Forwarded-User": "alice"})
        assert refused.value.status == 403


async def test_trusted_proxies_and_header_name_are_settings() -> None:
    auth = Authenticator(WebSettings(identity_header="X-Remote-User",
                                     trusted_proxies=(ipaddress.ip_network("10.42.0.0/16"),)))
    assert (await auth.identify("10.42.9.1", {"X-Remote-User": "carol"})).user == "carol"
    with pytest.raises(IdentityError) as refused:
        await auth.identify("127.0.0.1", {"X-Remote-User": "carol"})  # loopback not trusted here
    assert refused.value.status == 403
    with pytest.raises(IdentityError) as anonymous:  # the default header means nothing now
        await auth.identify("10.42.9.1", {"X-Forwarded-User": "carol"})
    assert anonymous.value.status == 401


async def test_no_identity_and_unusable_names_are_401() -> None:
    auth = Authenticator(WebSettings())
    for headers in ({}, {"X-Forwarded-User": ""}, {"X-Forwarded-User": "a\x00b"},
                    {"X-Forwarded-User": "x" * 300}):
        with pytest.raises(IdentityError) as refused:
            await auth.identify("127.0.0.1", headers)
        assert refused.value.status == 401


# -- bearer tokens --------------------------------------------------------------------------

async def test_a_good_token_names_its_subject(jwks_file: Path, rsa_key: RSAKey,
                                              ec_key: ECKey) -> None:
    auth = Authenticator(_settings(jwks_file))
    who = await auth.identify("203.0.113.9", {"Authorization": f"Bearer {_token(rsa_key)}"})
    assert who == identity.Identity("student-17", "bearer")
    token = _token(ec_key, "ES256", sub="supervisor-3", aud=["other", AUDIENCE])
    assert (await auth.identify(None, {"Authorization": f"bearer {token}"})).user == "supervisor-3"
    # The claim that names the user is a setting.
    email = Authenticator(_settings(jwks_file, oidc_user_claim="email"))
    token = _token(rsa_key, email="s17@uni.example")
    assert await email.bearer(token) == "s17@uni.example"


@pytest.mark.parametrize("claims, reason", [
    ({"iss": "https://evil.example.org"}, "invalid_claim"),
    ({"aud": "another-app"}, "invalid_claim"),
    ({"exp": int(time.time()) - 3600}, "expired_token"),
    ({"nbf": int(time.time()) + 3600}, "not yet valid"),
])
async def test_wrong_claims_are_refused(jwks_file: Path, rsa_key: RSAKey,
                                        claims: dict[str, Any], reason: str) -> None:
    auth = Authenticator(_settings(jwks_file))
    with pytest.raises(IdentityError) as refused:
        await auth.bearer(_token(rsa_key, **claims))
    assert refused.value.status == 401
    assert reason in str(refused.value)


async def test_missing_exp_and_missing_aud_are_refused(jwks_file: Path, rsa_key: RSAKey) -> None:
    auth = Authenticator(_settings(jwks_file))
    for drop in ("exp", "aud", "iss"):
        claims = {k: v for k, v in _claims().items() if k != drop}
        token = jwt.encode({"alg": "RS256", "kid": rsa_key.kid}, claims, rsa_key)
        with pytest.raises(IdentityError, match="missing_claim"):
            await auth.bearer(token)


async def test_alg_none_and_hmac_with_the_public_key_are_refused(jwks_file: Path,
                                                                 rsa_key: RSAKey) -> None:
    auth = Authenticator(_settings(jwks_file))
    unsigned = f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(_claims())}."
    with pytest.raises(IdentityError, match="unsupported_algorithm"):
        await auth.bearer(unsigned)
    # The classic confusion: HS256 keyed with the issuer's public key.
    signed = f"{_b64({'alg': 'HS256', 'kid': rsa_key.kid})}.{_b64(_claims())}"
    mac = hmac.new(rsa_key.as_pem(private=False), signed.encode(), hashlib.sha256).digest()
    forged = f"{signed}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
    with pytest.raises(IdentityError) as refused:
        await auth.bearer(forged)
    assert refused.value.status == 401
    # An allowed family that is not in this service's list (ES256 only here).
    strict = Authenticator(_settings(jwks_file, oidc_algorithms=("ES256",)))
    with pytest.raises(IdentityError, match="unsupported_algorithm"):
        await strict.bearer(_token(rsa_key))


def test_unsafe_algorithms_cannot_be_configured() -> None:
    for algs in (("none",), ("HS256",), ("RS256", "none")):
        with pytest.raises(ValueError, match="not allowed"):
            WebSettings(oidc_issuer=ISSUER, oidc_audience=AUDIENCE, oidc_algorithms=algs)
    with pytest.raises(ValueError, match="oidc_audience is required"):
        WebSettings(oidc_issuer=ISSUER)


async def test_an_unknown_kid_and_a_foreign_key_are_refused(jwks_file: Path,
                                                            rsa_key: RSAKey) -> None:
    auth = Authenticator(_settings(jwks_file))
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k-stranger"})
    with pytest.raises(IdentityError, match="invalid_key_id"):
        await auth.bearer(_token(stranger))
    # A foreign key that claims a known kid: the signature does not verify.
    assert rsa_key.kid is not None
    impostor = RSAKey.generate_key(2048, parameters={"kid": rsa_key.kid})
    with pytest.raises(IdentityError, match="bad_signature"):
        await auth.bearer(_token(impostor))
    # A token altered after signing.
    header, _, signature = _token(rsa_key).split(".")
    altered = f"{header}.{_b64(_claims(sub='someone-else'))}.{signature}"
    with pytest.raises(IdentityError, match="bad_signature"):
        await auth.bearer(altered)


async def test_garbage_and_no_bearer_support(jwks_file: Path) -> None:
    auth = Authenticator(_settings(jwks_file))
    for value in ("Bearer", "Basic dXNlcjpwYXNz", "Bearer not.a.jwt", "Bearer " + "a" * 9000):
        with pytest.raises(IdentityError) as refused:
            await auth.identify("127.0.0.1", {"Authorization": value})
        assert refused.value.status == 401
    plain = Authenticator(WebSettings())
    with pytest.raises(IdentityError, match="accepts no bearer tokens"):
        await plain.identify("127.0.0.1", {"Authorization": "Bearer a.b.c",
                                           "X-Forwarded-User": "alice"})


def test_a_jwks_file_with_private_keys_is_refused(tmp_path: Path, rsa_key: RSAKey) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(KeySet([rsa_key]).as_dict(private=True)))
    with pytest.raises(Exception, match="private"):
        Authenticator(_settings(path))


@pytest.fixture
async def issuer(rsa_key: RSAKey) -> AsyncIterator[dict[str, Any]]:
    """An OIDC issuer on loopback: a discovery document and its JWKS, counting fetches."""
    state: dict[str, Any] = {"keys": KeySet([rsa_key]), "fetches": 0}

    async def discovery(request: web.Request) -> web.Response:
        return web.json_response({"issuer": state["issuer"], "jwks_uri": state["issuer"] + "/keys"})

    async def keys(request: web.Request) -> web.Response:
        state["fetches"] += 1
        return web.json_response(state["keys"].as_dict(private=False))

    app = web.Application()
    app.router.add_get("/.well-known/openid-configuration", discovery)
    app.router.add_get("/keys", keys)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    state["issuer"] = f"http://{host}:{port}"
    yield state
    await runner.cleanup()


async def test_keys_from_the_issuers_jwks_uri_and_a_rotation(issuer: dict[str, Any],
                                                             rsa_key: RSAKey) -> None:
    settings = WebSettings(oidc_issuer=issuer["issuer"], oidc_audience=AUDIENCE,
                           oidc_jwks_refresh_s=1.0)
    auth = Authenticator(settings)

    def token(key: RSAKey) -> str:
        return jwt.encode({"alg": "RS256", "kid": key.kid},
                          _claims(iss=issuer["issuer"]), key)

    assert await auth.bearer(token(rsa_key)) == "student-17"
    assert await auth.bearer(token(rsa_key)) == "student-17"
    assert issuer["fetches"] == 1  # kept, not fetched per request
    # The issuer rotates to a new key: the first token with its kid refetches once.
    rotated = RSAKey.generate_key(2048, parameters={"kid": "k-rotated"})
    issuer["keys"] = KeySet([rotated])
    await asyncio.sleep(1.1)  # past the refetch guard (refresh_s here)
    assert await auth.bearer(token(rotated)) == "student-17"
    assert issuer["fetches"] == 2
    # An unknown kid right after does not make the service hammer the issuer.
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k-stranger"})
    with pytest.raises(IdentityError, match="invalid_key_id"):
        await auth.bearer(token(stranger))
    assert issuer["fetches"] == 2


async def test_an_unreachable_issuer_is_503_not_a_crash() -> None:
    auth = Authenticator(WebSettings(oidc_issuer="http://127.0.0.1:9", oidc_audience=AUDIENCE))
    with pytest.raises(IdentityError) as refused:
        await auth.bearer("a.b.c")
    assert refused.value.status == 503
