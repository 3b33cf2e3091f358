"""Probed programs on the heartbeat chart: each one's lag as a line in its own colour.

``ProgramsOverlay(area, book)`` draws (over the chart's plot area, a
``scroll_plot.ScrollPlot``: it is its ``overlay``, painted over the ring on
each paint), for every program a ``ProbeBook`` knows
(``lanemon.probe.book``), its p99 per summary (~10 a second) as a polyline in
``theme.program_color(index)`` (a stale program's in ``theme.PROGRAM_STALE``),
and its blocks as bars along the bottom
of the plot (from the block's start for its duration, ``BLOCK_STRIP`` of the
plot's height), in the same colour.

Cheap by construction: the points are kept in the book's time coordinates
(the receiver's clock: the book is made with ``time.perf_counter``, the
chart's clock) and mapped to pixels with numpy on each paint (a polyline per
stretch of summaries, one ``drawRects`` for the blocks); they are rebuilt
only when the book changed (``book.version``), the scale or the axis top
changed, at most every ``REBUILD_EVERY`` frames. A rebuild reads each
program's summaries of the shown window once (found by bisection: the book
keeps ~2 minutes).

``draw(now, window_s, scale, top_view)`` returns the highest p99 shown (ms),
so the chart's y axis can make room for it; ``legend()`` says which program
is which colour (the chart shows it above the plot: names at the lines' ends
overlapped when two programs lagged alike).
"""

from __future__ import annotations

import bisect

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter, QPen

from lanemon.ui.kit import theme
from lanemon.ui.kit.qt_start import pg

REBUILD_EVERY = 3         # frames between rebuilds at most (summaries come at ~10 a second)
BLOCK_STRIP = 0.05        # of the plot's height: the block bars along the bottom
GAP_S = 1.0               # summaries further apart than this are not joined by the line


def _point_t(point) -> float:
    return point.t


class _Items:
    """What is drawn of one program: its line's points (NaN between summaries far apart),
    its blocks' starts and ends, its colour."""

    def __init__(self) -> None:
        self.t = np.empty(0)
        self.y = np.empty(0)        # view coordinates
        self.x0 = np.empty(0)
        self.x1 = np.empty(0)
        self.strip = (0.0, 0.0)     # the blocks' bars: bottom and top, view coordinates
        self.color: str | None = None
        self.pen = QPen()
        self.fill = QColor()

    def style(self, color: QColor) -> None:
        if self.color == color.name():
            return
        self.color = color.name()
        self.pen = QPen(color, 0)
        self.fill = QColor(color)
        self.fill.setAlpha(200)

    def points(self) -> int:
        return int(np.isfinite(self.y).sum())

    def paint(self, p: QPainter, area) -> None:
        if self.t.size > 1:
            xs, ys = area.x_of(self.t), area.y_of(self.y)
            finite = np.isfinite(ys)
            # one polyline per stretch of finite points
            edges = np.flatnonzero(np.diff(np.r_[False, finite, False].astype(np.int8)))
            p.setPen(self.pen)
            for a, b in zip(edges[::2], edges[1::2]):
                if b - a > 1:
                    poly = pg.functions.create_qpolygonf(int(b - a))
                    arr = pg.functions.ndarray_from_qpolygonf(poly)
                    arr[:, 0] = xs[a:b]
                    arr[:, 1] = ys[a:b]
                    p.drawPolyline(poly)
        if self.x0.size:
            lo, hi = area.y_of(self.strip[0]), area.y_of(self.strip[1])
            xa, xb = area.x_of(self.x0), area.x_of(self.x1)
            p.setPen(self.pen)
            p.setBrush(self.fill)
            p.drawRects([QRectF(float(a), float(hi), float(b - a), float(lo - hi)) for a, b in zip(xa, xb)])


class ProgramsOverlay:
    """The probed programs' lag lines and block bars on one plot (see the module docstring)."""

    def __init__(self, area, book) -> None:
        self._area = area                  # its overlay while a program is drawn (else None)
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
        return 0 if it is None else it.points()

    def restyle(self) -> None:
        """The palette changed: colours are applied again on the next draw."""
        for it in self._items.values():
            it.color = None
        self._drawn = None

    def clear(self) -> None:
        """Draw nothing more (another overlay takes the plot area)."""
        self._items.clear()
        self._drawn = None
        if self._area.overlay == self.paint:
            self._area.overlay = None
        self._area.update()

    def paint(self, painter: QPainter) -> None:
        """Every program's line and blocks, in the plot area's pixels as of its last frame."""
        for it in self._items.values():
            it.paint(painter, self._area)

    def draw(self, now: float, window_s: float, scale, top_view: float) -> float:
        """One frame: rebuild the points when due (see the module docstring); they are painted
        where the plot area's frame puts them. Returns the highest p99 (ms) in the window at
        the last rebuild."""
        key = (self._book.version, scale.log, top_view, window_s)
        self._frames += 1
        if key != self._drawn and (self._drawn is None or self._frames >= REBUILD_EVERY):
            self._frames = 0
            self._drawn = key
            self._rebuild(now, window_s, scale, top_view)
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
                it = self._items[key] = _Items()
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
                it.t, it.y = t, scale.to_view(np.where(np.isnan(y), np.nan, np.maximum(y, 0.0)))
            else:
                it.t, it.y = t, y
            blocks = book.blocks(key)       # few (the book keeps ~2 minutes): those out of view are clipped
            x0 = np.fromiter((b.t_start for b in blocks), dtype=np.float64, count=len(blocks))
            dur = np.fromiter((b.duration_ms / 1000.0 for b in blocks), dtype=np.float64, count=len(blocks))
            it.x0, it.x1, it.strip = x0, x0 + np.maximum(dur, window_s / 400), (bottom, strip)
        for key in [k for k in self._items if k not in seen]:
            self._items.pop(key)
        self._peak = peak
        self._legend = tuple(legend)
        self._area.overlay = self.paint if self._items else None


__all__ = ["BLOCK_STRIP", "ProgramsOverlay"]
