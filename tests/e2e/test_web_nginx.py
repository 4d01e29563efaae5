"""Issue 47: the README's nginx recipe, as a department's administrator would run it.

The ``nginx`` block and the ``citerun serve`` command under "Behind nginx with Basic
auth" are taken from README.md (one owner for the recipe): a real Debian nginx, its own
prefix, config and self-signed certificate in the test's folder, on 127.0.0.1; a real
``citerun serve`` process with the README's settings. Only the addresses change: the
listening port, the upstream's port, the certificate and password file paths; the
README's name ``citerun.example.org`` is the one Chromium uses, resolved to 127.0.0.1
by Chromium's own host rules (nothing leaves loopback).

In headless Chromium, with no header set by hand (the credentials are Playwright's
``http_credentials``, the browser's own Basic login): My runs loads, a thesis is
uploaded through the form, the run is cancelled from its page; a second user's My runs
is their own; with a worker started, a second upload runs to its report, which alice
shares with bob by the report's bar (the link to send names the browser's address), bob
opens it from Shared with me, and both download the report, its data and the citations
to fix. Before issue 47 the first step answered 401 (the browser's Basic
``Authorization`` read as a bearer token), and with the header stripped every POST 403
("cross-site request refused"): nginx sends the upstream's own Host.

Needs Debian's ``nginx`` (scripts/test installs it), ``openssl``, the Python package
``playwright`` and Debian's ``chromium``; skipped when one is missing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pathlib
import re
import shlex
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from citerun.core.settings import ENV_PREFIX
from citerun.web.settings import WebSettings
from tests.conftest import citerun_command
from tests.support import browser_upload, readme, serve_process

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

ROOT = pathlib.Path(__file__).resolve().parents[2]
THESIS = ROOT / "examples" / "thesis.pdf"
SOURCES = sorted((ROOT / "examples" / "sources").glob("*.pdf"))
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CHROMIUM = pathlib.Path("/usr/bin/chromium")
NAME = "citerun.example.org"
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw"}
HEADING = "### Behind nginx with Basic auth"


@pytest.fixture(autouse=True)
def _needs_nginx_openssl_and_chromium() -> None:
    if not os.path.exists(NGINX):
        pytest.skip("needs Debian's nginx (apt-get install nginx)")
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")


def readme_recipe() -> tuple[str, str]:
    """The README's nginx server block and the ``citerun serve`` command under it."""
    nginx, shell = readme.blocks(HEADING, "nginx", "sh")
    return nginx, shell


def replaced(text: str, old: str, new: str, *, at_least: int = 1) -> str:
    """``old`` replaced, which must be there: the README changing under the test fails it."""
    assert text.count(old) >= at_least, f"the README's recipe no longer has {old!r}"
    return text.replace(old, new)


def serve_command(shell: str) -> tuple[dict[str, str], list[str]]:
    """The README's ``VAR=value citerun serve ...`` line: its settings and its arguments."""
    lines = [line for line in shell.splitlines() if "citerun serve" in line
             and not line.lstrip().startswith("#")]
    assert len(lines) == 1, shell
    words = shlex.split(lines[0], comments=True)
    env = {}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        assert name.startswith(ENV_PREFIX), name
        env[name] = value
    assert words[:2] == ["citerun", "serve"], words
    return env, words[2:]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def nginx_bytes(size: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kKmMgG]?)", size).groups()  # type: ignore[union-attr]
    return int(number) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit.lower()]


@contextlib.contextmanager
def nginx(conf: pathlib.Path, prefix: pathlib.Path) -> Iterator[None]:
    test = subprocess.run([NGINX, "-t", "-p", str(prefix), "-c", str(conf),
                           "-e", str(prefix / "error.log")], capture_output=True, text=True)
    assert test.returncode == 0, test.stderr
    proc = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(conf),
                             "-e", str(prefix / "error.log")],
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


def wait_listening(port: int, proc_log: pathlib.Path, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"nginx did not listen:\n{proc_log.read_text(errors='replace')}")
        time.sleep(0.1)


def configure(tmp: pathlib.Path, port: int, upstream: int) -> pathlib.Path:
    """nginx.conf in ``tmp``: Debian's http{} essentials around the README's server
    block, with this test's ports, certificate and password file."""
    block, _ = readme_recipe()
    prefix = tmp / "nginx"
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / "temp" / sub).mkdir(parents=True)
        (prefix / "temp" / sub).chmod(0o777)  # the workers run as nobody under root
    prefix.chmod(0o755)
    (prefix / "temp").chmod(0o755)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}",
                    "-keyout", str(prefix / "key.pem"), "-out", str(prefix / "cert.pem")],
                   check=True, capture_output=True)
    lines = []
    for user, password in PASSWORDS.items():
        hashed = subprocess.run(["openssl", "passwd", "-5", "-stdin"], input=password,
                                check=True, capture_output=True, text=True).stdout.strip()
        lines.append(f"{user}:{hashed}\n")
    (prefix / "htpasswd").write_text("".join(lines))
    (prefix / "htpasswd").chmod(0o644)
    block = replaced(block, "listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    block = replaced(block, f"/etc/ssl/certs/{NAME}.pem", str(prefix / "cert.pem"))
    block = replaced(block, f"/etc/ssl/private/{NAME}.key", str(prefix / "key.pem"))
    block = replaced(block, "/etc/nginx/citerun.htpasswd", str(prefix / "htpasswd"))
    block = replaced(block, "proxy_pass http://127.0.0.1:8080;",
                     f"proxy_pass http://127.0.0.1:{upstream};")
    temp = prefix / "temp"
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


def test_the_readmes_upload_limit_lets_citeruns_own_413_answer() -> None:
    block, _ = readme_recipe()
    size = re.search(r"^\s*client_max_body_size\s+(\S+);", block, re.M)
    assert size, "the recipe sets client_max_body_size"
    limit = WebSettings().max_upload_bytes
    assert limit <= nginx_bytes(size.group(1)) <= limit * 1.05, (size.group(1), limit)


def _direct(port: int, path: str, headers: dict[str, str]) -> tuple[int, str]:
    """A request to nginx from a client that is no browser (what an attacker sends)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}",
                                     headers={"Host": f"{NAME}:{port}", **headers})
    try:
        with urllib.request.urlopen(request, timeout=20, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _basic(user: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()


def test_chromium_through_the_readmes_nginx(database_url: str, tmp_path: pathlib.Path,
                                           spawn_worker: Callable[..., Any]) -> None:
    _, shell = readme_recipe()
    readme_env, args = serve_command(shell)
    assert args[args.index("--host") + 1] == "127.0.0.1"
    assert args[args.index("--port") + 1] == "8080"
    port, upstream = free_port(), free_port()
    public = f"https://{NAME}:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    for name, value in readme_env.items():
        env[name] = replaced(value, f"https://{NAME}", public) \
            if name.endswith("PUBLIC_ORIGIN") else value
    conf = configure(tmp_path, port, upstream)
    log = tmp_path / "serve.log"
    # serve_process passes --port and --database-url; the README's --host is its default.
    with serve_process.running(citerun_command(), upstream, database_url, env, log), \
            nginx(conf, conf.parent):
        wait_listening(port, conf.parent / "error.log")
        # Without the password nginx answers; with it citerun does.
        assert _direct(port, "/api/runs", {"Accept": "application/json"})[0] == 401
        # A client naming itself beside its own login: nginx's header replaces it.
        status, body = _direct(port, "/api/runs", {"Authorization": _basic("bob"),
                                                   "X-Forwarded-User": "alice",
                                                   "Accept": "application/json"})
        assert status == 200 and json.loads(body) == {"runs": []}, body
        asyncio.run(_browse(public, log, lambda: spawn_worker(
            "nginx-w0", tasks="citerun.worker.tasks:registry",
            env={"CITERUN_WORKER__CONCURRENCY": "2"})))
        status, body = _direct(port, "/api/runs", {"Authorization": _basic("bob"),
                                                   "X-Forwarded-User": "alice",
                                                   "Accept": "application/json"})
        assert status == 200 and json.loads(body) == {"runs": []}, body
        status, body = _direct(port, "/api/runs", {"Authorization": _basic("alice"),
                                                   "Accept": "application/json"})
        assert status == 200 and len(json.loads(body)["runs"]) == 2, body
    assert "cross-site" not in log.read_text(errors="replace")


async def _browse(public: str, log: pathlib.Path,
                  start_worker: Callable[[], object] | None = None) -> None:
    """Two users through the proxy at ``public``: My runs, an upload, a cancel, each
    user's runs apart; with ``start_worker``, a run to its report, shared and downloaded
    (:func:`_share_and_download`)."""
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  f"--host-resolver-rules=MAP {NAME} 127.0.0.1"])
        try:
            tabs = {}
            for user in PASSWORDS:
                context = await browser.new_context(
                    http_credentials={"username": user, "password": PASSWORDS[user]},
                    ignore_https_errors=True, viewport={"width": 1100, "height": 900})
                page = await context.new_page()
                # A confirmation the page may ask for is the user's yes.
                page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
                tabs[user] = page
            tab = tabs["alice"]
            # My runs.
            answer = await tab.goto(f"{public}/runs")
            assert answer is not None and answer.status == 200, \
                (answer and await answer.text(), log.read_text(errors="replace"))
            assert await tab.get_by_role("heading", name="My runs").count() >= 1
            assert "alice" in await tab.inner_text("body")
            # An upload through the form.
            run_page = await browser_upload.upload(tab, public, THESIS, SOURCES, log)
            assert run_page.startswith(public + "/runs/")
            # The cancel, from the run's page (no worker runs: it is still running).
            await tab.get_by_role("button", name=re.compile("^Cancel run ")).click()
            try:
                await tab.wait_for_selector("#state.state-cancelled", timeout=30_000)
            except playwright_api.TimeoutError:
                raise AssertionError(f"not cancelled: {await tab.inner_text('body')}\n"
                                     f"{log.read_text(errors='replace')}") from None
            assert "cross-site" not in await tab.inner_text("body")
            # My runs lists it, cancelled; bob's My runs is bob's own.
            await tab.goto(f"{public}/runs")
            run_id = run_page.rsplit("/", 1)[1]
            state = tab.locator(f'tr[data-run="{run_id}"] .state')
            assert await state.inner_text() == "Cancelled"
            other = tabs["bob"]
            answer = await other.goto(f"{public}/runs")
            assert answer is not None and answer.status == 200
            assert await other.locator(f'tr[data-run="{run_id}"]').count() == 0
            answer = await other.goto(f"{public}/runs/{run_id}")
            assert answer is not None and answer.status == 404
            if start_worker is not None:
                await _share_and_download(tabs, public, log, start_worker)
        finally:
            await browser.close()


async def _share_and_download(tabs: dict[str, Any], public: str, log: pathlib.Path,
                              start_worker: Callable[[], object]) -> None:
    """A run that finishes (a worker now runs), shared by alice with bob through the
    report's bar; bob finds it under Shared with me and both download the report, its
    data and the citations to fix, all through nginx."""
    start_worker()
    tab, other = tabs["alice"], tabs["bob"]
    run_page = await browser_upload.upload(tab, public, THESIS, SOURCES, log)
    run_id = run_page.rsplit("/", 1)[1]
    try:
        await tab.wait_for_selector("#total", timeout=600_000)  # the report, in place
    except playwright_api.TimeoutError:
        raise AssertionError(f"no report: {await tab.inner_text('body')}\n"
                             f"{log.read_text(errors='replace')}") from None
    await tab.get_by_text("Share with a supervisor").click()
    await tab.get_by_label("Their user name (as they sign in)").fill("bob")
    await tab.get_by_role("button", name="Share read-only").click()
    await tab.get_by_role("button", name="Stop sharing with bob").wait_for()
    assert "cross-site" not in await tab.inner_text("body")
    # The link to send names the address the browser uses (web.public_origin).
    link = tab.locator(".send a")
    assert await link.get_attribute("href") == f"{public}/runs/{run_id}"
    await other.goto(f"{public}/runs")
    await other.locator("#shared ~ table").get_by_role("link").first.click()
    await other.wait_for_selector("#total")
    assert other.url == f"{public}/runs/{run_id}"
    assert await other.get_by_text("Shared with you by alice (read-only)").count() == 1
    total = int(await other.locator("#total").inner_text())
    assert total > 0
    for page in (tab, other):
        got: dict[str, bytes] = {}
        for name in ("Download the report (HTML)", "the data (JSON)",
                     "the citations to fix (CSV)"):
            async with page.expect_download() as info:
                await page.get_by_role("link", name=name).click()
            download = await info.value
            got[download.suggested_filename] = pathlib.Path(await download.path()).read_bytes()
        assert sorted(got) == ["thesis-citations-to-fix.csv", "thesis-report.html",
                               "thesis-report.json"], sorted(got)
        report = json.loads(got["thesis-report.json"])
        assert report["run_id"] == run_id and len(report["citations"]) == total
        assert b"<title>Citation report: Cooling the Compact City" in got["thesis-report.html"]


def test_without_public_origin_the_refusal_says_what_to_set(
        database_url: str, tmp_path: pathlib.Path) -> None:
    """The README's nginx with citerun's settings left out: the page loads, the upload is
    refused, and the refusal on the page and in the log names the browser's Origin, the
    Host nginx sent and the setting that fixes it (before: "cross-site request refused:
    it does not come from this service's pages", nothing else)."""
    port, upstream = free_port(), free_port()
    public = f"https://{NAME}:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    conf = configure(tmp_path, port, upstream)
    log = tmp_path / "serve.log"
    with serve_process.running(citerun_command(), upstream, database_url, env, log), \
            nginx(conf, conf.parent):
        wait_listening(port, conf.parent / "error.log")
        shown = asyncio.run(_refused_upload(public))
    said = (f"cross-site request refused: the browser's Origin {public} is not this "
            f"service's origin http://127.0.0.1:{upstream} (from Host 127.0.0.1:{upstream})")
    assert said in shown and "CITERUN_WEB__PUBLIC_ORIGIN" in shown, shown
    logged = log.read_text(errors="replace")
    assert said in logged and "refused POST /api/runs of alice" in logged, logged


async def _refused_upload(public: str) -> str:
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  f"--host-resolver-rules=MAP {NAME} 127.0.0.1"])
        try:
            context = await browser.new_context(
                http_credentials={"username": "alice", "password": PASSWORDS["alice"]},
                ignore_https_errors=True)
            tab = await context.new_page()
            answer = await tab.goto(f"{public}/")
            assert answer is not None and answer.status == 200
            await tab.set_input_files("#thesis", str(THESIS))
            await tab.set_input_files("#sources", [str(p) for p in SOURCES])
            await tab.get_by_role("button", name="Upload and check").click()
            alert = tab.locator("#upload-error")
            await alert.wait_for(state="visible", timeout=30_000)
            return str(await alert.inner_text())
        finally:
            await browser.close()
