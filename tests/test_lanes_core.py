"""ProjectLanes, RecordLock, RecordStore and EventHub in isolation."""

from __future__ import annotations

import asyncio

import pytest

from lanemon.lanes import (
    EventHub,
    InvalidTransition,
    ProjectLanes,
    RecordLock,
    RecordStore,
    Reservation,
    SaveFailed,
    StaleWrite,
    State,
)


async def settle(n: int = 20) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


# -- ProjectLanes ---------------------------------------------------------------------

def test_claim_is_exclusive_and_release_frees():
    lanes = ProjectLanes("t", clock=lambda: 1.0)
    a = lanes.claim("A", "run1")
    assert a is not None and a.workspace == "A" and a.owner == "run1"
    assert lanes.claim("A", "run2") is None
    b = lanes.claim("B", "run3")
    assert b is not None  # other workspaces are independent
    assert lanes.release(a) is True
    assert "A" not in lanes and len(lanes) == 1
    assert lanes.release(b) is True
    assert len(lanes) == 0  # idle workspaces leave no entry


def test_epochs_are_monotonic_fencing_tokens():
    lanes = ProjectLanes()
    epochs = []
    for i in range(5):
        t = lanes.claim("A", f"r{i}")
        epochs.append(t.epoch)
        assert lanes.release(t)
    assert epochs == sorted(epochs) and len(set(epochs)) == 5
    assert lanes.epoch == epochs[-1]


def test_stale_release_is_refused_counted_and_never_raises():
    lanes = ProjectLanes()
    old = lanes.claim("A", "old")
    assert lanes.release(old) is True
    new = lanes.claim("A", "new")
    assert lanes.release(old) is False  # late, repeated release from the old run
    assert lanes.holder("A") is new
    assert lanes.release(old) is False
    assert lanes.release("garbage") is False
    other = ProjectLanes().claim("A", "x")
    assert lanes.release(other) is False  # token from another ProjectLanes
    assert lanes.stale_releases == 4
    assert lanes.release(None) is False  # nothing was claimed: not counted
    assert lanes.stale_releases == 4
    assert lanes.is_current(new) and not lanes.is_current(old)
    assert lanes.release(new) is True


def test_release_in_finally_after_error_does_not_clear_new_owner():
    lanes = ProjectLanes()
    token = lanes.claim("A", "r1")
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("dispatch failed")
        finally:
            assert lanes.release(token)
    newer = lanes.claim("A", "r2")
    try:  # a second cleanup path of the failed run
        pass
    finally:
        assert lanes.release(token) is False
    assert lanes.holder("A") is newer


def test_stop_request_is_seen_by_owner_and_does_not_leak():
    lanes = ProjectLanes()
    assert lanes.request_stop("A") is False  # nobody to stop
    t1 = lanes.claim("A", "r1")
    assert lanes.stop_requested(t1) is False
    assert lanes.request_stop("A", "user") is True
    assert lanes.stop_requested(t1) is True
    assert lanes.views()[0].stop_requested and lanes.views()[0].stop_reason == "user"
    lanes.release(t1)
    t2 = lanes.claim("A", "r2")
    assert lanes.stop_requested(t2) is False  # belongs to one ownership only
    assert lanes.stop_requested(t1) is True  # lost its lane: must stop


def test_revoke_makes_old_token_stale():
    lanes = ProjectLanes()
    t1 = lanes.claim("A", "r1")
    assert lanes.revoke("A") == t1
    t2 = lanes.claim("A", "r2")
    assert not lanes.release(t1)
    assert lanes.holder("A") is t2 and lanes.revoked == 1


def test_lane_views_are_immutable():
    lanes = ProjectLanes("q", clock=lambda: 5.0)
    lanes.claim("B", "x")
    lanes.claim("A", "y")
    views = lanes.views()
    assert [v.workspace for v in views] == ["A", "B"]
    with pytest.raises(AttributeError):        # (a NamedTuple: no field can be set)
        views[0].owner = "z"  # type: ignore[misc]


# -- RecordLock -------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_record_lock_is_fifo_per_key_and_leaves_nothing():
    lock = RecordLock()
    order: list[int] = []
    gate = asyncio.Event()

    async def change(i: int) -> None:
        async with lock.hold("r1"):
            order.append(i)
            if i == 0:
                await gate.wait()
            await asyncio.sleep(0)

    tasks = [asyncio.create_task(change(i)) for i in range(6)]
    await settle()
    assert order == [0] and lock.waiting("r1") == 5
    gate.set()
    await asyncio.gather(*tasks)
    assert order == list(range(6))
    assert len(lock) == 0 and not lock.locked("r1")


@pytest.mark.asyncio
async def test_record_lock_keys_are_independent():
    lock = RecordLock()
    gate = asyncio.Event()
    entered = []

    async def slow() -> None:
        async with lock.hold("A"):
            entered.append("A")
            await gate.wait()

    t = asyncio.create_task(slow())
    await settle()
    assert lock.try_acquire("B")  # B does not wait for A at all
    lock.release("B")
    async with lock.hold("C"):
        entered.append("C")
    assert entered == ["A", "C"]
    gate.set()
    await t
    assert len(lock) == 0


@pytest.mark.asyncio
async def test_record_lock_exception_does_not_break_chain():
    lock = RecordLock()
    done = []
    gate = asyncio.Event()

    async def bad() -> None:
        async with lock.hold(7):
            await gate.wait()
            raise ValueError("change failed")

    async def good(i: int) -> None:
        async with lock.hold(7):
            done.append(i)

    tb = asyncio.create_task(bad())
    await settle()
    tg = [asyncio.create_task(good(i)) for i in range(3)]
    await settle()
    gate.set()
    with pytest.raises(ValueError):
        await tb
    await asyncio.gather(*tg)
    assert done == [0, 1, 2] and len(lock) == 0


@pytest.mark.asyncio
async def test_record_lock_cancelled_waiters():
    lock = RecordLock()
    order = []
    await lock.acquire("k")
    w1 = asyncio.create_task(lock.acquire("k"))
    w2 = asyncio.create_task(lock.acquire("k"))
    await settle()
    w1.cancel()  # cancelled while waiting: leaves the queue
    await settle()
    lock.release("k")  # hands over to w2
    await w2
    assert lock.locked("k")
    # cancelled right after the hand-over: passes the lock on
    w3 = asyncio.create_task(lock.acquire("k"))
    w4 = asyncio.create_task(lock.acquire("k"))
    await settle()
    lock.release("k")  # w2's hold ends; w3 is handed the lock
    w3.cancel()
    with pytest.raises(asyncio.CancelledError):
        await w3
    await w4
    order.append("w4")
    lock.release("k")
    assert order == ["w4"] and len(lock) == 0
    with pytest.raises(RuntimeError):
        lock.release("k")


# -- RecordStore ---------------------------------------------------------------------------

def rec(id=1, state=State.QUEUED, ws="A", queue="reservations") -> Reservation:
    return Reservation(id, ws, queue, state, 0.0, 0.0)


@pytest.mark.asyncio
async def test_store_transitions_and_terminal_is_final():
    store = RecordStore()
    await store.save(rec())
    await store.save(rec(state=State.RUNNING))
    await store.save(rec(state=State.SUCCEEDED))
    with pytest.raises(InvalidTransition):
        await store.save(rec(state=State.FAILED))
    with pytest.raises(InvalidTransition):
        await store.save(rec(id=2, state=State.RUNNING))
    assert store.get(1).state is State.SUCCEEDED and store.get(2) is None


@pytest.mark.asyncio
async def test_store_refuses_write_from_stale_owner():
    lanes = ProjectLanes()
    store = RecordStore()
    t1 = lanes.claim("A", "r1")
    await store.save(rec(), fence=(t1,))
    lanes.release(t1)
    lanes.claim("A", "r2")
    with pytest.raises(StaleWrite):
        await store.save(rec(state=State.RUNNING), fence=(t1,))
    assert store.stale_writes == 1 and store.get(1).state is State.QUEUED


@pytest.mark.asyncio
async def test_store_hold_keeps_a_save_open_and_fence_is_checked_after_it():
    lanes = ProjectLanes()
    hub = EventHub()
    seen = []
    hub.subscribe(lambda ev: seen.append((ev.kind, ev.job_id, ev.state)))
    store = RecordStore(events=hub)
    h = store.hold(id=1, state="running")
    await store.save(rec())
    t = lanes.claim("A", "r1")
    task = asyncio.create_task(store.save(rec(state=State.RUNNING), fence=(t,)))
    held = await h.wait_engaged()
    assert held.id == 1 and not task.done() and store.get(1).state is State.QUEUED
    lanes.revoke("A")  # the owner loses its lane while its save is held
    h.release()
    with pytest.raises(StaleWrite):
        await task
    assert ("save_held", 1, "running") in seen and ("stale_write", 1, "running") in seen


@pytest.mark.asyncio
async def test_store_fail_next_fails_once():
    store = RecordStore()
    store.fail_next(id=1, error="disk full")
    with pytest.raises(SaveFailed, match="disk full"):
        await store.save(rec())
    assert store.get(1) is None and store.failed_saves == 1
    await store.save(rec())
    assert store.get(1) is not None and store.pending_failures() == 0


def test_event_hub_subscribers_and_errors():
    hub = EventHub(clock=lambda: 3.0)
    got = []

    def boom(ev):
        raise RuntimeError("broken subscriber")

    unsub_boom = hub.subscribe(boom)
    unsub = hub.subscribe(got.append)
    hub.emit("x", "A", detail=1)
    assert got[0].kind == "x" and got[0].at == 3.0 and hub.subscriber_errors == 1
    unsub()
    unsub()  # harmless twice
    unsub_boom()
    hub.emit("y")
    assert len(got) == 1 and not hub.active
