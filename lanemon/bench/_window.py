"""Benchmarks that need the full window run it offscreen on a real qasync loop."""

from __future__ import annotations


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
