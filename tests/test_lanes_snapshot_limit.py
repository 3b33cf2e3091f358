"""Scheduler.snapshot(limit=..., queue_lanes=False): a cheaper view for a UI."""

from __future__ import annotations

import asyncio

from lanemon.lanes import GatedWork, Scheduler


def test_limit_keeps_the_first_waiting_oldest_running_newest_recent_and_full_counts():
    async def go():
        s = Scheduler(recent_limit=50)
        done = [await s.submit("cafe", f"d{i}") for i in range(6)]      # zero-time: finish at once
        await s.join()
        gates = [GatedWork() for _ in range(4)]
        running = [await s.submit("cafe", f"r{i}", g) for i, g in enumerate(gates)]
        waiting = [await s.submit("cafe", "r0", GatedWork()) for _ in range(5)]
        full = s.snapshot()
        light = s.snapshot(limit=2, queue_lanes=False)
        none = s.snapshot(limit=0)
        await s.aclose()
        return done, running, waiting, full, light, none

    done, running, waiting, full, light, none = asyncio.run(go())
    fq, lq = full.queues["cafe"], light.queues["cafe"]
    assert [j.id for j in fq.waiting] == waiting and [j.id for j in fq.running] == running
    assert [j.id for j in lq.waiting] == waiting[:2]
    assert [j.id for j in lq.running] == running[:2]
    assert [j.id for j in lq.recent] == done[-2:]
    assert lq.counts == fq.counts and lq.counts["waiting"] == 5 and lq.counts["running"] == 4
    assert len(fq.lanes) == 4 and lq.lanes == ()
    assert light.scheduled == full.scheduled and light.history == full.history
    assert light.counts == full.counts
    nq = none.queues["cafe"]
    assert nq.waiting == () and nq.running == () and nq.recent == () and len(nq.lanes) == 4
