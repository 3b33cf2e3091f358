"""``lanemon.tasks.sleep_until``: on return the deadline has passed, on qasync's loop too
(whose ``asyncio.sleep`` runs on a coarse Qt timer and may end up to 5 % early)."""

from __future__ import annotations

import asyncio
import time

import qasync

from lanemon.tasks import sleep_until


def test_an_early_wake_sleeps_again_for_what_is_left():
    readings = iter([0.990, 0.995, 0.9999, 1.0, 1.0])        # woken early twice, then on time
    seen = []

    def clock() -> float:
        seen.append(next(readings))
        return seen[-1]

    asyncio.run(sleep_until(1.0, clock))
    assert seen == [0.990, 0.995, 0.9999, 1.0]               # asked until it read the deadline


def test_a_deadline_already_passed_returns_at_once_without_sleeping(monkeypatch):
    slept = []

    async def sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    asyncio.run(sleep_until(5.0, lambda: 5.0))
    asyncio.run(sleep_until(5.0, lambda: 7.5))
    assert slept == []


def test_on_qasyncs_loop_every_deadline_has_passed_on_return(qapp):
    """Lengths whose coarse timers were seen ending early here (0.5 s: 25 ms early)."""
    late = []

    async def main():
        for seconds in (0.5, 0.25, 0.3, 0.123):
            deadline = time.perf_counter() + seconds
            await sleep_until(deadline)
            late.append(time.perf_counter() - deadline)

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(qapp)) as runner:
        runner.run(main())
    assert len(late) == 4 and min(late) >= 0.0, late
