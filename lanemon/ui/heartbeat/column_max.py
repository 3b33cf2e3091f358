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
  oldest first: ``(k * dt, max lag)``; a column without a tick gives no point.

Plain numpy, no Qt. ``reset(dt)`` forgets everything (a new column width:
the chart's window or width changed).
"""

from __future__ import annotations

import math

import numpy as np

SMALL = 32     # at most this many ticks: added one by one (a frame brings ~3)
EMPTY = np.iinfo(np.int64).min   # a slot with no column (any real column index may occur, -1 too)


class ColumnMax:
    def __init__(self, columns: int, dt: float) -> None:
        """Room for at least ``columns`` columns of ``dt`` seconds each."""
        cap = 1 << max(4, math.ceil(math.log2(max(columns, 1) + 2)))
        self._mask = cap - 1
        self.capacity = cap
        self._ids = np.full(cap, EMPTY, dtype=np.int64)  # which column a slot holds (EMPTY: none)
        self._max = np.zeros(cap, dtype=np.float64)
        self.dt = 0.0
        self.last_column = -1
        self.reset(dt)

    def reset(self, dt: float) -> None:
        """Forget every tick; columns of ``dt`` seconds from now on."""
        if not dt > 0:
            raise ValueError(f"column width must be > 0, got {dt!r}")
        self.dt = float(dt)
        self._ids.fill(EMPTY)
        self.last_column = -1

    def add(self, t: np.ndarray, lag: np.ndarray) -> int | None:
        """Fold in ticks at times ``t`` (ascending, none before a tick already added) with
        their ``lag``. Only the last ``capacity`` columns are kept. Returns the first column
        the ticks touched (``None``: no tick)."""
        if t.size == 0:
            return None
        first = math.floor(float(t[0]) / self.dt)
        if t.size <= SMALL:      # a frame's few ticks: plain Python beats a dozen numpy calls
            dt, ids, peaks, mask = self.dt, self._ids, self._max, self._mask
            for ti, li in zip(t.tolist(), lag.tolist()):
                k = math.floor(ti / dt)
                slot = k & mask
                if ids[slot] != k:
                    ids[slot] = k
                    peaks[slot] = li
                elif li > peaks[slot]:
                    peaks[slot] = li
                self.last_column = k
            return first
        k = np.floor(t / self.dt).astype(np.int64)
        if k[-1] - k[0] >= self.capacity:          # more than the ring holds: keep the newest
            keep = int(np.searchsorted(k, k[-1] - self.capacity + 1))
            k, lag = k[keep:], lag[keep:]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        cols = k[starts]
        peaks = np.maximum.reduceat(lag, starts)
        slots = cols & self._mask
        same = self._ids[slots] == cols             # a column that already has ticks
        self._max[slots] = np.where(same, np.maximum(self._max[slots], peaks), peaks)
        self._ids[slots] = cols
        self.last_column = int(cols[-1])
        return first

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
        held = self._ids[slots] == cols
        return cols[held], self._max[slots[held]]
