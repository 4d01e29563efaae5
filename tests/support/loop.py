"""The event loop kept free: count its ticks while a coroutine runs (heartbeats go on)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def ticks_while(awaitable: Awaitable[T], every_s: float = 0.05) -> tuple[T | Exception, int]:
    """Await ``awaitable`` and count ``every_s`` ticks of the loop meanwhile; an exception
    it raises is returned in place of its result."""
    ticks = 0
    done = False

    async def tick() -> None:
        nonlocal ticks
        while not done:
            await asyncio.sleep(every_s)
            ticks += 1

    ticker = asyncio.create_task(tick())
    result: T | Exception
    try:
        result = await awaitable
    except Exception as err:  # noqa: BLE001 - the caller inspects it
        result = err
    done = True
    await ticker
    return result, ticks
