"""The store seam: where lanes, reservation records and counter claims live (Qt-free).

The scheduler (``lanemon.lanes``), the counter strategies and simulation
(``lanemon.counters``) and the window see shared state only through three
small interfaces, each a ``typing.Protocol`` with its contract in its module
docstring and a conformance suite that every engine must pass:

=================  ===============================  ===============================
seam               interface                        conformance tests
=================  ===============================  ===============================
lanes              ``lanes.LaneStore``              ``tests/test_store_lanes.py``
reservation rows   ``records.ReservationStore``     ``tests/test_store_lanes.py``
counter claims     ``claims.ClaimStore``            ``tests/test_store_claims.py``
=================  ===============================  ===============================

What every engine guarantees (details in each module):

- every operation a database would do is awaitable (the memory engine
  completes it without suspending, so a seeded run is the same whether its
  calls are awaited or not); the lanes and records also offer an immediate
  form that either completes at once or raises ``WouldBlock`` and changes
  nothing;
- fencing is checked by the engine inside the write (a stale epoch's write,
  release or finalize is refused, changes nothing, is counted, never raises
  where the caller is cleaning up);
- epochs come from a counter the store owns and strictly increase;
- claim TTLs are judged by one clock, the store's;
- drawing reads (views, counts) are synchronous and answer from the state
  the engine knows, so the window never waits on a round trip.

Engines: ``memory`` (``memory.py`` for lanes and records, ``memory_claims.py``
for claims) is today's in-process code and the default. A second engine
(SQLite for several processes on one machine, PostgreSQL across hosts) is a
new module beside it that passes the same suites; nothing in the scheduler,
the strategies or the UI changes for it.

Opening a store by URL
----------------------
``await open_store(url_text, create=False, name="")`` parses ``url_text``
(:func:`lanemon.store.url.parse`) and returns one session on that store, an
object with the same factories whatever the engine: ``lanes`` (a
``LanesFactory``), ``records(events=, keep_finished=, writer=)`` (a
``RecordsFactory``), ``claims(counters=, clock=, default_ttl=, events=)``,
``close()`` (a coroutine), ``engine`` and ``url`` (a
:class:`~lanemon.store.url.StoreUrl`). ``memory:`` gives a :class:`MemoryStore`
(nothing to open, nothing shared: every factory call makes fresh in-process
state); ``sqlite:///...`` and ``postgresql://...`` give a
:class:`lanemon.store.sql.SqlStore` (``create``: make the schema in an empty
store). Refused with :class:`~lanemon.store.url.StoreError` (one line, never a
password): a malformed URL, and everything ``open_sql_store`` refuses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lanemon.store.url import StoreError, StoreUrl, parse

if TYPE_CHECKING:
    from lanemon.events import EventHub
    from lanemon.store.sql import SqlStore

__all__ = ["MemoryStore", "StoreError", "open_store"]


class MemoryStore:
    """The ``memory:`` store: the factories of the in-process engine behind the
    same surface as :class:`lanemon.store.sql.SqlStore`. Nothing is shared
    between processes or between two factory calls, nothing survives the
    process; ``close()`` does nothing."""

    engine = "memory"

    def __init__(self, url: StoreUrl) -> None:
        self.url = url

    def __repr__(self) -> str:
        return "MemoryStore('memory:')"

    def lanes(self, name: str, *, clock: Callable[[], float], emit: Callable[..., None] | None):
        from lanemon.store.memory import memory_lanes
        return memory_lanes(name, clock=clock, emit=emit)

    def records(self, *, events: EventHub | None = None, keep_finished: int | None = None,
                writer: str = ""):
        """Fresh in-memory records. ``writer`` is accepted for the SQL store's
        signature and not used: one process writes, nobody to tell apart."""
        from lanemon.store.memory import MemoryRecords
        return MemoryRecords(events=events, keep_finished=keep_finished)

    def claims(self, *, counters: int, clock: Callable[[], float] | None = None, default_ttl: float = 1.0,
               events: EventHub | None = None):
        """A fresh claim board on ``clock`` (``time.monotonic`` when None: the SQL
        stores judge TTLs by their own clock and take none)."""
        from lanemon.store.memory_claims import MemoryClaims
        return MemoryClaims.create(counters=counters, clock=time.monotonic if clock is None else clock,
                                   default_ttl=default_ttl, events=events)

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


async def open_store(url_text: str, *, create: bool = False, name: str = "") -> MemoryStore | SqlStore:
    """One session on the store ``url_text`` names (see "Opening a store by URL"
    above), or :class:`StoreError`."""
    url = parse(url_text)
    if url.engine == "memory":
        return MemoryStore(url)
    from lanemon.store.sql import open_sql_store
    return await open_sql_store(url, create=create, name=name)
