"""Issue 47, "runs people manage", in headless Chromium as a student and a supervisor use
the pages (the authenticating proxy of test_web_browser; no header set by hand):

* My runs at 1400 px breaks no word: each state ("Running", "Cancelled", "Finished") and
  each button ("Cancel", "Delete") stands on one line (its text's line boxes counted).
  Before: ``body{overflow-wrap:anywhere}`` let the table squeeze "Runnin|g", "Canc|el".
* A run is told apart: its title, its file name, its start to the second (in a
  ``<time>``), a finished run's verdict counts; the upload form and My runs say who sees
  the files and how long they are kept (``web.keep_days``).
* Delete, with confirmation, with and without scripts: the run, its report, its shares
  and its uploaded document go (the database is checked); the supervisor it was shared
  with has no Delete and a forged one is 404. Before: no way to delete anything.
"""

from __future__ import annotations

import pathlib
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from tests.e2e.test_web_browser import SOURCES, THESIS, check_page, open_tab, stack, upload
from tests.support import latex_zip

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

if not pathlib.Path("/usr/bin/chromium").exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium", allow_module_level=True)

RUN_URL = re.compile(r".*/runs/[0-9a-f-]{36}$")
#: A long name, as theses are named on a student's disk.
LONG_NAME = "Masterarbeit_Stadtbaeume_und_Hitze_Endfassung_ueberarbeitet_2026-11-30.zip"

#: For each element the selector finds: its text and how many lines its text takes.
LINES = """selector => Array.from(document.querySelectorAll(selector)).map(el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = new Set(Array.from(range.getClientRects())
                       .filter(r => r.width > 0).map(r => Math.round(r.top)));
  return [el.textContent.trim(), tops.size];
})"""


async def _zip_upload(tab: Any, base: str, thesis: pathlib.Path) -> str:
    await tab.goto(f"{base}/")
    await tab.set_input_files("#thesis", str(thesis))
    await tab.get_by_role("button", name="Upload and check").click()
    await tab.wait_for_url(RUN_URL, timeout=30_000)
    return str(tab.url.rsplit("/", 1)[1])


async def test_my_runs_at_1400px_breaks_no_word_and_tells_runs_apart(
        pool: asyncpg.Pool, spawn_worker: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    thesis = tmp_path / LONG_NAME
    thesis.write_bytes(latex_zip.zipped(latex_zip.files()))
    worker = spawn_worker("manage-w0", tasks="citerun.worker.tasks:registry")
    async with stack(pool) as (base, browser):
        alice = await open_tab(browser, base, "alice", width=1400)
        tab = alice.page
        dialogs = alice.asked
        finished = await _zip_upload(tab, base, thesis)
        deadline = time.monotonic() + 300
        while not await tab.locator("#total").count():
            assert time.monotonic() < deadline, await tab.inner_text("body")
            await tab.wait_for_timeout(500)
        worker.stop()  # the next runs stay running
        running = await upload(alice)
        cancelled = await upload(alice)
        await tab.goto(f"{base}/runs")
        await tab.locator(f'tr[data-run="{cancelled}"]').get_by_role(
            "button", name=re.compile("^Cancel run ")).click()
        await tab.wait_for_url(f"{base}/runs")
        await tab.locator(f'tr[data-run="{cancelled}"] .state-cancelled').wait_for()
        await tab.set_viewport_size({"width": 1400, "height": 900})
        await tab.wait_for_timeout(100)
        states = await tab.evaluate(LINES, "table.runs td.state")
        buttons = await tab.evaluate(LINES, "table.runs button")
        assert {s for s, _ in states} == {"Finished", "Running", "Cancelled"}, states
        assert {b for b, _ in buttons} >= {"Cancel"}, buttons
        broken = [(text, lines) for text, lines in states + buttons if lines != 1]
        assert broken == [], broken

        # Told apart: the finished run by its thesis's title (the LaTeX's \title, read by
        # the parse), its file's name under it, with its verdicts; each start to the second.
        row = tab.locator(f'tr[data-run="{finished}"]')
        assert await row.get_by_role("link").inner_text() == "Street Trees and Urban Heat"
        assert await row.locator("td.title .hint").inner_text() == LONG_NAME
        counts = await row.locator(".progress").inner_text()
        assert counts == "20 citation(s): Unresolved citation 20", counts
        for run_id in (finished, running, cancelled):
            moment = tab.locator(f'tr[data-run="{run_id}"] time')
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00",
                                await moment.get_attribute("datetime") or "")
            assert re.search(r"\d\d:\d\d:\d\d", await moment.inner_text())
        failed = await check_page(alice, "My runs (finished, running, cancelled)")
        assert failed == {}, failed
        note = await tab.locator("#retention").inner_text()
        assert "kept for 30 days after the run ends" in note and "share" in note, note
        await tab.goto(f"{base}/")
        assert "kept for 30 days" in await tab.locator("#retention").inner_text()
        assert alice.problems() == []


async def _count(pool: asyncpg.Pool, sql: str, *args: Any) -> int:
    return int(await pool.fetchval(sql, *args))


async def test_delete_a_run_with_and_without_scripts(pool: asyncpg.Pool,
                                                     tmp_path: pathlib.Path) -> None:
    first = tmp_path / "first-thesis.zip"
    first.write_bytes(latex_zip.zipped(latex_zip.files(**{"extra.tex": "% one\n"})))
    second = tmp_path / "second-thesis.zip"
    second.write_bytes(latex_zip.zipped(latex_zip.files(**{"extra.tex": "% two\n"})))
    async with stack(pool) as (base, browser):  # no worker: the runs wait until cancelled
        alice = await open_tab(browser, base, "alice")
        tab = alice.page
        dialogs = alice.asked
        run_id = await _zip_upload(tab, base, first)
        # Shared with the supervisor while it runs, then cancelled (one confirmation).
        await tab.get_by_label("Their user name (as they sign in)").fill("bob")
        await tab.get_by_role("button", name="Share read-only").click()
        await tab.get_by_role("button", name="Stop sharing with bob").wait_for()
        await tab.get_by_role("button", name=re.compile("^Cancel run ")).click()
        await tab.wait_for_selector("#state.state-cancelled")
        digest = await pool.fetchval(
            "SELECT digest FROM run_sources WHERE run_id = $1 AND role = 'thesis'",
            uuid.UUID(run_id))
        assert digest is not None

        # The supervisor reads it, has no Delete, and a Delete forged in the page is 404.
        bob = await open_tab(browser, base, "bob")
        await bob.page.goto(f"{base}/runs/{run_id}")
        assert await bob.page.get_by_role("button", name=re.compile("^Delete")).count() == 0
        answer_status = await bob.page.evaluate("""run => {
            const form = document.createElement("form");
            form.method = "post"; form.action = "/runs/" + run + "/delete";
            for (const [k, v] of [["csrf_token", document.querySelector(
                    'meta[name="csrf-token"]').content], ["confirm", "yes"]]) {
                const i = document.createElement("input");
                i.type = "hidden"; i.name = k; i.value = v; form.appendChild(i);
            }
            document.body.appendChild(form); form.submit(); return true; }""", run_id)
        assert answer_status
        await bob.page.wait_for_load_state("load")
        assert "no such run" in await bob.page.inner_text("main")
        assert await _count(pool, "SELECT count(*) FROM runs WHERE id = $1",
                            uuid.UUID(run_id)) == 1

        # Alice deletes it from My runs: asked first, then gone, with its files.
        await tab.goto(f"{base}/runs")
        row = tab.locator(f'tr[data-run="{run_id}"]')
        await row.get_by_role("button", name=re.compile("^Delete run ")).click()
        await tab.wait_for_url(f"{base}/runs?deleted=1")
        assert dialogs and "cannot be undone" in dialogs[-1], dialogs
        assert await tab.locator(f'tr[data-run="{run_id}"]').count() == 0
        assert "was deleted" in await tab.get_by_role("status").first.inner_text()
        rid = uuid.UUID(run_id)
        for table in ("runs", "web_runs", "web_shares", "run_sources", "citations",
                      "reports", "tasks"):
            column = "id" if table == "runs" else "run_id"
            assert await _count(pool, f"SELECT count(*) FROM {table} WHERE {column} = $1",
                                rid) == 0, table
        for table in ("documents", "document_owners", "document_pages", "chunks"):
            assert await _count(pool, f"SELECT count(*) FROM {table} WHERE digest = $1",
                                digest) == 0, table
        answer = await bob.page.goto(f"{base}/runs/{run_id}")
        assert answer is not None and answer.status == 404

        # Without scripts: the Delete answers with a page that asks.
        quiet = await open_tab(browser, base, "alice", scripts=False)
        page = quiet.page
        other = await _zip_upload(page, base, second)
        await page.get_by_role("button", name=re.compile("^Cancel run ")).click()
        await page.get_by_role("button", name="Cancel the run").click()  # asked first
        await page.wait_for_selector("#state.state-cancelled")
        await page.get_by_role("button", name=re.compile("^Delete run ")).click()
        await page.wait_for_url(f"{base}/runs/{other}/delete")
        assert await page.title() == "Delete this run? · citerun"
        await page.get_by_role("button", name="Delete the run").click()
        await page.wait_for_url(f"{base}/runs?deleted=1")
        assert await _count(pool, "SELECT count(*) FROM runs WHERE id = $1",
                            uuid.UUID(other)) == 0
        for who in (alice, bob, quiet):
            assert who.problems() == []


async def test_sharing_says_an_unknown_name_and_gives_a_link_and_cancel_asks(
        pool: asyncpg.Pool) -> None:
    """A typo'd reader ("bergr") is said to be unknown, a known one is not, and the link
    to send opens the run for the reader; Cancel asks first (with the script: a dialog
    that, dismissed, leaves the run running; without: a page) and its result is no error.
    Before: "bergr" listed like anyone, no link; Cancel in one click, a red alert after."""
    async with stack(pool) as (base, browser):
        bob = await open_tab(browser, base, "bob")
        await bob.page.goto(f"{base}/runs")  # bob has signed in; "bergr" never has
        alice = await open_tab(browser, base, "alice")
        tab = alice.page
        answers, asked = alice.answers, alice.asked
        run_id = await upload(alice, THESIS, SOURCES[:1])
        for reader in ("bergr", "bob"):
            await tab.get_by_label("Their user name (as they sign in)").fill(reader)
            await tab.get_by_role("button", name="Share read-only").click()
            await tab.get_by_role("button", name=f"Stop sharing with {reader}").wait_for()
        items = {text.split()[0]: text for text in
                 await tab.locator("section.share li").all_inner_texts()}
        assert "nobody has signed in as bergr" in items["bergr"], items
        assert "nobody has signed in" not in items["bob"], items
        failed = await check_page(alice, "run page shared with an unknown name")
        link = tab.locator("section.share .send a")
        href = await link.get_attribute("href") or ""
        assert href.endswith(f"/runs/{run_id}") and href.startswith("http"), href
        answer_page = await bob.page.goto(href)
        assert answer_page is not None and answer_page.status == 200
        assert "Shared with you by alice" in await bob.page.inner_text("main")

        # Cancel asks: dismissed, nothing happens; accepted, cancelled, said plainly.
        cancel = tab.get_by_role("button", name=re.compile("^Cancel run "))
        answers.append(False)
        await cancel.click()
        await tab.wait_for_timeout(500)
        assert asked and "stops for good" in asked[-1], asked
        assert await tab.locator("#state").inner_text() == "Running"
        answers.append(True)
        await cancel.click()
        await tab.wait_for_selector("#state.state-cancelled")
        main = await tab.inner_text("main")
        assert "This run has stopped: it was cancelled at" in main, main
        assert await tab.get_by_role("alert").count() == 0, main
        colour = await tab.locator("#state").evaluate("e => getComputedStyle(e).color")
        assert colour != "rgb(176, 0, 32)", colour  # not the error colour
        # Its readers are still listed (to take back), the form to add one is not.
        assert await tab.get_by_role("button", name="Share read-only").count() == 0
        assert await tab.get_by_role("button", name="Stop sharing with bob").count() == 1

        # Without the script: a page asks.
        quiet = await open_tab(browser, base, "alice", scripts=False)
        other = await upload(quiet, THESIS, SOURCES[:1])
        await quiet.page.get_by_role("button", name=re.compile("^Cancel run ")).click()
        assert await quiet.page.title() == "Cancel this run? · citerun"
        assert await quiet.page.locator("#state").count() == 0
        await quiet.page.get_by_role("button", name="Cancel the run").click()
        await quiet.page.wait_for_selector("#state.state-cancelled")
        assert quiet.page.url == f"{base}/runs/{other}"
        # axe on the pages that ask, reached in a tab with scripts (axe needs them): the
        # form sent as the page without its script sends it.
        for action, name in (("cancel", "the Cancel's page"), ("delete", "the Delete's page")):
            if action == "delete":
                await tab.goto(f"{base}/runs/{other}")
            else:
                await upload(alice, THESIS, SOURCES[:1])
            await tab.locator(f"form.{action}").evaluate("""f => {
                const i = document.createElement("input");  // as if the script asked no one
                i.type = "hidden"; i.name = "confirm"; i.value = "ask"; f.appendChild(i); }""")
            await tab.locator(f"form.{action} button").click()
            await tab.wait_for_url(re.compile(f".*/{action}$"))
            failed.update(await check_page(alice, name))
        await tab.goto(f"{base}/runs/{run_id}")
        failed.update(await check_page(alice, "run page cancelled, shared"))
        assert failed == {}, failed
        for who in (alice, bob, quiet):
            assert who.problems() == []
