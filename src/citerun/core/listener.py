"""A LISTEN connection that survives the database going away.

Workers listen on ``citerun_tasks`` to wake when work arrives; the operator listens on
``citerun_runs`` to follow progress. A dedicated connection (never from the pool: a pooled connection would be reset and
lose its LISTEN) with TCP keepalive. When it drops, it is re-opened with backoff, and
after every (re)connect the worker is woken with source ``rescan``, because NOTIFYs sent
while it was away are gone. A lost NOTIFY therefore delays work; it never loses it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
from collections.abc import Callable

import asyncpg

from citerun.core import db, queue

logger = logging.getLogger(__name__)


class Listener:
    def __init__(self, url: str, wake: Callable[[str, str | None], None], *,
                 reconnect_s: float = 1.0, channel: str = queue.TASKS_CHANNEL) -> None:
        self._url = url
        self._wake = wake
        self._reconnect_s = reconnect_s
        self._channel = channel
        self._conn: asyncpg.Connection | None = None
        self._lost = asyncio.Event()
        self.connects = 0

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def run(self) -> None:
        """Keep the LISTEN connection open until cancelled."""
        policy = dataclasses.replace(db.RECONNECT, base_s=self._reconnect_s)
        failures = 0
        try:
            while True:
                try:
                    await self._connect()
                except (*db.UNAVAILABLE, asyncpg.PostgresError) as err:
                    failures += 1
                    delay = policy.delay_s(failures)
                    logger.warning("LISTEN connection failed: %s; retrying in %.1fs", err, delay,
                                   extra={"action": "listen", "error": str(err)})
                    await asyncio.sleep(delay)
                    continue
                failures = 0
                self.connects += 1
                self._wake("rescan", None)
                await self._lost.wait()
                logger.warning("LISTEN connection lost; reconnecting",
                               extra={"action": "listen"})
                await self._close()
        finally:
            await self._close()

    async def _connect(self) -> None:
        self._lost.clear()
        conn = await db.connect(self._url, timeout=10)
        _keepalive(conn)
        conn.add_termination_listener(lambda _c: self._lost.set())
        await conn.add_listener(self._channel, self._on_notify)
        self._conn = conn

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self._wake("notify", payload)

    def check(self) -> None:
        """Notice a connection that died without telling us (called by maintenance)."""
        if self._conn is not None and self._conn.is_closed():
            self._lost.set()

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            try:
                await asyncio.wait_for(conn.close(), 2)
            except (OSError, asyncpg.InterfaceError, asyncio.TimeoutError):
                conn.terminate()


def _keepalive(conn: asyncpg.Connection) -> None:
    """Make the kernel probe an idle LISTEN connection, so a dead peer is noticed."""
    transport = getattr(conn, "_transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family == socket.AF_UNIX:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
