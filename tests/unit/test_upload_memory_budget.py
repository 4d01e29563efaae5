"""Issue 48, finding 2: the web service's one memory budget for uploads
(:class:`citerun.web.spool.MemoryBudget`) and the spooled file an upload is read into."""

from __future__ import annotations

import asyncio
import hashlib
import os

import pytest

from citerun.core import runs
from citerun.web import spool
from citerun.web.settings import WebSettings


async def test_an_upload_over_the_budget_waits_its_turn_first_come_first_served() -> None:
    budget = spool.MemoryBudget(100, wait_s=5)
    order: list[str] = []
    release = asyncio.Event()

    async def upload(name: str, nbytes: int) -> None:
        async with budget.hold(nbytes):
            order.append(name)
            assert budget.in_use <= budget.capacity
            if name == "first":
                await release.wait()

    first = asyncio.create_task(upload("first", 70))
    await asyncio.sleep(0)
    large = asyncio.create_task(upload("large", 60))  # does not fit beside the first
    await asyncio.sleep(0)
    small = asyncio.create_task(upload("small", 10))  # would fit, but comes after "large"
    await asyncio.sleep(0.05)
    assert order == ["first"]
    release.set()
    await asyncio.gather(first, large, small)
    assert order == ["first", "large", "small"]
    assert budget.in_use == 0 and budget.peak <= 100


async def test_past_the_wait_an_upload_is_refused_with_a_retry_after() -> None:
    budget = spool.MemoryBudget(100, wait_s=0.05)
    async with budget.hold(90):
        with pytest.raises(spool.BudgetBusy) as refused:
            async with budget.hold(20):
                pass  # pragma: no cover
        assert refused.value.retry_after_s >= 5
        assert budget.in_use == 90
    async with budget.hold(100):  # what the refused one waited for is free again
        assert budget.in_use == 100
    assert budget.in_use == 0


async def test_a_request_that_goes_away_while_waiting_gives_its_place_back() -> None:
    budget = spool.MemoryBudget(100, wait_s=5)
    async with budget.hold(100):
        waiting = asyncio.create_task(budget.hold(50).__aenter__())
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    assert budget.in_use == 0
    async with budget.hold(100):
        pass


def test_a_spooled_upload_is_on_disk_from_its_first_byte_hashed_as_it_arrives() -> None:
    data = bytes(range(256)) * 4096  # 1 MiB
    f = spool.SpooledUpload("sources", "a.pdf")
    for i in range(0, len(data), 65536):
        f.write(data[i:i + 65536])
    small = spool.SpooledUpload("library", "refs.bib")
    small.write(b"@article{x, title={T}}")
    try:
        for spooled, size in ((f, len(data)), (small, 22)):  # a file, not a buffer
            # (a SpooledTemporaryFile of 256 KiB before: the small one had no file yet)
            assert isinstance(spooled._file.name, int), spooled._file
            spooled._file.flush()
            assert os.fstat(spooled._file.fileno()).st_size == size
        assert f.size == len(data) and f.head == data[:spool.HEAD_BYTES]
        assert f.digest == hashlib.sha256(data).hexdigest()
        assert f.read() == data
    finally:
        f.close()
        small.close()


def test_the_budget_holds_one_largest_upload() -> None:
    settings = WebSettings()
    largest = settings.max_upload_bytes
    assert spool.memory_cost([largest], largest) <= settings.upload_memory_bytes
    # Documents go to Postgres in pieces: the driver holds a few pieces, not a file's copies.
    assert spool.memory_cost([largest], largest) == 2 * largest + 3 * runs.PIECE_BYTES
    with pytest.raises(ValueError, match="upload_memory_bytes"):
        WebSettings(max_upload_bytes=250_000_000)
    WebSettings(max_upload_bytes=250_000_000, upload_memory_bytes=503_200_000)
