"""The web page in headless Chromium: a writer uploads the demo thesis and its sources
through the form, watches the progress, and the report opens; the report's filter
script runs under the page's policy (no inline script or style allowed but the report's
own, by hash), and nothing is fetched from the network.

The browser reaches the service through no proxy: it adds the proxy's identity header
itself (from 127.0.0.1, a trusted peer), as the authenticating proxy would.

Needs the Python package ``playwright`` (never ``playwright install``) and Debian's
``chromium`` at /usr/bin/chromium; skipped when either is missing.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from citerun.settings import Settings
from citerun.web import service
from citerun.web.settings import WebSettings

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

ROOT = pathlib.Path(__file__).resolve().parents[2]
THESIS = ROOT / "examples" / "thesis.pdf"
SOURCES = sorted((ROOT / "examples" / "sources").glob("*.pdf"))
_CHROMIUM = pathlib.Path("/usr/bin/chromium")
_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOT = pathlib.Path("/tmp/citerun-web-report.png")


async def test_upload_progress_and_report_in_chromium(
        pool: asyncpg.Pool, spawn_worker: Callable[..., Any]) -> None:
    if not _CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    spawn_worker("browser-w0", tasks="citerun.worker.tasks:registry",
                 env={"CITERUN_WORKER__CONCURRENCY": "2"})
    async with service.running(pool, Settings(), WebSettings()) as base, \
            playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(_CHROMIUM), args=_ARGS)
        try:
            context = await browser.new_context(extra_http_headers={"X-Forwarded-User": "alice"},
                                                viewport={"width": 1100, "height": 900})
            tab = await context.new_page()
            requests: list[str] = []
            console: list[str] = []
            tab.on("request", lambda request: requests.append(request.url))
            tab.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
            tab.on("pageerror", lambda error: console.append(f"pageerror: {error}"))

            await tab.goto(f"{base}/")
            assert await tab.title() == "Check a thesis · citerun"
            await tab.set_input_files("#thesis", str(THESIS))
            await tab.set_input_files("#sources", [str(p) for p in SOURCES])
            await tab.click("button[type=submit]")

            # The script sends the form with its progress, then opens the run's page.
            await tab.wait_for_url(f"{base}/runs/*", timeout=30_000)
            run_id = tab.url.rsplit("/", 1)[1]
            assert await tab.locator("#upload-status").count() == 0
            seen_states: list[str] = []
            seen_progress: list[str] = []
            deadline = time.monotonic() + 420
            while await tab.locator("section[data-run-id]").count():
                seen_states.append(await tab.locator("#state").inner_text())
                seen_progress.append(await tab.locator("#judged-text").inner_text())
                assert time.monotonic() < deadline, (seen_states[-3:], seen_progress[-3:])
                await tab.wait_for_timeout(500)
            # The run's page polled and reloaded itself into the report.
            assert "Running" in seen_states, seen_states
            await tab.wait_for_selector("#total")
            assert (await tab.title()).startswith("Citation report")
            total = int(await tab.locator("#total").inner_text())
            assert total > 0
            assert await tab.locator("article.citation").count() == total

            # The report's own script runs under the hashed policy: the filters work.
            shown = tab.locator("#shown")
            assert await shown.inner_text() == f"Showing {total} of {total} citations"
            verdict = await tab.locator("article.citation").first.get_attribute("data-verdict")
            await tab.locator(f'button[data-filter="{verdict}"]').click()
            visible = [await a.get_attribute("data-verdict")
                       for a in await tab.locator("article.citation").all() if await a.is_visible()]
            assert visible and set(visible) == {verdict}
            assert await shown.inner_text() == f"Showing {len(visible)} of {total} citations"
            await tab.locator("#show-all").click()
            # The styles moved out of the attributes still apply (the badge's colour).
            colour = await tab.locator("article.citation .badge").first.evaluate(
                "el => getComputedStyle(el).getPropertyValue('--c')")
            assert colour.strip(), "the badge lost its colour"
            await tab.screenshot(path=str(SCREENSHOT), full_page=False)

            # The list shows the run, finished.
            await tab.goto(f"{base}/runs")
            row = tab.locator(f'tr[data-run="{run_id}"]')
            assert await row.locator(".state").inner_text() == "Finished"

            assert [u for u in requests if not u.startswith(base)] == []
            violations = [line for line in console if "Content Security Policy" in line
                          or "pageerror" in line or line.startswith("error")]
            assert violations == []
        finally:
            await browser.close()
