"""Event-loop lag on plain asyncio, and the statistics every view shares.

The **lag** of a tick is how late a periodic timer fired compared with when it
was due. A block of N ms shows up as one tick about N ms late (the first tick
after the block), so a run's ``max`` is its longest stall. A blocked loop takes
no samples while blocked, which is why ``late_ms`` (the total time spent late)
and ``max`` are reported beside the percentiles.

``LagRecorder`` re-arms a one-shot ``loop.call_at`` every ``period_ms`` (about
1 ms by default) from the moment it actually fired, so a stall is one late
tick, never a burst of catch-up ticks. This is for the CLI and tests on plain
asyncio; the window uses a precise Qt timer instead (qasync rounds
``call_later`` to whole milliseconds).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass

from lanemon.stats import percentile


@dataclass(frozen=True)
class LagStats:
    samples: int
    p50: float
    p99: float
    max: float
    late_ms: float

    def as_dict(self, digits: int = 3) -> dict:
        return {k: (round(v, digits) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def summarize(lags_ms: Iterable[float]) -> LagStats:
    """Samples, p50, p99, max and total lateness of some lag values (ms)."""
    values = sorted(lags_ms)
    return LagStats(
        samples=len(values),
        p50=percentile(values, 50),
        p99=percentile(values, 99),
        max=values[-1] if values else 0.0,
        late_ms=sum(values),
    )


class LagRecorder:
    """Records the loop's lag while active (``async with LagRecorder() as r``).

    Leaving the block waits for one more tick, so a block that ended just
    before is recorded.
    """

    def __init__(self, period_ms: float = 1.0) -> None:
        if not (isinstance(period_ms, (int, float)) and not isinstance(period_ms, bool)) or not period_ms > 0:
            raise ValueError(f"period_ms must be a positive number, got {period_ms!r}")
        self.period = period_ms / 1000.0
        self.lags_ms: list[float] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._waiters: list[asyncio.Future] = []

    def _arm(self) -> None:
        self._due = self._loop.time() + self.period
        self._handle = self._loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        self.lags_ms.append(max(0.0, (self._loop.time() - self._due) * 1000.0))
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)
        self._arm()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._arm()

    async def next_tick(self) -> None:
        """Wait until the recorder has recorded one more tick."""
        fut = self._loop.create_future()
        self._waiters.append(fut)
        await fut

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def stats(self) -> LagStats:
        return summarize(self.lags_ms)

    async def __aenter__(self) -> LagRecorder:
        self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                await self.next_tick()
        finally:
            self.stop()


async def timed_with_lag(job: Callable[[], Awaitable[object] | object], period_ms: float = 1.0,
                         settle_s: float = 0.01) -> tuple[float, LagStats, object]:
    """Run ``job()`` (sync or async) under a ``LagRecorder``: (work ms, lag, result).

    The recorder runs ``settle_s`` before the job starts, and (leaving its
    block) records the first tick after the job: a blocking job's stall.
    """
    async with LagRecorder(period_ms) as rec:
        await asyncio.sleep(settle_s)
        t0 = time.perf_counter()
        result = job()
        if asyncio.iscoroutine(result):
            result = await result
        work_ms = (time.perf_counter() - t0) * 1000.0
    return work_ms, rec.stats(), result
