"""Button -> domain call -> event: every run and measurement goes through here.

``RunController`` is the only place the window calls ``lanemon.work``. It
keeps the run records and this machine's figures, and tells views what
changed through two signals:

- ``changed()``: records or machine figures changed (views coalesce repaints);
- ``notice(str)``: a one-line message for the user ("a sliced run is already
  running", "blocking the loop for ~420 ms…", an error, a run's outcome);
- ``said(str, bool)``: the same messages with whether each is an error (the
  "blocking the loop" announcement is only a ``notice``: it is a run in
  flight, see ``in_flight_lines``), except runs' outcomes:
- ``outcome(str, bool)``: a run ended: its one-line outcome, and whether it is
  an error (also a ``notice``). ``started`` and ``ended`` count the runs
  started and ended, so a view can tell which messages are out of date.

Runs go through ``lanemon.work.run_job``, the one dispatch of a run by kind:
*whole* computes ``hash_range(0, total)`` on the loop (deliberately blocking,
after announcing it and letting the window paint; its time counts from when it
blocks); *sliced* slices by size or by a time budget; *worker* runs in a cold,
warm or thread worker (sliced and worker runs count their time from the
start). One run at a time per family (whole, sliced, worker): a second start of a family
whose run is in flight is refused (not queued) and the refusal says which run
is in flight and how to stop it. Each finished run's lag figures are the
heartbeat ticks fired during it plus the first tick after it (which measured a
whole run's stall).

Every run ends with one outcome message (``outcome`` and ``notice``): done (with
its time and result), failed (a worker that died says its pid and exit code),
cancelled, or timed out. A run whose work finished is recorded done with its
result even if a cancel (a close) came while it waited for the tick after it;
only a run actually interrupted is "cancelled". A start refused because the
window is closing says so.

``cancel()`` stops the sliced and worker runs in flight (a whole run holds the
loop: nothing can be clicked during it). A cancelled process worker is
stopped, even a hung (SIGSTOP) one, and the warm pool starts its replacement.
Worker runs also stop on their own after ``worker_timeout`` (``WorkerTimeout``:
``max(floor_s, factor x expected)``, the expected time from this machine's
calibration; ``None`` disables it); the outcome message says so.

History: ``records`` keeps at most ``max_records`` runs (``MAX_RECORDS`` by
default), the oldest dropped first, except runs in flight and the latest
finished run of each family (the report and the placement panel use them);
``dropped`` counts the runs dropped. The list object itself never changes (the
results table holds it).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from lanemon.tasks import cancel_and_wait
from lanemon.ui.heartbeat.timer import Heartbeat, lag_stats
from lanemon.ui.runs.model import RunRecord
from lanemon.work import (
    DEFAULT_THRESHOLD_MS,
    KINDS,
    RunResult,
    RunSpec,
    RunTimedOut,
    WorkerDied,
    calibrate_async,
    decide,
    run_job,
    spawn_cost_ms,
    threshold_from_startup,
    warm_pool,
    warm_roundtrip_ms,
)
from lanemon.work.lag import LagStats
from lanemon.work.report import build_report, slicing_figures

PAINT_PAUSE_S = 0.05      # before a whole run: let "blocking the loop…" paint
FLOOR_SETTLE_S = 0.3      # after start: let the first paints pass
FLOOR_WINDOW_S = 1.0      # idle floor: this long of idle ticks
MAX_RECORDS = 500         # runs kept in the history (see the module docstring)
# a whole run expected (by this machine's calibration) to hold the loop longer than this is
# asked about first (RunsPanel.run_whole): a talk never needs a minutes-long freeze
WHOLE_RUN_ASK_ABOVE_S = 3.0
CANCEL_HINT = "Esc or Cancel stops it"


@dataclass(frozen=True)
class WorkerTimeout:
    """When a worker run is stopped on its own: after ``max(floor_s, factor x expected)`` s.

    ``expected`` is the job at this machine's calibrated rate plus, for a
    process worker, its measured start-up (cold) or round trip (warm). Before
    the calibration there is no expected time: then only ``factor == 0`` (a
    fixed limit of ``floor_s``) applies, otherwise the run has no limit.
    """

    factor: float = 10.0
    floor_s: float = 30.0

    def seconds(self, expected_s: float | None) -> float | None:
        if expected_s is None:
            return self.floor_s if self.factor == 0 else None
        return max(self.floor_s, self.factor * expected_s)


WORKER_TIMEOUT = WorkerTimeout()


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
    said = Signal(str, bool)
    outcome = Signal(str, bool)

    def __init__(self, heartbeat: Heartbeat, parent: QObject | None = None, *,
                 max_records: int = MAX_RECORDS) -> None:
        super().__init__(parent)
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
            raise ValueError(f"max_records must be a positive integer, got {max_records!r}")
        self.heartbeat = heartbeat
        self.records: list[RunRecord] = []
        self.max_records = max_records
        self.dropped = 0           # runs dropped from ``records`` (oldest first)
        self._latest: dict[tuple[str, int | None], RunRecord] = {}   # (family, total or None) -> latest done
        self.started = 0           # runs started so far (a view's messages older than a start are stale)
        self.ended = 0             # runs ended so far
        self.worker_timeout: WorkerTimeout | None = WORKER_TIMEOUT
        self.machine = MachineFigures()
        self.phases: list[Phase] = []
        self.banner = ""           # "blocking the loop for ~N ms…" while a whole run is announced
        self._busy: dict[str, RunRecord] = {}
        self._run_tasks: dict[int, asyncio.Task] = {}
        self._cancel_asked: set[int] = set()
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

    def expected_s(self, total: int, kind: str) -> float | None:
        """How long a run of ``total`` by ``kind`` should take here, in s (``None``: not calibrated)."""
        est = self.estimate_ms(total)
        if est is None:
            return None
        m = self.machine
        extra = {"cold": m.cold_startup_ms, "warm": m.warm_roundtrip_ms}.get(kind) or 0.0
        return (est + extra) / 1000.0

    def whole_run_block_s(self, total: int) -> float | None:
        """The seconds a whole run of ``total`` is expected to hold the loop, when that is more
        than ``WHOLE_RUN_ASK_ABOVE_S`` (the window asks before such a run); ``None`` when it is
        not, and before the calibration (a length not known yet is not asked about: the
        calibration ends within the window's first second)."""
        expected = self.expected_s(total, "whole")
        return expected if expected is not None and expected > WHOLE_RUN_ASK_ABOVE_S else None

    def cancellable(self) -> list[RunRecord]:
        """The runs in flight that ``cancel()`` stops (sliced and worker)."""
        return [rec for family in ("sliced", "worker") if (rec := self._busy.get(family)) is not None]

    def in_flight_lines(self, now: float | None = None) -> list[str]:
        """One line per run in flight, saying what it is and how to stop it."""
        now = time.perf_counter() if now is None else now
        lines = []
        for family in ("whole", "sliced", "worker"):
            rec = self._busy.get(family)
            if rec is None:
                continue
            if family == "whole":
                lines.append(self.banner or f"Run #{rec.id} (whole): about to block the loop…")
            elif family == "sliced":
                lines.append(f"Run #{rec.id} (sliced): {100 * rec.progress:.0f}% done; {CANCEL_HINT}.")
            else:
                exp = f" of ~{_secs(rec.expected_s)}" if rec.expected_s is not None else ""
                limit = (f", stops by itself at {_secs(rec.timeout_s)}" if rec.timeout_s is not None
                         else ", no automatic stop (not calibrated yet)")
                lines.append(f"Run #{rec.id} ({rec.label}): running {_secs(now - rec.t_start)}{exp}; "
                             f"{CANCEL_HINT}{limit}.")
        return lines

    def latest(self, family: str, total: int | None = None) -> RunRecord | None:
        """The latest finished run of ``family`` (of ``total`` iterations, if given) still in
        the history; looked up, not searched (the panels ask on every refresh)."""
        return self._latest.get((family, total))

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

    def refuse_new_runs(self) -> None:
        """From now on no run starts, and a whole run that has not yet blocked never will
        (it ends "cancelled"). Only sets a flag: safe from a signal handler."""
        self._closing = True

    async def shutdown(self) -> None:
        """Cancel every run and measurement and wait for them to end."""
        self.refuse_new_runs()
        await cancel_and_wait(self._tasks)

    def cancel(self) -> list[RunRecord]:
        """Stop the sliced and worker runs in flight; the records that were asked to stop.

        Each ends "cancelled" (unless its work had already finished: then it
        is done) with its outcome message; a process worker is stopped, even a
        hung one, and the warm pool starts a replacement."""
        asked = []
        for rec in self.cancellable():
            task = self._run_tasks.get(rec.id)
            if task is not None and not task.done():
                self._cancel_asked.add(rec.id)
                task.cancel()
                asked.append(rec)
        return asked

    def _say(self, text: str, error: bool = True, *, outcome: bool = False) -> None:
        (self.outcome if outcome else self.said).emit(text, error)
        self.notice.emit(text)

    # --- starting runs -----------------------------------------------------------
    def _admit(self, spec: RunSpec) -> RunRecord | None:
        family = spec.family
        if self._closing:
            self._say(f"Not started: lanemon is closing (no new {family} run).")
            return None
        running = self._busy.get(family)
        if running is not None:
            what = f" ({100 * running.progress:.0f}% done)" if family == "sliced" else ""
            stop = f"; {CANCEL_HINT}" if family != "whole" else ""
            self._say(f"One {family} run at a time: run #{running.id} ({running.label}) is still running{what}{stop}.")
            return None
        rec = RunRecord(id=self._next_id, kind=spec.kind, total=spec.total, t_start=time.perf_counter(),
                        how=spec.how)
        self._next_id += 1
        self.started += 1
        self.records.append(rec)
        self._busy[family] = rec
        self._trim()
        self.changed.emit()
        return rec

    def _trim(self) -> None:
        """Drop the oldest runs beyond ``max_records`` (see the module docstring)."""
        excess = len(self.records) - self.max_records
        if excess <= 0:
            return
        keep = {id(rec) for rec in self._busy.values()}
        families = set()
        for rec in reversed(self.records):
            if rec.status == "done" and rec.family not in families:
                families.add(rec.family)
                keep.add(id(rec))
        drop = set()
        for rec in self.records:
            if len(drop) == excess:
                break
            if id(rec) not in keep:
                drop.add(id(rec))
        self.records[:] = [rec for rec in self.records if id(rec) not in drop]
        self.dropped += len(drop)
        for key in [k for k, rec in self._latest.items() if id(rec) in drop]:
            del self._latest[key]        # a size's latest run left the history: none is known now

    def _start(self, rec: RunRecord, spec: RunSpec) -> None:
        self._run_tasks[rec.id] = self._spawn(self._run(rec, spec))

    def start_whole(self, total: int) -> RunRecord | None:
        spec = RunSpec("whole", total)
        rec = self._admit(spec)
        if rec is not None:
            self._start(rec, spec)
        return rec

    def start_sliced(self, total: int, *, slice_size: int | None = None,
                     slice_ms: float | None = None) -> RunRecord | None:
        if (slice_size is None) == (slice_ms is None):
            raise ValueError("give exactly one of slice_size and slice_ms")
        spec = RunSpec("sliced", total, slice_size=slice_size, slice_ms=slice_ms)
        rec = self._admit(spec)
        if rec is not None:
            self._start(rec, spec)
        return rec

    def start_worker(self, total: int, kind: str) -> RunRecord | None:
        if kind not in KINDS:
            raise ValueError(f"unknown worker kind {kind!r}")
        spec = RunSpec(kind, total)
        rec = self._admit(spec)
        if rec is not None:
            rec.expected_s = self.expected_s(total, kind)
            rec.timeout_s = self.worker_timeout.seconds(rec.expected_s) if self.worker_timeout else None
            self._start(rec, spec)
        return rec

    # --- running: lanemon.work.run_job; what is the window's own is said here ------------
    async def _whole(self, rec: RunRecord, spec: RunSpec) -> RunResult:
        """Announce the whole run, let the window paint, then block: ``rec.t_start`` is when
        it blocks."""
        est = self.estimate_ms(rec.total)
        self.banner = (f"Blocking the loop for ~{est:,.0f} ms (run #{rec.id}, whole)…" if est is not None
                       else f"Blocking the loop (run #{rec.id}, whole)…")
        self.notice.emit(self.banner)
        self.changed.emit()
        try:
            await asyncio.sleep(PAINT_PAUSE_S)   # let the banner paint before we block
            await asyncio.sleep(0)

            def blocks(t: float) -> None:
                if self._closing:  # e.g. a signal arrived during the paint pause
                    raise asyncio.CancelledError("lanemon is closing")
                rec.t_start = t

            return await run_job(spec, on_start=blocks)
        finally:
            self.banner = ""

    def _dispatch(self, rec: RunRecord, spec: RunSpec):
        """The coroutine that runs ``spec`` as ``rec`` (a sliced run's progress kept in it)."""
        if spec.kind == "whole":
            return self._whole(rec, spec)

        def progress(done: int, all_: int) -> None:
            rec.progress = done / all_ if all_ else 1.0

        return run_job(spec, on_slice=progress, timeout_s=rec.timeout_s)

    async def _run(self, rec: RunRecord, spec: RunSpec) -> None:
        """Run ``spec`` as ``rec``; record how it ended and say so."""
        finished = died = False
        try:
            ran = await self._dispatch(rec, spec)
            finished = True
            rec.t_end = ran.t_end
            rec.work_ms = (rec.t_end - rec.t_start) * 1000.0
            rec.result, rec.slices, rec.progress = ran.result, ran.slices, 1.0
            self.changed.emit()
            # the first tick after the run measured a whole run's stall: wait for it
            await self.heartbeat.wait_tick_after(rec.t_end)
            self._finish(rec)
        except asyncio.CancelledError:
            if not finished:
                rec.status = "cancelled"
                raise
            # finished is finished: the cancel (a close) only cut the wait for the tick that
            # measured the run's stall; that tick is due now (the heartbeat still runs)
            try:
                await self.heartbeat.wait_tick_after(rec.t_end, timeout_s=0.5)
            except asyncio.CancelledError:
                pass
            self._finish(rec)
            raise
        except RunTimedOut as exc:
            rec.status = "timed out"
            rec.error = f"no answer after {_secs(exc.seconds)}"
        except Exception as exc:
            rec.status = "failed"
            rec.error = f"{type(exc).__name__}: {exc}"
            died = isinstance(exc, WorkerDied)
        finally:
            if rec.t_end is None:
                rec.t_end = time.perf_counter()
            self._busy.pop(rec.family, None)
            self._run_tasks.pop(rec.id, None)
            by_user = rec.id in self._cancel_asked
            self._cancel_asked.discard(rec.id)
            self.ended += 1
            if not (self._closing and rec.status == "cancelled"):
                text, error = self._outcome(rec, by_user, died)
                self._say(text, error, outcome=True)
            self.changed.emit()

    def _finish(self, rec: RunRecord) -> None:
        rec.stats = lag_stats(self.heartbeat.in_range(rec.t_start, rec.t_end))
        rec.status = "done"
        self._place(rec)
        for key in ((rec.family, None), (rec.family, rec.total)):
            old = self._latest.get(key)
            if old is None or old.id < rec.id:     # runs can end out of order
                self._latest[key] = rec

    def _outcome(self, rec: RunRecord, by_user: bool, died: bool = False) -> tuple[str, bool]:
        """The one-line outcome of an ended run, and whether it is an error."""
        head = f"Run #{rec.id} ({rec.label})"
        process = rec.kind in ("cold", "warm")
        replaced = "; the warm pool starts a replacement" if rec.kind == "warm" else ""
        if rec.status == "done":
            return f"{head} done in {rec.work_ms:,.1f} ms, result {rec.result}.", False
        if rec.status == "timed out":
            stopped = f"its worker process was stopped{replaced}" if process else "the thread stops at its next check"
            expected = f" (expected ~{_secs(rec.expected_s)})" if rec.expected_s is not None else ""
            return (f"{head} timed out: {rec.error}{expected}; {stopped}. "
                    f"Was the worker stopped or the machine very busy?"), True
        if rec.status == "cancelled":
            if rec.family == "sliced":
                return f"{head} cancelled at {100 * rec.progress:.0f}%.", not by_user
            if process:
                return f"{head} cancelled: its worker process was stopped{replaced}.", not by_user
            if rec.family == "worker":
                return f"{head} cancelled: the thread stops at its next check.", not by_user
            return f"{head} cancelled.", not by_user
        if died:
            return f"{head} failed: {rec.error}{replaced}.", True
        return f"{head} failed: {rec.error}", True

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


def _secs(s: float | None) -> str:
    """A duration for a message: "0.42 s", "3.1 s", "42 s", "3 min 20 s"."""
    if s is None:
        return "?"
    if s < 1:
        return f"{s:.2f} s"
    if s < 10:
        return f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    return f"{int(s // 60)} min {int(s % 60)} s"
