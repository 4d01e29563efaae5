"""Issue 47, "any thesis a student zips", in headless Chromium through the form:

* a LaTeX thesis zipped as people zip them (its ``\\documentclass`` options over several
  lines of an ``\\input`` preamble, ten chapter files, its ``.bib``) and no source PDFs:
  accepted, run by a worker, and its report lists the citations' sources to add. Before:
  the form refused it ("no sources"), and without that refusal its run failed with
  "no .tex file of the bundle has a \\documentclass (ten chapters); name the main file".
* a zip where two files could be the main one: the form says which two and where to
  name one; named in the form's "Main .tex file", the same files (still chosen) run.

The browser sets no header by hand (the authenticating proxy of test_web_browser).
"""

from __future__ import annotations

import pathlib
import re
import time
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from tests.e2e.test_web_browser import open_tab, stack
from tests.support import latex_zip

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.async_api")

if not pathlib.Path("/usr/bin/chromium").exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium", allow_module_level=True)

RUN_URL = re.compile(r".*/runs/[0-9a-f-]{36}$")


async def _choose_and_send(tab: Any, base: str, thesis: pathlib.Path) -> None:
    await tab.goto(f"{base}/")
    await tab.set_input_files("#thesis", str(thesis))
    await tab.get_by_role("button", name="Upload and check").click()


async def test_a_zipped_latex_thesis_without_sources_runs_to_a_report(
        pool: asyncpg.Pool, spawn_worker: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    thesis = tmp_path / "thesis-latex.zip"
    thesis.write_bytes(latex_zip.zipped(latex_zip.files(), top="thesis/"))
    spawn_worker("zip-w0", tasks="citerun.worker.tasks:registry")
    async with stack(pool) as (base, browser):
        alice = await open_tab(browser, base, "alice")
        tab = alice.page
        await _choose_and_send(tab, base, thesis)  # no sources chosen
        try:
            await tab.wait_for_url(RUN_URL, timeout=30_000)
        except playwright_api.TimeoutError:
            raise AssertionError(await tab.inner_text("main")) from None
        run_id = tab.url.rsplit("/", 1)[1]
        deadline = time.monotonic() + 300
        while not await tab.locator("#total").count():
            state = await tab.locator("#state").get_attribute("class") \
                if await tab.locator("#state").count() else ""
            assert "state-failed" not in (state or ""), await tab.inner_text("main")
            assert time.monotonic() < deadline, await tab.inner_text("main")
            await tab.wait_for_timeout(500)
        assert tab.url == f"{base}/runs/{run_id}"
        total = int(await tab.locator("#total").inner_text())
        assert total == 20 == await tab.locator("article.citation").count(), total
        report = await tab.inner_text("body")
        # Every citation's source is missing: the report names what to add, by key and
        # by the library's reference.
        assert "Street trees lower the temperature of narrow streets" in report, report[:3000]
        assert "Cities and their heat" in report
        verdicts = {await a.get_attribute("data-verdict")
                    for a in await tab.locator("article.citation").all()}
        assert verdicts == {"unresolved_citation"}, verdicts
        assert alice.problems() == []


async def test_two_main_files_are_named_in_the_form(pool: asyncpg.Pool,
                                                    tmp_path: pathlib.Path) -> None:
    members = {k: v for k, v in latex_zip.files().items() if k != "main.tex"}
    members["a-thesis.tex"] = latex_zip.MAIN
    members["b-slides.tex"] = latex_zip.MAIN.replace("\\maketitle", "")
    thesis = tmp_path / "two-mains.zip"
    thesis.write_bytes(latex_zip.zipped(members))
    async with stack(pool) as (base, browser):
        for scripts in (True, False):
            alice = await open_tab(browser, base, "alice", scripts=scripts)
            tab = alice.page
            await _choose_and_send(tab, base, thesis)
            alert = tab.get_by_role("alert").filter(has_text="main file")
            await alert.wait_for(timeout=30_000)
            said = await alert.inner_text()
            assert "a-thesis.tex" in said and "b-slides.tex" in said, said
            assert "Main .tex file" in said and "chapters/" not in said, said
            if not scripts:  # the page came back: the file is chosen again
                await tab.set_input_files("#thesis", str(thesis))
            await tab.get_by_label("Main .tex file (optional)").fill("a-thesis.tex")
            await tab.get_by_role("button", name="Upload and check").click()
            await tab.wait_for_url(RUN_URL, timeout=30_000)
            assert await tab.locator("#state").inner_text() == "Running"
            await tab.get_by_role("button", name=re.compile("^Cancel run ")).click()
            if not scripts:  # asked on a page (with the script: a dialog, accepted)
                await tab.get_by_role("button", name="Cancel the run").click()
            await tab.wait_for_selector("#state.state-cancelled")
            assert alice.problems() == []
