"""``Scheduler.wait_live_below``: a feeder's backpressure (the window's burst keeps its
live jobs under ``BURST_LIVE_MAX`` with it).

Jobs are ended one at a time, each by a different path (its work, a cancel, a
reset), and each end is awaited through the scheduler's ``finished`` event, so
the order is forced and nothing depends on timing. A waiter that returned too
early would see ``n`` or more live jobs: each waiter records what it saw."""

from __future__ import annotations

import asyncio

import pytest

from lanemon.lanes import GatedWork, Scheduler


async def _running(s: Scheduler, k: int) -> tuple[list[int], list[GatedWork]]:
    works = [GatedWork() for _ in range(k)]
    ids = [await s.submit("reservations", f"ws{i}", w) for i, w in enumerate(works)]
    for w in works:
        await w.started.wait()
    return ids, works


def _ended(s: Scheduler, jid: int) -> asyncio.Future:
    """A future done when job ``jid``'s ``finished`` event is emitted."""
    fut = asyncio.get_running_loop().create_future()

    def on(ev):
        if ev.kind == "finished" and ev.job_id == jid and not fut.done():
            fut.set_result(ev.state)
            unsubscribe()

    unsubscribe = s.events.subscribe(on)
    return fut


async def _watch(s: Scheduler, n: int, seen: list) -> None:
    await s.wait_live_below(n)
    seen.append((n, s.live_jobs))


def test_a_waiter_returns_only_once_fewer_than_n_are_live_whatever_ends_the_jobs():
    async def main():
        s = Scheduler()
        ids, works = await _running(s, 6)
        seen: list = []
        five = asyncio.create_task(_watch(s, 5, seen))   # two waiters share one wake-up
        three = asyncio.create_task(_watch(s, 3, seen))
        end = _ended(s, ids[0])
        works[0].open()                                   # ends by its work: 5 live
        assert await end == "succeeded"
        end = _ended(s, ids[1])
        assert await s.cancel(ids[1]) == "stop_requested"  # a cancel (a stop, at its
        works[1].open()                                    # next checkpoint): 4 live
        assert await end == "cancelled"
        await five
        assert not three.done()
        end = _ended(s, ids[2])
        works[2].open()                                   # 3 live
        await end
        assert not three.done()
        await s.reset("test")                             # ends the rest: 0 live
        await three
        for w in works:
            w.open()
        return seen

    seen = asyncio.run(main())
    assert [n for n, _ in seen] == [5, 3]
    assert all(live < n for n, live in seen), seen
    assert seen[0] == (5, 4)      # woken by the end that left 4 (not at 5)


def test_a_reset_wakes_a_waiter_and_join_still_waits_for_every_job():
    async def main():
        s = Scheduler()
        ids, works = await _running(s, 3)
        seen: list = []
        waiter = asyncio.create_task(_watch(s, 1, seen))
        joined = asyncio.create_task(s.join())
        await s.reset("test")
        await asyncio.gather(waiter, joined)
        for w in works:
            w.open()
        return seen, s.live_jobs

    seen, live = asyncio.run(main())
    assert seen == [(1, 0)] and live == 0


def test_it_returns_at_once_when_fewer_are_live_already():
    s = Scheduler()
    coro = s.wait_live_below(1)
    with pytest.raises(StopIteration):    # finished on its first step: no wait, no loop needed
        coro.send(None)


def test_a_cancelled_wait_leaves_the_other_waiters_and_the_jobs_alone():
    async def main():
        s = Scheduler()
        ids, works = await _running(s, 2)
        seen: list = []
        gone = asyncio.create_task(s.wait_live_below(2))
        kept = asyncio.create_task(_watch(s, 2, seen))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        end = _ended(s, ids[0])
        works[0].open()
        await end
        await kept
        works[1].open()
        await s.join()
        return seen, gone.cancelled()

    seen, cancelled = asyncio.run(main())
    assert cancelled and seen == [(2, 1)]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3", None])
def test_a_count_that_is_not_an_int_of_at_least_one_is_refused(bad):
    s = Scheduler()
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        s.wait_live_below(bad).send(None)
