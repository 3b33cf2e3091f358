"""Benchmarks that need the full window run it offscreen on a real qasync loop."""

from __future__ import annotations

from contextlib import contextmanager


def run_window(scenario):
    """``lanemon.ui.tools.testing.run_window`` with the offscreen platform; raises on loop errors."""
    from lanemon.ui.tools.testing import headless
    from lanemon.ui.tools.testing import run_window as run

    headless()
    rc, value, errors = run(scenario)
    if rc != 0 or errors:
        raise RuntimeError(f"the window ended badly: exit {rc}, loop errors {errors[:3]}")
    return value


async def settled(window, timeout_s: float = 60.0) -> None:
    """Wait until the window's start-up measurements are done."""
    from lanemon.ui.tools.testing import wait_until

    m = window.controller.machine
    await wait_until(lambda: m.warm_roundtrip_ms is not None or m.errors, timeout_s)


@contextmanager
def quiet(window):
    """The window's watchdog thread and heartbeat stopped for the block (while the bench makes the
    window's loop wait: no stack sampled on the other core, no late tick the chart would draw as a
    stall and scale to); started again after it."""
    window.own_watchdog.stop()
    window.heartbeat.stop()
    try:
        yield
    finally:
        window.heartbeat.start()
        window.own_watchdog.start()


def bare_loop(window, settle_s: float):
    """A ``lanemon.bench.floor.BareLoop`` with the window's heartbeat period, started while the
    window is ``quiet`` (its loop waits for the child's start)."""
    from lanemon.bench.floor import BareLoop

    with quiet(window):
        return BareLoop(window.heartbeat.period_ms, settle_s=settle_s)


def floor_segment(window, bare, seconds: float) -> list[float]:
    """The bare loop's segment (``BareLoop.record``) with the window ``quiet``, its loop waiting."""
    with quiet(window):
        return bare.record(seconds)
