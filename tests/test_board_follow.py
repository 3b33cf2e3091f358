"""The window's board follower (Qt-free) on SQLite and PostgreSQL stores.

It reads the board only when the change feed says the board (or the store lock)
changed: checked by counting its reads over feed waits in which nothing changed.
Waits are on conditions with a generous timeout; nothing is timed.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from engines import open_test_store

from lanemon.agents.board_follow import BoardFollower
from lanemon.agents.staff import LOCK_LANE, LOCK_WORKSPACE
from lanemon.store.sql import SqlStore

pytestmark = pytest.mark.asyncio

TIMEOUT_S = 30.0


async def _until(predicate, what: str):
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {TIMEOUT_S} s: {what}")
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_the_follower_shows_the_stores_board_and_reads_it_only_on_changes(request, engine):
    store = await open_test_store(request, engine)
    follower = BoardFollower(store.url.text)
    try:
        follower.start()
        await _until(lambda: follower.state().error is not None, "the follower says there is no board")
        assert follower.state().error.startswith("no counter board")

        claims = store.claims(counters=3)
        await claims.refresh()
        await claims.assign(1, "a1/C1", "a1/S1")
        await claims.assign(1, "a2/C9", "a2/S1")     # a double assignment, counted by the store
        held = await claims.claim(2, "a3/S1", "a3/C4", ttl=600)
        await _until(lambda: follower.state().counts.double_assignments == 1
                     and follower.state().counters[2].owner == "a3/S1", "the double and the claim shown")
        state = follower.state()
        assert state.error is None and len(state.counters) == 3
        assert state.counters[1].conflict and state.counters[1].customers == ("a1/C1", "a2/C9")
        assert state.seated_by[1] == ("a1/S1", "a2/S1")
        assert state.claim_ttls[2] == pytest.approx(600) and 0 < state.counters[2].ttl_left <= 600
        assert state.seated == 2 and state.lock_holder is None

        # nothing changes: feed waits go by, and the board is not read again (once the
        # notifications of the writes above were all taken in: PostgreSQL may deliver the
        # claim's after a read that already showed it, which then reads once more)
        waits = follower.waits
        await _until(lambda: follower.waits >= waits + 2, "two feed waits")
        reads, waits = follower.reads, follower.waits
        await _until(lambda: follower.waits >= waits + 4, "four quiet feed waits")
        assert follower.reads == reads

        # a change of the board, then of the store lock: each read once it was committed
        await claims.vacate(1, "a1/C1")
        await _until(lambda: follower.state().counters[1].customers == ("a2/C9",), "the vacate shown")
        assert follower.reads > reads
        lanes = store.lanes(LOCK_LANE, clock=time.time, emit=None)
        token = await lanes.aclaim(LOCK_WORKSPACE, "a2/S1")
        await _until(lambda: follower.state().lock_holder == "a2/S1", "the lock holder shown")
        await lanes.arelease(token)
        await _until(lambda: follower.state().lock_holder is None, "the lock free again")
        await claims.release(held)
        await _until(lambda: follower.state().counters[2].owner is None, "the released claim shown")
    finally:
        await follower.aclose()
        await store.close()
    assert not follower.running


async def test_the_follower_lists_the_agents_where_the_store_has_sessions(request, monkeypatch):
    """Contract 2 (``SqlStore.sessions()`` -> rows with ``info``), against a fake until it is merged."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Row:
        session: str
        name: str
        info: dict

    async def sessions(self):
        return [Row("x:1", "a1", {"role": "staff", "strategy": "short"}),
                Row(self.session, "lanemon-window", {"role": "window"})]

    monkeypatch.setattr(SqlStore, "sessions", sessions, raising=False)
    store = await open_test_store(request, "sqlite")
    follower = BoardFollower(store.url.text)
    try:
        claims = store.claims(counters=2)
        await claims.refresh()
        follower.start()
        await _until(lambda: follower.state().agents, "the agents listed")
        (agent,) = follower.state().agents        # its own session left out
        assert (agent.name, agent.role, agent.strategy) == ("a1", "staff", "short")
    finally:
        await follower.aclose()
        await store.close()
