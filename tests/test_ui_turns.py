"""``kit.turns.Turns``: a run of steps, one turn of the loop each. A timer that comes due while
a step runs fires before the next step (the heartbeat's tick waits for one step, not the
whole); every step of a run runs once, in order, even when a new run starts early; a step's
exception ends its run; a run's steps are let go once it is done."""

from __future__ import annotations

import gc
import time
import weakref

import pytest
from PySide6.QtCore import QObject, Qt, QTimer

from lanemon.ui.kit.turns import Turns, call_step


def _busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


def _due_timer(order: list, name: str, parent: QObject) -> QTimer:
    """A precise single-shot timer of 1 ms, started now, that notes its firing in ``order``."""
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: order.append(name))
    timer.start(1)
    return timer


def test_a_timer_due_during_a_step_fires_before_the_next_step(qtbot):
    owner = QObject()
    turns = Turns(owner)
    order: list[str] = []
    keep = []

    def step(name: str, tick: str | None = None):
        def run():
            order.append(name)
            if tick is not None:
                keep.append(_due_timer(order, tick, owner))
                _busy(3.0)                # the tick's due time passes while the step runs
        return run

    turns.start((step("a", tick="tick 1"), step("b", tick="tick 2"), step("c")))
    assert order == ["a"]                 # the first step at once, the others later
    assert turns.pending
    qtbot.waitUntil(lambda: not turns.pending and len(order) == 5, timeout=2000)
    assert order == ["a", "tick 1", "b", "tick 2", "c"]


def test_the_same_steps_in_one_turn_make_the_tick_wait_for_all_of_them(qtbot):
    """The contrast (and the control of the test above): with ``finish`` every step runs at
    once, and the tick comes after the last."""
    owner = QObject()
    turns = Turns(owner)
    order: list[str] = []
    keep = []

    def a():
        order.append("a")
        keep.append(_due_timer(order, "tick", owner))
        _busy(3.0)

    turns.start((a, lambda: order.append("b"), lambda: order.append("c")))
    turns.finish()
    qtbot.waitUntil(lambda: "tick" in order, timeout=2000)
    assert order == ["a", "b", "c", "tick"]


def test_events_a_step_posted_run_before_the_next_step(qtbot):
    owner = QObject()
    turns = Turns(owner)
    order: list[str] = []

    def a():
        order.append("a")
        QTimer.singleShot(0, lambda: order.append("posted by a"))   # Qt 6: a posted call

    turns.start((a, lambda: order.append("b")))
    qtbot.waitUntil(lambda: not turns.pending and len(order) == 3, timeout=2000)
    assert order == ["a", "posted by a", "b"]


def test_a_start_while_steps_remain_finishes_them_first_in_order():
    owner = QObject()
    turns = Turns(owner)
    order: list[str] = []
    turns.start(tuple(lambda n=n: order.append(f"1{n}") for n in "abc"))
    turns.start(tuple(lambda n=n: order.append(f"2{n}") for n in "ab"))
    assert order == ["1a", "1b", "1c", "2a"]
    turns.finish()
    assert order == ["1a", "1b", "1c", "2a", "2b"]
    assert not turns.pending
    turns.finish()                                   # nothing left: nothing runs
    assert order == ["1a", "1b", "1c", "2a", "2b"]


def test_each_step_goes_through_call():
    owner = QObject()
    turns = Turns(owner)
    seen = []

    def call(step):
        seen.append((step.__name__, turns.pending))
        step()

    turns.call = call

    def one():
        pass

    def two():
        pass

    turns.start((one, two))
    turns.finish()
    assert seen == [("one", True), ("two", False)]   # pending: whether steps remain after it
    turns.call = call_step


def test_a_step_that_raises_ends_its_run():
    owner = QObject()
    turns = Turns(owner)
    order: list[str] = []

    def bad():
        order.append("bad")
        raise ValueError("a step failed")

    turns.start((lambda: order.append("a"), bad, lambda: order.append("never")))
    with pytest.raises(ValueError, match="a step failed"):
        turns.finish()
    assert not turns.pending
    turns.start((lambda: order.append("next run"),))
    assert order == ["a", "bad", "next run"]


def test_a_done_run_lets_its_steps_go():
    """A step is often a bound method of the ``Turns``' owner: held after the run, it would keep
    the owner alive through its own child."""
    class Owner(QObject):
        def step(self):
            pass

    gc.disable()                  # (the collector would break a cycle: it must not be needed)
    try:
        owner = Owner()
        turns = Turns(owner)
        turns.start((owner.step, owner.step))
        turns.finish()
        gone = weakref.ref(owner)
        turns = None
        del owner
        assert gone() is None     # freed by its last reference going, no cycle left
    finally:
        gc.enable()
