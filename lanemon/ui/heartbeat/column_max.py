"""One point per pixel column: the largest lag of the ticks in it, kept as ticks arrive.

The heartbeat chart shows at most one point per pixel column, the column's
**maximum** lag, so a stall is never hidden however many ticks share a column.
``ColumnMax`` keeps those maxima in a ring of columns anchored to absolute
time: column ``k`` holds the ticks with ``k * dt <= t < (k + 1) * dt``. So:

- a frame folds in only the ticks that arrived since the last one
  (``add``), instead of re-deciding every column from the whole window
  (a tick's column is ``floor(t / dt)``, the same division everywhere);
- a column's point does not change as the chart scrolls (the columns do not
  move with "now"), so the curve keeps its shape instead of shimmering;
- ``window(t0, t1)`` returns the columns of a time range that hold a tick,
  oldest first: ``(k * dt, max lag)``; a column without a tick gives no point;
- ``around(a, b, lo, hi)`` reads only the few columns a frame paints (the held
  ones from the one before ``a`` to the one after ``b``), in plain Python:
  the same columns and maxima as ``held`` gives for that stretch.

The ring is two C arrays (``array.array``: numpy only to hand out a long stretch), no Qt:
a list of Python ints and floats would keep one object per slot, written at any time, and
those few long-lived objects pinned the memory a 99,999-job burst took (each slot's float
in another of its 1 MiB arenas) long after its Reset. ``reset(dt)`` forgets everything (a new column width:
the chart's window or width changed).
"""

from __future__ import annotations

import math
from array import array

import numpy as np

FEW = 64       # at most this many ticks: added one by one in plain Python (a frame brings ~3)
EMPTY = np.iinfo(np.int64).min   # a slot with no column (any real column index may occur, -1 too)


class ColumnMax:
    def __init__(self, columns: int, dt: float) -> None:
        """Room for at least ``columns`` columns of ``dt`` seconds each."""
        cap = 1 << max(4, math.ceil(math.log2(max(columns, 1) + 2)))
        self._mask = cap - 1
        self.capacity = cap
        # C arrays, not numpy: a frame reads and writes a few slots, and a numpy scalar access
        # costs ~10x an array's (more on a cold cache, as each frame runs); not lists: a list
        # keeps a Python object per slot (see the module docstring)
        self._ids = array("q", [EMPTY]) * cap     # which column a slot holds (EMPTY: none)
        self._max = array("d", [0.0]) * cap
        self.dt = 0.0
        self.last_column = -1
        self.reset(dt)

    def reset(self, dt: float) -> None:
        """Forget every tick; columns of ``dt`` seconds from now on."""
        if not dt > 0:
            raise ValueError(f"column width must be > 0, got {dt!r}")
        self.dt = float(dt)
        self._ids[:] = array("q", [EMPTY]) * self.capacity
        self.last_column = -1

    def add(self, t: np.ndarray, lag: np.ndarray) -> int | None:
        """Fold in ticks at times ``t`` (ascending, none before a tick already added) with
        their ``lag``. Only the last ``capacity`` columns are kept. Returns the first column
        the ticks touched (``None``: no tick)."""
        if t.size == 0:
            return None
        if t.size <= FEW:
            return self.add_few(t.tolist(), lag.tolist())
        first = math.floor(float(t[0]) / self.dt)
        # many ticks (a resume after a long pause, a new window): one maximum per column with
        # numpy, then at most ``capacity`` columns merged in Python
        k = np.floor(t / self.dt).astype(np.int64)
        if k[-1] - k[0] >= self.capacity:          # more than the ring holds: keep the newest
            keep = int(np.searchsorted(k, k[-1] - self.capacity + 1))
            k, lag = k[keep:], lag[keep:]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        self._merge(k[starts].tolist(), np.maximum.reduceat(lag, starts).tolist())
        return first

    def add_few(self, t: list[float], lag: list[float]) -> int | None:
        """``add`` for ticks given as Python lists (a frame's ~3: no numpy conversion)."""
        if not t:
            return None
        dt = self.dt
        cols = [math.floor(ti / dt) for ti in t]
        self._merge(cols, lag)
        return cols[0]

    def _merge(self, cols: list[int], peaks_in: list[float]) -> None:
        """Fold ``(column, lag)`` pairs (columns ascending) into the ring: a slot holding an
        older column is taken over, the same column keeps the higher lag."""
        ids, peaks, mask = self._ids, self._max, self._mask
        for col, peak in zip(cols, peaks_in):
            slot = col & mask
            if ids[slot] != col:
                ids[slot] = col
                peaks[slot] = peak
            elif peak > peaks[slot]:
                peaks[slot] = peak
        self.last_column = cols[-1]

    def window(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
        """``(column start times, maxima)`` of the columns from the one holding ``t0`` to
        the one holding ``t1`` that hold a tick, among the last ``capacity`` columns
        (counted back from the newest tick's); oldest first."""
        cols, peaks = self.held(math.floor(t0 / self.dt), math.floor(t1 / self.dt))
        return cols * self.dt, peaks

    def held(self, k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
        """``(column indices, maxima)`` of the columns ``k0..k1`` that hold a tick, among the
        last ``capacity`` columns; oldest first."""
        k0 = max(k0, self.last_column - self.capacity + 1)   # only the newest columns are kept
        if k1 < k0:
            return np.empty(0, dtype=np.int64), np.empty(0)
        cols = np.arange(k0, k1 + 1, dtype=np.int64)
        slots = cols & self._mask
        held = np.frombuffer(self._ids, dtype=np.int64)[slots] == cols
        return cols[held], np.frombuffer(self._max, dtype=np.float64)[slots[held]]

    def around(self, a: int, b: int, lo: int, hi: int) -> tuple[list[int], list[float]]:
        """The held columns among ``lo..hi`` from the last one before ``a`` to the first one
        after ``b`` (each if any), with every held column between, and their maxima: Python
        lists, oldest first; the same as the part of ``held(lo, hi)`` they are. Reads about
        ``b - a`` slots (a frame's few columns; a long stretch goes through ``held``)."""
        lo = max(lo, self.last_column - self.capacity + 1)   # only the newest columns are kept
        a, b = max(a, lo), min(b, hi)
        if b - a > 64:
            cols, peaks = self.held(lo, hi)
            i0 = max(0, int(np.searchsorted(cols, a)) - 1)
            i1 = int(np.searchsorted(cols, b, side="right")) + 1
            return cols[i0:i1].tolist(), peaks[i0:i1].tolist()
        ids, peaks, mask = self._ids, self._max, self._mask
        cols: list[int] = []
        out: list[float] = []
        k = min(a, hi + 1) - 1
        while k >= lo:                        # the held column before a
            if ids[k & mask] == k:
                cols.append(k)
                out.append(peaks[k & mask])
                break
            k -= 1
        k = a
        while k <= hi:                        # a..b, then up to the first held one after b
            slot = k & mask
            if ids[slot] == k:
                cols.append(k)
                out.append(peaks[slot])
                if k > b:
                    break
            k += 1
        return cols, out

    def before(self, c: int, lo: int) -> int | None:
        """The last held column before ``c`` and not before ``lo`` (``None``: none)."""
        lo = max(lo, self.last_column - self.capacity + 1)
        ids, mask = self._ids, self._mask
        k = min(c - 1, self.last_column)
        while k >= lo:
            if ids[k & mask] == k:
                return k
            k -= 1
        return None
