"""Runs that wait share one loop timer (``lanemon.lanes.deadlines``), never resolved early."""

from __future__ import annotations

import asyncio

import pytest

from lanemon.lanes import Scheduler, SimulatedWork, State
from lanemon.lanes.deadlines import Deadlines


@pytest.mark.asyncio
async def test_many_waiting_runs_arm_few_loop_timers():
    """500 simulated runs waiting at once over 500 workspaces: the loop's timers armed by
    the waits stay a handful (one per batch), not one per run. Fails with one
    ``call_later`` per ``wait_stop`` (500 timers)."""
    loop = asyncio.get_running_loop()
    armed = []
    real_at, real_later = loop.call_at, loop.call_later

    def counting_at(when, cb, *args, **kw):
        armed.append(cb)
        return real_at(when, cb, *args, **kw)

    def counting_later(delay, cb, *args, **kw):
        armed.append(cb)
        return real_later(delay, cb, *args, **kw)

    loop.call_at, loop.call_later = counting_at, counting_later
    try:
        s = Scheduler()
        n = 500
        ids = [await s.submit("reservations", f"ws-{i}", SimulatedWork(0.05)) for i in range(n)]
        await s.join()
    finally:
        del loop.call_at, loop.call_later
    assert all(s.store.get(j).state is State.SUCCEEDED for j in ids)
    assert len(armed) <= 20, f"{len(armed)} loop timers for {n} waiting runs"


class FakeLoop:
    """Just ``time`` and ``call_at``: the test moves the clock and fires the timer."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pending: list = []
        self._handles = asyncio.new_event_loop()   # only to make TimerHandles; never run

    def time(self) -> float:
        return self.now

    def call_at(self, when, cb):
        h = asyncio.TimerHandle(when, cb, (), self._handles)
        self.pending.append(h)
        return h

    def fire_due(self) -> None:
        live = [h for h in self.pending if not h.cancelled()]
        self.pending = []
        assert len(live) <= 1, "more than one loop timer pending"
        for h in live:
            if h.when() <= self.now:
                h._run()
            else:
                self.pending.append(h)


def test_never_early_batched_and_cancelled_let_go():
    loop = FakeLoop()
    d = Deadlines(loop)
    got = []
    entries = {k: d.add(k / 1000, got.append, k) for k in (10, 11, 12, 30)}
    late = d.add(20, got.append, "late")
    d.cancel(entries[12])
    assert entries[12][2] is None and entries[12][3] is None     # callback and arg let go
    loop.now = 0.0105
    loop.fire_due()
    assert got == [10]                                        # 11 is not due yet: never early
    loop.now = 0.012
    loop.fire_due()
    assert got == [10]                                        # the next batch waits BATCH_S
    loop.now = 0.0146
    loop.fire_due()
    assert got == [10, 11]                                    # 12 was cancelled
    loop.now = 0.031
    loop.fire_due()
    assert got == [10, 11, 30] and len(d) == 1
    d.cancel(late)
    assert len(d) == 0 and not [h for h in loop.pending if not h.cancelled()]
    loop._handles.close()


def test_a_batch_wakes_at_most_max_per_fire_and_the_rest_next_pass():
    """Each resolution wakes a task that runs in the loop's next pass: a batch resolves at
    most ``MAX_PER_FIRE``; what else is due goes to a timer due at once (not ``BATCH_S``
    later), so 3 x MAX_PER_FIRE deadlines due together take 3 passes."""
    from lanemon.lanes.deadlines import MAX_PER_FIRE

    loop = FakeLoop()
    d = Deadlines(loop)
    got = []
    for k in range(3 * MAX_PER_FIRE):
        d.add(0.010, got.append, k)
    loop.now = 0.011
    sizes = []
    for _ in range(3):
        before = len(got)
        loop.fire_due()                 # the clock does not move: each pass is due at once
        sizes.append(len(got) - before)
    assert sizes == [MAX_PER_FIRE] * 3 and got == list(range(3 * MAX_PER_FIRE))
    assert len(d) == 0
    loop._handles.close()


def test_a_callback_cancelling_another_of_its_batch_stops_it_and_the_rest_still_fire():
    """A callback may cancel a deadline taken off the heap with it for the same batch: that
    one does not run (it ran with no callback: a TypeError reported), and the count of
    cancelled ones stays the heap's (it was counted there too, and a later ``cancel`` then
    found "every deadline cancelled" and dropped live ones that never fired)."""
    loop = FakeLoop()
    errors = []
    loop.call_exception_handler = errors.append
    d = Deadlines(loop)
    got = []
    second = None

    def first(k):
        got.append(k)
        d.cancel(second)

    d.add(0.010, first, "first")
    second = d.add(0.010, got.append, "second")
    later = [d.add(0.050, got.append, f"later{i}") for i in range(2)]
    loop.now = 0.011
    loop.fire_due()
    assert got == ["first"] and errors == [] and len(d) == 2
    d.cancel(later[0])                       # one of two live ones: the other still fires
    loop.now = 0.051
    loop.fire_due()
    assert got == ["first", "later1"] and errors == [] and len(d) == 0
    loop._handles.close()
