"""Pluggable work: what a dispatched reservation actually does.

A *work* is any object with ``async def run(self, ctx: RunContext)`` (and,
optionally, ``describe() -> str``).  The scheduler calls it **outside** the
record lock, with the job's lanes held.

Contract with the scheduler
---------------------------
* Returning normally -> the job ends ``succeeded`` (the return value is kept
  as the job's result, shown in snapshots as a short string).
* Raising :class:`StopRequested` (what ``ctx.checkpoint()`` raises once a stop
  was requested through the lane) -> ``cancelled``.
* Raising anything else -> ``failed``, the error text recorded.
* A stop request is honoured only at a checkpoint: work that never calls
  ``ctx.checkpoint()`` runs to its end.  The works here checkpoint before
  they start, between steps/slices, and after they finish.
* Work that only waits should wait with ``await ctx.wait_stop(seconds)``
  (then ``ctx.checkpoint()``) rather than poll: the wait ends at once when a
  stop is requested (or the lane is lost), with one timer for the whole wait
  instead of a wake-up per step.

Works provided
--------------
* :class:`SimulatedWork` - a duration (``0`` = zero-time work, which never
  suspends), optionally failing at the end.
* :class:`GatedWork` - runs until its gate is opened (tests, demos).
* :class:`CpuWork` - a CPU job from :mod:`lanemon.work` placed by
  ``lanemon.work.place()`` on the loop (blocks it: the heartbeat shows it),
  sliced by a time budget, or in a worker process.  ``lanemon.work`` is
  imported lazily, when such a job first runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from lanemon.lanes.deadlines import for_loop

__all__ = [
    "StopRequested", "WorkFailed", "RunContext", "Work",
    "SimulatedWork", "GatedWork", "CpuWork", "as_work", "ZERO_WORK",
]


class StopRequested(Exception):
    """Raised by ``RunContext.checkpoint()`` when the lane asks to stop."""


class WorkFailed(Exception):
    """A simulated failure of the work itself."""


class RunContext:
    """What a running work can see: its identity and its stop request."""

    __slots__ = ("job_id", "workspace", "queue", "run_id", "_tokens", "_note")

    def __init__(self, job_id: int, workspace: str, queue: str, run_id: str,
                 tokens: tuple, note: Callable[[str, Any], None] | None = None) -> None:
        self.job_id = job_id
        self.workspace = workspace
        self.queue = queue
        self.run_id = run_id
        self._tokens = tokens
        self._note = note

    def stop_requested(self) -> bool:
        """True once a stop was requested on any lane this run holds, or a
        lane was lost (revoked)."""
        for t in self._tokens:
            if t.lanes.stop_requested(t):
                return True
        return False

    def checkpoint(self) -> None:
        """Raise :class:`StopRequested` if a stop was requested."""
        for t in self._tokens:
            if t.lanes.stop_requested(t):
                raise StopRequested(f"stop requested for {self.workspace!r}")

    async def wait_stop(self, timeout: float) -> bool:  # noqa: ASYNC109 (the simulated work's own duration)
        """Wait up to ``timeout`` seconds, ending early - at once - when a stop is
        requested on a lane this run holds (or a lane is lost).

        True when a stop was requested.  No polling: the lanes wake the wait
        (``ProjectLanes.add_stop_waiter``); the timeout is a deadline in the loop's
        one heap (``lanemon.lanes.deadlines``: one loop timer for all the runs that
        wait, fired in batches, never early, at most ~4 ms late).
        """
        if self.stop_requested():
            return True
        if timeout <= 0:
            return False
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        tokens = self._tokens
        for t in tokens:
            t.lanes.add_stop_waiter(t, fut)
        deadlines = for_loop(loop)
        entry = deadlines.add(timeout, _resolve, fut)
        try:
            await fut
        finally:
            deadlines.cancel(entry)
            for t in tokens:
                t.lanes.remove_stop_waiter(t, fut)
        return self.stop_requested()

    def note(self, key: str, value: Any) -> None:
        """Attach an observation (e.g. ``placement``) to the job."""
        if self._note is not None:
            self._note(key, value)


def _resolve(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(False)


@runtime_checkable
class Work(Protocol):
    async def run(self, ctx: RunContext) -> Any: ...


class SimulatedWork:
    """Simulated work of ``duration`` seconds.

    A stop request is honoured at once: by default the work waits with
    ``ctx.wait_stop(duration)``, which the lane wakes on a stop request (one
    timer per run, no polling), then checkpoints.  ``duration == 0`` runs
    without suspending (one checkpoint).  ``fail`` makes it raise
    :class:`WorkFailed` with that text at the end.

    With an injected ``sleep`` (tests, demos) it instead sleeps in steps of
    ``step`` seconds, checkpointing after each one.
    """

    __slots__ = ("duration", "fail", "step", "_sleep")

    def __init__(self, duration: float = 0.0, *, fail: str | None = None, step: float = 0.05,
                 sleep: Callable[[float], Any] | None = None) -> None:
        if duration < 0 or step <= 0:
            raise ValueError("duration must be >= 0 and step > 0")
        self.duration = float(duration)
        self.fail = fail
        self.step = float(step)
        self._sleep = sleep

    def describe(self) -> str:
        s = f"sim {self.duration * 1000:.0f} ms"
        return s + " (fails)" if self.fail else s

    async def run(self, ctx: RunContext) -> None:
        ctx.checkpoint()
        remaining = self.duration
        if self._sleep is None and remaining > 0:
            wait_stop = getattr(ctx, "wait_stop", None)
            if wait_stop is not None:
                await wait_stop(remaining)
                ctx.checkpoint()
                remaining = 0.0
        sleep = self._sleep or asyncio.sleep
        while remaining > 0:
            d = self.step if remaining > self.step else remaining
            await sleep(d)
            remaining -= d
            ctx.checkpoint()
        if self.fail is not None:
            raise WorkFailed(self.fail)
        return None


class GatedWork:
    """Runs until ``open()``; then checkpoints and succeeds (or fails).

    ``started`` is set when the run begins (a gate for tests and demos).
    """

    def __init__(self, *, fail: str | None = None) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.fail = fail

    def describe(self) -> str:
        return "gated"

    def open(self) -> None:
        self.gate.set()

    async def run(self, ctx: RunContext) -> None:
        ctx.checkpoint()
        self.started.set()
        await self.gate.wait()
        ctx.checkpoint()
        if self.fail is not None:
            raise WorkFailed(self.fail)


class CpuWork:
    """A CPU job of ``cpu_ms`` (calibrated on this machine) from lanemon.work.

    ``where`` forces a placement (``"loop"``, ``"slice"``, ``"worker"``);
    by default ``lanemon.work.place({"cpu_ms", "shared_state"}, threshold_ms)``
    decides (``threshold_ms`` ``None``: ``lanemon.work.DEFAULT_THRESHOLD_MS``).
    The job then runs through ``lanemon.work.run_job``, the one dispatch of a
    run: ``loop`` as a whole run (it blocks the loop: the heartbeat shows it),
    ``slice`` as a sliced run of ``slice_ms`` per slice (``None``:
    ``lanemon.work.DEFAULT_SLICE_MS``), ``worker`` in a ``worker_kind`` worker.

    Notes on the job (``ctx.note``): ``placement`` (the word above) before the
    job runs, so that it shows in snapshots and events next to the heartbeat;
    for a sliced run that ends, ``slices`` (how many slices it took, an int).
    A stop request is honoured before the job, between slices of a sliced run
    (``StopRequested``), and after the job.
    """

    PLACES = ("loop", "slice", "worker")
    KIND_OF_PLACE = {"loop": "whole", "slice": "sliced"}   # "worker": ``worker_kind``

    def __init__(self, cpu_ms: float, *, shared_state: bool = False, where: str | None = None,
                 threshold_ms: float | None = None, slice_ms: float | None = None,
                 worker_kind: str = "warm") -> None:
        if where is not None and where not in self.PLACES:
            raise ValueError(f"where must be one of {self.PLACES}, not {where!r}")
        self.cpu_ms = cpu_ms
        self.shared_state = shared_state
        self.where = where
        self.threshold_ms = threshold_ms
        self.slice_ms = slice_ms
        self.worker_kind = worker_kind

    def describe(self) -> str:
        return f"cpu {self.cpu_ms:g} ms" + (f" @{self.where}" if self.where else "")

    def placement(self) -> str:
        if self.where is not None:
            return self.where
        from lanemon import work as W  # lazy: lanemon.lanes never needs it otherwise

        threshold = W.DEFAULT_THRESHOLD_MS if self.threshold_ms is None else self.threshold_ms
        return W.place({"cpu_ms": self.cpu_ms, "shared_state": self.shared_state},
                       threshold_ms=threshold)

    def spec(self, where: str, total: int) -> Any:
        """The ``lanemon.work.RunSpec`` of this job placed at ``where``, over ``total`` iterations."""
        from lanemon import work as W

        if where == "slice":
            return W.RunSpec("sliced", total, slice_ms=self.slice_ms)
        return W.RunSpec(self.KIND_OF_PLACE.get(where, self.worker_kind), total)

    async def run(self, ctx: RunContext) -> Any:
        from lanemon import work as W

        where = self.placement()
        ctx.note("placement", where)
        ctx.checkpoint()
        spec = self.spec(where, W.iterations_for_ms(self.cpu_ms))
        try:
            ran = await W.run_job(spec, should_stop=ctx.stop_requested if where == "slice" else None)
        except W.SliceStopped as exc:       # a stop honoured between slices
            raise StopRequested(str(exc)) from exc
        if ran.slices is not None:
            ctx.note("slices", ran.slices)
        ctx.checkpoint()
        return ran.result


ZERO_WORK = SimulatedWork(0.0)


def as_work(work: Any) -> Any:
    """``None`` -> zero-time work; a number -> ``SimulatedWork(seconds)``;
    an object with ``run`` -> itself."""
    if work is None:
        return ZERO_WORK
    if isinstance(work, (int, float)) and not isinstance(work, bool):
        return SimulatedWork(float(work))
    if callable(getattr(work, "run", None)):
        return work
    raise TypeError(f"not a work: {work!r}")
