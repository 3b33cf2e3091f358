"""Claim stores of the SQL engines for tests: a fresh store, its ``SqlClaims``, a closer.

SQLite goes through ``engines.open_test_store`` (a store file in the test's
folder). PostgreSQL goes through it too once the PostgreSQL backend exposes
its ``pool``; until then (the backend is another branch's work) the claims run
over :class:`PgStandIn`: the two things ``SqlClaims`` uses of a PostgreSQL
backend -- an autocommit ``psycopg_pool.AsyncConnectionPool`` (``search_path``
``lanemon``) and ``clock_skew`` -- on a fresh database of the throwaway
cluster, with the schema ``lanemon``, its epoch sequence and ``stats`` table
made as the backend makes them.
"""

from __future__ import annotations

from engines import open_test_store

from lanemon.events import EventHub
from lanemon.store.sql.board import PG_EPOCH_SEQUENCE
from lanemon.store.sql.claims import SqlClaims


class PgStandIn:
    """What ``SqlClaims`` needs of a PostgreSQL backend, over a pool of our own."""

    answers_now = False

    def __init__(self, pool) -> None:
        self.pool = pool
        self.clock_skew = 0.0


def _real_postgres_backend() -> bool:
    try:
        from lanemon.store.sql.postgres import PostgresBackend
    except ImportError:
        return False
    return hasattr(PostgresBackend, "pool")


async def _configure(conn) -> None:
    await conn.set_autocommit(True)
    await conn.execute("SET search_path TO lanemon")


async def open_pg_stand_in(url: str) -> PgStandIn:
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(url, min_size=1, max_size=4, open=False, configure=_configure)
    await pool.open(wait=True, timeout=20)
    async with pool.connection() as conn:
        await conn.execute("CREATE SCHEMA IF NOT EXISTS lanemon")
        await conn.execute(f"CREATE SEQUENCE IF NOT EXISTS {PG_EPOCH_SEQUENCE}")
        await conn.execute("CREATE TABLE IF NOT EXISTS lanemon.stats (key text PRIMARY KEY, value bigint NOT NULL)")
    return PgStandIn(pool)


async def open_test_claims(request, engine: str, *, counters: int, ttl: float,
                           events: EventHub | None = None):
    """``(backend, claims, close)``: the claims of a fresh ``engine`` store (see the module
    docstring); ``await close()`` ends it."""
    events = events if events is not None else EventHub()
    if engine == "sqlite" or _real_postgres_backend():
        store = await open_test_store(request, engine)
        backend, close = store.backend, store.close
    else:
        backend = await open_pg_stand_in(request.getfixturevalue("postgres_url"))
        close = backend.pool.close
    try:
        claims = SqlClaims.create(backend, counters=counters, default_ttl=ttl, events=events)
        await claims.refresh()
    except BaseException:
        await close()
        raise
    return backend, claims, close
