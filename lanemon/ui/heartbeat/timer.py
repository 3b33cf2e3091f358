"""The heartbeat: a precise Qt timer whose lateness is the loop's lag.

``Heartbeat`` re-arms a single-shot ``QTimer`` of ``Qt.PreciseTimer`` type
from the moment it actually fired (so a stall is one late tick, never a burst
of catch-up ticks). Each tick writes two numbers into preallocated arrays
(a ring buffer; ``array.array``, read through numpy views): the fire time (``time.perf_counter`` seconds) and the
lag in ms (fire time minus due time, never below 0). Nothing else happens in
the tick, so the heartbeat does not itself cause lag; readers (the chart, the
run statistics) copy what they need when they need it.

Qt sleeps in whole milliseconds: each time it waits for its next timer it rounds
the wait **up** to a whole ms (``QTimerInfoList::timerWait``, both event
dispatchers). So after any other wakeup of the loop (a frame, a label, a paint)
the heartbeat's next tick came up to a millisecond late with nothing running at
its due time: a lateness of Qt's sleep, not of the loop, which the window's other
timers made look like the window's cost (a 0.3 ms slot at 30 Hz beside a 10 ms
heartbeat: p99 0.19-0.29 ms alone, 0.55-0.71 ms with it, in a plain PySide6
program). On Linux the heartbeat therefore also arms a ``timerfd`` at its due
time, watched by a ``QSocketNotifier``: the kernel ends the loop's sleep on time
(the same program: p99 0.36-0.41 ms with the slot), the timer fires then if the
loop is free, and when the loop is busy at that moment the tick is as late as
the work that held it -- which is what the heartbeat measures. The ``QTimer`` is
still what fires the tick and what is measured; the fd only wakes the loop (it is
never read: arming it again at the next tick clears it). ``on_time_wake`` says
whether it is in use (elsewhere, or if ``timerfd_create`` fails: Qt's rounding
stays, and the idle floor shows it).

``lag_stats`` gives the same figures as ``lanemon.work.lag.summarize`` on a
numpy array: it sorts with numpy (fast on the heartbeat's 65k ticks) and
picks the ranks with ``lanemon.stats.nearest_rank``, the one rank rule.

Qt, but no widgets.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import sys
import time
from array import array

import numpy as np
from PySide6.QtCore import QObject, QSocketNotifier, Qt, QTimer

from lanemon.stats import nearest_rank
from lanemon.work.lag import LagStats

MIN_PERIOD_MS = 1
MAX_PERIOD_MS = 100
DEFAULT_PERIOD_MS = 10
DEFAULT_CAPACITY = 1 << 16  # 65 s at 1 ms, 11 min at 10 ms


def lag_stats(lags_ms: np.ndarray) -> LagStats:
    """samples / p50 / p99 / max / late_ms, nearest rank (as ``summarize``)."""
    values = np.asarray(lags_ms, dtype=np.float64)
    n = int(values.size)
    if n == 0:
        return LagStats(0, 0.0, 0.0, 0.0, 0.0)
    ordered = np.sort(values)
    return LagStats(samples=n, p50=float(ordered[nearest_rank(n, 50) - 1]),
                    p99=float(ordered[nearest_rank(n, 99) - 1]), max=float(ordered[-1]),
                    late_ms=float(values.sum()))


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):          # (timerfd_settime's argument)
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _close_fd(fd: int, *_destroyed) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


WAKE_AFTER_NS = 20_000  # the fd's wake this long after the timer's due time (never before it)


class OnTimeWake:
    """A Linux ``timerfd`` (``CLOCK_MONOTONIC``, the clock of Qt's timers and of
    ``time.perf_counter``) armed at an absolute time; readable from then until armed
    again or disarmed. ``None`` from ``make`` where there is none."""

    __slots__ = ("_fd", "_notifier", "_settime", "_spec", "armed_ns")

    @classmethod
    def make(cls, owner: QObject | None = None) -> OnTimeWake | None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            return cls(owner)
        except OSError:
            return None

    def __init__(self, owner: QObject | None = None) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.timerfd_create(time.CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create")
        self._fd = fd
        self._spec = _Itimerspec()
        self._settime = libc.timerfd_settime
        self._settime.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p)
        self.armed_ns = 0                # the time armed at (0: disarmed)
        # the notifier is Qt's: a child of ``owner``, deleted with it by Qt in its thread, and
        # the fd is closed once the notifier is gone (never while the loop still polls it). A
        # notifier of Python's own, disabled and deleted from a finaliser, crashed the process
        # when the collector ran that finaliser inside the loop's dispatch (seen in the tests)
        self._notifier = QSocketNotifier(fd, QSocketNotifier.Type.Read, owner)
        self._notifier.destroyed.connect(functools.partial(_close_fd, fd))

    def arm(self, at_ns: int) -> None:
        """Readable from ``at_ns`` (``CLOCK_MONOTONIC``) on; the previous arming is
        forgotten, and with it a readable state it left. 0: disarmed (the kernel's rule)."""
        value = self._spec.it_value
        value.tv_sec, value.tv_nsec = divmod(at_ns, 1_000_000_000)
        self._settime(self._fd, 1, self._spec, None)   # 1: TFD_TIMER_ABSTIME
        self.armed_ns = at_ns

    def disarm(self) -> None:
        self.arm(0)

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def watched(self) -> bool:
        """True while the loop's event dispatcher polls the fd (its ``QSocketNotifier``)."""
        return self._notifier.isEnabled() and self._notifier.socket() == self._fd


class Heartbeat(QObject):
    """The precise heartbeat and its ring buffer of ``(time, lag)`` ticks."""

    def __init__(self, period_ms: int = DEFAULT_PERIOD_MS, capacity: int = DEFAULT_CAPACITY,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        if capacity <= 0 or capacity & (capacity - 1):
            raise ValueError(f"capacity must be a power of two, got {capacity}")
        self._mask = capacity - 1
        self.capacity = capacity
        # written now (not left as untouched pages): the ring's memory is taken at start, not
        # page by page over its first 11 minutes (it looked like a leak in the soak). Stored in
        # ``array.array``s, which the tick writes and a reader's few new ticks are read from
        # with no numpy scalar machinery (cheaper each, and less of it to bring into the cache
        # each time); numpy views of the same memory serve the bulk reads
        self._t_store = array("d", bytes(8 * capacity))
        self._lag_store = array("d", bytes(8 * capacity))
        self._t = np.frombuffer(self._t_store, dtype=np.float64)
        self._lag = np.frombuffer(self._lag_store, dtype=np.float64)
        self._n = 0
        self._period_ms = self._check_period(period_ms)
        self._period_s = self._period_ms / 1000.0
        self._due = 0.0
        self.epoch = time.perf_counter()
        self._beat = None            # called at each tick (the window's watchdog), or None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)
        self._wake = OnTimeWake.make(self)   # (see the module's docstring)
        self._wake_after_ns = self._period_ms * 1_000_000 + WAKE_AFTER_NS

    # --- the tick: keep it tiny ------------------------------------------------
    def _tick(self) -> None:
        now = time.perf_counter()
        lag = (now - self._due) * 1000.0
        i = self._n & self._mask
        self._t_store[i] = now
        self._lag_store[i] = lag if lag > 0.0 else 0.0
        self._n += 1
        self._due = now + self._period_s
        self._timer.start(self._period_ms)
        wake = self._wake
        if wake is not None:
            wake.arm(time.monotonic_ns() + self._wake_after_ns)
        beat = self._beat
        if beat is not None:
            beat()

    # --- control ---------------------------------------------------------------
    @staticmethod
    def _check_period(period_ms: object) -> int:
        if isinstance(period_ms, bool) or not isinstance(period_ms, int):
            raise TypeError(f"period_ms must be an integer, got {period_ms!r}")
        if not MIN_PERIOD_MS <= period_ms <= MAX_PERIOD_MS:
            raise ValueError(f"period_ms must be {MIN_PERIOD_MS}..{MAX_PERIOD_MS}, got {period_ms}")
        return period_ms

    def start(self) -> None:
        self._due = time.perf_counter() + self._period_s
        self._timer.start(self._period_ms)
        if self._wake is not None:
            self._wake.arm(time.monotonic_ns() + self._wake_after_ns)

    def stop(self) -> None:
        self._timer.stop()
        if self._wake is not None:
            self._wake.disarm()

    @property
    def on_time_wake(self) -> OnTimeWake | None:
        """The ``timerfd`` that ends the loop's sleep at each due time (Linux; see the
        module's docstring); ``None`` where Qt's whole-millisecond sleeps stay."""
        return self._wake

    def set_beat(self, beat) -> None:
        """Call ``beat()`` (cheap, no argument) at the end of every tick from now on
        (``None``: nothing); the window's watchdog (``heartbeat.own_watchdog``) uses it."""
        self._beat = beat

    @property
    def running(self) -> bool:
        return self._timer.isActive()

    @property
    def period_ms(self) -> int:
        return self._period_ms

    def set_period_ms(self, period_ms: int) -> None:
        """Change the period (1..100 ms); takes effect from the next arm."""
        self._period_ms = self._check_period(period_ms)
        self._period_s = self._period_ms / 1000.0
        self._wake_after_ns = self._period_ms * 1_000_000 + WAKE_AFTER_NS

    # --- reading ---------------------------------------------------------------
    @property
    def count(self) -> int:
        """Ticks recorded since start (monotonic; the buffer keeps the last ``capacity``)."""
        return self._n

    @property
    def last_lag_ms(self) -> float:
        return self._lag_store[(self._n - 1) & self._mask] if self._n else 0.0

    def between(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Copies of ticks ``first..stop-1`` (tick numbers; clipped to what the buffer holds)."""
        stop = min(stop, self._n)
        first = max(first, stop - self.capacity, 0)
        if stop <= first:
            return np.empty(0), np.empty(0)
        a, b = first & self._mask, stop & self._mask
        if a < b:                                   # one stretch of the ring: two copies
            return self._t[a:b].copy(), self._lag[a:b].copy()
        idx = np.arange(first, stop) & self._mask   # it wraps around the end
        return self._t[idx], self._lag[idx]

    def between_lists(self, first: int, stop: int) -> tuple[list[float], list[float]]:
        """``between`` as Python lists (a reader's few new ticks: no numpy copies)."""
        stop = min(stop, self._n)
        first = max(first, stop - self.capacity, 0)
        if stop <= first:
            return [], []
        a, b = first & self._mask, stop & self._mask
        if a < b:
            return self._t_store[a:b].tolist(), self._lag_store[a:b].tolist()
        return (self._t_store[a:].tolist() + self._t_store[:b].tolist(),
                self._lag_store[a:].tolist() + self._lag_store[:b].tolist())

    def recent(self, seconds: float, now: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the ticks of the last ``seconds`` (oldest first)."""
        n = min(self._n, self.capacity)
        if n == 0:
            return np.empty(0), np.empty(0)
        # how many ticks at most: at the period, the window holds seconds/period of them
        want = min(n, int(seconds / self._period_s * 1.2) + 64) if self._period_s > 0 else n
        t, lag = self.between(self._n - want, self._n)
        if now is None:
            now = time.perf_counter()
        cut = int(np.searchsorted(t, now - seconds, side="left"))
        if cut == 0 and want < n:  # the window holds more ticks than estimated
            t, lag = self.between(self._n - n, self._n)
            cut = int(np.searchsorted(t, now - seconds, side="left"))
        return t[cut:], lag[cut:]

    def in_range(self, t0: float, t1: float, *, one_after: bool = True) -> np.ndarray:
        """Lags of the ticks fired in ``[t0, t1]``, plus the first after ``t1``.

        The first tick after a blocking run is the one that measured its stall.
        """
        n = min(self._n, self.capacity)
        t, lag = self.between(self._n - n, self._n)
        lo = int(np.searchsorted(t, t0, side="left"))
        hi = int(np.searchsorted(t, t1, side="right"))
        if one_after and hi < t.size:
            hi += 1
        return lag[lo:hi]

    async def wait_tick_after(self, t: float, timeout_s: float = 1.0) -> bool:
        """Wait (yielding) until a tick fired after time ``t``; False on timeout."""
        deadline = time.perf_counter() + timeout_s
        while True:
            if self._n and self._t_store[(self._n - 1) & self._mask] > t:
                return True
            if time.perf_counter() > deadline or not self.running:
                return False
            await asyncio.sleep(self._period_s / 2)

    def to_csv_rows(self):
        """``(t_s, lag_ms)`` of every buffered tick, oldest first; t from ``epoch``."""
        n = min(self._n, self.capacity)
        t, lag = self.between(self._n - n, self._n)
        yield from zip((t - self.epoch).tolist(), lag.tolist())
