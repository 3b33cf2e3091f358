"""``lanemon bench soak --minutes N``: the window used like a person would, for N minutes.

Not part of ``lanemon bench all`` (it takes minutes): run it by name.

The full window runs offscreen (1280×800) on the qasync loop, as the
``lanemon`` command runs it (``lanemon.ui.tools.testing.run_window``: ``app.main``,
then the window closed and shut down as a user's quit does, worker processes
stopped). Once its start-up measurements are done, a seeded script acts on it
through the methods its buttons and shortcuts call (a ``QAction`` triggered,
a button clicked, a spin box set), never through private fields:

- runs: whole, sliced, worker (cold, warm, thread) of 100, 200 or 300 CPU ms
  (one size per cycle, so the report can be exported); a whole run blocks
  the loop deliberately, so the driver waits for it to end, and a run of a
  family still running is waited for before the next is started (its button
  would refuse);
- lanes: bursts of 12-24 simulated jobs (0.2-1 s, some whose work fails) over
  4-8 workspaces, followed either by "fail next save" on one of them or by
  "hold final save" on another; "release save" later releases the oldest hold
  whose save is waiting (else it asks for the oldest hold, and the view says
  there is nothing to release yet);
- counters: start (strategy chosen by the seed), stop, "compare all three"
  (300 customers: the form's live run is endless);
- presenter mode (F5) and chart pause (Space) toggled, tabs switched (and the
  tab of each control shown before it is used);
- exports: the report (Ctrl+E, JSON), the heartbeat CSV, the chart PNG, into
  a temporary folder (the save dialog answers with a path there; it is
  deleted afterwards).

The actions are spread evenly over the N minutes (one every ``GAP_S``
seconds), in cycles that each hold every kind once in a seeded order (a hold
before its release, a counters start before its stop); at least one whole
cycle is planned however short the soak, so every kind runs. An action that
runs late delays the ones after it; the soak ends when the time is up and
every planned action was done. Before the window closes every hold is
released ("release save" with no job chosen: every hold), presenter mode and
the chart pause are turned off, as a user leaving would.

Figures, per bucket of ``min(60 s, N min / 6)`` (so a short soak still has
six; a bucket closes once no whole run is under way and stays open half a
bucket at least, so late closes shift the next), from the window's own
heartbeat (``window.heartbeat``, 10 ms):

- RSS at the bucket's end (``/proc/self/statm``; "n/a" where there is none),
  in MB of 2^20 bytes;
- ``len(gc.get_objects())`` at the bucket's end, as the application's own
  collector left them (no collection is forced; ``app.main`` froze the
  window's start-up objects, which are not counted);
- heartbeat p99 and longest stall of the bucket's ticks **outside deliberate
  whole runs**: the ticks fired during a whole run and the first after it (the
  one that measured its stall; ``RunController``'s own ``t_start``/``t_end``
  of the run) are left out, and so is the first tick after the bench's own
  sample (RSS + gc count), whose cost is printed; the whole runs' stalls are
  printed beside them;
- actions done in the bucket;
- beside the longest stall, the last action started before it began and how
  long before ("presenter +0.00 s"): where to look first.

Then the least-squares slopes per minute of each half (RSS MB/min, gc
objects/min, p99 ms/min; the second half is the last ``ceil(n/2)`` buckets)
and the goals: RSS slope in the second half ≤ 0.2 MB/min; heartbeat p99 not
rising in the second half (the fitted rise across it, slope × its length,
≤ 1 ms: the tolerance ``bench ui`` uses for "within 1 ms of idle"); longest
stall outside whole runs, over the whole soak, ≤ 100 ms. Last: the actions
done per kind, the holds set / released / still held at quit, the save
dialogs answered and the files written, how long the quit took and how many
worker and child processes were left after it (expected: none).
"""

from __future__ import annotations

import asyncio
import gc
import math
import os
import random
import tempfile
import time
from dataclasses import dataclass, field

from lanemon.bench._common import child_processes, goal
from lanemon.procs import alive
from lanemon.tasks import sleep_until

DEFAULT_MINUTES = 10.0
MIN_BUCKETS = 6
MAX_BUCKET_S = 60.0
GAP_S = 2.0                 # one action every this many seconds
SEED = 20
RUN_MS = (100, 200, 300)    # CPU ms of the runs (whole runs stay short)
BURST_JOBS = (12, 24)
BURST_WS = (4, 8)
JOB_S = (0.2, 1.0)          # simulated job length
FAILING_WORK = 0.3          # share of bursts whose work fails
FAMILY_WAIT_S = 120.0       # a run still running after this long: the soak stops, saying so
WHOLE_WAIT_S = 60.0

RSS_GOAL_MB_PER_MIN = 0.2
P99_RISE_GOAL_MS = 1.0
STALL_GOAL_MS = 100.0

# every kind of action the script takes; a cycle holds each once
KINDS = ("whole", "sliced", "worker_cold", "worker_warm", "worker_thread",
         "burst_fail", "burst_hold", "release",
         "counters_start", "counters_stop", "compare",
         "presenter", "pause", "tab",
         "export_report", "export_csv", "export_png")
# (earlier, later): within a cycle the first comes before the second
ORDER = (("burst_hold", "release"), ("counters_start", "counters_stop"))
TABS = ("runs", "placement", "lanes", "counters")
MB = float(1 << 20)


# --- pure helpers (tested on known numbers) ----------------------------------------------------

def bucket_seconds(minutes: float) -> float:
    """The bucket length: a minute, or a sixth of the soak when it is shorter than six minutes."""
    return min(MAX_BUCKET_S, minutes * 60.0 / MIN_BUCKETS)


def bucket_count(minutes: float) -> int:
    """How many buckets: the last may be shorter (its end is the soak's end)."""
    return max(MIN_BUCKETS, math.ceil(minutes * 60.0 / bucket_seconds(minutes) - 1e-9))


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ``ys`` over ``xs`` (``None`` for fewer than two points or
    when every x is the same)."""
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"{n} xs for {len(ys)} ys")
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def halves(n: int) -> tuple[range, range]:
    """Bucket indices of the first and the second half (the second gets the odd one)."""
    mid = n // 2
    return range(mid), range(mid, n)


def plan(seconds: float, gap_s: float, rng: random.Random) -> list[tuple[float, str]]:
    """The script: ``(seconds from the start, kind)``, evenly spread, at least one whole cycle.

    Each cycle is every kind once, shuffled by ``rng``, then mended so that each pair of
    ``ORDER`` comes in order."""
    count = max(len(KINDS), int(seconds / gap_s))
    kinds: list[str] = []
    while len(kinds) < count:
        c = list(KINDS)
        rng.shuffle(c)
        for first, later in ORDER:
            i, j = c.index(first), c.index(later)
            if i > j:
                c[i], c[j] = c[j], c[i]
        kinds.extend(c)
    kinds = kinds[:count]
    step = seconds / count
    return [(i * step, k) for i, k in enumerate(kinds)]


def excluded(t, intervals):
    """Mask (numpy bool) of the ticks at times ``t`` (ascending) that fell in one of
    ``intervals`` ``(a, b)`` or were the first after its end (the one that measured it)."""
    import numpy as np

    mask = np.zeros(t.shape, dtype=bool)
    for a, b in intervals:
        mask |= (t >= a) & (t <= b)
        after = int(np.searchsorted(t, b, side="right"))
        if after < t.size:
            mask[after] = True
    return mask


def rss_bytes() -> int | None:
    """Resident set size of this process now (Linux ``/proc/self/statm``), else ``None``."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


# --- the run -------------------------------------------------------------------------------------

@dataclass
class Bucket:
    t0: float                   # seconds from the soak's start
    t1: float
    ticks: int
    rss: int | None             # bytes, at the end
    objects: int                # len(gc.get_objects()), at the end
    p99: float                  # ms, outside whole runs
    stall: float                # longest, ms, outside whole runs
    actions: int
    whole_runs: int = 0
    whole_stall: float = 0.0    # the longest stall a whole run made here, ms
    sample_ms: float = 0.0      # the bench's own sample at the end (RSS + gc count)
    stall_after: str = ""       # the last action started before the longest stall began
    stall_no_thread: float = 0.0   # longest, ms, outside whole runs and thread-worker runs

    def as_dict(self) -> dict:
        return {"t0Min": round(self.t0 / 60, 4), "t1Min": round(self.t1 / 60, 4), "ticks": self.ticks,
                "rssMb": None if self.rss is None else round(self.rss / MB, 3),
                "gcObjects": self.objects, "p99Ms": round(self.p99, 3),
                "longestStallMs": round(self.stall, 3), "actions": self.actions,
                "wholeRuns": self.whole_runs, "wholeRunLongestStallMs": round(self.whole_stall, 3),
                "sampleMs": round(self.sample_ms, 3), "longestStallAfter": self.stall_after,
                "longestStallOutsideThreadRunsMs": round(self.stall_no_thread, 3)}


@dataclass
class Soak:
    """Drives one window (``window`` a running ``MainWindow``) and samples it."""

    window: object
    seconds: float
    gap_s: float
    seed: int
    folder: str
    out: object
    done: list = field(default_factory=list)         # (started, ended, kind) of each action done
    acting: tuple | None = None                      # (started, kind) of the action under way
    holds: dict = field(default_factory=lambda: {"set": 0, "released": 0, "atQuit": 0})
    buckets: list = field(default_factory=list)
    dialogs: dict = field(default_factory=dict)      # export -> save dialogs answered
    held: list = field(default_factory=list)         # job ids whose final save this script held
    workers_seen: set = field(default_factory=set)   # worker pids alive at a bucket's end
    start: float = 0.0                               # the soak's start (perf_counter)
    _wholes: list = field(default_factory=list)      # whole runs not yet given to a bucket
    _threads: list = field(default_factory=list)     # thread-worker runs (their GIL stalls are the lesson)

    # --- what a user does ----------------------------------------------------------------------
    async def drive(self) -> None:
        w = self.window
        rng = random.Random(self.seed)
        script = plan(self.seconds, self.gap_s, rng)
        form = w.views["counters"].form
        form.speed.setValue(1.0)
        size_ms = RUN_MS[0]
        for i, (at, kind) in enumerate(script):
            await sleep_until(self.start + at)
            if i % len(KINDS) == 0:
                size_ms = rng.choice(RUN_MS)     # one size per cycle: the report can be exported
            t0 = time.perf_counter()
            self.acting = (t0, kind)
            await getattr(self, "_" + kind)(rng, size_ms)
            self.acting = None
            self.done.append((t0, time.perf_counter(), kind))

    async def _run(self, family: str, size_ms: float, kind: str | None = None):
        w = self.window
        c, panel = w.controller, w.runs_panel
        w.show_view("runs")
        from lanemon.ui.tools.testing import wait_until

        try:
            await wait_until(lambda: c.busy(family) is None, FAMILY_WAIT_S, step_s=0.05)
        except TimeoutError:
            raise RuntimeError(f"a {family} run was still running after {FAMILY_WAIT_S:g} s: "
                               f"the soak stops here") from None
        panel.set_job(size_ms, "CPU ms")
        if kind is not None:
            panel.worker_kind.setCurrentText(kind)
        panel.buttons[family].click()
        return c.busy(family)

    async def _whole(self, rng, size_ms) -> None:
        from lanemon.ui.tools.testing import wait_until

        rec = await self._run("whole", size_ms)
        if rec is None:
            raise RuntimeError("the window refused a whole run with no whole run running")
        self._wholes.append(rec)
        await wait_until(lambda: not rec.running, WHOLE_WAIT_S, step_s=0.02)   # the user waits

    async def _sliced(self, rng, size_ms) -> None:
        await self._run("sliced", size_ms)

    async def _worker_cold(self, rng, size_ms) -> None:
        await self._run("worker", size_ms, "cold")

    async def _worker_warm(self, rng, size_ms) -> None:
        await self._run("worker", size_ms, "warm")

    async def _worker_thread(self, rng, size_ms) -> None:
        rec = await self._run("worker", size_ms, "thread")
        if rec is not None:
            self._threads.append(rec)

    async def _burst(self, rng) -> list[int]:
        w = self.window
        w.show_view("lanes")
        view = w.views["lanes"]
        ctl = view.controls
        ctl.fill_simulated(ctl.workspace_box.currentText() or "ws-01", rng.choice(("reservations", "cafe")),
                           round(rng.uniform(*JOB_S), 1), rng.random() < FAILING_WORK)
        ctl.burst_jobs.setValue(rng.randint(*BURST_JOBS))
        ctl.burst_ws.setValue(rng.randint(*BURST_WS))
        task = view.add_burst()                 # what the Burst button calls; its job ids
        ctl.fails.setChecked(False)
        return await task if task is not None else []

    async def _burst_fail(self, rng, _size) -> None:
        ids = await self._burst(rng)
        if ids:
            ctl = self.window.views["lanes"].controls
            ctl.set_job(ids[-1])                 # the last: still waiting
            ctl.fail_button.click()

    async def _burst_hold(self, rng, _size) -> None:
        ids = await self._burst(rng)
        if not ids:
            return
        view = self.window.views["lanes"]
        sched, store = view.scheduler, view.scheduler.store
        # the first not yet finished: it runs soonest, so its hold engages soon
        target = next((j for j in ids if (v := sched.job(j)) is not None and v.phase != "done"), None)
        if target is None:
            return
        before = len(store.holds())
        view.controls.set_job(target)
        view.controls.hold_button.click()
        if len(store.holds()) > before:
            self.held.append(target)
            self.holds["set"] += 1

    async def _release(self, rng, _size) -> None:
        view = self.window.views["lanes"]
        self.window.show_view("lanes")
        sched = view.scheduler

        def waiting(jid: int) -> bool:
            v = sched.job(jid)
            return v is not None and v.save_held
        engaged = [j for j in self.held if waiting(j)]
        target = engaged[0] if engaged else (self.held[0] if self.held else None)
        if target is None:
            return
        view.controls.set_job(target)
        view.controls.release_button.click()
        if engaged:
            self.held.remove(target)
            self.holds["released"] += 1

    async def _counters_start(self, rng, _size) -> None:
        from lanemon.counters import STRATEGIES

        w = self.window
        w.show_view("counters")
        view = w.views["counters"]
        if not view.running:
            view.form.set_strategy(rng.choice(tuple(STRATEGIES)))
        view.start_btn.click()

    async def _counters_stop(self, rng, _size) -> None:
        self.window.show_view("counters")
        self.window.views["counters"].stop_btn.click()

    async def _compare(self, rng, _size) -> None:
        self.window.show_view("counters")
        self.window.views["counters"].compare_btn.click()

    async def _presenter(self, rng, _size) -> None:
        self.window.talk.actions["presenter"].trigger()     # F5

    async def _pause(self, rng, _size) -> None:
        self.window.talk.actions["pause"].trigger()         # Space

    async def _tab(self, rng, _size) -> None:
        self.window.show_view(rng.choice(TABS))

    async def _export_report(self, rng, _size) -> None:
        self.window.talk.actions["export"].trigger()        # Ctrl+E

    async def _export_csv(self, rng, _size) -> None:
        self.window.show_view("runs")
        self.window.runs_panel.export_csv_btn.click()

    async def _export_png(self, rng, _size) -> None:
        self.window.show_view("runs")
        self.window.runs_panel.export_png_btn.click()

    def save_dialog(self, _parent=None, caption: str = "", name: str = "", _filter: str = "", *_a, **_k):
        """The save dialog's answer: the suggested name, in the soak's folder."""
        self.dialogs[caption] = self.dialogs.get(caption, 0) + 1
        return os.path.join(self.folder, os.path.basename(name) or "export"), _filter

    async def leave(self) -> None:
        """What a user does before quitting: every hold released, presenter mode and the
        pause off."""
        w = self.window
        view = w.views["lanes"]
        view.controls.set_job(0)                 # no job chosen: "release" releases every hold
        self.holds["atQuit"] = len(view.scheduler.store.holds())
        if self.holds["atQuit"]:
            view.controls.release_button.click()
        self.held.clear()
        if w.talk.presenter:
            w.talk.actions["presenter"].trigger()
        if w.chart.paused:
            w.talk.actions["pause"].trigger()

    # --- sampling --------------------------------------------------------------------------------
    def action_before(self, t: float) -> str:
        """The last action started before time ``t`` (a stall's start: its tick's time minus
        its lag) and how long before: "presenter +0.05 s"."""
        last = self.acting if self.acting is not None and self.acting[0] <= t else None
        if last is None:
            for started, _, kind in reversed(self.done):
                if started <= t:
                    last = (started, kind)
                    break
        return "" if last is None else f"{last[1]} +{max(0.0, t - last[0]):.2f} s"

    async def sample(self, bucket_s: float, n: int, driver: asyncio.Task) -> None:
        """Close ``n`` buckets of ``bucket_s`` (the last at the soak's end, once the driver is
        done too). A bucket closes once no whole run is under way, and is open for at
        least half a bucket."""
        from lanemon.ui.heartbeat.timer import lag_stats
        from lanemon.ui.tools.testing import wait_until
        from lanemon.work import live_worker_pids

        w = self.window
        hb, c = w.heartbeat, w.controller
        open_t, open_n = self.start, hb.count
        carry: list[tuple[float, float]] = []    # the bench's own sample, before this bucket
        acted = 0
        for k in range(n):
            # at its nominal end, but open for half a bucket at least (a bucket that closed
            # late, after a whole run, does not leave the next one a sliver)
            await sleep_until(max(self.start + min(self.seconds, (k + 1) * bucket_s), open_t + bucket_s / 2))
            if k == n - 1:
                await asyncio.wait({driver})
                if driver.exception() is not None:
                    return
            # a whole run is never split between buckets: it ends (with its tick after) first
            await wait_until(lambda: c.busy("whole") is None, WHOLE_WAIT_S, step_s=0.02)
            close_t, close_n = time.perf_counter(), hb.count
            wholes, self._wholes = self._wholes, []
            t, lag = hb.between(open_n, close_n)
            runs = [(r.t_start, r.t_end) for r in wholes]
            out = excluded(t, runs + carry)
            rest = lag[~out]
            stats = lag_stats(rest)
            if rest.size:
                i = int(rest.argmax())
                after = self.action_before(float(t[~out][i]) - float(rest[i]) / 1000.0)
            else:
                after = ""
            whole_stall = max((float(lag[excluded(t, [iv])].max(initial=0.0)) for iv in runs), default=0.0)
            threads = [(r.t_start, r.t_end or close_t) for r in self._threads
                       if r.t_start < close_t and (r.t_end or close_t) > open_t]
            self._threads = [r for r in self._threads if r.running]
            no_thread = float(lag[~excluded(t, runs + carry + threads)].max(initial=0.0))
            actions = sum(1 for _, at, _ in self.done[acted:] if at <= close_t)
            acted += actions
            a = time.perf_counter()
            rss, objects = rss_bytes(), len(gc.get_objects())
            b = time.perf_counter()
            bucket = Bucket(open_t - self.start, close_t - self.start, int(rest.size), rss, objects,
                            stats.p99, stats.max, actions, len(wholes), whole_stall, (b - a) * 1000.0, after,
                            no_thread)
            self.buckets.append(bucket)
            self.out(row(bucket))
            self.workers_seen.update(live_worker_pids())
            carry = [(a, b)]
            open_t, open_n = b, hb.count


HEADER = ("  minutes      RSS MB  gc objects  p99 ms  longest stall, begun after       actions  "
          "whole runs (longest)  own sample")


def row(b: Bucket) -> str:
    rss = "n/a" if b.rss is None else f"{b.rss / MB:.2f}"
    return (f"  {b.t0 / 60:5.2f}-{b.t1 / 60:5.2f}  {rss:>7}  {b.objects:10,d}  {b.p99:6.2f}  "
            f"{b.stall:7.1f} ms {b.stall_after or '-':<22}  {b.actions:7d}  "
            f"{b.whole_runs:4d} ({b.whole_stall:6.1f} ms)  {b.sample_ms:7.1f} ms")


def summarize(buckets: list[Bucket]) -> dict:
    """Slopes per minute of each half, and the goals; from the buckets alone."""
    n = len(buckets)
    result = {}
    for name, idx in zip(("first", "second"), halves(n)):
        part = [buckets[i] for i in idx]
        ends = [b.t1 / 60 for b in part]
        mids = [(b.t0 + b.t1) / 120 for b in part]
        rss = slope(ends, [b.rss / MB for b in part]) if part and all(b.rss is not None for b in part) else None
        length = (part[-1].t1 - part[0].t0) / 60 if part else 0.0
        result[name] = {
            "buckets": [i + 1 for i in idx],
            "minutes": round(length, 3),
            "rssMbPerMin": rss,
            "gcObjectsPerMin": slope(ends, [float(b.objects) for b in part]),
            "p99MsPerMin": slope(mids, [b.p99 for b in part]),
            "p99Ms": [round(b.p99, 3) for b in part],
            "longestStallMs": max((b.stall for b in part), default=0.0),
        }
    second = result["second"]
    rss = second["rssMbPerMin"]
    p99 = second["p99MsPerMin"]
    rise = None if p99 is None else p99 * second["minutes"]
    stall = max((b.stall for b in buckets), default=0.0)
    result["goals"] = {
        "rssSlopeSecondHalf": {"value": rss, "goal": RSS_GOAL_MB_PER_MIN,
                               "met": None if rss is None else rss <= RSS_GOAL_MB_PER_MIN},
        "p99RiseSecondHalf": {"value": rise, "goal": P99_RISE_GOAL_MS,
                              "met": None if rise is None else rise <= P99_RISE_GOAL_MS},
        "longestStallOutsideWholeRuns": {"value": stall, "goal": STALL_GOAL_MS, "met": stall <= STALL_GOAL_MS},
    }
    # thread-worker runs stall the loop on purpose (the GIL: the lesson of that kind); said apart
    result["longestStallOutsideWholeAndThreadRunsMs"] = max((b.stall_no_thread for b in buckets), default=0.0)
    return result


def _num(v: float | None, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)





def run(out, minutes: float = DEFAULT_MINUTES, *, seed: int = SEED, gap_s: float = GAP_S) -> dict:
    """Soak the window for ``minutes``; print the buckets, slopes and goals through ``out``;
    return the figures. Raises ``RuntimeError`` when the window ends badly or a run never
    ends (the window is closed and shut down first)."""
    from PySide6.QtWidgets import QFileDialog

    from lanemon.bench._window import run_window, settled
    from lanemon.work import live_worker_pids

    if not (minutes > 0 and math.isfinite(minutes)):
        raise ValueError(f"minutes must be a positive number, got {minutes!r}")
    seconds = minutes * 60.0
    bucket_s = bucket_seconds(minutes)
    n = bucket_count(minutes)
    count = len(plan(seconds, gap_s, random.Random(seed)))
    marks: dict[str, float] = {}

    with tempfile.TemporaryDirectory(prefix="lanemon-soak-") as folder:
        async def scenario(window):
            soak = Soak(window, seconds, gap_s, seed, folder, out)
            await settled(window)
            out(f"full window offscreen, 1280x800, qasync; its heartbeat ({window.heartbeat.period_ms} ms) "
                f"is the lag source; {minutes:g} min in {n} buckets of {bucket_s:g} s; seed {seed}: "
                f"{count} actions, one every {seconds / count:.2f} s, in cycles of all {len(KINDS)} kinds")
            out(f"window objects frozen by app.main (not counted below): {gc.get_freeze_count():,}")
            out("p99 and longest stall leave out deliberate whole runs (their ticks and the one after) "
                "and the tick after the bench's own sample (RSS + gc count)")
            out(HEADER)
            dialog = QFileDialog.__dict__["getSaveFileName"]      # the staticmethod itself
            QFileDialog.getSaveFileName = staticmethod(soak.save_dialog)
            try:
                soak.start = time.perf_counter()
                driver = asyncio.ensure_future(soak.drive())
                sampler = asyncio.ensure_future(soak.sample(bucket_s, n, driver))
                try:
                    await asyncio.gather(driver, sampler)
                finally:
                    sampler.cancel()
                    driver.cancel()
                    await asyncio.gather(driver, sampler, return_exceptions=True)
                    await soak.leave()
            finally:
                QFileDialog.getSaveFileName = dialog
            marks["closing"] = time.perf_counter()
            return soak

        soak = run_window(scenario)
        shutdown_s = time.perf_counter() - marks["closing"]
        files = sorted(os.listdir(folder))
    left = live_worker_pids()
    children = [f"{pid} {cmd}" for pid, cmd in child_processes()]

    buckets = soak.buckets
    s = summarize(buckets)
    kinds = {k: 0 for k in KINDS}
    for _, _, k in soak.done:
        kinds[k] += 1

    for name in ("first", "second"):
        h = s[name]
        if not h["buckets"]:
            continue
        out(f"{name} half (buckets {h['buckets'][0]}-{h['buckets'][-1]}, {h['minutes']:.2f} min): "
            f"RSS {_num(h['rssMbPerMin'], '+.3f')} MB/min, gc objects {_num(h['gcObjectsPerMin'], '+,.0f')}/min, "
            f"p99 {_num(h['p99MsPerMin'], '+.3f')} ms/min, longest stall {h['longestStallMs']:.1f} ms")
    g = s["goals"]
    rss, rise, stall = g["rssSlopeSecondHalf"], g["p99RiseSecondHalf"], g["longestStallOutsideWholeRuns"]
    out(f"RSS slope, second half: {_num(rss['value'], '+.3f')} MB/min   (goal <= {RSS_GOAL_MB_PER_MIN:g} MB/min) -> "
        f"{'n/a' if rss['met'] is None else goal(rss['met'])}")
    out(f"heartbeat p99, second half: {_num(s['second']['p99MsPerMin'], '+.3f')} ms/min, fitted rise across it "
        f"{_num(rise['value'], '+.2f')} ms   (goal: not rising, rise <= {P99_RISE_GOAL_MS:g} ms) -> "
        f"{'n/a' if rise['met'] is None else goal(rise['met'])}")
    out(f"longest stall outside whole runs: {stall['value']:.1f} ms   (goal <= {STALL_GOAL_MS:g} ms) -> "
        f"{goal(stall['met'])}")
    out(f"longest stall outside whole runs and thread-worker runs (those hold the GIL: the stall is "
        f"what that kind shows): {s['longestStallOutsideWholeAndThreadRunsMs']:.1f} ms")
    out("actions done: " + ", ".join(f"{k} {v}" for k, v in kinds.items()))
    h = soak.holds
    out(f"held final saves: {h['set']} set, {h['released']} released by job while soaking, "
        f"{h['atQuit']} still held at quit (released before closing)")
    answered = ", ".join(f"{k!r} {v}" for k, v in soak.dialogs.items()) or "none"
    out(f"save dialogs answered: {sum(soak.dialogs.values())} ({answered}); "
        f"files written: {', '.join(files) or 'none'}")
    gone = sum(1 for pid in soak.workers_seen if not alive(pid))
    out(f"quit (every hold released first): window shut down and workers stopped in {shutdown_s:.2f} s; "
        f"worker processes seen at bucket ends {len(soak.workers_seen)}, gone {gone}; "
        f"worker processes left: {len(left)}; child processes left: {len(children)}")

    met = [v["met"] for v in g.values()]
    return {
        "minutes": minutes, "bucketS": bucket_s, "seed": seed, "gapS": seconds / count,
        "buckets": [b.as_dict() for b in buckets],
        "firstHalf": s["first"], "secondHalf": s["second"], "goals": g,
        "actions": kinds, "holds": dict(soak.holds), "saveDialogs": dict(soak.dialogs), "files": files,
        "shutdownS": round(shutdown_s, 3), "workerPidsSeen": sorted(soak.workers_seen),
        "workerPidsLeft": left, "childrenLeft": children,
        "goalMet": all(m is True for m in met),
    }
