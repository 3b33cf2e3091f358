"""Cancelling a counters run or a compare: it stops within one slice of work, from any
thread, and leaves no task, no thread and no unretrieved exception behind.

Work is counted, not timed: the customers seated after the cancel was signalled are
bounded by one loop iteration's worth (at most one per staff member).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time

import pytest

from lanemon.counters import SimConfig, Simulation, compare, run_in_virtual_time, run_virtual
from lanemon.counters import events as ev
from lanemon.counters import simulation as simulation_module

HUGE = SimConfig(strategy="short_lock", customers=1_000_000, seed=7)


def _never_retrieved(caplog) -> list[str]:
    gc.collect()  # an unretrieved exception is reported when its future is collected
    return [r.getMessage() for r in caplog.records
            if r.name == "asyncio" and "never retrieved" in r.getMessage()]


def test_a_time_limited_run_leaves_no_unretrieved_exception(caplog):
    caplog.set_level(logging.ERROR, logger="asyncio")
    t = run_virtual(SimConfig(customers=5_000, time_limit=20.0))
    assert not t.completed and t.elapsed == pytest.approx(20.0)
    assert _never_retrieved(caplog) == []


def test_a_time_limited_run_stopped_early_leaves_no_unretrieved_exception(caplog):
    caplog.set_level(logging.ERROR, logger="asyncio")

    async def main():
        sim = Simulation(SimConfig(customers=5_000, time_limit=600.0))
        enough = asyncio.get_running_loop().create_future()
        sim.subscribe(lambda e: e.kind == ev.SERVED and sim.served >= 50 and not enough.done()
                      and enough.set_result(None))
        task = sim.start()
        await enough
        sim.stop()
        with pytest.raises(asyncio.CancelledError):
            await task
        return sim.state

    assert run_in_virtual_time(main()) == "stopped"
    assert _never_retrieved(caplog) == []


def test_a_virtual_run_cancelled_from_another_thread_stops_within_one_slice(caplog):
    """A huge run in a thread; the main thread sets the cancel once work is under way. Every
    customer seated after the set is counted in the run's own thread: at most one per staff
    member (one loop iteration), then the run raises CancelledError and the thread ends."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    cancel = threading.Event()
    sim = Simulation(HUGE)
    after_cancel = []
    sim.subscribe(lambda e: e.kind == ev.SERVED and cancel.is_set() and after_cancel.append(e.customer))
    outcome = []

    def work():
        try:
            outcome.append(run_in_virtual_time(sim.run(), cancel=cancel))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    deadline = time.monotonic() + 60
    while sim.served < 2_000 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    served_at_cancel = sim.served
    cancel.set()
    thread.join(60)
    assert not thread.is_alive()
    assert served_at_cancel >= 2_000
    assert len(outcome) == 1 and isinstance(outcome[0], asyncio.CancelledError)
    assert len(after_cancel) <= HUGE.staff
    assert sim.state == "stopped" and sim.served < HUGE.customers
    assert _never_retrieved(caplog) == []


def test_a_cancel_set_before_the_compare_simulates_nothing():
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(asyncio.CancelledError):
        compare(HUGE, cancel=cancel)
    with pytest.raises(asyncio.CancelledError):
        run_virtual(HUGE, cancel=cancel)


def watch_compare(monkeypatch) -> dict:
    """Wrap ``simulation.compare`` so a test sees it from outside: ``entered`` (an Event, set
    when it starts), ``running``, its ``cancel`` event and its ``outcome`` (value or exception)."""
    seen = {"entered": threading.Event(), "cancel": None, "outcome": None, "running": False}
    real_compare = simulation_module.compare

    def watched_compare(*args, **kwargs):
        seen["cancel"] = kwargs.get("cancel")
        seen["running"] = True
        seen["entered"].set()
        try:
            seen["outcome"] = real_compare(*args, **kwargs)
        except BaseException as exc:
            seen["outcome"] = exc
            raise
        finally:
            seen["running"] = False
        return seen["outcome"]

    monkeypatch.setattr(simulation_module, "compare", watched_compare)
    return seen


@pytest.mark.asyncio
async def test_cancelling_compare_async_ends_its_thread_before_it_returns(monkeypatch, caplog):
    """The window's path: ``compare_async`` cancelled (the view's shutdown). When the
    cancellation has come back, the compare in the worker thread has ended too (it raised
    CancelledError after the cancel was signalled): nothing keeps computing."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    seen = watch_compare(monkeypatch)
    in_a_run = threading.Event()       # set when the compare's first virtual run begins
    real_run_virtual = simulation_module.run_virtual

    def watched_run_virtual(*args, **kwargs):
        in_a_run.set()
        return real_run_virtual(*args, **kwargs)

    monkeypatch.setattr(simulation_module, "run_virtual", watched_run_virtual)
    task = asyncio.ensure_future(simulation_module.compare_async(HUGE))
    assert await asyncio.to_thread(in_a_run.wait, 60)   # it is into the work
    assert seen["entered"].is_set() and seen["running"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    still_running = seen["running"]
    assert not still_running
    assert seen["cancel"] is not None and seen["cancel"].is_set()
    assert isinstance(seen["outcome"], asyncio.CancelledError)
    assert not [t for t in threading.enumerate() if t.name.startswith("lanemon-compare")]
    assert _never_retrieved(caplog) == []
