"""Counter claims on the SQL engines beyond the conformance suite: several sessions
on one store, the board's size, the store's own rows and counts, seeded
interleavings of two sessions, and the counters simulation on a SQLite claim store."""

from __future__ import annotations

import asyncio
import random

import pytest
import pytest_asyncio
from claims_engines import open_test_claims
from engines import open_test_store

from lanemon.counters import SimConfig, Simulation
from lanemon.counters import events as ev
from lanemon.events import EventHub
from lanemon.store.claims import CounterState, Outcome
from lanemon.store.url import StoreError

pytestmark = pytest.mark.asyncio

SQL_ENGINES = ["sqlite", "postgresql"]


@pytest_asyncio.fixture(params=SQL_ENGINES)
async def sessions(request):
    """``await sessions(counters, ttl)`` opens one more session's claims on the test's one
    store (SQLite: the same file; PostgreSQL: the same database); all closed afterwards."""
    closers = []

    async def open_session(counters=3, ttl=10.0):
        events = EventHub()
        backend, claims, close = await open_test_claims(request, request.param, counters=counters,
                                                        ttl=ttl, events=events)
        closers.append(close)
        return claims

    open_session.name = request.param
    try:
        yield open_session
    finally:
        for close in closers:
            await close()


def _kinds(hub: EventHub) -> list:
    seen = []
    hub.subscribe(seen.append)
    return seen


async def test_a_claim_is_exclusive_across_sessions_and_fenced_for_both(sessions):
    a, b = await sessions(), await sessions()
    claim = await a.claim(0, "A", "a")
    assert claim is not None
    assert await b.claim(0, "B", "b") is None  # the store decides, not the session's view
    await b.refresh()
    assert b.views()[0].state is CounterState.CLAIMED and b.views()[0].owner == "A"
    assert await b.assignable() == [1, 2]
    # the token is what the store checks, whichever session presents it: released
    # through B, the claim is gone for A too, and A's finalize is fenced out
    assert await b.release(claim.token) is True
    assert await a.finalize(claim) is Outcome.STALE
    assert a.views()[0].customers == () and a.views()[0].state is CounterState.FREE
    await b.refresh()
    assert a.counts() == b.counts()  # the store's totals, whichever session reads them
    assert a.counts().finalize_refused == 1 and a.counts().released == 1 and a.counts().claim_refused == 1


async def test_an_expiry_is_announced_once_store_wide(sessions):
    a, b = await sessions(ttl=5.0), await sessions(ttl=5.0)
    seen_a, seen_b = _kinds(a.events), _kinds(b.events)
    claim = await a.claim(1, "A", "a")
    a.advance(6.0)
    b.advance(6.0)
    await b.assignable()  # B notices it first
    await a.assignable()
    await a.refresh()
    expired = [e for e in seen_a + seen_b if e.kind == ev.EXPIRED]
    assert [(e.counter, e.owner, e.epoch) for e in expired] == [(1, "A", claim.epoch)]
    assert expired[0] in seen_b and expired[0].time == claim.expires_at
    assert a.counts().expired == b.counts().expired == 1
    assert await a.finalize(claim) is Outcome.EXPIRED


async def test_the_reply_carries_the_stores_exact_times(sessions):
    a = await sessions()
    claim = await a.claim(2, "A", "a", ttl=7.25)
    assert await a.next_expiry() == claim.expires_at
    assert claim.expires_at - claim.claimed_at == pytest.approx(7.25, abs=1e-6)
    view = a.views()[2]
    assert view.epoch == claim.epoch and 0 < view.ttl_left <= 7.25


async def test_board_and_lane_epochs_come_from_one_store_counter(request):
    store = await open_test_store(request, "sqlite")
    try:
        claims = store.claims(counters=2, default_ttl=5.0, events=EventHub())
        lanes = store.lanes("t", clock=lambda: 0.0, emit=None)
        first = await claims.claim(0, "A")
        lane = await lanes.aclaim("ws", "q#1")
        second = await claims.claim(1, "B")
        assert first.epoch < lane.epoch < second.epoch
        stats = (await store.dump())["stats"]
        assert stats["board_claims"] == 2 and stats["claims"] == 1  # board counts beside the lanes'
        # the store file outlives the session: a new session continues the counter
        await store.close()
        store = await open_test_store(request, "sqlite")
        again = store.claims(counters=2, default_ttl=5.0, events=EventHub())
        assert again.views()[0].owner == "A" and again.counts().claims == 2
        assert await again.claim(1, "C") is None  # B's claim is still live
        assert await again.release(first) is True
        third = await again.claim(0, "C")
        assert third is not None and third.epoch > second.epoch
    finally:
        await store.close()


async def test_a_board_in_use_keeps_its_size_an_idle_one_is_resized(sessions):
    a = await sessions(counters=3)
    claim = await a.claim(2, "A", "a")
    with pytest.raises(StoreError, match="3 counters in use, not 5"):
        await sessions(counters=5)
    assert a.views()[2].owner == "A"  # nothing changed
    await a.release(claim)
    b = await sessions(counters=2)  # idle now: resized
    assert len(b) == 2 and len(b.views()) == 2
    # A still believes in 3 counters: the store refuses the one that went
    with pytest.raises(IndexError):
        await a.claim(2, "A", "a")
    assert await a.finalize(claim) is Outcome.STALE and await a.release(claim) is False
    assert await a.claim(1, "A", "a") is not None


@pytest.mark.parametrize("seed", range(6))
async def test_two_sessions_interleaved_keep_one_live_claim_per_counter(sessions, seed):
    """Two sessions race claims, finalizes, releases and vacates on 3 counters in a seeded
    order (on PostgreSQL truly at once: each step runs both sessions' operations
    concurrently). The store's answers must be those of one board: every granted epoch is
    new, no two grants of one counter overlap in time unless the first was ended, only the
    live current holder's finalize seats, and claims alone never double-assign."""
    rng = random.Random(seed)
    s1, s2 = await sessions(ttl=30.0), await sessions(ttl=30.0)
    held = {}   # owner -> claim
    epochs = []

    async def step(store, owner):
        op = rng.choice(["claim", "claim", "finalize", "release", "vacate"])
        counter = rng.randrange(3)
        if op == "claim" and owner not in held:
            got = await store.claim(counter, owner, owner.lower())
            if got is not None:
                epochs.append(got.epoch)
                held[owner] = got
        elif op == "finalize" and owner in held:
            claim = held.pop(owner)
            if await store.finalize(claim) is Outcome.OK:
                seated.append(claim.counter)
        elif op == "release" and owner in held:
            await store.release(held.pop(owner))
        elif op == "vacate":
            for name in store.views()[counter].customers:
                if await store.vacate(counter, name) and counter in seated:
                    seated.remove(counter)

    seated = []
    for _ in range(60):
        owners = rng.sample(["A", "B", "C", "D"], 2)
        await asyncio.gather(step(s1, owners[0]), step(s2, owners[1]))
        await s1.refresh()
        views = s1.views()
        assert all(len(v.customers) <= 1 for v in views)
        claimed = [v for v in views if v.state is CounterState.CLAIMED]
        assert len({v.epoch for v in claimed}) == len(claimed)
        # every claim an owner holds is the current one of its counter, or was taken over
        for claim in held.values():
            v = views[claim.counter]
            assert v.epoch is None or v.epoch >= claim.epoch
    assert len(epochs) == len(set(epochs)) and len(epochs) > 5
    counts = s1.counts()
    assert counts.double_assignments == 0 and counts.claims == len(epochs)


async def test_the_simulation_runs_on_a_sqlite_claim_store(request):
    """The seeded simulation, claim strategy with abandons (staff away longer than the
    TTL), on a SQLite claim store in real time: every customer served once, never two on
    one counter, and the store's counts account for every claim."""
    store = await open_test_store(request, "sqlite")
    try:
        config = SimConfig(strategy="claim", staff=3, counters=3, customers=16, arrival_rate=None,
                           guide_time=0.02, service_time=0.05, choose_time=0.0, ttl=0.3,
                           abandon_rate=0.3, abandon_time=0.6, seed=3)
        sim = Simulation(config, claims=store.claims)
        seen = []
        sim.subscribe(seen.append)
        tallies = await asyncio.wait_for(sim.run(), timeout=120)
        assert tallies.completed and tallies.served == tallies.arrived == 16
        assert tallies.double_assignments == 0
        counts = sim.claims.counts()
        assert counts.finalized == tallies.served  # the claim strategy seats only by finalize
        # every granted claim was finalized, released, or ran out (and was noticed)
        assert counts.claims >= counts.finalized + counts.released
        assert counts.claims - counts.finalized - counts.released <= counts.expired
        assert tallies.abandoned > 0 and counts.expired > 0 and tallies.finalize_refused > 0
        expired = [e.epoch for e in seen if e.kind == ev.EXPIRED]
        assert len(expired) == len(set(expired)) == counts.expired  # each announced once
        assert (await store.dump())["stats"]["board_finalized"] == tallies.served
        # the board's events are on the simulation's timeline, as its own are
        board_kinds = {ev.CLAIMED, ev.FINALIZED, ev.RELEASED, ev.EXPIRED, ev.FINALIZE_REFUSED, ev.VACATED}
        times = [e.time for e in seen if e.kind in board_kinds]
        assert times and all(-config.ttl <= t <= tallies.elapsed for t in times)
    finally:
        await store.close()


async def test_board_changes_reach_the_change_feed(sessions, request):
    """SQLite: ``('board', counter)`` rows of the polled feed; PostgreSQL: ``NOTIFY lanemon,
    'board:<counter>'`` at commit."""
    a = await sessions()
    if sessions.name == "sqlite":
        from lanemon.store.sql.sqlite import SqliteFeed

        feed = SqliteFeed(str(request.getfixturevalue("tmp_path") / "store.db"))
        try:
            assert feed.poll() is None  # the first poll: start from a snapshot
            claim = await a.claim(1, "A", "a")
            assert feed.poll() == [("board", "1")]
            await a.finalize(claim)
            await a.vacate(1, "a")
            assert feed.poll() == [("board", "1")]
            assert feed.poll() == []
        finally:
            feed.close()
        return
    import psycopg

    async with await psycopg.AsyncConnection.connect(request.getfixturevalue("postgres_url"),
                                                     autocommit=True) as conn:
        await conn.execute("LISTEN lanemon")
        await a.claim(2, "A", "a")
        await a.expire(2)
        got = []
        async for note in conn.notifies(timeout=30, stop_after=2):
            got.append(note.payload)
        assert got == ["board:2", "board:2"]
