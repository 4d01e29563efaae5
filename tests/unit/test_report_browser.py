"""What a reader sees of the HTML report, in headless Chromium.

Needs the Python package ``playwright`` (never ``playwright install``) and Debian's
``chromium`` at /usr/bin/chromium; skipped when either is missing.
"""

from __future__ import annotations

import base64
import collections.abc
import pathlib
import typing

import pytest

from citerun.pipeline import report
from citerun.web import report_page
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
    html = report.render_html(report_fixtures.sample_report(), report_fixtures.page_images())
    html_file.write_text(html, encoding="utf-8")
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


# The report lists the riskiest citations first, not in reading order.
RISK_ORDER = report_fixtures.SAMPLE_RISK_ORDER


async def _visible_ordinals(tab: typing.Any) -> list[int]:
    ordinals = []
    for article in await tab.locator("article.citation").all():
        if await article.is_visible():
            ordinals.append(int((await article.get_attribute("id")).split("-")[1]))
    return ordinals


async def test_reader_sees_summary_claims_badges_and_evidence(page: typing.Any) -> None:
    assert await page.title() == "Citation report: Exercise <and> Mood"  # the thesis's title
    assert await page.locator("#total").inner_text() == "6"
    summary = page.locator('li[data-summary="supported"]')
    assert await summary.locator(".n").inner_text() == "2"
    assert await summary.locator(".badge").inner_text() == "Supported"
    # A verdict no citation has is no box of its own: it is named in one line.
    assert await page.locator('li[data-summary="source_unavailable"]').count() == 0
    assert "Source unavailable" in await page.locator("p.zeros").inner_text()

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
    assert await _visible_ordinals(page) == RISK_ORDER
    assert await page.locator("#shown").inner_text() == "Showing 6 of 6 citations"

    await page.get_by_role("button", name="Contradicted (1)").click()
    assert await _visible_ordinals(page) == [3]
    assert await page.locator("#shown").inner_text() == "Showing 1 of 6 citations"

    await page.get_by_role("button", name="Supported (2)").click()
    assert await _visible_ordinals(page) == [o for o in RISK_ORDER if o in (1, 3, 6)]
    assert await page.get_by_role("button", name="Supported (2)").get_attribute("aria-pressed") == "true"

    await page.get_by_role("button", name="All (6)").click()
    assert await _visible_ordinals(page) == RISK_ORDER


async def _pixel(page: typing.Any, box: dict[str, float]) -> list[int]:
    """The colour of the screen at the top-left inside ``box``."""
    shot = await page.screenshot(clip={"x": box["x"] + 2, "y": box["y"] + 1, "width": 4, "height": 2})
    pixels: list[int] = await page.evaluate(
        """b64 => new Promise(ok => { const i = new Image(); i.onload = () => {
              const c = document.createElement("canvas"); c.width = i.width; c.height = i.height;
              const g = c.getContext("2d"); g.drawImage(i, 0, 0);
              ok(Array.from(g.getImageData(0, 0, 1, 1).data)); }; i.src = "data:image/png;base64," + b64; })""",
        base64.b64encode(shot).decode())
    return pixels


async def test_evidence_is_highlighted_on_a_crop_of_its_page_with_the_page_a_click_away(
        page: typing.Any) -> None:
    figure = page.locator("#citation-1 figure.evidence-page")
    assert await figure.count() == 1
    assert await figure.get_attribute("aria-label") == (
        "Page 7 of smith2020.pdf with the quoted passage highlighted")
    crop = figure.locator(".crop")
    background = await crop.evaluate("e => getComputedStyle(e).backgroundImage")
    assert background.startswith('url("data:image/jpeg;base64,')
    # The page image is really decoded by the browser and has the page's proportions.
    size = await page.evaluate(
        """url => new Promise(ok => { const i = new Image(); i.onload = () => ok([i.width, i.height]);
                                      i.onerror = () => ok(null); i.src = url; })""",
        background[5:-2])
    assert size is not None and abs(size[0] / size[1] - 595 / 842) < 0.01
    # A strip around the passage, not the page: far wider than tall.
    crop_box = await crop.bounding_box()
    assert crop_box["width"] > 2.5 * crop_box["height"]
    marks = crop.locator(".hl")
    assert await marks.count() == 2  # the quote wraps over two lines
    for index in range(2):
        box = await marks.nth(index).bounding_box()
        assert box["width"] > 20 and box["height"] > 3
        assert crop_box["x"] <= box["x"] and box["x"] + box["width"] <= crop_box["x"] + crop_box["width"] + 1
        assert crop_box["y"] < box["y"] < crop_box["y"] + crop_box["height"]
    # Pixels under the highlight are tinted yellow (red and green well above blue).
    await marks.nth(0).scroll_into_view_if_needed()
    red, green, blue = (await _pixel(page, await marks.nth(0).bounding_box()))[:3]
    assert red > blue + 40 and green > blue + 20, (red, green, blue)
    # The whole page is one click away, from the same embedded image, with the same marks.
    sheet = page.locator("#citation-1 details.whole-page .sheet")
    assert not await sheet.is_visible()
    await page.get_by_text("Show the whole page 7").click()
    assert await sheet.is_visible()
    assert await sheet.evaluate("e => getComputedStyle(e).backgroundImage") == background
    sheet_box = await sheet.bounding_box()
    assert abs(sheet_box["width"] / sheet_box["height"] - 595 / 842) < 0.02
    for index in range(2):
        box = await sheet.locator(".hl").nth(index).bounding_box()
        # The quote is the 4th and 5th line of page 7: in the upper fifth of the page.
        assert sheet_box["y"] < box["y"] < sheet_box["y"] + 0.25 * sheet_box["height"]
    # The page is embedded once, for the one page that carries located evidence.
    assert (await page.content()).count("data:image/jpeg;base64,") == 1


async def test_a_wrong_page_is_in_the_badge_the_summary_and_a_filter(page: typing.Any) -> None:
    assert await page.locator("#citation-6 .badge").inner_text() == "Supported · wrong page"
    assert await page.locator("#citation-1 .badge").inner_text() == "Supported"
    assert await page.locator('li[data-summary-problem="wrong_page"] .n').inner_text() == "1"
    await page.get_by_role("button", name="Wrong page (1)").click()
    assert await _visible_ordinals(page) == [6]
    await page.get_by_role("button", name="Contradicted (1)").click()
    assert await _visible_ordinals(page) == [3, 6]


async def test_the_legend_and_the_numbers_open_on_demand(page: typing.Any) -> None:
    legend = page.locator("section.legend")
    assert not await legend.get_by_text("The source says the opposite;").is_visible()
    await legend.locator("summary").click()
    for label in ("Supported", "Partially supported", "Unsupported", "Contradicted",
                  "Source unavailable", "Unresolved citation", "wrong page", "Confidence"):
        assert await legend.locator("dt", has_text=label).first.is_visible(), label
    numbers = page.locator("#citation-1 details.numbers")
    assert not await numbers.get_by_text("The best sentence states the claim.").last.is_visible()
    await numbers.locator("summary").click()
    assert "Closeness of evidence 1 to the sentence (0-1)" in await numbers.inner_text()


async def test_unresolved_citation_shows_its_reference_entry_and_unused_sources(page: typing.Any) -> None:
    unresolved = page.locator("#citation-5")
    assert "Müller, H. (2018). Inflation und Löhne." in await unresolved.locator(".reference").inner_text()
    mapped = await page.locator("#citation-1 .match").inner_text()
    assert mapped == ("Matched to the source by its entry in the reference list "
                      "(title 100, first author, year)")
    unused = page.locator("ul.unused li")
    assert await unused.all_inner_texts() == ["never_cited.pdf", "scan.pdf"]


async def _phone(tmp_path: pathlib.Path, scheme: str) -> collections.abc.AsyncIterator[typing.Any]:
    html_file = tmp_path / f"report-{scheme}.html"
    html_file.write_text(report.render_html(report_fixtures.sample_report(),
                                            report_fixtures.page_images()), encoding="utf-8")
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(_CHROMIUM), args=_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 375, "height": 667},
                                                color_scheme=scheme)
            tab = await context.new_page()
            await tab.goto(html_file.as_uri())
            yield tab
        finally:
            await browser.close()


async def test_the_head_on_a_phone_leads_to_the_first_citation(tmp_path: pathlib.Path) -> None:
    """At 375 x 667 px: the thesis's title, the time as the pages say it, the counts that are not zero,
    and the first (most doubtful) citation's badge and claim on the first screen (issue 47:
    it was two screens down, under nine boxes, five of them zeros)."""
    if not _CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    async for tab in _phone(tmp_path, "light"):
        assert " ".join((await tab.locator("h1").inner_text()).split()) == (
            "Citation report: Exercise <and> Mood")
        meta = await tab.locator("p.meta").first.inner_text()
        # The time as the service's pages say it: the reader's zone, to the second.
        assert "2025" in meta and ":04:05" in meta and "T03:04" not in meta, meta
        assert await tab.locator("ul.summary li").count() == 6  # 5 verdicts and 1 problem not zero
        first = tab.locator("article.citation").first
        assert await first.get_attribute("id") == f"citation-{RISK_ORDER[0]}"
        claim = await first.locator(".claim").bounding_box()
        assert claim is not None and claim["y"] + claim["height"] <= 667, claim
        assert await tab.evaluate("window.scrollY") == 0


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_evidence_can_be_read_on_a_phone_and_is_dimmed_in_the_dark(
        tmp_path: pathlib.Path, scheme: str) -> None:
    """At 375 px the crop is shown at 1.25 CSS px per point or more (11 pt text at 13.75 px;
    it was 0.6, drawn from a 43 dpi image) from an image at least that sharp, its box
    scrolling sideways rather than the page; in the dark scheme it is dimmed."""
    if not _CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    async for tab in _phone(tmp_path, scheme):
        crop = tab.locator("#citation-1 figure.evidence-page .crop")
        await crop.scroll_into_view_if_needed()
        line = await crop.locator(".hl").first.bounding_box()
        assert line is not None and line["height"] >= 11 * 1.25 * 0.8, line  # a line's box ~ 0.8 em
        drawn = await crop.evaluate(
            """e => new Promise(ok => { const s = getComputedStyle(e);
                 const i = new Image(); i.onload = () => ok([i.width,
                   e.getBoundingClientRect().width * parseFloat(s.backgroundSize) / 100]);
                 i.src = s.backgroundImage.slice(5, -2); })""")
        natural, shown = drawn
        assert natural >= shown * 0.99, f"the image ({natural} px) is enlarged to {shown} px"
        assert await tab.evaluate("document.documentElement.scrollWidth") <= 375
        box = await crop.bounding_box()
        white = await _pixel(tab, {"x": box["x"] + 2, "y": box["y"] + 1})
        if scheme == "dark":
            assert max(white[:3]) < 200, white
        else:
            assert min(white[:3]) > 230, white


_AXE = pathlib.Path(__file__).parents[1] / "e2e" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_report_is_accessible_and_fits_375_px(tmp_path: pathlib.Path, scheme: str) -> None:
    """axe-core finds no serious or critical violation, with every <details> open (the
    legend, the numbers, the whole pages), at 375 and 1400 px; at 375 px nothing is wider
    than the screen."""
    if not _CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    if not _AXE.exists():
        pytest.skip("needs axe-core: (cd tests/e2e && npm ci)")
    html_file = tmp_path / "report.html"
    html_file.write_text(report.render_html(report_fixtures.sample_report(),
                                            report_fixtures.page_images()), encoding="utf-8")
    failed: dict[str, typing.Any] = {}
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(_CHROMIUM), args=_ARGS)
        try:
            for width in (375, 1400):
                context = await browser.new_context(viewport={"width": width, "height": 900},
                                                    color_scheme=scheme)
                await context.add_init_script(path=str(_AXE))
                tab = await context.new_page()
                await tab.goto(html_file.as_uri())
                for summary in await tab.locator("details > summary").all():
                    await summary.click()
                assert await tab.locator("details:not([open])").count() == 0
                violations = await tab.evaluate(
                    """async () => (await axe.run(document, {resultTypes: ["violations"]}))
                         .violations.filter(v => v.impact === "serious" || v.impact === "critical")
                         .map(v => [v.id, v.nodes.slice(0, 3).map(n => n.target.join(" "))])""")
                if violations:
                    failed[f"{scheme} {width}"] = violations
                if width == 375:
                    wide = await tab.evaluate("document.documentElement.scrollWidth")
                    assert wide <= 375, f"{scheme}: the report is {wide} px wide at 375 px"
                await context.close()
        finally:
            await browser.close()
    assert not failed, failed


@pytest.mark.parametrize("owner", [True, False])
async def test_the_service_s_bar_leaves_the_first_citation_on_a_phone_s_first_screen(
        tmp_path: pathlib.Path, owner: bool) -> None:
    """The report as the service serves it, its bar above (back, downloads, sharing):
    at 375 x 667 px the first citation starts on the first screen, for its owner with a
    reader (the sharing one line, open only right after a share; it was open, 410 px) and
    for that reader; axe-core finds nothing serious in either scheme."""
    if not _CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    if not _AXE.exists():
        pytest.skip("needs axe-core: (cd tests/e2e && npm ci)")
    stored = report.render_html(report_fixtures.sample_report(), report_fixtures.page_images())
    files = {}
    for sharing in (False, True):
        bar = report_page.report_bar("run-1", csrf="t", owner=owner, owner_name="alice",
                                     readers=["bob"] if owner else [], link="https://x/runs/run-1",
                                     sharing=sharing)
        files[sharing] = tmp_path / f"page-{sharing}.html"
        files[sharing].write_text(report_page.report_page(stored, bar)[0], encoding="utf-8")
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(_CHROMIUM), args=_ARGS)
        try:
            for scheme in ("light", "dark"):
                context = await browser.new_context(viewport={"width": 375, "height": 667},
                                                    color_scheme=scheme)
                await context.add_init_script(path=str(_AXE))
                tab = await context.new_page()
                await tab.goto(files[False].as_uri())
                first = await tab.locator("article.citation").first.bounding_box()
                assert first is not None and first["y"] < 667 - 60, first  # its badge line shown
                if owner:
                    assert await tab.locator("nav details[open]").count() == 0
                    assert await tab.get_by_text("Share with a supervisor (read by 1)").is_visible()
                violations = await tab.evaluate(
                    """async () => (await axe.run(document, {resultTypes: ["violations"]}))
                         .violations.filter(v => v.impact === "serious" || v.impact === "critical")
                         .map(v => v.id)""")
                assert violations == [], (scheme, violations)
                if owner:
                    await tab.goto(files[True].as_uri())
                    assert await tab.get_by_text("Who may read it:").is_visible()
                await context.close()
        finally:
            await browser.close()

