"""The watchdog: a stall forced on a thread is noticed, sampled and reported where it sat."""

from __future__ import annotations

import threading
import time

from lanemon.probe.watchdog import Watchdog, frames_of


def wait_for(condition, timeout=10.0):
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.002)


def stuck_here(release: threading.Event) -> None:
    release.wait()


class Loopish:
    """A thread standing in for a loop: beats until told to get stuck in ``stuck_here``."""

    def __init__(self) -> None:
        self.stuck_on: threading.Event | None = None
        self.done = threading.Event()
        self.ident = None
        self.ready = threading.Event()
        self.watchdog = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def get_stuck(self) -> threading.Event:
        """Make the thread block in ``stuck_here`` until the returned event is set."""
        release = threading.Event()
        self.stuck_on = release
        return release

    def run(self) -> None:
        self.ident = threading.get_ident()
        self.ready.set()
        while not self.done.is_set():
            if self.watchdog is not None:
                self.watchdog.beat()
            release = self.stuck_on
            if release is not None:
                self.stuck_on = None
                stuck_here(release)
                self.watchdog.beat()
            time.sleep(0.001)


def make(**kw):
    loopish = Loopish()
    loopish.thread.start()
    loopish.ready.wait()
    blocks = []
    got = threading.Event()

    def on_block(b):
        blocks.append(b)
        got.set()

    wd = Watchdog(loopish.ident, 20, on_block, sample_every_ms=1, period_ms=1, **kw)
    loopish.watchdog = wd
    wd.start()
    return loopish, wd, blocks, got


def test_a_stall_is_reported_with_where_it_sat_and_the_task():
    loopish, wd, blocks, got = make(task_of=lambda: "the-task")
    try:
        release = loopish.get_stuck()
        wait_for(lambda: wd.stalled)
        stalled_at = time.monotonic()
        wait_for(lambda: time.monotonic() - stalled_at > 0.03)    # let it take a few samples
        release.set()
        assert got.wait(10)
    finally:
        loopish.done.set()
        wd.stop()
    (b,) = blocks
    assert b.stack[0].endswith(" Condition.wait")           # innermost first: inside Event.wait
    assert any(f.endswith(" stuck_here") for f in b.stack)
    assert b.task == "the-task"
    assert b.samples == sum(c for _, c in b.folded) >= 2
    assert any(f.endswith(" stuck_here") for frames, _ in b.folded for f in frames)
    assert b.duration_ms >= 20 and b.ago_ms >= b.duration_ms - 5
    assert not wd.running


def test_no_report_after_stop_even_for_a_stall_in_progress():
    loopish, wd, blocks, got = make()
    try:
        release = loopish.get_stuck()
        wait_for(lambda: wd.stalled)
        wd.stop()
        assert not wd.running
        release.set()
    finally:
        loopish.done.set()
    loopish.thread.join(10)
    assert blocks == [] and wd.reported == 0


def test_a_loop_said_not_alive_is_not_reported():
    alive = [True]
    loopish, wd, blocks, got = make(alive=lambda: alive[0])
    try:
        alive[0] = False
        first = loopish.get_stuck()
        wait_for(lambda: loopish.stuck_on is None)
        # stuck now, for longer than block_ms; the watchdog sees the loop as stopped: no stall
        t0 = time.monotonic()
        wait_for(lambda: time.monotonic() - t0 > 0.1)
        assert not wd.stalled
        first.set()
        alive[0] = True
        second = loopish.get_stuck()               # a second stall, alive: reported
        wait_for(lambda: wd.stalled)
        second.set()
        assert got.wait(10)
    finally:
        loopish.done.set()
        wd.stop()
    assert len(blocks) == 1


def test_frames_are_innermost_first_and_bounded():
    def deep(n):
        if n == 0:
            import sys
            return frames_of(sys._getframe(), limit=30)
        return deep(n - 1)

    frames = deep(50)
    assert len(frames) == 30
    assert frames[0].endswith(" test_frames_are_innermost_first_and_bounded.<locals>.deep")
    assert ":" in frames[0].split(" ")[0]
