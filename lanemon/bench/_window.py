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
    stall and scale to); started again after it, unless the window's shutdown began meanwhile or
    before (a scenario cancelled because the window ended: ``bare_loop`` closes its child in its
    ``finally``), which stopped them for good."""
    window.own_watchdog.stop()
    window.heartbeat.stop()
    try:
        yield
    finally:
        if not window.shutting_down:
            window.heartbeat.start()
            window.own_watchdog.start()


@contextmanager
def bare_loop(window, settle_s: float, busy_ms: float = 0.0):
    """A ``lanemon.bench.floor.BareLoop`` with the window's heartbeat period (and ``busy_ms``:
    the busy control) for the block, started and closed while the window is ``quiet``: its
    loop waits for the child's start and for its end (~0.1 s), which the window's watchdog
    would otherwise report as the window's own stall, and the chart draw and label, in
    view for the frames measured next."""
    from lanemon.bench.floor import BareLoop

    with quiet(window):
        bare = BareLoop(window.heartbeat.period_ms, settle_s=settle_s, busy_ms=busy_ms)
    try:
        yield bare
    finally:
        with quiet(window):
            bare.close()


def floor_segment(window, bare, seconds: float) -> list[float]:
    """The bare loop's segment (``BareLoop.record``) with the window ``quiet``, its loop waiting."""
    with quiet(window):
        return bare.record(seconds)


def control_report(control_vs_floor, busy_ms: float) -> tuple[str, dict]:
    """The busy control beside a window's idle goal (``BareLoop(busy_ms=...)``, alternated
    with the floor: ``goals.alternate``): the line a bench prints and its figures. Not a
    goal: what periodic work of ``busy_ms`` costs the heartbeat with no window at all."""
    from lanemon.bench.floor import BUSY_FPS

    c = control_vs_floor.figure
    line = (f"control, no window: the bare loop plus a {BUSY_FPS} fps precise timer busy {busy_ms:g} ms "
            f"(an idle chart frame at its goal): p99 {c.p99:5.2f} ms, {control_vs_floor.over:+.2f} ms over the "
            f"floor (each alternation: {control_vs_floor.differences_text()} ms); not judged: what a frame of "
            "that length costs this heartbeat by itself (a tick due during a slot waits for its end)")
    return line, dict(c.as_dict(3), busyMs=busy_ms, p99OverFloorMs=round(control_vs_floor.over, 3),
                      alternations=[round(d, 3) for d in control_vs_floor.differences])
