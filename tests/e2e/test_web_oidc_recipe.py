"""Issue 47: the README's OIDC recipe (oauth2-proxy's documented nginx ``auth_request``
integration in front of ``citerun serve``).

The ``toml`` (oauth2-proxy's config) and ``nginx`` blocks under "Behind oauth2-proxy
(OIDC) and nginx" are read from README.md. Debian's nginx accepts the server block as
written (``nginx -t`` with this test's certificate paths and port), and the lines citerun
depends on are there and agree with each other: the user is what oauth2-proxy answers
(``auth_request_set`` from ``X-Auth-Request-Email``, set as ``X-Forwarded-User``, which
citerun believes from loopback only), oauth2-proxy answers with those headers
(``set_xauthrequest``) on the address nginx asks, behind the name nginx serves, and the
upload limit lets citerun's own 413 answer.

Then all of it for real, where an oauth2-proxy binary is found (``oauth2-proxy`` on the
PATH or ``~/.cache/citerun/oauth2-proxy/oauth2-proxy``, which scripts/test builds from the
Go module proxy): the README's oauth2-proxy config (only the issuer's endpoints, the
secrets and the addresses changed: the issuer is ``tests/support/oidc_issuer.py`` on
loopback, told to oauth2-proxy without discovery) and server block, a real nginx and a
real ``citerun serve``. In headless Chromium, with no header set by hand, two users sign
in through oauth2-proxy's page and the issuer's form, each sees My runs as their address,
one uploads and cancels a run the other cannot see; a request without the session, naming
a user in ``X-Forwarded-User``, is sent to sign in.

Needs Debian's ``nginx`` and ``openssl``; the browser test also ``playwright`` and
Debian's ``chromium``; skipped when one is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import re
import secrets
import shutil
import subprocess
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from citerun.core.settings import ENV_PREFIX
from citerun.web.settings import WebSettings
from tests.conftest import citerun_command
from tests.e2e import test_web_nginx as nginx_test
from tests.support import browser_upload, oidc_issuer, readme, serve_process

ROOT = nginx_test.ROOT
HEADING = "### Behind oauth2-proxy (OIDC) and nginx"
NAME = nginx_test.NAME


def readme_recipe() -> tuple[str, str]:
    toml, nginx = readme.blocks(HEADING, "toml", "nginx")
    return toml, nginx


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


def _oauth2_proxy() -> str:
    found = shutil.which("oauth2-proxy") or str(
        pathlib.Path.home() / ".cache" / "citerun" / "oauth2-proxy" / "oauth2-proxy")
    if not os.path.exists(found):
        pytest.skip("needs oauth2-proxy (scripts/test builds it: go install "
                    "github.com/oauth2-proxy/oauth2-proxy/v7)")
    return found


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@contextlib.contextmanager
def _process(args: list[str], log: pathlib.Path) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_chromium_signs_in_through_oauth2_proxy_and_nginx(database_url: str,
                                                          tmp_path: pathlib.Path) -> None:
    binary = _oauth2_proxy()
    if not os.path.exists(nginx_test.NGINX) or not nginx_test.CHROMIUM.exists():
        pytest.skip("needs Debian's nginx and chromium")
    pytest.importorskip("playwright.async_api")
    toml, block = readme_recipe()
    _, shell = nginx_test.readme_recipe()  # "The citerun serve command is the one above"
    readme_env, _ = nginx_test.serve_command(shell)
    port, upstream, auth_port = (nginx_test.free_port() for _ in range(3))
    public = f"https://{NAME}:{port}"
    with oidc_issuer.running("citerun", "client-secret", "uni.example") as issuer:
        config = tomllib.loads(toml)
        assert config["email_domains"] == [issuer.domain]
        config.update(
            http_address=f"127.0.0.1:{auth_port}", oidc_issuer_url=issuer.url,
            redirect_url=f"{public}/oauth2/callback",
            # The test's issuer has no discovery document: each endpoint told.
            skip_oidc_discovery=True, login_url=f"{issuer.url}/authorize",
            redeem_url=f"{issuer.url}/token", oidc_jwks_url=f"{issuer.url}/jwks",
            client_secret=issuer.client_secret, cookie_secret=secrets.token_hex(16))
        cfg = tmp_path / "oauth2-proxy.cfg"
        cfg.write_text("".join(f"{k} = {_toml_value(v)}\n" for k, v in config.items()))
        served = nginx_test.replaced(block, "http://127.0.0.1:4180", f"http://127.0.0.1:{auth_port}",
                                     at_least=2)
        served = nginx_test.replaced(served, "proxy_pass http://127.0.0.1:8080;",
                                     f"proxy_pass http://127.0.0.1:{upstream};")
        conf = _nginx_conf(tmp_path, served, port)
        env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
        for name, value in readme_env.items():
            env[name] = nginx_test.replaced(value, f"https://{NAME}", public) \
                if name.endswith("PUBLIC_ORIGIN") else value
        log = tmp_path / "serve.log"
        with serve_process.running(citerun_command(), upstream, database_url, env, log), \
                _process([binary, "--config", str(cfg)], tmp_path / "oauth2-proxy.log"), \
                nginx_test.nginx(conf, conf.parent):
            nginx_test.wait_listening(port, conf.parent / "error.log")
            nginx_test.wait_listening(auth_port, tmp_path / "oauth2-proxy.log")
            # Without the session, naming a user: sent to sign in, citerun never asked.
            status, location = _no_session(port, {"X-Forwarded-User": "alice@uni.example"})
            assert status == 302 and location.endswith(
                f"{NAME}:{port}/oauth2/sign_in?rd=/api/runs"), (status, location)
            asyncio.run(_sign_in_and_use(public, log, tmp_path))
        assert issuer.signed_in == ["alice", "bob"]
    assert "refused" not in log.read_text(errors="replace")


def _no_session(port: int, headers: dict[str, str]) -> tuple[int, str]:
    import ssl  # noqa: PLC0415

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=context))
    request = urllib.request.Request(f"https://127.0.0.1:{port}/api/runs",
                                     headers={"Host": f"{NAME}:{port}", **headers})
    try:
        with opener.open(request, timeout=20) as answer:
            return answer.status, answer.headers.get("Location", "")
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Location", "")


def _nginx_conf(tmp: pathlib.Path, block: str, port: int) -> pathlib.Path:
    prefix = tmp / "nginx"
    temp = prefix / "temp"
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (temp / sub).mkdir(parents=True)
        (temp / sub).chmod(0o777)  # the workers run as nobody under root
    prefix.chmod(0o755)
    temp.chmod(0o755)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN={NAME}", "-keyout", str(prefix / "key.pem"),
                    "-out", str(prefix / "cert.pem")], check=True, capture_output=True)
    block = nginx_test.replaced(block, "listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    block = nginx_test.replaced(block, f"/etc/ssl/certs/{NAME}.pem", str(prefix / "cert.pem"))
    block = nginx_test.replaced(block, f"/etc/ssl/private/{NAME}.key", str(prefix / "key.pem"))
    conf = prefix / "nginx.conf"
    conf.write_text(f"""
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log info;
events {{ worker_connections 64; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log {prefix}/access.log;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
{block}
}}
""")
    return conf


async def _sign_in_and_use(public: str, log: pathlib.Path, tmp: pathlib.Path) -> None:
    from playwright.async_api import async_playwright  # noqa: PLC0415

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(nginx_test.CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  f"--host-resolver-rules=MAP {NAME} 127.0.0.1"])
        try:
            tabs = {}
            for user in ("alice", "bob"):
                context = await browser.new_context(ignore_https_errors=True)
                tab = await context.new_page()
                tab.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
                await tab.goto(f"{public}/runs")
                # oauth2-proxy's own page, then the issuer's form, then back where it began.
                await tab.get_by_role("button", name=re.compile("Sign in with")).click()
                await tab.fill("#user", user)
                await tab.get_by_role("button", name="Sign in").click()
                await tab.wait_for_url(f"{public}/runs", timeout=30_000)
                assert await tab.get_by_role("heading", name="My runs").count() >= 1
                assert f"{user}@uni.example" in await tab.inner_text("body")
                tabs[user] = tab
            tab = tabs["alice"]
            run_page = await browser_upload.upload(tab, public, nginx_test.THESIS,
                                                   nginx_test.SOURCES, log)
            await tab.get_by_role("button", name=re.compile("^Cancel run ")).click()
            await tab.wait_for_selector("#state.state-cancelled", timeout=30_000)
            run_id = run_page.rsplit("/", 1)[1]
            other = tabs["bob"]
            await other.goto(f"{public}/runs")
            assert await other.locator(f'tr[data-run="{run_id}"]').count() == 0
            answer = await other.goto(run_page)
            assert answer is not None and answer.status == 404
        finally:
            await browser.close()

