"""Helpers shared by the benchmarks."""

from __future__ import annotations

import asyncio
import platform
import statistics

from lanemon.work.lag import LagRecorder, LagStats


async def idle_lag(duration_s: float, period_ms: float = 1.0) -> LagStats:
    """Lag of an idle loop over ``duration_s``: the floor every figure sits on."""
    async with LagRecorder(period_ms) as rec:
        await asyncio.sleep(duration_s)
    return rec.stats()


def job_of_ms(ms: float) -> tuple[int, float]:
    """Iterations of the job that take about ``ms`` here, and the measured rate (it/ms)."""
    from lanemon.work import calibrate

    rate = calibrate()
    return int(rate * ms), rate


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def goal(ok: bool) -> str:
    return "meets goal" if ok else "MISSES goal"


def child_processes() -> list[tuple[int, str]]:
    """(pid, command line) of this process's live children (Linux ``/proc``; empty
    elsewhere), multiprocessing's resource tracker aside (the stdlib's; it exits with us)."""
    from lanemon.procs import children

    return [(pid, cmd) for pid, cmd in children() if "resource_tracker" not in cmd]


def load_text() -> str:
    """The machine's load average as printed beside every same-run floor."""
    import os

    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"
