"""Button -> domain call -> event: every run and measurement goes through here.

``RunController`` is the only place the window calls ``lanemon.work``. It
keeps the run records and this machine's figures, and tells views what
changed through two signals:

- ``changed()``: records or machine figures changed (views coalesce repaints);
- ``notice(str)``: a one-line message for the user ("a sliced run is already
  running", "blocking the loop for ~420 ms…", an error).

Runs: *whole* calls ``hash_range(0, total)`` on the loop (deliberately
blocking, after announcing it and letting the window paint); *sliced* awaits
``run_sliced`` / ``run_sliced_budget``; *worker* awaits ``run_in_worker``. One
run at a time per family (whole, sliced, worker); a refused start says why.
Each finished run's lag figures are the heartbeat ticks fired during it plus
the first tick after it (which measured a whole run's stall).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from lanemon.ui.heartbeat import Heartbeat, lag_stats
from lanemon.ui.runs_model import RunRecord
from lanemon.work import (
    DEFAULT_THRESHOLD_MS,
    KINDS,
    calibrate_async,
    decide,
    hash_range,
    run_in_worker,
    run_sliced,
    run_sliced_budget,
    spawn_cost_ms,
    threshold_from_startup,
    warm_pool,
    warm_roundtrip_ms,
)
from lanemon.work.lag import LagStats
from lanemon.tasks import cancel_and_wait
from lanemon.work.report import build_report, slicing_figures

PAINT_PAUSE_S = 0.05      # before a whole run: let "blocking the loop…" paint
FLOOR_SETTLE_S = 0.3      # after start: let the first paints pass
FLOOR_WINDOW_S = 1.0      # idle floor: this long of idle ticks


@dataclass
class MachineFigures:
    """What this machine measured at start (``None`` = not yet)."""

    rate_per_ms: float | None = None          # iterations of the job per ms
    floor: LagStats | None = None             # heartbeat lag when idle
    cold_startup_ms: float | None = None      # spawn_cost_ms()
    warm_roundtrip_ms: float | None = None    # warm_roundtrip_ms()
    errors: tuple[str, ...] = ()

    @property
    def threshold_cold(self) -> float:
        if self.cold_startup_ms is None:
            return DEFAULT_THRESHOLD_MS
        return threshold_from_startup(self.cold_startup_ms)

    @property
    def threshold_warm(self) -> float | None:
        if self.warm_roundtrip_ms is None:
            return None
        return threshold_from_startup(self.warm_roundtrip_ms)


@dataclass
class Phase:
    """A stretch of time the machine spent measuring itself (shaded grey on the chart)."""

    label: str
    t_start: float
    t_end: float | None = None


class RunController(QObject):
    changed = Signal()
    notice = Signal(str)

    def __init__(self, heartbeat: Heartbeat, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.heartbeat = heartbeat
        self.records: list[RunRecord] = []
        self.machine = MachineFigures()
        self.phases: list[Phase] = []
        self.banner = ""           # "blocking the loop for ~N ms…" while a whole run is announced
        self._busy: dict[str, RunRecord] = {}
        self._tasks: set[asyncio.Task] = set()
        self._next_id = 1
        self._closing = False

    # --- queries -----------------------------------------------------------------
    def busy(self, family: str) -> RunRecord | None:
        """The running record of ``family`` (whole, sliced, worker), if any."""
        return self._busy.get(family)

    def estimate_ms(self, total: int) -> float | None:
        rate = self.machine.rate_per_ms
        return total / rate if rate else None

    def iterations_for_ms(self, ms: float) -> int | None:
        rate = self.machine.rate_per_ms
        return max(1, int(round(rate * ms))) if rate else None

    def latest(self, family: str, total: int | None = None) -> RunRecord | None:
        for rec in reversed(self.records):
            if rec.status == "done" and rec.family == family and (total is None or rec.total == total):
                return rec
        return None

    # --- tasks ---------------------------------------------------------------------
    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            self.notice.emit(f"error: {type(exc).__name__}: {exc}")

    async def shutdown(self) -> None:
        """Cancel every run and measurement and wait for them to end."""
        self._closing = True
        await cancel_and_wait(self._tasks)

    # --- starting runs -----------------------------------------------------------
    def _admit(self, family: str, kind: str, total: int, how: str = "") -> RunRecord | None:
        if self._closing:
            return None
        running = self._busy.get(family)
        if running is not None:
            what = f" ({100 * running.progress:.0f}% done)" if family == "sliced" else ""
            self.notice.emit(f"One {family} run at a time: run #{running.id} ({running.label}) is still running{what}.")
            return None
        rec = RunRecord(id=self._next_id, kind=kind, total=total, t_start=time.perf_counter(), how=how)
        self._next_id += 1
        self.records.append(rec)
        self._busy[family] = rec
        self.changed.emit()
        return rec

    def start_whole(self, total: int) -> RunRecord | None:
        rec = self._admit("whole", "whole", total, "one piece, on the loop")
        if rec is not None:
            self._spawn(self._run(rec, lambda: self._whole_body(rec)))
        return rec

    def start_sliced(self, total: int, *, slice_size: int | None = None,
                     slice_ms: float | None = None) -> RunRecord | None:
        if (slice_size is None) == (slice_ms is None):
            raise ValueError("give exactly one of slice_size and slice_ms")
        how = f"slices of {slice_size:,}" if slice_size is not None else f"slices of at most ~{slice_ms:g} ms"
        rec = self._admit("sliced", "sliced", total, how)
        if rec is None:
            return None

        def progress(done: int, all_: int) -> None:
            rec.progress = done / all_ if all_ else 1.0

        if slice_size is not None:
            body = lambda: self._sliced_body(run_sliced(total, slice_size, on_slice=progress))  # noqa: E731
        else:
            body = lambda: self._sliced_body(run_sliced_budget(total, slice_ms, on_slice=progress))  # noqa: E731
        self._spawn(self._run(rec, body))
        return rec

    def start_worker(self, total: int, kind: str) -> RunRecord | None:
        if kind not in KINDS:
            raise ValueError(f"unknown worker kind {kind!r}")
        rec = self._admit("worker", kind, total, f"{kind} worker")
        if rec is not None:
            self._spawn(self._run(rec, lambda: self._worker_body(total, kind)))
        return rec

    # --- run bodies: each returns (result, slices) -----------------------------------
    async def _whole_body(self, rec: RunRecord):
        est = self.estimate_ms(rec.total)
        self.banner = (f"Blocking the loop for ~{est:,.0f} ms…" if est is not None
                       else "Blocking the loop…")
        self.notice.emit(self.banner)
        self.changed.emit()
        try:
            await asyncio.sleep(PAINT_PAUSE_S)   # let the banner paint before we block
            await asyncio.sleep(0)
            rec.t_start = time.perf_counter()
            return hash_range(0, rec.total), None
        finally:
            self.banner = ""

    @staticmethod
    async def _sliced_body(job):
        res = await job
        return res.result, res.slices

    @staticmethod
    async def _worker_body(total: int, kind: str):
        return await run_in_worker(total, kind), None

    async def _run(self, rec: RunRecord, body) -> None:
        """Run ``body()`` (a coroutine factory returning ``(result, slices)``) as ``rec``."""
        try:
            result, slices = await body()
            rec.t_end = time.perf_counter()
            rec.work_ms = (rec.t_end - rec.t_start) * 1000.0
            rec.result, rec.slices, rec.progress = result, slices, 1.0
            self.changed.emit()
            # the first tick after the run measured a whole run's stall: wait for it
            await self.heartbeat.wait_tick_after(rec.t_end)
            rec.stats = lag_stats(self.heartbeat.in_range(rec.t_start, rec.t_end))
            rec.status = "done"
            self._place(rec)
        except asyncio.CancelledError:
            rec.status = "cancelled"
            raise
        except Exception as exc:
            rec.status = "failed"
            rec.error = f"{type(exc).__name__}: {exc}"
            self.notice.emit(f"Run #{rec.id} ({rec.label}) failed: {rec.error}")
        finally:
            if rec.t_end is None:
                rec.t_end = time.perf_counter()
            self._busy.pop(rec.family, None)
            self.changed.emit()

    def _place(self, rec: RunRecord) -> None:
        job = {"cpu_ms": rec.work_ms, "shared_state": False}
        rec.placement_cold = decide(job, self.machine.threshold_cold)
        warm = self.machine.threshold_warm
        rec.placement_warm = decide(job, warm) if warm is not None else None

    # --- this machine --------------------------------------------------------------
    def start_measurements(self) -> asyncio.Task:
        """Calibrate, measure the idle floor, cold start-up and warm round trip."""
        return self._spawn(self._measure_machine())

    async def _measure_machine(self) -> None:
        m = self.machine
        # the window's first layout and paint stall the loop once: shade it, say what it is
        start = Phase("window start-up", time.perf_counter())
        self.phases.append(start)
        await self.heartbeat.wait_tick_after(start.t_start, timeout_s=10.0)
        start.t_end = time.perf_counter()
        m.rate_per_ms = await calibrate_async()
        self.changed.emit()
        await asyncio.sleep(FLOOR_SETTLE_S)
        t0 = time.perf_counter()
        await asyncio.sleep(FLOOR_WINDOW_S)
        m.floor = lag_stats(self.heartbeat.in_range(t0, time.perf_counter(), one_after=False))
        self.changed.emit()
        phase = Phase("measuring worker start-up", time.perf_counter())
        self.phases.append(phase)
        try:
            # lanemon.work starts processes off the loop (forkserver included)
            m.cold_startup_ms = await spawn_cost_ms()
            self.changed.emit()
            await warm_pool().astart()
            m.warm_roundtrip_ms = await warm_roundtrip_ms()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            m.errors += (f"{type(exc).__name__}: {exc}",)
            self.notice.emit(f"worker start-up could not be measured: {exc}")
        finally:
            phase.t_end = time.perf_counter()
        self.changed.emit()

    # --- the report -------------------------------------------------------------------
    def slicing_figures(self) -> dict | None:
        """costRatio / tailRatio / sliceMs of the latest whole and sliced runs of one size."""
        sliced = self.latest("sliced")
        whole = self.latest("whole", sliced.total) if sliced else None
        if whole is None:
            return None
        return slicing_figures(whole.entry(), sliced.entry())

    def report(self) -> dict:
        """The seed-shaped report from the latest whole, sliced and worker runs of one size.

        Raises ``ValueError`` saying what is missing.
        """
        done = [r for r in reversed(self.records) if r.status == "done"]
        if not done:
            raise ValueError("No run yet: run whole, sliced and worker on the same job size first.")
        for total in dict.fromkeys(r.total for r in done):
            runs = {f: self.latest(f, total) for f in ("whole", "sliced", "worker")}
            if all(runs.values()):
                if self.machine.cold_startup_ms is None:
                    raise ValueError("Worker start-up is not measured yet; try again in a moment.")
                return build_report(total, runs["whole"].entry(), runs["sliced"].entry(),
                                    runs["worker"].entry(), self.machine.cold_startup_ms)
        total = done[0].total
        missing = [f for f in ("whole", "sliced", "worker") if self.latest(f, total) is None]
        raise ValueError(f"The report needs a whole, a sliced and a worker run of the same size; "
                         f"for {total:,} iterations, still missing: {', '.join(missing)}.")
