"""The web pages in headless Chromium, as people use them: a student uploads the demo
thesis through the form, watches the progress, reads the report, downloads it, shares it
with a supervisor; cancels runs from their page and from "My runs"; uploads with scripts
off; sees a failed run stop and the service's absence said plainly.

The browser sets no header by hand: it signs in to an authenticating proxy on loopback
(:mod:`tests.support.auth_proxy`, HTTP Basic through Playwright's ``http_credentials``),
which forwards to the service with ``X-Forwarded-User``, as a deployment's proxy does.
Origin, Sec-Fetch-Site and cookies are the browser's own.

Every page is checked by axe-core (tests/e2e/package.json, installed by scripts/test with
``npm ci``) in light and dark mode at 375 and 1400 px: no serious or critical violation.
The pages' policy allows no inline script, so axe comes in as an init script (which the
policy does not govern), never as a tag the page would refuse.

With ``CITERUN_UPDATE_SCREENSHOTS=1`` the report and run page screenshots (light, dark,
375 px) are written to docs/screenshots/.

Needs the Python package ``playwright`` (never ``playwright install``), Debian's
``chromium`` at /usr/bin/chromium and tests/e2e/node_modules/axe-core; skipped when one
is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import os
import pathlib
import re
import shutil
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest

from citerun.core.settings import Settings
from citerun.web import service
from citerun.web.settings import WebSettings
from tests.support.auth_proxy import auth_proxy

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

ROOT = pathlib.Path(__file__).resolve().parents[2]
THESIS = ROOT / "examples" / "thesis.pdf"
SOURCES = sorted((ROOT / "examples" / "sources").glob("*.pdf"))
AXE = pathlib.Path(__file__).with_name("node_modules") / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "docs" / "screenshots"
_CHROMIUM = pathlib.Path("/usr/bin/chromium")
_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}
WIDTHS = (375, 1400)
#: Logs each document state the page's script writes ("doc-state <digest> <words>").
DOC_STATE_OBSERVER = """
document.addEventListener("DOMContentLoaded", function () {
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      var el = change.target;
      if (el.classList && el.classList.contains("doc-state")) {
        console.debug("doc-state " + el.closest("li").getAttribute("data-digest") + " " +
                      el.textContent);
      }
    });
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
});
"""
SCHEMES = ("light", "dark")


@pytest.fixture(autouse=True)
def _needs_the_browser_and_axe() -> None:
    if not _CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    if not AXE.exists():
        pytest.skip("needs axe-core: (cd tests/e2e && npm ci)")


@contextlib.asynccontextmanager
async def stack(pool: asyncpg.Pool, **web: Any) -> AsyncIterator[tuple[str, Any]]:
    """The service behind the authenticating proxy, and Chromium; yields the proxy's
    base URL (the only address the browser knows) and the browser."""
    async with service.running(pool, Settings(), WebSettings(**web)) as upstream, \
            auth_proxy(upstream, PASSWORDS) as base, \
            playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(_CHROMIUM), args=_ARGS)
        try:
            yield base, browser
        finally:
            await browser.close()


class Tab:
    """One user's signed-in tab, recording what the page fetched and complained of."""

    def __init__(self, page: Any, base: str) -> None:
        self.page = page
        self.base = base
        self.requests: list[str] = []
        self.console: list[str] = []
        # A Cancel or Delete asks first (issue 47): the user says yes, unless a test
        # queued a no in ``answers``; ``asked`` keeps the questions.
        self.answers: list[bool] = []
        self.asked: list[str] = []
        page.on("dialog", self._answer)
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    def _answer(self, dialog: Any) -> None:
        self.asked.append(dialog.message)
        yes = self.answers.pop(0) if self.answers else True
        asyncio.ensure_future(dialog.accept() if yes else dialog.dismiss())

    def problems(self) -> list[str]:
        """Policy violations and script errors (a refusal a test asked for, which the
        browser logs as a resource that failed with a 4xx, is not one)."""
        return [line for line in self.console if "Content Security Policy" in line
                or line.startswith("pageerror")
                or (line.startswith("error") and "responded with a status of 4" not in line)]

    def foreign(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(self.base)
                and not u.startswith("data:") and not u.startswith("blob:")]


async def open_tab(browser: Any, base: str, user: str, *, scripts: bool = True,
                   width: int = 1100) -> Tab:
    context = await browser.new_context(
        http_credentials={"username": user, "password": PASSWORDS[user]},
        viewport={"width": width, "height": 900}, java_script_enabled=scripts,
        accept_downloads=True)
    await context.add_init_script(path=str(AXE))
    return Tab(await context.new_page(), base)


async def axe_violations(page: Any) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds on the page as it stands; a
    check cut short by the page's own navigation (a running run's page moves on to its
    report) is run again on the page it reached."""
    for attempt in range(3):
        try:
            return await _axe_once(page)
        except Exception as err:  # playwright's Error, raised when the page navigates away
            if "Execution context was destroyed" not in str(err) or attempt == 2:
                raise
            await page.wait_for_load_state("load")
    raise AssertionError("unreachable")


async def _axe_once(page: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await page.evaluate(
        """async () => {
          const result = await axe.run(document, {resultTypes: ["violations"]});
          return result.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 4).map(n => n.target.join(" ") + " :: "
                                             + (n.failureSummary || "").slice(0, 200))}));
        }""")
    return [v for v in found if v["impact"] in ("serious", "critical")]


async def check_page(tab: Tab, where: str, *, fits: bool = True) -> dict[str, list[Any]]:
    """axe in both colour schemes at both widths; at 375 px the page is no wider than
    the viewport (``fits``). Returns what failed, keyed by where/scheme/width."""
    failed: dict[str, list[Any]] = {}
    page = tab.page
    for scheme in SCHEMES:
        await page.emulate_media(color_scheme=scheme)
        for width in WIDTHS:
            await page.set_viewport_size({"width": width, "height": 900})
            await page.wait_for_timeout(50)
            key = f"{where} {scheme} {width}px"
            serious = await axe_violations(page)
            if serious:
                failed[key] = serious
            if fits and width == 375:
                wide = await page.evaluate("document.documentElement.scrollWidth")
                if wide > 375:
                    failed[key + " width"] = [f"{wide} px wide"]
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size({"width": 1100, "height": 900})
    return failed


async def shoot(page: Any, name: str, tmp: pathlib.Path) -> None:
    """Light and dark at 1100 px, and light at 375 px, of the page as it stands."""
    for scheme, width, suffix in (("light", 1100, "light"), ("dark", 1100, "dark"),
                                  ("light", 375, "375")):
        await page.emulate_media(color_scheme=scheme)
        await page.set_viewport_size({"width": width, "height": 760})
        await page.wait_for_timeout(100)
        target = tmp / f"{name}-{suffix}.png"
        await page.screenshot(path=str(target), full_page=False)
        if os.environ.get("CITERUN_UPDATE_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target, SCREENSHOTS / target.name)
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size({"width": 1100, "height": 900})


async def upload(tab: Tab, thesis: pathlib.Path = THESIS,
                 sources: list[pathlib.Path] = SOURCES) -> str:
    """Fill the form and press the button; the run's id once its page opens."""
    await tab.page.goto(f"{tab.base}/")
    await tab.page.set_input_files("#thesis", str(thesis))
    await tab.page.set_input_files("#sources", [str(p) for p in sources])
    await tab.page.get_by_role("button", name="Upload and check").click()
    await tab.page.wait_for_url(re.compile(r".*/runs/[0-9a-f-]{36}$"), timeout=30_000)
    return tab.page.url.rsplit("/", 1)[1]


# -- the whole path: upload, progress, report, downloads, sharing -------------------------

async def test_upload_progress_report_downloads_and_sharing(
        pool: asyncpg.Pool, spawn_worker: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    spawn_worker("browser-w0", tasks="citerun.worker.tasks:registry",
                 env={"CITERUN_WORKER__CONCURRENCY": "2"})
    async with stack(pool) as (base, browser):
        alice = await open_tab(browser, base, "alice")
        tab = alice.page
        await tab.add_init_script(DOC_STATE_OBSERVER)
        await tab.goto(f"{base}/")
        assert await tab.title() == "Check a thesis · citerun"
        failed = await check_page(alice, "upload page")
        run_id = await upload(alice)
        assert await tab.locator("#upload-status").count() == 0

        # The run's page while it runs: what it shows is checked, and screenshot.
        seen_states: list[str] = []
        seen_progress: list[str] = []
        seen_docs: list[str] = []
        checked_running = False
        deadline = time.monotonic() + 480
        while await tab.locator("section[data-run-id]").count():
            try:
                seen_states.append(await tab.locator("#state").inner_text(timeout=2000))
                seen_progress.append(await tab.locator("#judged-text").inner_text(timeout=2000))
                seen_docs.append(" ".join(await tab.locator(".doc-state").all_inner_texts()))
            except playwright_api.Error:
                continue  # the page reloaded under us
            if not checked_running and "Running" in seen_states:
                checked_running = True
                failed.update(await check_page(alice, "run page"))
                await shoot(tab, "run", tmp_path)
            assert time.monotonic() < deadline, (seen_states[-3:], seen_progress[-3:])
            await tab.wait_for_timeout(400)
        assert "Running" in seen_states, seen_states
        # The documents' states changed on the page as they were read, in place (the
        # observer saw the script write them; a reload writes nothing it sees).
        changed = [line for line in alice.console if "doc-state " in line]
        assert any(line.endswith(" read") for line in changed), (changed, seen_docs[-3:])

        # The report opened in place; its bar leads back and offers the downloads.
        await tab.wait_for_selector("#total")
        api = await tab.context.new_page()
        await api.goto(f"{base}/api/runs/{run_id}")
        status = json.loads(await api.locator("body").inner_text())
        await api.close()
        assert status["progress"]["documentsDone"] == status["progress"]["documents"] == 5, status["documents"]
        assert {d["stateLabel"] for d in status["documents"]} == {"read"}, status
        assert (await tab.title()).startswith("Citation report")
        total = int(await tab.locator("#total").inner_text())
        assert total > 0 and await tab.locator("article.citation").count() == total
        shown = tab.locator("#shown")
        assert await shown.inner_text() == f"Showing {total} of {total} citations"
        verdict = await tab.locator("article.citation").first.get_attribute("data-verdict")
        await tab.locator(f'button[data-filter="{verdict}"]').click()
        visible = [await a.get_attribute("data-verdict")
                   for a in await tab.locator("article.citation").all() if await a.is_visible()]
        assert visible and set(visible) == {verdict}
        await tab.locator("#show-all").click()
        failed.update(await check_page(alice, "report"))
        report_width = await tab.evaluate("""() => {
            window.scrollTo(0, 0); return document.documentElement.scrollWidth; }""")
        await shoot(tab, "report", tmp_path)

        downloads: dict[str, bytes] = {}
        for name in ("Download the report (HTML)", "the data (JSON)",
                     "the citations to fix (CSV)"):
            async with tab.expect_download() as info:
                await tab.get_by_role("link", name=name).click()
            download = await info.value
            downloads[download.suggested_filename] = pathlib.Path(
                await download.path()).read_bytes()
        assert sorted(downloads) == ["thesis-citations-to-fix.csv", "thesis-report.html",
                                     "thesis-report.json"], sorted(downloads)
        page_html = downloads["thesis-report.html"].decode()
        assert "Citation report" in page_html and "<script>" in page_html  # works offline
        report = json.loads(downloads["thesis-report.json"])
        assert report["run_id"] == run_id and len(report["citations"]) == total
        rows = list(csv.DictReader(io.StringIO(downloads["thesis-citations-to-fix.csv"]
                                               .decode("utf-8-sig"))))
        # One row per citation not plainly supported: any other verdict, or a wrong page
        # or quotation (the report's problems) under a supported one.
        def problem(c: dict[str, Any]) -> bool:
            return (c.get("page_check") or {}).get("status") == "mismatch" or any(
                q["status"] in ("altered", "not_found") for q in c.get("quotations") or [])

        to_fix = [c for c in report["citations"]
                  if c["verdict"] != "supported" or problem(c)]
        assert to_fix and len(rows) == len(to_fix), (rows, to_fix)
        assert {r["citation"] for r in rows} == {str(c["ordinal"]) for c in to_fix}
        for row in rows:
            assert row["where_in_thesis"] and row["claim"] and row["verdict"], row
            assert row["why"] and row["what_to_do"], row
            if row["verdict"] == "Supported":  # listed only for a problem
                assert row["problems"], row

        # Share with the supervisor, by the bar's form (a real POST of the page).
        await tab.get_by_text("Share with a supervisor").click()
        await tab.get_by_label("Their user name (as they sign in)").fill("bob")
        await tab.get_by_role("button", name="Share read-only").click()
        await tab.wait_for_selector("text=Who may read it:")
        assert await tab.get_by_role("button", name="Stop sharing with bob").count() == 1

        bob = await open_tab(browser, base, "bob")
        await bob.page.goto(f"{base}/runs")
        shared = bob.page.locator("#shared ~ table")
        await shared.get_by_role("link").first.click()
        await bob.page.wait_for_selector("#total")
        assert bob.page.url == f"{base}/runs/{run_id}"
        assert await bob.page.get_by_text("Shared with you by alice (read-only)").count() == 1
        assert await bob.page.get_by_text("Share with a supervisor").count() == 0
        assert await bob.page.get_by_role("button", name=re.compile("^Cancel")).count() == 0
        carol = await open_tab(browser, base, "carol")
        answer = await carol.page.goto(f"{base}/runs/{run_id}")
        assert answer is not None and answer.status == 404
        assert "no such run" in await carol.page.locator("main").inner_text()

        # Taken back (the sharing stays open while someone may read): bob gets 404.
        await tab.get_by_role("button", name="Stop sharing with bob").click()
        await tab.wait_for_selector("text=Nobody else can see this report.", state="attached")
        answer = await bob.page.goto(f"{base}/runs/{run_id}")
        assert answer is not None and answer.status == 404

        # Back to "My runs" by the report's link: the run, finished, named by its thesis.
        await tab.get_by_role("link", name="My runs").first.click()
        await tab.wait_for_url(f"{base}/runs")
        row = tab.locator(f'tr[data-run="{run_id}"]')
        assert await row.locator(".state").inner_text() == "Finished"
        # Named by the thesis's title, not by its file name.
        assert report["thesis"]["title"]
        assert await row.get_by_role("link").inner_text() == report["thesis"]["title"]
        failed.update(await check_page(alice, "My runs"))
        await shoot(tab, "runs", tmp_path)

        for who in (alice, bob, carol):
            assert who.foreign() == []
            assert who.problems() == []
        assert report_width <= 1100
        assert failed == {}, json.dumps(failed, indent=1)[:6000]


# -- cancel, from the run's page and from "My runs"; the 429 that says how -----------------

async def test_cancel_from_the_run_page_and_from_my_runs(
        pool: asyncpg.Pool, tmp_path: pathlib.Path) -> None:
    # No worker: the runs stay running until cancelled.
    async with stack(pool, max_active_runs=2) as (base, browser):
        alice = await open_tab(browser, base, "alice")
        tab = alice.page
        first = await upload(alice)
        await tab.get_by_role("button", name=re.compile("^Cancel run ")).click()
        await tab.wait_for_url(f"{base}/runs/{first}")
        await tab.wait_for_selector("#state.state-cancelled")
        # A stopped run stops: no bar, no "waiting", says so.
        main = await tab.locator("main").inner_text()
        assert "cross-site" not in main and "Cancelled" in main
        assert await tab.locator("progress").count() == 0
        assert "waiting" not in main and "has stopped" in main, main
        failed = await check_page(alice, "cancelled run page")

        second = await upload(alice)
        third = await upload(alice)
        # Over the cap: the alert says how, and its link leads to the button.
        await tab.goto(f"{base}/")
        await tab.set_input_files("#thesis", str(THESIS))
        await tab.set_input_files("#sources", [str(SOURCES[0])])
        await tab.get_by_role("button", name="Upload and check").click()
        alert = tab.get_by_role("alert").filter(has_text="cancel one")
        await alert.wait_for()
        assert "2 active run(s)" in await alert.inner_text()
        colour = await alert.evaluate("e => getComputedStyle(e).color")
        assert colour == "rgb(176, 0, 32)", colour  # the error colour, not body text
        await alert.get_by_role("link", name="Open My runs to cancel a run.").click()
        await tab.wait_for_url(f"{base}/runs")

        # Each button is named for its run; at 375 px the list fits and Cancel is on screen.
        buttons = tab.get_by_role("button", name=re.compile(r"^Cancel run thesis\.pdf"))
        assert await buttons.count() == 2
        await tab.set_viewport_size({"width": 375, "height": 800})
        assert await tab.evaluate("document.documentElement.scrollWidth") <= 375
        box = await buttons.first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375, box
        failed.update(await check_page(alice, "My runs (running)"))
        await tab.locator(f'tr[data-run="{second}"]').get_by_role("button").click()
        await tab.wait_for_url(f"{base}/runs")
        assert await tab.locator(f'tr[data-run="{second}"] .state').inner_text() == "Cancelled"
        assert await tab.locator(f'tr[data-run="{third}"] .state').inner_text() == "Running"
        assert await tab.locator(f'tr[data-run="{second}"]').get_by_role(
            "button", name=re.compile("^Cancel")).count() == 0

        # The list refreshes itself while a run runs: cancelled elsewhere (another tab),
        # this one shows it without a reload.
        other = await open_tab(browser, base, "alice")
        await other.page.goto(f"{base}/runs/{third}")
        await other.page.get_by_role("button", name=re.compile("^Cancel run ")).click()
        await other.page.wait_for_selector("#state.state-cancelled")
        await tab.locator(f'tr[data-run="{third}"] .state-cancelled').wait_for(timeout=15_000)
        assert await tab.locator(f'tr[data-run="{third}"]').get_by_role(
            "button", name=re.compile("^Cancel")).count() == 0
        for who in (alice, other):
            assert who.problems() == [] and who.foreign() == []
        assert failed == {}, json.dumps(failed, indent=1)[:6000]


# -- without scripts ------------------------------------------------------------------------

async def test_upload_and_cancel_with_scripts_off(pool: asyncpg.Pool,
                                                  tmp_path: pathlib.Path) -> None:
    async with stack(pool) as (base, browser):
        alice = await open_tab(browser, base, "alice", scripts=False)
        tab = alice.page
        # An empty file first: the form comes back with the error as an alert.
        empty = tmp_path / "thesis.pdf"
        empty.write_bytes(b"")
        await tab.goto(f"{base}/")
        await tab.set_input_files("#thesis", str(empty))
        await tab.set_input_files("#sources", [str(p) for p in SOURCES])
        await tab.get_by_role("button", name="Upload and check").click()
        alert = tab.get_by_role("alert")
        await alert.wait_for()
        assert "'thesis.pdf' is empty (0 bytes)" in await alert.inner_text()
        assert await tab.title() == "Check a thesis · citerun"  # a page, not JSON

        run_id = await upload(alice)
        assert await tab.locator("#state").inner_text() == "Running"
        # Without the script nothing polls: the running run's page reloads itself.
        async with tab.expect_navigation(timeout=12_000):
            pass
        assert tab.url == f"{base}/runs/{run_id}"
        await tab.get_by_role("button", name=re.compile("^Cancel run ")).click()
        # Without the script the service asks on a page of its own (issue 47).
        await tab.get_by_role("button", name="Cancel the run").click()
        await tab.wait_for_selector("#state.state-cancelled")
        assert tab.url == f"{base}/runs/{run_id}"
        assert alice.problems() == []


# -- a failed run stops; the service's absence is said ------------------------------------

async def test_a_failed_run_stops(
        pool: asyncpg.Pool, spawn_worker: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n% no objects, no pages: nothing a reader can open\n")
    async with stack(pool) as (base, browser):
        alice = await open_tab(browser, base, "alice")
        tab = alice.page
        # A thesis with a PDF's magic and nothing else: accepted, then the worker cannot
        # read it and the run fails while its page polls.
        run_id = await upload(alice, broken, SOURCES[:1])
        await tab.locator("#judged-text").wait_for()
        spawn_worker("browser-fail", tasks="citerun.worker.tasks:registry")
        await tab.wait_for_selector("#state.state-failed", timeout=180_000)
        main = await tab.locator("main").inner_text()
        assert await tab.locator("progress").count() == 0
        assert "waiting" not in main and "not started yet" not in main, main
        assert "has stopped" in main and await tab.get_by_role("alert").count() >= 1, main
        failed = await check_page(alice, "failed run page")
        assert tab.url == f"{base}/runs/{run_id}"
        assert alice.problems() == []
        assert failed == {}, json.dumps(failed, indent=1)[:6000]


async def test_the_run_page_says_when_the_service_does_not_answer(pool: asyncpg.Pool) -> None:
    async with service.running(pool, Settings(), WebSettings()) as upstream, \
            playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(_CHROMIUM), args=_ARGS)
        try:
            async with auth_proxy(upstream, PASSWORDS) as base:
                alice = await open_tab(browser, base, "alice")
                await upload(alice)
                await alice.page.locator("#judged-text").wait_for()
                assert await alice.page.locator("#offline").is_hidden()
            # The proxy is gone: the next poll fails.
            note = alice.page.locator("#offline")
            await note.wait_for(state="visible", timeout=15_000)
            text = await note.inner_text()
            assert "The service is not answering" in text, text
            assert await alice.page.locator("section.stale").count() == 1
        finally:
            await browser.close()
