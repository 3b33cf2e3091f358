"""Probed programs on the heartbeat chart: each one's lag as a line in its own colour.

``ProgramsOverlay(plot, book)`` draws, for every program a ``ProbeBook`` knows
(``lanemon.probe.book``), its p99 per summary (~10 a second) as a polyline in
``theme.program_color(index)`` (a stale program's in ``theme.PROGRAM_STALE``),
and its blocks as bars along the bottom
of the plot (from the block's start for its duration, ``BLOCK_STRIP`` of the
plot's height), in the same colour.

Cheap by construction: the items are Qt-painted (``chart_items.Curve`` /
``Bars``) in the book's time coordinates (the receiver's clock:
the book is made with ``time.perf_counter``, the chart's clock); a frame only
moves them (``setPos(-now)``), and their paths are rebuilt only when the book
changed (``book.version``), the scale or the axis top changed, at most every
``REBUILD_EVERY`` frames. A rebuild reads each program's summaries of the
shown window once (found by bisection: the book keeps ~2 minutes).

``draw(now, window_s, scale, top_view)`` returns the highest p99 shown (ms),
so the chart's y axis can make room for it; ``legend()`` says which program
is which colour (the chart shows it above the plot: names at the lines' ends
overlapped when two programs lagged alike).
"""

from __future__ import annotations

import bisect

import numpy as np
from PySide6.QtGui import QBrush, QColor

from lanemon.ui.kit import theme
from lanemon.ui.kit.chart_items import Bars, Curve, cosmetic_pen

REBUILD_EVERY = 3         # frames between rebuilds at most (summaries come at ~10 a second)
BLOCK_STRIP = 0.05        # of the plot's height: the block bars along the bottom
GAP_S = 1.0               # summaries further apart than this are not joined by the line


def _point_t(point) -> float:
    return point.t


class _Items:
    """The chart items of one program (a line, its block bars)."""

    def __init__(self, plot) -> None:
        self.curve = Curve(cosmetic_pen(theme.FG), connect="finite")
        self.curve.setZValue(9)                    # under the window's own lag curve (10)
        self.bars = Bars(QBrush(QColor(theme.FG)), cosmetic_pen(theme.FG))
        self.bars.setZValue(9)
        plot.addItem(self.curve, ignoreBounds=True)
        plot.addItem(self.bars, ignoreBounds=True)
        self.color: str | None = None

    def style(self, color: QColor) -> None:
        if self.color == color.name():
            return
        self.color = color.name()
        self.curve.setPen(cosmetic_pen(color))
        fill = QColor(color)
        fill.setAlpha(200)
        self.bars.set_style(QBrush(fill), cosmetic_pen(color))

    def remove(self, plot) -> None:
        plot.removeItem(self.curve)
        plot.removeItem(self.bars)


class ProgramsOverlay:
    """The probed programs' lag lines and block bars on one plot (see the module docstring)."""

    def __init__(self, plot, book) -> None:
        self._plot = plot
        self._book = book
        self._legend: tuple[tuple[str, str, bool], ...] = ()
        self._items: dict[tuple, _Items] = {}
        self._drawn = None                 # what the paths were last built from
        self._frames = 0
        self._peak = 0.0

    @property
    def keys(self) -> tuple:
        """The programs drawn (their book keys)."""
        return tuple(self._items)

    def legend(self) -> tuple[tuple[str, str, bool], ...]:
        """``(text, colour, stale)`` per program drawn, in the book's order (name, pid): what
        the chart's legend shows (``"name · pid"``)."""
        return self._legend

    def colors(self) -> dict[tuple, str]:
        """Each drawn program's line colour (``#rrggbb``)."""
        return {k: it.color for k, it in self._items.items()}

    def points(self, key) -> int:
        """How many summaries the program's line was drawn through."""
        it = self._items.get(key)
        return 0 if it is None else it.curve.path().elementCount()

    def restyle(self) -> None:
        """The palette changed: colours are applied again on the next draw."""
        for it in self._items.values():
            it.color = None
        self._drawn = None

    def clear(self) -> None:
        for it in self._items.values():
            it.remove(self._plot)
        self._items.clear()
        self._drawn = None

    def draw(self, now: float, window_s: float, scale, top_view: float) -> float:
        """One frame: move every program's items to ``now``; rebuild them when due (see the
        module docstring). Returns the highest p99 (ms) in the window at the last rebuild."""
        key = (self._book.version, scale.log, top_view, window_s)
        self._frames += 1
        if key != self._drawn and (self._drawn is None or self._frames >= REBUILD_EVERY):
            self._frames = 0
            self._drawn = key
            self._rebuild(now, window_s, scale, top_view)
        for it in self._items.values():
            it.curve.setPos(-now, 0.0)
            it.bars.setPos(-now, 0.0)
        return self._peak

    def _rebuild(self, now: float, window_s: float, scale, top_view: float) -> None:
        book = self._book
        since = now - window_s - 1.0
        seen = set()
        legend = []
        peak = 0.0
        bottom = scale.bottom
        strip = bottom + BLOCK_STRIP * (top_view - bottom)
        for prog in book.programs():
            key = prog.key
            seen.add(key)
            it = self._items.get(key)
            if it is None:
                it = self._items[key] = _Items(self._plot)
            color = QColor(theme.PROGRAM_STALE) if prog.stale else theme.program_color(prog.index)
            it.style(color)
            legend.append((f"{prog.name} · {prog.pid}", color.name(), prog.stale))
            lag = book.lag(key)                        # oldest first: the window is its tail
            lag = lag[bisect.bisect_left(lag, since, key=_point_t):]
            t = np.fromiter((p.t for p in lag), dtype=np.float64, count=len(lag))
            y = np.fromiter((p.p99 for p in lag), dtype=np.float64, count=len(lag))
            if t.size > 1:
                gaps = np.flatnonzero(np.diff(t) > GAP_S)
                if gaps.size:                      # a NaN between summaries far apart: no line
                    t = np.insert(t, gaps + 1, t[gaps] + GAP_S / 2)
                    y = np.insert(y, gaps + 1, np.nan)
            if y.size:
                peak = max(peak, float(np.nanmax(y)))
                yv = scale.to_view(np.where(np.isnan(y), np.nan, np.maximum(y, 0.0)))
                it.curve.setData(t, yv)
            else:
                it.curve.setData(t, y)
            blocks = book.blocks(key)       # few (the book keeps ~2 minutes): those out of view are clipped
            x0 = np.fromiter((b.t_start for b in blocks), dtype=np.float64, count=len(blocks))
            dur = np.fromiter((b.duration_ms / 1000.0 for b in blocks), dtype=np.float64, count=len(blocks))
            it.bars.set_rects(x0, x0 + np.maximum(dur, window_s / 400), np.full(x0.size, bottom),
                              np.full(x0.size, strip))
        for key in [k for k in self._items if k not in seen]:
            self._items.pop(key).remove(self._plot)
        self._peak = peak
        self._legend = tuple(legend)


__all__ = ["BLOCK_STRIP", "ProgramsOverlay"]
