"""What a reader sees of the HTML report, in headless Chromium.

Needs the Python package ``playwright`` (never ``playwright install``) and Debian's
``chromium`` at /usr/bin/chromium; skipped when either is missing.
"""

from __future__ import annotations

import collections.abc
import pathlib
import typing

import pytest

from citerun.worker.pipeline import report
from tests.unit import report_fixtures

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

_CHROMIUM = pathlib.Path("/usr/bin/chromium")
_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOT = pathlib.Path("/tmp/citerun-report.png")


@pytest.fixture
async def page(tmp_path: pathlib.Path) -> collections.abc.AsyncIterator[typing.Any]:
    if not _CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    html_file = tmp_path / "report.html"
    html_file.write_text(report.render_html(report_fixtures.sample_report()), encoding="utf-8")
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(_CHROMIUM), args=_ARGS)
        try:
            tab = await browser.new_page(viewport={"width": 1000, "height": 900})
            requests: list[str] = []
            dialogs: list[str] = []
            tab.on("request", lambda request: requests.append(request.url))
            tab.on("dialog", lambda dialog: dialogs.append(dialog.message))
            await tab.goto(html_file.as_uri())
            yield tab
            assert [url for url in requests if not url.startswith("file://")] == []
            assert dialogs == [], "a script from the report's content ran"
        finally:
            await browser.close()


async def _visible_ordinals(tab: typing.Any) -> list[int]:
    ordinals = []
    for article in await tab.locator("article.citation").all():
        if await article.is_visible():
            ordinals.append(int((await article.get_attribute("id")).split("-")[1]))
    return ordinals


async def test_reader_sees_summary_claims_badges_and_evidence(page: typing.Any) -> None:
    assert await page.title() == "Citation report: thesis-check"
    assert await page.locator("#total").inner_text() == "6"
    summary = page.locator('li[data-summary="supported"]')
    assert await summary.locator(".n").inner_text() == "2"
    assert await summary.locator(".badge").inner_text() == "Supported"
    assert await page.locator('li[data-summary="source_unavailable"] .n').inner_text() == "0"

    first = page.locator("#citation-1")
    assert await first.locator(".claim").inner_text() == "Regular exercise reduces anxiety in adults."
    assert await first.locator(".badge").inner_text() == "Supported"
    assert "Thesis p. 4" in await first.locator("header").inner_text()
    assert "Confidence 91%" in await first.locator("header").inner_text()
    evidence = await first.locator(".evidence li").inner_text()
    assert "Adults who exercised regularly reported fewer symptoms of anxiety." in evidence
    assert "p. 7" in evidence

    # Markup in a claim is shown as text, never run.
    second = page.locator("#citation-2")
    assert report_fixtures.XSS_CLAIM in await second.locator(".claim").inner_text()
    assert "pp. 8–9" in await second.locator(".evidence").inner_text()
    assert await page.locator("#citation-5 .badge").inner_text() == "Unresolved citation"
    assert "not found among the sources" in await page.locator("#citation-5").inner_text()

    await page.screenshot(path=str(SCREENSHOT), full_page=True)


async def test_filters_show_only_the_chosen_verdicts(page: typing.Any) -> None:
    assert await _visible_ordinals(page) == [1, 2, 3, 4, 5, 6]
    assert await page.locator("#shown").inner_text() == "Showing 6 of 6 citations"

    await page.get_by_role("button", name="Contradicted (1)").click()
    assert await _visible_ordinals(page) == [3]
    assert await page.locator("#shown").inner_text() == "Showing 1 of 6 citations"

    await page.get_by_role("button", name="Supported (2)").click()
    assert await _visible_ordinals(page) == [1, 3, 6]
    assert await page.get_by_role("button", name="Supported (2)").get_attribute("aria-pressed") == "true"

    await page.get_by_role("button", name="All (6)").click()
    assert await _visible_ordinals(page) == [1, 2, 3, 4, 5, 6]
