"""Sliced runs: the job in pieces, yielding to the event loop between them.

Guarantees:

- ``run_sliced(total, slice_size)`` computes ``hash_range(0, total)`` slice by
  slice, passing each slice's result as the next one's seed, so the answer is
  the whole run's. Between slices it really yields (``yield_to_timers``): every
  timer already due, and every ready callback, runs before the next slice.
- ``run_sliced_budget(total, slice_ms)`` slices by a time budget: the user
  picks the latency, the slice size follows from a measured iteration rate
  and adapts after every slice (so a slower machine or a busy core gets
  smaller slices; the size follows the slower of the recent trend and the
  last slice). Slices aim at ``AIM`` (80 %) of the budget: the budget is the
  longest the loop should wait, and a slice sized to take exactly the budget
  overshoots it whenever the machine hiccups (on a shared 2-core machine a
  slice now and then runs 2–4 ms longer than the one before). Same answer.
- Both accept ``should_stop`` (checked before each slice; a stop raises
  ``SliceStopped``) and ``on_slice(done, total)``
  for progress.

Refused: a non-positive or non-integer ``slice_size``; a ``slice_ms`` that is
not a positive finite number; a negative ``total``.

The calibration (``calibrate``, ``iterations_for_ms``) measures how many
iterations of the job this machine runs per millisecond.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from lanemon.work._kernel import check_size, check_total, hash_range

MIN_SLICE = 1_000
AIM = 0.8          # budgeted slices are sized to take this fraction of the budget
DEFAULT_SLICE_MS = 8.0   # the budget per slice when none is given (measure, the lanes' CPU works)
MAX_SLICE_MS = 1000.0    # the largest budget per slice (a second: the window's field allows no more)


async def yield_to_timers() -> None:
    """Yield so that every timer already due runs before we resume.

    ``asyncio.sleep(0)`` is not enough: the task's own wake-up is queued
    before the timers that fell due during the slice, so the next slice would
    run first and each timer would wait two slices. Waking up through a timer
    whose deadline is *now* puts us behind every timer due earlier (asyncio
    and Qt both fire due timers in deadline order).
    """
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.call_at(loop.time(), _wake, fut)
    await fut


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


@dataclass(frozen=True)
class SlicedResult:
    result: int
    slices: int
    mean_slice_size: float


class SliceStopped(Exception):
    """A sliced run stopped early because ``should_stop()`` said so."""


def _check_ms(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of milliseconds, got {value!r}")
    return float(value)


async def _run_slices(
    total: int,
    next_size: Callable[[int, float], int],
    on_slice: Callable[[int, int], None] | None,
    should_stop: Callable[[], bool] | None,
) -> SlicedResult:
    """The one slicing loop. ``next_size(iterations, ms)`` gives the next
    slice's size from the last slice's (``(0, 0.0)`` before the first)."""
    h = done = slices = 0
    size = next_size(0, 0.0)
    while done < total:
        if should_stop is not None and should_stop():
            raise SliceStopped(f"stopped at {done} of {total}")
        stop = min(total, done + size)
        t0 = time.perf_counter()
        h = hash_range(done, stop, h)
        size = next_size(stop - done, (time.perf_counter() - t0) * 1000.0)
        slices += 1
        done = stop
        if on_slice is not None:
            on_slice(done, total)
        await yield_to_timers()
    return SlicedResult(h, slices, total / slices if slices else 0.0)


async def run_sliced(
    total: int,
    slice_size: int,
    *,
    on_slice: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SlicedResult:
    """``hash_range(0, total)`` in ``ceil(total/slice_size)`` slices."""
    check_total(total)
    check_size(slice_size)
    return await _run_slices(total, lambda _n, _ms: slice_size, on_slice, should_stop)


async def run_sliced_budget(
    total: int,
    slice_ms: float = DEFAULT_SLICE_MS,
    *,
    on_slice: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SlicedResult:
    """``hash_range(0, total)`` in slices of about ``AIM * slice_ms`` each (at most ``slice_ms``
    unless the machine slows down within a slice). Refused (``ValueError``): a ``slice_ms``
    that is not a positive number up to ``MAX_SLICE_MS`` (a larger one overflowed the slice
    size: ``1e306`` ms)."""
    check_total(total)
    budget = _check_ms("slice_ms", slice_ms)
    if budget > MAX_SLICE_MS:
        raise ValueError(f"slice_ms must be at most {MAX_SLICE_MS:g} ms, got {slice_ms!r}")
    budget *= AIM
    rate = _rate_per_ms or None  # iterations per ms, refined after every slice
    size = max(MIN_SLICE, int(rate * budget)) if rate else MIN_SLICE

    def next_size(iterations: int, took_ms: float) -> int:
        nonlocal rate, size
        if iterations and took_ms > 0:  # else (first call, or too fast to time): keep the size
            observed = iterations / took_ms
            rate = observed if rate is None else 0.7 * rate + 0.3 * observed
            # size from the slower of the trend and the last slice: a slice
            # rarely overshoots its budget when the machine slows down
            size = max(MIN_SLICE, int(min(rate, observed) * budget))
        return size

    return await _run_slices(total, next_size, on_slice, should_stop)


# --- calibration -------------------------------------------------------------

_rate_per_ms: float = 0.0


def calibrate(sample_ms: float = 30.0) -> float:
    """Measure iterations per ms by running the job for about ``sample_ms``.

    Blocks the caller for about ``sample_ms`` (use ``calibrate_async`` on a
    live event loop). The result is cached for ``iterations_for_ms``.
    """
    global _rate_per_ms
    n = 10_000
    while True:
        t0 = time.perf_counter()
        hash_range(0, n)
        took = (time.perf_counter() - t0) * 1000.0
        if took >= sample_ms / 3 or n >= 50_000_000:
            break
        n *= 4
    # Best of three at that size: the least disturbed run is the machine's rate.
    best = took
    for _ in range(2):
        t0 = time.perf_counter()
        hash_range(0, n)
        best = min(best, (time.perf_counter() - t0) * 1000.0)
    _rate_per_ms = n / best
    return _rate_per_ms


async def calibrate_async(samples: int = 8, slice_ms: float = 4.0) -> float:
    """Like ``calibrate`` but in short pieces, yielding between them."""
    global _rate_per_ms
    n = 5_000
    best_rate = 0.0
    for _ in range(samples):
        t0 = time.perf_counter()
        hash_range(0, n)
        took = (time.perf_counter() - t0) * 1000.0
        if took > 0:
            rate = n / took
            best_rate = max(best_rate, rate)
            n = max(5_000, int(rate * slice_ms))
        await asyncio.sleep(0)
    _rate_per_ms = best_rate
    return best_rate


def iterations_per_ms() -> float:
    """The cached rate, calibrating (blocking ~30 ms) if there is none yet."""
    return _rate_per_ms or calibrate()


def iterations_for_ms(cpu_ms: float) -> int:
    """How many iterations take about ``cpu_ms`` of CPU on this machine."""
    ms = _check_ms("cpu_ms", cpu_ms)
    return max(1, int(round(iterations_per_ms() * ms)))
