"""Issue 47: the README's Apache recipe, as a department's administrator would run it.

The ``apache`` block and the ``citerun serve`` command under "Behind Apache with Basic
auth" are taken from README.md: a real Debian Apache (``apache2``, its own config around
the README's virtual host, the modules Debian ships, a self-signed certificate in the
test's folder, on 127.0.0.1), a real ``citerun serve`` with the README's settings. Only
the addresses change, as in tests/e2e/test_web_nginx.py, whose browser steps this test
takes: in headless Chromium, with the browser's own Basic login and no header set by
hand, My runs loads, a thesis is uploaded through the form, the run is cancelled from its
page, and a second user's My runs is their own. A client naming itself in
``X-Forwarded-User`` beside its own login is the login's user.

Needs Debian's ``apache2`` and ``apache2-utils`` (scripts/test installs them), ``openssl``,
the Python package ``playwright`` and Debian's ``chromium``; skipped when one is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from citerun.core.settings import ENV_PREFIX
from citerun.web.settings import WebSettings
from tests.conftest import citerun_command
from tests.e2e import test_web_nginx as nginx_test
from tests.support import readme, serve_process

pytestmark = pytest.mark.browser

pytest.importorskip("playwright.async_api")

ROOT = pathlib.Path(__file__).resolve().parents[2]
APACHE = shutil.which("apache2") or "/usr/sbin/apache2"
HTPASSWD = shutil.which("htpasswd") or "/usr/bin/htpasswd"
MODULES = pathlib.Path("/usr/lib/apache2/modules")
NAME = nginx_test.NAME
PASSWORDS = nginx_test.PASSWORDS
HEADING = "### Behind Apache with Basic auth"
# What Debian's a2enmod lines of the README load, and what any Apache needs to run.
_LOADED = ("mpm_event", "authz_core", "authz_user", "authn_core", "authn_file", "auth_basic",
           "headers", "proxy", "proxy_http", "ssl", "socache_shmcb")


@pytest.fixture(autouse=True)
def _needs_apache_openssl_and_chromium() -> None:
    if not os.path.exists(APACHE) or not os.path.exists(HTPASSWD):
        pytest.skip("needs Debian's apache2 and apache2-utils (apt-get install apache2)")
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    if not nginx_test.CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")


def readme_recipe() -> tuple[str, str]:
    """The README's Apache virtual host and the ``citerun serve`` command under it."""
    apache, shell = readme.blocks(HEADING, "apache", "sh")
    return apache, shell


def configure(tmp: pathlib.Path, port: int, upstream: int) -> pathlib.Path:
    """httpd.conf in ``tmp``: the modules the README enables around its virtual host,
    with this test's port, upstream, certificate and password file (htpasswd -B)."""
    block, _ = readme_recipe()
    for module in re.search(r"a2enmod ([\w ]+?) &&", block).group(1).split():  # type: ignore[union-attr]
        assert module in _LOADED, f"the README enables {module}, which the test does not load"
    prefix = tmp / "apache"
    prefix.mkdir()
    prefix.chmod(0o755)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}",
                    "-keyout", str(prefix / "key.pem"), "-out", str(prefix / "cert.pem")],
                   check=True, capture_output=True)
    passwords = prefix / "htpasswd"
    for user, password in PASSWORDS.items():
        subprocess.run([HTPASSWD, "-b", "-B", *(["-c"] if not passwords.exists() else []),
                        str(passwords), user, password], check=True, capture_output=True)
    passwords.chmod(0o644)
    replaced = nginx_test.replaced
    block = replaced(block, "<VirtualHost *:443>", f"<VirtualHost 127.0.0.1:{port}>")
    block = replaced(block, f"/etc/ssl/certs/{NAME}.pem", str(prefix / "cert.pem"))
    block = replaced(block, f"/etc/ssl/private/{NAME}.key", str(prefix / "key.pem"))
    block = replaced(block, "/etc/apache2/citerun.htpasswd", str(passwords), at_least=2)
    block = replaced(block, "http://127.0.0.1:8080/", f"http://127.0.0.1:{upstream}/", at_least=2)
    loads = "\n".join(f"LoadModule {m}_module {MODULES / f'mod_{m}.so'}" for m in _LOADED)
    conf = prefix / "httpd.conf"
    conf.write_text(f"""
ServerRoot {prefix}
ServerName 127.0.0.1
{loads}
Listen 127.0.0.1:{port}
User nobody
Group nogroup
PidFile {prefix}/httpd.pid
DefaultRuntimeDir {prefix}
Mutex file:{prefix} default
ErrorLog {prefix}/error.log
LogLevel warn
{block}
""")
    return conf


@contextlib.contextmanager
def apache(conf: pathlib.Path) -> Iterator[None]:
    test = subprocess.run([APACHE, "-t", "-f", str(conf)], capture_output=True, text=True)
    assert test.returncode == 0, test.stderr
    proc = subprocess.Popen([APACHE, "-f", str(conf), "-DFOREGROUND"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_readmes_apache_limit_lets_citeruns_own_413_answer() -> None:
    block, _ = readme_recipe()
    size = re.search(r"^\s*LimitRequestBody\s+(\d+)", block, re.M)
    assert size, "the recipe sets LimitRequestBody"
    limit = WebSettings().max_upload_bytes
    assert limit <= int(size.group(1)) <= limit * 1.05, (size.group(1), limit)


def test_chromium_through_the_readmes_apache(database_url: str, tmp_path: pathlib.Path) -> None:
    _, shell = readme_recipe()
    readme_env, args = nginx_test.serve_command(shell)
    assert args[args.index("--host") + 1] == "127.0.0.1"
    assert args[args.index("--port") + 1] == "8080"
    port, upstream = nginx_test.free_port(), nginx_test.free_port()
    public = f"https://{NAME}:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    for name, value in readme_env.items():
        env[name] = nginx_test.replaced(value, f"https://{NAME}", public) \
            if name.endswith("PUBLIC_ORIGIN") else value
    conf = configure(tmp_path, port, upstream)
    log = tmp_path / "serve.log"
    with serve_process.running(citerun_command(), upstream, database_url, env, log), \
            apache(conf):
        nginx_test.wait_listening(port, conf.parent / "error.log")
        direct = nginx_test._direct  # a client that is no browser
        basic = nginx_test._basic
        assert direct(port, "/api/runs", {"Accept": "application/json"})[0] == 401
        status, body = direct(port, "/api/runs", {"Authorization": basic("bob"),
                                                  "X-Forwarded-User": "alice",
                                                  "Accept": "application/json"})
        assert status == 200 and json.loads(body) == {"runs": []}, body
        asyncio.run(nginx_test._browse(public, log))
        status, body = direct(port, "/api/runs", {"Authorization": basic("alice"),
                                                  "Accept": "application/json"})
        assert status == 200 and len(json.loads(body)["runs"]) == 1, body
        status, body = direct(port, "/api/runs", {"Authorization": basic("bob"),
                                                  "X-Forwarded-User": "alice",
                                                  "Accept": "application/json"})
        assert status == 200 and json.loads(body) == {"runs": []}, body
    assert "cross-site" not in log.read_text(errors="replace")
