"""Conformance of every claim-store engine to lanemon.store.claims.ClaimStore.

Each engine enters through a harness: ``engine(counters, ttl) -> (store, advance)``
where ``advance(seconds)`` moves the store's own clock (the one every TTL is
judged by). Only the memory engine exists today; the next issue adds SQLite and
PostgreSQL harnesses to ENGINES and this whole module runs against them.
"""

import dataclasses
import random

import pytest

from lanemon.counters import ManualClock
from lanemon.counters import events as ev
from lanemon.events import EventHub
from lanemon.store.claims import ClaimStore, CounterState, Outcome, completed_now
from lanemon.store.memory_claims import MemoryClaims


def memory_engine(counters, ttl):
    clock = ManualClock()
    store = MemoryClaims.create(counters=counters, clock=clock, default_ttl=ttl, events=EventHub())
    return store, clock.advance


ENGINES = [pytest.param(memory_engine, id="memory")]

pytestmark = [pytest.mark.asyncio, pytest.mark.parametrize("engine", ENGINES)]


async def test_the_engine_is_a_claim_store_on_one_clock(engine):
    store, advance = engine(3, 1.0)
    assert isinstance(store, ClaimStore) and len(store) == 3 and store.default_ttl == 1.0
    t0 = store.now()
    advance(0.25)
    assert store.now() == pytest.approx(t0 + 0.25)
    claim = await store.claim(0, "A", "a")
    assert claim.claimed_at == store.now() and claim.expires_at == pytest.approx(store.now() + 1.0)
    assert await store.next_expiry() == claim.expires_at


async def test_a_claim_is_exclusive_until_its_ttl(engine):
    store, advance = engine(2, 1.0)
    first = await store.claim(0, "A", "a")
    assert first is not None and first.counter == 0
    for step in (0.0, 0.5, 0.499):  # up to 0.999 s: still live
        advance(step)
        assert await store.claim(0, "B", "b") is None
        assert await store.assignable() == [1]
        assert store.free_count() == 1
        assert store.views()[0].state is CounterState.CLAIMED and store.views()[0].owner == "A"
    refused = store.counts().claim_refused
    assert refused == 3
    advance(0.001)  # now == expires_at: no longer live
    assert await store.assignable() == [0, 1]
    second = await store.claim(0, "B", "b")
    assert second is not None and second.epoch > first.epoch
    assert store.counts().expired == 1


async def test_an_expired_claim_is_taken_and_the_old_holders_finalize_is_refused(engine):
    store, advance = engine(1, 1.0)
    old = await store.claim(0, "A", "a")
    advance(1.5)
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
    store, advance = engine(2, 1.0)
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
    advance(2.0)
    theirs = await store.claim(0, "B", "b")
    assert await store.release(mine) is False
    assert store.views()[0].owner == "B" and await store.finalize(theirs) is Outcome.OK


async def test_expire_ends_a_live_claim_now(engine):
    store, _ = engine(2, 10.0)
    claim = await store.claim(0, "A", "a")
    assert await store.expire(1) is False  # nothing to end
    assert await store.expire(0) is True
    assert await store.expire(0) is False
    assert await store.finalize(claim) is Outcome.EXPIRED
    assert await store.assignable() == [0, 1] and store.counts().expired == 1


async def test_blind_assign_and_vacate(engine):
    store, _ = engine(2, 1.0)
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
    store, _ = engine(2, 1.0)
    counts, views = store.counts(), store.views()
    with pytest.raises(IndexError):
        await store.claim(2, "A", "a")
    with pytest.raises(ValueError):
        await store.claim(0, "A", "a", ttl=0)
    with pytest.raises(ValueError):
        await store.claim(0, "A", "a", ttl=float("inf"))
    assert store.counts() == counts and store.views() == views


async def test_events_follow_each_change(engine):
    store, advance = engine(1, 1.0)
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
    token's finalize seats anyone."""
    rng = random.Random(seed)
    store, advance = engine(3, 1.0)
    held = {}  # owner -> claim
    epochs = []
    for _ in range(300):
        owner = rng.choice("ABC")
        op = rng.choice(["claim", "claim", "finalize", "release", "advance", "vacate", "expire"])
        counter = rng.randrange(3)
        if op == "claim":
            got = await store.claim(counter, owner, owner.lower(), ttl=rng.choice([0.3, 1.0]))
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
            advance(rng.choice([0.1, 0.4, 1.2]))
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


async def test_memory_operations_complete_without_suspending(engine):
    if engine is not memory_engine:
        pytest.skip("only the memory engine promises this")
    store, _ = engine(2, 1.0)
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
