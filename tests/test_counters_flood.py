"""Arrival floods in real time (issue 19, finding 9): a run behind real time admits its
overdue arrivals in bounded chunks, giving the loop back in between; virtual-time runs
keep handling them in one go (their seeded results do not change). Structure only:
what the loop sees between turns, never how long anything took."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from lanemon.counters import SimConfig, Simulation, run_in_virtual_time

# everyone due at once: every arrival is overdue from the start
FLOOD = SimConfig(strategy="short_lock", customers=3_000, arrival_rate=None, queue_limit=1_000)


async def _admitted_per_turn(sim: Simulation) -> list[int]:
    """Start ``sim``; until every customer has arrived, note how many arrived between two
    turns of another task on the same loop; then stop the run and wait for its end."""
    task = sim.start()
    seen = [sim.arrived]
    while sim.arrived < sim.config.customers:
        await asyncio.sleep(0)
        seen.append(sim.arrived)
    sim.stop()
    with pytest.raises(asyncio.CancelledError):
        await task
    return [b - a for a, b in zip(seen, seen[1:])]


@pytest.mark.parametrize("chunk", [1, 50, 200])
def test_overdue_arrivals_go_in_chunks_with_the_loop_in_between(chunk):
    sim = Simulation(FLOOD, arrival_chunk=chunk, arrival_budget=10.0)  # the count decides here
    steps = asyncio.run(_admitted_per_turn(sim))
    assert sum(steps) == FLOOD.customers
    assert max(steps) <= chunk
    assert sim.arrival_yields >= FLOOD.customers // chunk - 1
    t = sim.tallies()   # every arrival accounted for, the queue bound kept
    assert t.arrived == t.served + t.queued + t.with_staff + t.turned_away
    assert t.queued <= FLOOD.queue_limit + FLOOD.staff


def test_without_a_chunk_overdue_arrivals_come_in_one_turn():
    """The default (and virtual time's) behaviour: deterministic, no yield between them."""
    sim = Simulation(FLOOD)
    steps = asyncio.run(_admitted_per_turn(sim))
    assert max(steps) == FLOOD.customers and sim.arrival_yields == 0


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10"])
def test_a_chunk_below_one_is_refused(bad):
    with pytest.raises(ValueError):
        Simulation(FLOOD, arrival_chunk=bad)


def test_a_non_positive_budget_is_refused():
    with pytest.raises(ValueError):
        Simulation(FLOOD, arrival_chunk=10, arrival_budget=0)


def test_a_finished_run_is_released_once_dropped():
    """Nothing of a run outlives it: once its owner drops it, the simulation, its
    board and its customers are freed (no task, callback or timer keeps them)."""
    sim = Simulation(FLOOD.replace(time_limit=5.0), arrival_chunk=50)
    run_in_virtual_time(sim.run())
    gone = weakref.ref(sim)
    del sim
    gc.collect()
    assert gone() is None
