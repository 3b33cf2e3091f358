"""One change-feed API for both SQL engines: what changed in a store, not the world.

``feed = await open_feed(url)`` then, in a loop, ``changes = await
feed.wait(timeout)``:

* a list of ``(table, key)`` pairs committed since the previous call, in
  commit order, each pair once per call (first occurrence kept): ``lanes``
  -> ``"lane:workspace"``, ``jobs`` / ``ledger`` -> the row id,
  ``occupancy`` -> the workspace. An empty list: nothing within ``timeout``
  seconds.
* ``None``: read a fresh snapshot (``SqlStore.dump()`` or the tables you
  show). Always the answer of the first call; afterwards on PostgreSQL after
  the LISTEN connection was lost and made again (notifications sent in
  between are lost), on SQLite when the reader fell behind the kept change
  rows.

``await feed.close()`` ends it (idempotent). ``wait`` never blocks the event
loop: SQLite polls ``PRAGMA data_version`` (a few microseconds) every
:data:`POLL_S` between ``asyncio.sleep`` calls; PostgreSQL waits on one LISTEN
connection (``LISTEN lanemon``: the triggers' ``NOTIFY``, delivered at commit).
While a PostgreSQL server cannot be reached, ``wait`` returns ``[]`` once its
connection attempt failed (which may take up to the connect timeout) and at most
half a second more (never past its own timeout after the attempt), tries again on
the next call and says why in ``last_error``; the first call after a successful
reconnect returns ``None``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from lanemon.store.url import StoreError, StoreUrl

__all__ = ["Feed", "POLL_S", "PostgresFeed", "SqliteChangeFeed", "open_feed"]

#: how often the SQLite feed looks at ``PRAGMA data_version``
POLL_S = 0.010

Change = tuple[str, str]


class Feed(Protocol):
    async def wait(self, timeout: float) -> list[Change] | None: ...  # noqa: ASYNC109
    async def close(self) -> None: ...


async def open_feed(url: StoreUrl) -> Feed:
    """The change feed of the SQLite or PostgreSQL store ``url`` (:class:`StoreError`
    when it cannot be read: no such file, unreachable server, refused login)."""
    if url.engine == "sqlite":
        feed: Feed = SqliteChangeFeed(url)
    elif url.engine == "postgresql":
        feed = PostgresFeed(url)
        await feed.connect()
    else:
        raise StoreError(f"{url.redacted()!r} has no change feed (only SQLite and PostgreSQL stores)")
    return feed


def _once(pairs: list[Change]) -> list[Change]:
    return list(dict.fromkeys(pairs))


class SqliteChangeFeed:
    """The feed of an SQLite store: :class:`~lanemon.store.sql.sqlite.SqliteFeed` polled."""

    def __init__(self, url: StoreUrl) -> None:
        import os
        import sqlite3

        from lanemon.store.sql.sqlite import SqliteFeed

        if not os.path.exists(url.path):
            raise StoreError(f"sqlite store {url.path} does not exist")
        try:
            self._feed: SqliteFeed | None = SqliteFeed(url.path)
        except sqlite3.Error as exc:
            raise StoreError(f"sqlite store {url.path}: cannot read its changes: {exc}") from None
        self._path = url.path

    async def wait(self, timeout: float) -> list[Change] | None:  # noqa: ASYNC109 (a poll: [] when nothing came)
        import sqlite3

        feed = self._feed
        if feed is None:
            raise StoreError(f"the change feed of {self._path} is closed")
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            try:
                changes = feed.poll()
            except sqlite3.Error as exc:
                raise StoreError(f"sqlite store {self._path}: cannot read its changes: {exc}") from None
            if changes is None or changes:
                return changes
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            await asyncio.sleep(min(POLL_S, left))

    async def close(self) -> None:
        feed, self._feed = self._feed, None
        if feed is not None:
            feed.close()


class PostgresFeed:
    """The feed of a PostgreSQL store: one LISTEN connection, made again after a loss."""

    def __init__(self, url: StoreUrl) -> None:
        self._url = url
        self._conn = None
        self._fresh = True       # the next wait answers None (start / reconnected)
        self._closed = False
        self.last_error: str | None = None
        self.reconnects = 0

    @property
    def pid(self) -> int | None:
        """The server process id of the LISTEN connection (None while disconnected)."""
        conn = self._conn
        return None if conn is None or conn.closed else conn.info.backend_pid

    async def connect(self) -> None:
        """Make the LISTEN connection (:class:`StoreError` when it cannot be made)."""
        from lanemon.store.sql.postgres import FEED_CHANNEL, connect, explain

        conn = await connect(self._url)
        try:
            await conn.execute(f"LISTEN {FEED_CHANNEL}")
        except Exception as exc:
            await conn.close()
            raise StoreError(explain(self._url, exc)) from None
        self._conn = conn
        self._fresh = True
        self.last_error = None

    async def wait(self, timeout: float) -> list[Change] | None:  # noqa: ASYNC109 (a poll: [] when nothing came)
        import psycopg

        if self._closed:
            raise StoreError(f"the change feed of {self._url.redacted()} is closed")
        deadline = time.monotonic() + max(0.0, timeout)
        if self._conn is None:
            try:
                await self.connect()
                self.reconnects += 1
            except StoreError as exc:
                self.last_error = str(exc)
                await asyncio.sleep(max(0.0, min(0.5, deadline - time.monotonic())))
                return []
        if self._fresh:
            self._fresh = False
            return None
        conn = self._conn
        try:
            got = self._drain(conn)
            if not got and deadline > time.monotonic():
                await self._readable(conn, deadline - time.monotonic())
                got = self._drain(conn)
        except (psycopg.Error, OSError) as exc:
            from lanemon.store.sql.postgres import explain

            self.last_error = explain(self._url, exc)
            self._conn = None
            await conn.close()
            return await self.wait(max(0.0, deadline - time.monotonic()))
        return _once(got)

    @staticmethod
    def _drain(conn) -> list[Change]:
        """Every notification that arrived on ``conn``'s socket, read without waiting
        (libpq's ``consume_input`` + ``notifies``: no async machinery per notification;
        the feed is the only user of its connection, which runs no query meanwhile)."""
        import psycopg

        pgconn = conn.pgconn
        pgconn.consume_input()  # (raises OperationalError on a lost connection)
        if pgconn.status != psycopg.pq.ConnStatus.OK:
            raise psycopg.OperationalError("the LISTEN connection was lost")
        got: list[Change] = []
        note = pgconn.notifies()
        while note is not None:
            got.append(_pair(note.extra.decode()))
            note = pgconn.notifies()
        return got

    @staticmethod
    async def _readable(conn, seconds: float) -> None:
        """Until ``conn``'s socket has something to read, or ``seconds``."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = conn.pgconn.socket
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await asyncio.wait_for(ready, seconds)
        except TimeoutError:
            pass
        finally:
            loop.remove_reader(fd)

    async def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


def _pair(payload: str) -> Change:
    table, _, key = payload.partition(":")
    return table, key
