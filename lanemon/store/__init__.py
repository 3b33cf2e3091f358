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
"""
