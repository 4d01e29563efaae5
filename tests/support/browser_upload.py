"""The upload form as a student uses it in a browser: choose the thesis and its sources,
click "Upload and check", and land on the new run's page (the browser tests' one copy)."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Sequence
from typing import Any

RUN_PAGE = re.compile(r".*/runs/[0-9a-f-]{36}$")


async def upload(tab: Any, base: str, thesis: pathlib.Path, sources: Sequence[pathlib.Path],
                 log: pathlib.Path) -> str:
    """Upload through the form at ``base``; the run page's URL. Fails with the page's text
    and the service's log when no run page comes within 60 s."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout  # noqa: PLC0415

    await tab.goto(f"{base}/")
    await tab.set_input_files("#thesis", str(thesis))
    await tab.set_input_files("#sources", [str(p) for p in sources])
    await tab.get_by_role("button", name="Upload and check").click()
    try:
        await tab.wait_for_url(RUN_PAGE, timeout=60_000)
    except PlaywrightTimeout:
        raise AssertionError(f"no run page: {await tab.inner_text('body')}\n"
                             f"{log.read_text(errors='replace')}") from None
    return str(tab.url)
