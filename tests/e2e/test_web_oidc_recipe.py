"""Issue 47: the README's OIDC recipe (oauth2-proxy's documented nginx ``auth_request``
integration in front of ``citerun serve``), checked as far as this machine can.

The ``toml`` (oauth2-proxy's config) and ``nginx`` blocks under "Behind oauth2-proxy
(OIDC) and nginx" are read from README.md. Debian's nginx accepts the server block as
written (``nginx -t`` with this test's certificate paths and port), and the lines citerun
depends on are there and agree with each other: the user is what oauth2-proxy answers
(``auth_request_set`` from ``X-Auth-Request-Email``, set as ``X-Forwarded-User``, which
citerun believes from loopback only), oauth2-proxy answers with those headers
(``set_xauthrequest``) on the address nginx asks, behind the name nginx serves, and the
upload limit lets citerun's own 413 answer.

Not run here: oauth2-proxy itself and an OIDC issuer (neither is a Debian package; the
binary would be built from the Go module proxy, and the issuer stood up beside it). The
README says so.

Needs Debian's ``nginx`` and ``openssl``; skipped when one is missing.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import tomllib
import urllib.parse

import pytest

from citerun.web.settings import WebSettings
from tests.e2e import test_web_nginx as nginx_test

ROOT = nginx_test.ROOT
HEADING = "### Behind oauth2-proxy (OIDC) and nginx"
NAME = nginx_test.NAME


def readme_recipe() -> tuple[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(HEADING) == 1, f"README.md has no one section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    toml = re.search(r"```toml\n(.*?)```", section, re.S)
    nginx = re.search(r"```nginx\n(.*?)```", section, re.S)
    assert toml and nginx, "the section's ```toml and ```nginx blocks"
    return toml.group(1), nginx.group(1)


def _location(block: str, name: str) -> str:
    found = re.search(r"location " + re.escape(name) + r" \{(.*?)\n    \}", block, re.S)
    assert found, f"no location {name}"
    return found.group(1)


def test_oauth2_proxy_answers_nginx_with_the_user() -> None:
    toml, block = readme_recipe()
    config = tomllib.loads(toml)
    assert config["reverse_proxy"] is True and config["set_xauthrequest"] is True
    assert config["upstreams"] == ["static://202"]
    address = config["http_address"]
    assert address.startswith("127.0.0.1:"), address  # nginx's, not the network's
    for location in ("/oauth2/", "= /oauth2/auth"):
        assert f"proxy_pass       http://{address};" in _location(block, location)
    redirect = urllib.parse.urlsplit(config["redirect_url"])
    assert redirect.scheme == "https" and redirect.path == "/oauth2/callback"
    assert f"server_name {redirect.hostname};" in block
    assert config["provider"] == "oidc" and config["email_domains"], config


def test_nginx_passes_only_what_oauth2_proxy_vouches_for() -> None:
    _, block = readme_recipe()
    main = _location(block, "/")
    assert "auth_request /oauth2/auth;" in main
    assert "auth_request_set $email $upstream_http_x_auth_request_email;" in main
    header = WebSettings().identity_header
    assert f"proxy_set_header {header} $email;" in main
    # No other way for a user name into citerun: not the browser's header, not $http_*.
    assert re.findall(r"proxy_set_header (\S+) ", main) == [header]
    assert "proxy_pass http://127.0.0.1:8080;" in main
    auth = _location(block, "= /oauth2/auth")
    assert "proxy_pass_request_body           off;" in auth
    size = re.search(r"^\s*client_max_body_size\s+(\S+);", block, re.M)
    assert size, "the recipe sets client_max_body_size"
    limit = WebSettings().max_upload_bytes
    assert limit <= nginx_test.nginx_bytes(size.group(1)) <= limit * 1.05


def test_nginx_accepts_the_recipe_as_written(tmp_path: pathlib.Path) -> None:
    if not os.path.exists(nginx_test.NGINX) or not os.path.exists("/usr/bin/openssl"):
        pytest.skip("needs Debian's nginx and openssl")
    _, block = readme_recipe()
    prefix = tmp_path / "nginx"
    (prefix / "temp").mkdir(parents=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN={NAME}", "-keyout", str(prefix / "key.pem"),
                    "-out", str(prefix / "cert.pem")], check=True, capture_output=True)
    block = nginx_test.replaced(block, "listen 443 ssl;",
                                f"listen 127.0.0.1:{nginx_test.free_port()} ssl;")
    block = nginx_test.replaced(block, f"/etc/ssl/certs/{NAME}.pem", str(prefix / "cert.pem"))
    block = nginx_test.replaced(block, f"/etc/ssl/private/{NAME}.key", str(prefix / "key.pem"))
    conf = prefix / "nginx.conf"
    temp = prefix / "temp"
    conf.write_text(f"""
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
{block}
}}
""")
    checked = subprocess.run([nginx_test.NGINX, "-t", "-p", str(prefix), "-c", str(conf),
                              "-e", str(prefix / "error.log")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr
