"""Conformance of every claim-store engine to lanemon.store.claims.ClaimStore.

Each engine enters through a harness, the ``engine`` fixture: ``await
engine(counters, ttl) -> (store, advance)`` where ``advance(seconds)`` moves
the store's own clock (the one every TTL is judged by). Opening a store is a
coroutine, so the harness is awaited. Engines: ``memory`` (a manual clock:
time moves only by ``advance``), ``sqlite`` (a store file in the test's
folder) and ``postgresql`` (a fresh database of the throwaway cluster). The SQL
stores' clock is real time plus the advanced skew, so the tests keep every
claim they judge far (seconds) from its expiry unless they advance it past.
"""

import dataclasses
import random

import pytest
import pytest_asyncio
from claims_engines import open_test_claims

from lanemon.counters import ManualClock
from lanemon.counters import events as ev
from lanemon.events import EventHub
from lanemon.store.claims import ClaimStore, CounterState, Outcome, completed_now
from lanemon.store.memory_claims import MemoryClaims


def memory_engine(counters, ttl):
    clock = ManualClock()
    store = MemoryClaims.create(counters=counters, clock=clock, default_ttl=ttl, events=EventHub())
    return store, clock.advance


ENGINES = ["memory", "sqlite", "postgresql"]


@pytest_asyncio.fixture(params=ENGINES)
async def engine(request):
    """The harness of each engine; the stores it opened are closed after the test."""
    opened = []

    async def harness(counters, ttl):
        if request.param == "memory":
            return memory_engine(counters, ttl)
        _, claims, close = await open_test_claims(request, request.param, counters=counters, ttl=ttl)
        opened.append(close)
        return claims, claims.advance

    harness.name = request.param
    try:
        yield harness
    finally:
        for close in opened:
            await close()


pytestmark = pytest.mark.asyncio


async def test_the_engine_is_a_claim_store_on_one_clock(engine):
    store, advance = await engine(3, 1.0)
    assert isinstance(store, ClaimStore) and len(store) == 3 and store.default_ttl == 1.0
    t0 = store.now()
    advance(0.25)
    assert store.now() >= t0 + 0.25 - 1e-6  # (a SQL store's clock also runs on)
    claim = await store.claim(0, "A", "a")
    # stamped by the store's clock, the one now() reads (memory: both exactly t0 + 0.25)
    assert t0 + 0.25 - 1e-6 <= claim.claimed_at <= store.now()
    assert claim.expires_at == pytest.approx(claim.claimed_at + 1.0, abs=1e-6)
    assert await store.next_expiry() == claim.expires_at


async def test_a_claim_is_exclusive_until_its_ttl(engine):
    store, advance = await engine(2, 100.0)
    first = await store.claim(0, "A", "a")
    assert first is not None and first.counter == 0
    for step in (0.0, 50.0, 40.0):  # up to 90 s of its 100: still live
        advance(step)
        assert await store.claim(0, "B", "b") is None
        assert await store.assignable() == [1]
        assert store.free_count() == 1
        assert store.views()[0].state is CounterState.CLAIMED and store.views()[0].owner == "A"
    refused = store.counts().claim_refused
    assert refused == 3
    advance(10.0)  # now == expires_at (a SQL store: a little later): no longer live
    assert await store.assignable() == [0, 1]
    second = await store.claim(0, "B", "b")
    assert second is not None and second.epoch > first.epoch
    assert store.counts().expired == 1


async def test_an_expired_claim_is_taken_and_the_old_holders_finalize_is_refused(engine):
    store, advance = await engine(1, 10.0)
    old = await store.claim(0, "A", "a")
    advance(15.0)
    before = store.counts()
    assert await store.finalize(old) is Outcome.EXPIRED  # still on record, but dead
    assert store.counts().finalize_refused == before.finalize_refused + 1
    new = await store.claim(0, "B", "b")
    assert new is not None
    assert await store.finalize(old.token) is Outcome.STALE  # replaced: fenced out
    assert store.counts().finalize_refused == before.finalize_refused + 2
    assert store.views()[0].customers == ()  # a refused finalize changes nothing
    assert await store.finalize(new) is Outcome.OK
    assert store.views()[0].customers == ("b",) and store.views()[0].state is CounterState.ASSIGNED
    assert await store.finalize(new) is Outcome.STALE  # finalized once only
    assert store.counts().double_assignments == 0


async def test_a_repeated_release_changes_nothing_and_never_raises(engine):
    store, advance = await engine(2, 10.0)
    claim = await store.claim(1, "A", "a")
    assert await store.release(claim) is True
    views, counts = store.views(), store.counts()
    for token in (claim, claim.token, claim):
        assert await store.release(token) is False
    assert store.views() == views
    after = store.counts()
    assert after == dataclasses.replace(counts, release_refused=counts.release_refused + 3)
    # a late release of a replaced claim leaves the new holder alone
    mine = await store.claim(0, "A", "a")
    advance(20.0)
    theirs = await store.claim(0, "B", "b")
    assert await store.release(mine) is False
    assert store.views()[0].owner == "B" and await store.finalize(theirs) is Outcome.OK


async def test_expire_ends_a_live_claim_now(engine):
    store, _ = await engine(2, 10.0)
    claim = await store.claim(0, "A", "a")
    assert await store.expire(1) is False  # nothing to end
    assert await store.expire(0) is True
    assert await store.expire(0) is False
    assert await store.finalize(claim) is Outcome.EXPIRED
    assert await store.assignable() == [0, 1] and store.counts().expired == 1


async def test_blind_assign_and_vacate(engine):
    store, _ = await engine(2, 10.0)
    assert await store.assign(0, "a", "S1") is True
    assert await store.assign(0, "b", "S2") is False  # a double assignment: seated, counted
    assert store.views()[0].customers == ("a", "b") and store.views()[0].conflict
    await store.claim(1, "S1", "c")
    assert await store.assign(1, "d", "S2") is False  # someone else's live claim
    assert store.counts().double_assignments == 2 and store.counts().assigned == 3
    assert await store.vacate(0, "a") is True and await store.vacate(0, "a") is False
    assert await store.vacate(0, "b") is True
    assert 0 in await store.assignable()


async def test_refusals_change_nothing(engine):
    store, _ = await engine(2, 1.0)
    counts, views = store.counts(), store.views()
    with pytest.raises(IndexError):
        await store.claim(2, "A", "a")
    with pytest.raises(ValueError):
        await store.claim(0, "A", "a", ttl=0)
    with pytest.raises(ValueError):
        await store.claim(0, "A", "a", ttl=float("inf"))
    assert store.counts() == counts and store.views() == views


async def test_events_follow_each_change(engine):
    store, advance = await engine(1, 1.0)
    seen = []
    store.events.subscribe(lambda e: seen.append((e.kind, e.counter, e.owner)))
    claim = await store.claim(0, "A", "a")
    advance(1.0)
    await store.assignable()  # the expiry is noticed, announced once
    await store.assignable()
    await store.finalize(claim)
    assert seen == [(ev.CLAIMED, 0, "A"), (ev.EXPIRED, 0, "A"), (ev.FINALIZE_REFUSED, 0, "A")]


@pytest.mark.parametrize("seed", range(20))
async def test_epochs_strictly_increase_and_one_live_claim_per_counter(engine, seed):
    """Seeded random interleavings of three owners: every granted epoch is larger than
    all before it, a counter never has two live claims, and only the current live
    token's finalize seats anyone. (TTLs and steps keep every claim at least 5 s
    from its expiry whenever it is judged: a SQL store's clock also runs on.)"""
    rng = random.Random(seed)
    store, advance = await engine(3, 1.0)
    held = {}  # owner -> claim
    epochs = []
    for _ in range(300):
        owner = rng.choice("ABC")
        op = rng.choice(["claim", "claim", "finalize", "release", "advance", "vacate", "expire"])
        counter = rng.randrange(3)
        if op == "claim":
            got = await store.claim(counter, owner, owner.lower(), ttl=rng.choice([35.0, 105.0]))
            if got is not None:
                epochs.append(got.epoch)
                held[owner] = got
        elif op == "finalize" and owner in held:
            claim = held.pop(owner)
            view = store.views()[claim.counter]
            live_and_mine = view.state is CounterState.CLAIMED and view.epoch == claim.epoch
            outcome = await store.finalize(claim)
            assert bool(outcome) == live_and_mine
        elif op == "release" and owner in held:
            await store.release(held.pop(owner))
        elif op == "advance":
            advance(rng.choice([10.0, 40.0, 120.0]))
        elif op == "vacate":
            for name in store.views()[counter].customers:
                await store.vacate(counter, name)
        elif op == "expire":
            await store.expire(counter)
        live = [v for v in store.views() if v.state is CounterState.CLAIMED]
        assert all(v.ttl_left is not None and v.ttl_left > 0 for v in live)
        assert len({v.id for v in live}) == len(live)
    assert epochs == sorted(set(epochs)) and len(epochs) > 10
    assert store.counts().double_assignments == 0  # claims alone never double-assign


async def test_local_operations_complete_without_suspending(engine):
    if engine.name == "postgresql":
        pytest.skip("a networked engine suspends: only memory and SQLite promise this")
    store, _ = await engine(2, 1.0)
    claim = completed_now(store.claim(0, "A", "a"))
    assert claim is not None
    assert completed_now(store.assignable()) == [1]
    assert completed_now(store.finalize(claim)) is Outcome.OK
    assert completed_now(store.vacate(0, "a")) is True


async def test_completed_now_refuses_an_operation_that_suspends(engine):
    import asyncio

    async def networked():
        await asyncio.sleep(0)  # a round trip
        return True

    with pytest.raises(RuntimeError, match="suspends"):
        completed_now(networked())
