"""The change feed of both SQL engines: what changed, in commit order, each once; None = read a snapshot."""

from __future__ import annotations

import time

import psycopg
import pytest
from engines import open_test_store

from lanemon.lanes import Reservation, State
from lanemon.store import url as store_url
from lanemon.store.sql.feed import open_feed

pytestmark = [pytest.mark.asyncio, pytest.mark.parametrize("engine", ["sqlite", "postgresql"])]

WAIT_S = 10.0  # generous: a condition is waited for, never a duration asserted


def _clock() -> float:
    return 0.0


async def _collect(feed, wanted: set, limit_s: float = WAIT_S) -> list:
    """Changes from ``feed`` until every pair of ``wanted`` was seen (or the limit passed)."""
    seen: list = []
    deadline = time.monotonic() + limit_s
    while not wanted <= set(seen) and time.monotonic() < deadline:
        got = await feed.wait(0.5)
        assert got is not None, "no reconnect happened: the feed must not ask for a snapshot"
        seen.extend(got)
    return seen


async def test_the_feed_starts_with_a_snapshot_then_tells_what_changed_in_commit_order(request, engine):
    store = await open_test_store(request, engine)
    feed = await open_feed(store.url)
    try:
        assert await feed.wait(1.0) is None           # start: read a snapshot
        assert await feed.wait(0.05) == []             # nothing changed
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        records = store.records()
        token = await lanes.aclaim("W", "q#1")
        rec = Reservation(id=7, workspace="W", queue="cafe", state=State.QUEUED, created_at=1.0, updated_at=1.0)
        await records.save(rec)
        await records.save(rec._replace(state=State.RUNNING, epoch=token.epoch), fence=(token,))
        assert await lanes.arelease(token) is True
        await store.mark_busy("W", "editing")
        seen = await _collect(feed, {("lanes", "scheduled:W"), ("jobs", "7"), ("occupancy", "W")})
        # each commit's pairs in commit order: the lane's claim before the job, the job before the busy mark
        assert seen.index(("lanes", "scheduled:W")) < seen.index(("jobs", "7")) < seen.index(("occupancy", "W"))
        # a later change arrives once per wait (the release re-queued the job: it was left running)
        await records.save(rec._replace(state=State.CANCELLED))
        again = await _collect(feed, {("jobs", "7")})
        assert again.count(("jobs", "7")) == 1 and set(again) <= {("jobs", "7")}
        assert await feed.wait(0.05) == []
    finally:
        await feed.close()
        await store.close()


async def test_a_refused_write_reaches_the_feed_as_a_ledger_row(request, engine):
    store = await open_test_store(request, engine)
    feed = await open_feed(store.url)
    try:
        assert await feed.wait(1.0) is None
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        records = store.records()
        rec = Reservation(id=1, workspace="W", queue="cafe", state=State.QUEUED, created_at=1.0, updated_at=1.0)
        await records.save(rec)
        token = await lanes.aclaim("W", "q#1")
        await lanes.arevoke("W")
        with pytest.raises(Exception, match="no longer current"):
            await records.save(rec._replace(state=State.RUNNING), fence=(token,))
        (entry,) = (await store.dump())["ledger"]
        seen = await _collect(feed, {("ledger", "1")})
        assert ("ledger", "1") in seen and entry["job"] == 1
    finally:
        await feed.close()
        await store.close()


async def test_after_a_lost_connection_the_feed_asks_for_a_fresh_snapshot(request, engine):
    if engine == "sqlite":
        pytest.skip("an SQLite feed reads a local file: there is no connection to lose")
    store = await open_test_store(request, engine)
    feed = await open_feed(store.url)
    try:
        assert await feed.wait(1.0) is None
        pid = feed.pid
        async with await psycopg.AsyncConnection.connect(store.url.dsn, autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # changes committed while the feed is down are not delivered: it says "read a snapshot"
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        await lanes.aclaim("W", "q#1")
        answers = []
        deadline = time.monotonic() + WAIT_S
        while None not in answers and time.monotonic() < deadline:
            answers.append(await feed.wait(0.5))
        assert answers[-1] is None and feed.pid != pid and feed.reconnects == 1
        await lanes.aclaim("V", "q#2")
        assert ("lanes", "scheduled:V") in await _collect(feed, {("lanes", "scheduled:V")})
    finally:
        await feed.close()
        await store.close()


async def test_a_feed_of_a_missing_store_is_refused_in_one_line(request, engine, tmp_path):
    from lanemon.store.url import StoreError

    if engine == "sqlite":
        url = store_url.parse("sqlite:///" + str(tmp_path / "none.db").lstrip("/"))
    else:
        url = store_url.parse(request.getfixturevalue("postgres_url").rsplit("/", 1)[0] + "/no_such_db")
    with pytest.raises(StoreError) as err:
        await open_feed(url)
    assert "\n" not in str(err.value) and ("does not exist" in str(err.value))
