"""Issue 51 on the web: ``citerun serve`` with the operator's setting on
(``CITERUN_WEB__FETCH_SOURCES``, the open-access services pointed at the local test
server) offers a checkbox on its form; a writer uploads a LaTeX thesis with its .bib and
no PDF in headless Chromium, ticks it, and the report that opens says which works were
found as an open-access PDF (and where from), which as an abstract only, and which not at
all. The server counts the requests: none before the checkbox was sent.

Needs the Python package ``playwright`` and Debian's ``chromium``; skipped without.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import socket
import subprocess
import time

import pytest

from citerun.core.settings import ENV_PREFIX
from tests.conftest import citerun_command
from tests.e2e.test_verify_fetch_sources import ABSTRACT, BIB, LATEX, OPEN, UNKNOWN, _env
from tests.support.browser_upload import RUN_PAGE
from tests.support.oa_server import OaServer, Work

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

CHROMIUM = pathlib.Path("/usr/bin/chromium")


def _serve(port: int, database_url: str, env: dict[str, str],
           log: pathlib.Path) -> subprocess.Popen[bytes]:
    """``citerun serve`` with one local worker, as an operator on one machine starts it."""
    with open(log, "wb") as out:
        proc = subprocess.Popen([*citerun_command(), "serve", "--port", str(port),
                                 "--database-url", database_url, "--workers", "1"],
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while f"listening on http://127.0.0.1:{port}/" not in log.read_text(errors="replace"):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    return proc


def test_the_form_fetches_sources_when_the_operator_offers_it(database_url: str,
                                                              tmp_path: pathlib.Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    thesis, library = tmp_path / "main.tex", tmp_path / "refs.bib"
    thesis.write_text(LATEX, encoding="utf-8")
    library.write_text(BIB, encoding="utf-8")
    works = {OPEN: Work(kind="pdf"), ABSTRACT: Work(kind="abstract", abstract=(
        "We survey how residents of apartment blocks use their balconies."))}
    with OaServer(works=works) as srv, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
        probe.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
        env |= {k: v for k, v in _env(srv).items() if k != f"{ENV_PREFIX}OPENACCESS__ENABLED"}
        env |= {f"{ENV_PREFIX}WEB__LOCAL_USER": "writer", f"{ENV_PREFIX}WEB__FETCH_SOURCES": "true",
                f"{ENV_PREFIX}DATA_DIR": str(tmp_path / "data")}
        log = tmp_path / "serve.log"
        proc = _serve(port, database_url, env, log)
        try:
            asked = asyncio.run(_browse(f"http://127.0.0.1:{port}", thesis, library, srv, log))
        finally:
            proc.terminate()
            proc.wait(30)
    assert asked["before"] == 0 and asked["after"] > 0, asked


async def _browse(base: str, thesis: pathlib.Path, library: pathlib.Path, srv: OaServer,
                  log: pathlib.Path) -> dict[str, int]:
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update"])
        try:
            tab = await (await browser.new_context()).new_page()
            await tab.goto(f"{base}/")
            await tab.set_input_files("#thesis", str(thesis))
            await tab.set_input_files("#library", str(library))
            box = tab.get_by_label("Look for open-access copies of the works I have no PDF of")
            await box.check()
            before = sum(srv.requests.values())
            await tab.get_by_role("button", name="Upload and check").click()
            try:
                await tab.wait_for_url(RUN_PAGE, timeout=60_000)
            except playwright_api.TimeoutError:
                raise AssertionError(f"no run page: {await tab.inner_text('body')}\n"
                                     f"{log.read_text(errors='replace')[-4000:]}") from None
            try:  # the run page becomes its report when the run ends
                await tab.wait_for_selector("#total", timeout=400_000)
            except playwright_api.TimeoutError:
                raise AssertionError(f"{await tab.inner_text('body')}\n"
                                     f"{log.read_text(errors='replace')[-4000:]}") from None
            text = await tab.inner_text("body")
            assert "Works without a PDF, looked for" in text, text
            assert "1 found as an open-access PDF, 1 as an abstract only, 1 not found" in text
            assert f"DOI {UNKNOWN}" in text
            fetched = tab.locator("article.citation", has_text="47 percent")
            assert "Fetched: open-access PDF" in await fetched.inner_text()
            link = fetched.locator("p.fetched a")
            assert (await link.get_attribute("href") or "").startswith("https://127.0.0.2:")
            abstract = tab.locator("article.citation", has_text="Green roofs")
            assert await abstract.get_attribute("data-verdict") == "not_in_abstract"
            assert "abstract only" in await abstract.inner_text()
            return {"before": before, "after": sum(srv.requests.values())}
        finally:
            await browser.close()
