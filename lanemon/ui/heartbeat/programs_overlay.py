"""Probed programs on the heartbeat chart: each one's lag as a line in its own colour.

``ProgramsOverlay(plot, book)`` draws, for every program a ``ProbeBook`` knows
(``lanemon.probe.book``), its p99 per summary (~10 a second) as a polyline in
``theme.program_color(index)`` (a stale program's in ``theme.PROGRAM_STALE``),
its name at the line's newest point, and its blocks as bars along the bottom
of the plot (from the block's start for its duration, ``BLOCK_STRIP`` of the
plot's height), in the same colour.

Cheap by construction: the items are Qt-painted (``chart_items.Curve`` /
``Bars`` / ``Label``) in the book's time coordinates (the receiver's clock:
the book is made with ``time.perf_counter``, the chart's clock); a frame only
moves them (``setPos(-now)``), and their paths are rebuilt only when the book
changed (``book.version``), the scale or the axis top changed, at most every
``REBUILD_EVERY`` frames. A rebuild reads each program's summaries of the
shown window once.

``draw(now, window_s, scale, top_view)`` returns the highest p99 shown (ms),
so the chart's y axis can make room for it.
"""

from __future__ import annotations

from PySide6.QtGui import QBrush, QColor, QFont
import numpy as np

from lanemon.ui.kit import theme
from lanemon.ui.kit.chart_items import Bars, Curve, Label, cosmetic_pen

REBUILD_EVERY = 3         # frames between rebuilds at most (summaries come at ~10 a second)
BLOCK_STRIP = 0.05        # of the plot's height: the block bars along the bottom
GAP_S = 1.0               # summaries further apart than this are not joined by the line


class _Items:
    """The chart items of one program (a line, its name, its block bars)."""

    def __init__(self, plot, font: QFont) -> None:
        self.curve = Curve(cosmetic_pen(theme.FG), connect="finite")
        self.curve.setZValue(9)                    # under the window's own lag curve (10)
        self.bars = Bars(QBrush(QColor(theme.FG)), cosmetic_pen(theme.FG))
        self.bars.setZValue(9)
        self.font = font
        self.name = self._label(theme.FG)
        plot.addItem(self.curve, ignoreBounds=True)
        plot.addItem(self.bars, ignoreBounds=True)
        self.color: str | None = None

    def _label(self, color) -> Label:
        label = Label("", color, anchor=(1.0, 1.0), parent=self.curve)   # moves with the line
        label.setFont(self.font)
        label.setZValue(1)
        return label

    def set_font(self, font: QFont) -> None:
        self.font = font
        self.name.setFont(font)

    def style(self, color: QColor) -> None:
        if self.color == color.name():
            return
        self.color = color.name()
        self.curve.setPen(cosmetic_pen(color))
        fill = QColor(color)
        fill.setAlpha(200)
        self.bars.set_style(QBrush(fill), cosmetic_pen(color))
        text, pos, shown = self.name.text(), self.name.pos(), self.name.isVisible()
        scene = self.name.scene()
        if scene is not None:
            scene.removeItem(self.name)
        self.name = self._label(color)         # a label's colour is set when it is made
        self.name.set_text(text)
        self.name.setPos(pos)
        self.name.setVisible(shown)

    def remove(self, plot) -> None:
        plot.removeItem(self.curve)
        plot.removeItem(self.bars)


class ProgramsOverlay:
    """The probed programs' lag lines and block bars on one plot (see the module docstring)."""

    def __init__(self, plot, book, font: QFont | None = None) -> None:
        self._plot = plot
        self._book = book
        self._font = QFont(font) if font is not None else QFont()
        self._items: dict[tuple, _Items] = {}
        self._drawn = None                 # what the paths were last built from
        self._frames = 0
        self._peak = 0.0

    @property
    def keys(self) -> tuple:
        """The programs drawn (their book keys)."""
        return tuple(self._items)

    def names(self) -> dict[tuple, str]:
        """Each drawn program's name label text."""
        return {k: it.name.text() for k, it in self._items.items()}

    def colors(self) -> dict[tuple, str]:
        """Each drawn program's line colour (``#rrggbb``)."""
        return {k: it.color for k, it in self._items.items()}

    def points(self, key) -> int:
        """How many summaries the program's line was drawn through."""
        it = self._items.get(key)
        return 0 if it is None else it.curve.path().elementCount()

    def set_font(self, font: QFont) -> None:
        self._font = QFont(font)
        for it in self._items.values():
            it.set_font(self._font)

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
        peak = 0.0
        bottom = scale.bottom
        strip = bottom + BLOCK_STRIP * (top_view - bottom)
        for prog in book.programs():
            key = prog.key
            seen.add(key)
            it = self._items.get(key)
            if it is None:
                it = self._items[key] = _Items(self._plot, self._font)
            it.style(QColor(theme.PROGRAM_STALE) if prog.stale else theme.program_color(prog.index))
            lag = [p for p in book.lag(key) if p.t >= since]
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
                it.name.setPos(float(t[-1]), float(yv[-1]))
            else:
                it.curve.setData(t, y)
            it.name.set_text(f"{prog.name} · {prog.pid}")
            it.name.setVisible(bool(y.size))
            blocks = [b for b in book.blocks(key) if b.t_start + b.duration_ms / 1000.0 >= since]
            x0 = np.fromiter((b.t_start for b in blocks), dtype=np.float64, count=len(blocks))
            dur = np.fromiter((b.duration_ms / 1000.0 for b in blocks), dtype=np.float64, count=len(blocks))
            it.bars.set_rects(x0, x0 + np.maximum(dur, window_s / 400), np.full(x0.size, bottom),
                              np.full(x0.size, strip))
        for key in [k for k in self._items if k not in seen]:
            self._items.pop(key).remove(self._plot)
        self._peak = peak


__all__ = ["BLOCK_STRIP", "ProgramsOverlay"]
