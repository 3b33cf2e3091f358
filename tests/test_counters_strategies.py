"""The three strategies under forced interleavings (no sleeps, no timing).

Each staff member's guide blocks on a gate the test opens, so the order of
events is dictated, not hoped for.
"""

import asyncio

import pytest

from lanemon.counters import (
    Attempt,
    Board,
    CounterState,
    Customer,
    Desk,
    ManualClock,
    claim_finalize,
    long_lock,
    short_lock,
)
from lanemon.store.memory_claims import MemoryClaims


class GatedDesk(Desk):
    """Guiding waits until the test opens that staff member's gate."""

    def __init__(self, board):
        super().__init__(MemoryClaims(board), sleep=_no_sleep)
        self.gates = {}
        self.guiding = []  # (staff, counter) in the order guiding started
        self.fail = set()

    async def guide_customer_to_counter(self, staff, customer, counter):
        self.guiding.append((staff, counter))
        gate = self.gates.setdefault(staff, asyncio.Event())
        await gate.wait()
        if staff in self.fail:
            raise RuntimeError(f"{staff} tripped")

    def open(self, staff):
        self.gates.setdefault(staff, asyncio.Event()).set()


async def _no_sleep(dt):
    await asyncio.sleep(0)


async def until(predicate, steps=200):
    for _ in range(steps):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


def setup(counters=3, ttl=1.0):
    clock = ManualClock()
    board = Board(counters, clock=clock, default_ttl=ttl)
    return board, clock, GatedDesk(board)


A = Customer("A")
B = Customer("B")


@pytest.mark.asyncio
async def test_short_lock_double_assigns_in_forced_interleaving():
    board, _, desk = setup()
    ta = asyncio.create_task(short_lock(desk, "S1", A))
    await until(lambda: len(desk.guiding) == 1)  # S1 chose and left the lock
    tb = asyncio.create_task(short_lock(desk, "S2", B))
    await until(lambda: len(desk.guiding) == 2)  # S2 chose while S1 guides
    assert desk.guiding == [("S1", 0), ("S2", 0)]  # the same counter
    desk.open("S1")
    assert await ta is Attempt.SERVED
    desk.open("S2")
    assert await tb is Attempt.SERVED
    assert board.double_assignments == 1
    view = board.view(0)
    assert view.customers == ("A", "B") and view.conflict


@pytest.mark.asyncio
async def test_long_lock_serializes_in_same_interleaving():
    board, _, desk = setup()
    ta = asyncio.create_task(long_lock(desk, "S1", A))
    await until(lambda: len(desk.guiding) == 1)
    tb = asyncio.create_task(long_lock(desk, "S2", B))
    for _ in range(50):
        await asyncio.sleep(0)
    assert desk.guiding == [("S1", 0)]  # S2 waits for the lock; counters 1, 2 idle
    assert board.assignable() == [0, 1, 2]
    desk.open("S1")
    assert await ta is Attempt.SERVED
    await until(lambda: len(desk.guiding) == 2)
    assert desk.guiding[1] == ("S2", 1)
    desk.open("S2")
    assert await tb is Attempt.SERVED
    assert board.double_assignments == 0


@pytest.mark.asyncio
async def test_claim_is_correct_and_parallel_in_same_interleaving():
    board, _, desk = setup()
    ta = asyncio.create_task(claim_finalize(desk, "S1", A))
    await until(lambda: len(desk.guiding) == 1)
    tb = asyncio.create_task(claim_finalize(desk, "S2", B))
    await until(lambda: len(desk.guiding) == 2)  # both guide at once
    assert desk.guiding == [("S1", 0), ("S2", 1)]
    assert board.view(0).state is CounterState.CLAIMED
    desk.open("S2")
    desk.open("S1")
    assert await ta is Attempt.SERVED and await tb is Attempt.SERVED
    assert board.double_assignments == 0
    assert board.customers(0) == ("A",) and board.customers(1) == ("B",)


@pytest.mark.asyncio
async def test_claim_refused_moves_to_next_candidate():
    board, _, desk = setup()
    # S1's candidate list is read, then S2 claims counter 0 before S1 does.
    original = desk.find_assignable_counters

    async def slow_find(staff):
        counters = await original(staff)
        if staff == "S1":
            board.claim(0, "S2", "X")
        return counters

    desk.find_assignable_counters = slow_find
    task = asyncio.create_task(claim_finalize(desk, "S1", A))
    await until(lambda: desk.guiding)
    assert desk.guiding == [("S1", 1)]
    assert board.claim_refused == 1
    desk.open("S1")
    assert await task is Attempt.SERVED


@pytest.mark.asyncio
async def test_claim_expired_mid_guide_is_lost_and_counter_goes_to_other():
    board, clock, desk = setup(counters=1, ttl=1.0)
    ta = asyncio.create_task(claim_finalize(desk, "S1", A))
    await until(lambda: len(desk.guiding) == 1)
    clock.advance(1.5)  # S1 abandoned mid-guide; the claim ran out
    tb = asyncio.create_task(claim_finalize(desk, "S2", B))
    await until(lambda: len(desk.guiding) == 2)
    assert desk.guiding[1] == ("S2", 0)
    desk.open("S1")
    assert await ta is Attempt.LOST  # finalize after expiry fails
    assert board.release_refused == 1  # its release found the claim replaced
    desk.open("S2")
    assert await tb is Attempt.SERVED
    assert board.customers(0) == ("B",) and board.double_assignments == 0


@pytest.mark.asyncio
async def test_claim_released_on_error_and_on_cancel():
    board, _, desk = setup()
    desk.fail.add("S1")
    ta = asyncio.create_task(claim_finalize(desk, "S1", A))
    await until(lambda: desk.guiding)
    desk.open("S1")
    with pytest.raises(RuntimeError):
        await ta
    assert board.current_claim(0) is None and board.assignable() == [0, 1, 2]

    tb = asyncio.create_task(claim_finalize(desk, "S2", B))
    await until(lambda: len(desk.guiding) == 2)
    assert board.view(0).state is CounterState.CLAIMED
    tb.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tb
    assert board.current_claim(0) is None and board.released == 2


@pytest.mark.asyncio
async def test_a_release_failing_on_the_way_out_does_not_hide_the_error_that_caused_it():
    """The claim goes back when guiding fails or the task is cancelled; a store that fails
    that release too (a database gone) must not replace the error (or the cancellation)
    the caller is owed: the claim is left to its TTL."""
    from lanemon.store.url import StoreError

    class BrokenRelease(GatedDesk):
        async def release_counter_claim(self, staff, claim):
            raise StoreError("server closed the connection")

    board, _, _ = setup()
    desk = BrokenRelease(board)
    desk.fail.add("S1")
    ta = asyncio.create_task(claim_finalize(desk, "S1", A))
    await until(lambda: desk.guiding)
    desk.open("S1")
    with pytest.raises(RuntimeError, match="S1 tripped"):
        await ta
    tb = asyncio.create_task(claim_finalize(desk, "S2", B))
    await until(lambda: len(desk.guiding) == 2)
    tb.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tb
    assert board.current_claim(0) is not None and board.current_claim(1) is not None   # left to their TTL


@pytest.mark.asyncio
async def test_no_counter():
    board, _, desk = setup(counters=1)
    board.assign(0, "Z", "S9")
    for strategy in (short_lock, long_lock, claim_finalize):
        assert await strategy(desk, "S1", A) is Attempt.NO_COUNTER
    assert desk.guiding == [] and board.double_assignments == 0
