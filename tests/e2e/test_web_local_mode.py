"""Issue 47: ``citerun serve`` tried on one's own machine, as the README's "On your own
machine" says (the command is taken from README.md): a real ``citerun serve`` with
``CITERUN_WEB__LOCAL_USER``, opened directly in headless Chromium with no credentials
and no header: My runs loads as that user, a thesis is uploaded through the form and
cancelled from its page. Before: every page 401, no way in. The same service named by
another host (a page that rebinds its name to 127.0.0.1) is not signed in.

Needs the Python package ``playwright`` and Debian's ``chromium``; skipped without.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import re
import shlex
import socket

import pytest

from citerun.core.settings import ENV_PREFIX
from tests.conftest import citerun_command
from tests.support import browser_upload, readme, serve_process

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

ROOT = pathlib.Path(__file__).resolve().parents[2]
THESIS = ROOT / "examples" / "thesis.pdf"
SOURCES = sorted((ROOT / "examples" / "sources").glob("*.pdf"))
CHROMIUM = pathlib.Path("/usr/bin/chromium")
HEADING = "### On your own machine"


def readme_command() -> dict[str, str]:
    """The settings of the README's local ``citerun serve`` line (``$USER`` as a name)."""
    (block,) = readme.blocks(HEADING, "sh")
    words = shlex.split(block, comments=True)
    env = {}
    while words and "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words == ["citerun", "serve"], words
    return env


def test_citerun_serve_on_ones_own_machine_in_chromium(database_url: str,
                                                        tmp_path: pathlib.Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    readme = readme_command()
    assert readme == {f"{ENV_PREFIX}WEB__LOCAL_USER": "$USER"}, readme
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env[f"{ENV_PREFIX}WEB__LOCAL_USER"] = "writer"  # what $USER gives on a machine
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    log = tmp_path / "serve.log"
    with serve_process.running(citerun_command(), port, database_url, env, log):
        said = log.read_text(errors="replace")
        assert "LOCAL MODE: every request from this machine" in said and "'writer'" in said
        asyncio.run(_browse(f"http://127.0.0.1:{port}", f"http://rebound.example:{port}", log))


async def _browse(base: str, rebound: str, log: pathlib.Path) -> None:
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--host-resolver-rules=MAP rebound.example 127.0.0.1"])
        try:
            tab = await (await browser.new_context()).new_page()
            tab.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
            answer = await tab.goto(f"{base}/runs")
            assert answer is not None and answer.status == 200, \
                (answer and await answer.text(), log.read_text(errors="replace"))
            assert "writer" in await tab.inner_text("body")
            await browser_upload.upload(tab, base, THESIS, SOURCES, log)
            await tab.get_by_role("button", name=re.compile("^Cancel run ")).click()
            await tab.wait_for_selector("#state.state-cancelled", timeout=30_000)
            # The same service under a name that is not this machine's: no one.
            other = await (await browser.new_context()).new_page()
            answer = await other.goto(f"{rebound}/runs")
            assert answer is not None and answer.status == 401
            assert "writer" not in await other.inner_text("body")
        finally:
            await browser.close()
