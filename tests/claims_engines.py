"""Claim stores of the SQL engines for tests: a fresh store, its ``SqlClaims``, a closer.

Both engines go through ``engines.open_test_store``: an SQLite file in the
test's folder, or a fresh database of the throwaway PostgreSQL cluster.
"""

from __future__ import annotations

from engines import open_test_store

from lanemon.events import EventHub
from lanemon.store.sql.claims import SqlClaims


async def open_test_claims(request, engine: str, *, counters: int, ttl: float,
                           events: EventHub | None = None):
    """``(backend, claims, close)``: the claims of a fresh ``engine`` store; ``await close()`` ends it."""
    events = events if events is not None else EventHub()
    store = await open_test_store(request, engine)
    try:
        claims = SqlClaims.create(store.backend, counters=counters, default_ttl=ttl, events=events)
        await claims.refresh()
    except BaseException:
        await store.close()
        raise
    return store.backend, claims, store.close
