"""Bounded memory over long runs: the queue turns arrivals away when full, waits keep
exact running figures plus a bounded window for the p99, and every arrival is
accounted for at every event. Virtual time: many simulated minutes in a moment."""

from __future__ import annotations

import itertools

import pytest

from lanemon.counters import SimConfig, Simulation, compare, percentile, run_in_virtual_time, run_virtual
from lanemon.counters import events as ev
from lanemon.counters.simulation import DEFAULT_QUEUE_LIMIT, WAIT_WINDOW


def _long_run(config: SimConfig):
    """Run ``config``; check the bounds and the accounting at every event; return
    (tallies, every wait recomputed from the events, the largest queue seen)."""
    sim = Simulation(config)
    arrival = {c.name: c.arrival for c in itertools.islice(config.workload(), 100_000)}
    waits = []
    worst = {"queue": 0, "stored": 0}
    broken = []

    def on_event(e):
        q, stored = sim.queue_length, sim.waits_stored
        worst["queue"] = max(worst["queue"], q)
        worst["stored"] = max(worst["stored"], stored)
        if q > config.queue_limit + config.staff or stored > config.wait_window:
            broken.append(("bound", e, q, stored))
        if sim.arrived != sim.served + q + sim.with_staff + sim.turned_away:
            broken.append(("accounting", e, sim.tallies()))
        if e.kind == ev.SERVED:
            waits.append(e.time - arrival[e.customer])

    sim.subscribe(on_event)
    t = run_in_virtual_time(sim.run())
    assert broken == []
    return t, sim, waits, worst


@pytest.mark.parametrize("strategy", ["short_lock", "long_lock", "claim"])
def test_a_long_run_stays_within_its_bounds_and_accounts_for_every_arrival(strategy):
    config = SimConfig(strategy=strategy, customers=None, time_limit=240.0, queue_limit=150,
                       wait_window=500, abandon_rate=0.05, seed=3)
    t, sim, waits, worst = _long_run(config)
    assert t.arrived > 10_000 and t.turned_away > 0
    assert worst["queue"] <= config.queue_limit + config.staff
    assert worst["stored"] <= config.wait_window
    assert t.arrived == t.served + t.queued + t.with_staff + t.turned_away
    assert len(waits) == t.served
    # exact over every wait; the p99 over the most recent window
    assert t.wait_max == max(waits)
    assert t.wait_mean == pytest.approx(sum(waits) / len(waits), rel=1e-12)
    recent = waits[-config.wait_window:]
    assert t.wait_p99_of == len(recent) == sim.waits_stored
    assert t.wait_p99 == percentile(sorted(recent), 99)


def test_the_default_workload_fills_the_default_queue_and_turns_the_rest_away():
    config = SimConfig(strategy="short_lock", customers=None, time_limit=330.0)
    assert config.queue_limit == DEFAULT_QUEUE_LIMIT and config.wait_window == WAIT_WINDOW
    t, sim, waits, worst = _long_run(config)
    assert t.served > WAIT_WINDOW                    # more waits than the window holds
    assert sim.waits_stored == t.wait_p99_of == WAIT_WINDOW
    assert worst["queue"] <= DEFAULT_QUEUE_LIMIT + config.staff
    assert t.turned_away > 0 and t.double_assignments > 0   # doubles still counted
    assert t.wait_max == max(waits)


def test_turned_away_customers_are_announced_and_a_finite_run_still_ends():
    config = SimConfig(strategy="claim", customers=400, arrival_rate=None, queue_limit=100)
    seen = []
    sim = Simulation(config)
    sim.subscribe(lambda e: e.kind in (ev.TURNED_AWAY, ev.ARRIVED) and seen.append(e.kind))
    t = run_in_virtual_time(sim.run())
    assert seen.count(ev.TURNED_AWAY) == t.turned_away == 300   # all at t=0: only 100 fit
    assert t.served == 100 and t.completed and t.arrived == 400
    assert t.queued == t.with_staff == 0 and t.double_assignments == 0


def test_compare_is_deterministic_with_overflow():
    config = SimConfig(customers=3_000, queue_limit=60, wait_window=200, seed=12)
    first, second = compare(config), compare(config)
    assert first == second
    assert all(t.turned_away > 0 for t in first.values())
    assert first["short_lock"].double_assignments > 0


def test_the_defaults_leave_the_seeded_300_customer_compare_untouched():
    """The bounds are far above what the default compare reaches: nobody turned away,
    the p99 over every wait."""
    for name, t in compare(SimConfig()).items():
        assert t.turned_away == 0 and t.served == 300 and t.completed, name
        assert t.wait_p99_of == t.served


def test_bounds_are_refused_below_one():
    for field in ("queue_limit", "wait_window"):
        for bad in (0, -1, None, 2.5):
            with pytest.raises(ValueError, match=field):
                SimConfig(**{field: bad})
    assert run_virtual(SimConfig(customers=5, queue_limit=1, arrival_rate=None)).turned_away == 4
