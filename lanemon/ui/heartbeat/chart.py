"""The heartbeat chart: lag in ms over the last 10–30 s, runs shaded by kind.

Reads the ``Heartbeat`` ring buffer and the controller's run records on its
own ~30 fps timer (never per sample). The curve has one point per pixel
column, the column's maximum lag (``column_max``: columns anchored to time,
only the new ticks folded in per frame), so a stall is never hidden; a column
per pixel of the plot's width. The plot area is a plain widget over the plot's axes
(``scroll_plot.ScrollPlot``): x is "seconds ago", so the picture only shifts;
it keeps a ring of pixel columns and per frame paints only the new columns
and those where something changed (the curve's last point, a run's edge);
the axes (pyqtgraph's, in the ``QGraphicsView`` under it) are repainted only
when the y range, the window or the look changes. Pen width 1, no
antialiasing.

``set_paused(True)`` freezes the picture (the heartbeat keeps recording);
``apply_fonts()`` also re-applies the theme's colours (light or dark palette).

``set_log_scale(True)`` draws lag on a logarithmic axis (``y_scale``): after a
whole run of seconds, the runs of a few ms still have a readable height (the
"log" box in the header; ``log_scale_changed`` says when it changes). The true
maximum stays in the header and in each run's label.

The window's own stalls (``with chart.own_stall("presenter mode"): ...``, and
the controller's "window start-up" phase) are shaded and labelled like the
machine's self-measurements, and their ticks are left out of the header's
p50 / p99 / max (then the header says so, ``OWN_NOTE``, and ``own_left_out`` is
true): the figures describe the runs and the loop, not the monitor restyling itself. A span runs
from the ``with`` until the first tick after it (the tick that carries the
stall). Run records keep their own figures (``RunController``), untouched.

Stalls of the window's loop that its watchdog saw (``add_own_block``, from
``own_watchdog.OwnWatchdog.blocked``) are labelled at their start, in the run
labels' rows: "blocked 412 ms / in hash_range" (the function the stall's time
went to, ``programs.where.culprit``). ``set_programs(book)`` draws the probed
programs a ``ProbeBook`` hears (``programs_overlay``): each one's p99 line and
blocks in its colour, a legend row above the plot naming them; the y axis
makes room for their lines.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter

import numpy as np
from PySide6.QtCore import QEvent, QObject, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPicture
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from lanemon.ui.heartbeat.column_max import ColumnMax
from lanemon.ui.heartbeat.own_watchdog import OwnBlock
from lanemon.ui.heartbeat.programs_overlay import ProgramsOverlay
from lanemon.ui.heartbeat.scroll_plot import PlateLabel, ScrollPlot, Span, SpanStyle
from lanemon.ui.heartbeat.timer import MAX_PERIOD_MS, MIN_PERIOD_MS, Heartbeat, lag_stats
from lanemon.ui.heartbeat.y_scale import YScale
from lanemon.ui.kit import theme
from lanemon.ui.kit.chart_items import live_plot
from lanemon.ui.kit.live_label import LiveLabel, figure_parts
from lanemon.ui.kit.qt_start import pg
from lanemon.ui.kit.turns import Turns
from lanemon.ui.runs.controller import RunController

FPS = 30
MIN_TOP_MS = 60.0          # keep both reference lines in view
LOG_MIN_TOP_MS = 200.0     # on the log axis 60 ms is a hair above the 50 ms line: room for its label
REF_LINES = ((1000.0 / 60.0, "16.7 ms · one frame", "REF_FRAME", 0.015, (0, 1)),   # colour: theme.<name>
             # left of the middle: the newest runs (right) put their labels near the top there
             (50.0, "50 ms · a long task", "REF_LONG", 0.28, (0, 1)))
LABEL_ROWS = 4            # rows of run labels at the top of the chart
SHORT_SLIDE = 4           # a run's short label ("#3") may slide right by this many of its widths
STATS_EVERY = 8            # frames between text updates (~4 per second)
# the y axis top: the smallest of these (x a power of ten) above 1.18 x the peak; it shrinks
# only when a step at most half as high would do (few axis / grid re-renders)
TOP_STEPS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
SHRINK_BELOW = 0.5
FEW_TICKS = 64             # new ticks at most: folded in as lists (a frame brings ~3)
OWN_PHASES = frozenset({"window start-up"})   # controller phases that are the window's own stalls
OWN_NOTE = " · own stalls left out"   # (last in the header: where room is short, it is what elides)
MAX_OWN_STALLS = 64                            # own stalls remembered (older ones have scrolled away)
MAX_OWN_BLOCKS = 64                            # watchdog blocks remembered (likewise)


LABEL_RUN, LABEL_BLOCK, LABEL_PHASE = 0, 1, 2   # label priorities on the chart, first placed first
_BY_PRIORITY_THEN_X = itemgetter(2, 0)           # a placed label's (priority, x0): no Python call per label


@dataclass
class OwnStall:
    """A stretch of loop time the window took for itself (``HeartbeatChart.own_stall``)."""

    label: str
    t_start: float
    t_done: float | None = None   # when the work ended (None: still going)

    def end(self) -> None:
        """The work ended now (again, for work that goes on after the ``with``: a held
        paint, ``paint_hold``'s ``after``)."""
        self.t_done = time.perf_counter()

pg.setConfigOptions(antialias=False, foreground=theme.FG, background=theme.BG)


def nice_top(peak: float) -> float:
    """The y axis top for a peak: at least ``MIN_TOP_MS`` and 1.18 x the peak, on a 1-1.5-2-3-4-5-6-8 ladder."""
    want = max(MIN_TOP_MS, peak * 1.18)
    mag = 10.0 ** math.floor(math.log10(want))
    for m in TOP_STEPS:
        if m * mag >= want * (1 - 1e-9):
            return float(m * mag)
    return float(10 * mag)


class PausedBadge(QWidget):
    """"paused" over the top middle of the plot while the chart is frozen: a drawn pause symbol
    (two bars: no font is needed for it) and the word, on a plate of the chart's background.
    It lies over the plot, not in the header, so pausing moves none of the header's texts.
    ``text()`` is the word; the colours are the theme's at paint time."""

    TEXT = "paused"

    def __init__(self, plot: QWidget) -> None:
        super().__init__(plot)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self._plot = plot
        plot.installEventFilter(self)

    def text(self) -> str:
        return self.TEXT

    def _metrics(self) -> tuple[QFontMetrics, int, int]:
        fm = QFontMetrics(self.font())
        pad = max(4, fm.height() // 4)
        return fm, pad, fm.capHeight()

    def symbol_rects(self) -> tuple[QRectF, QRectF]:
        """The two bars of the pause symbol, in this widget's coordinates."""
        fm, pad, cap = self._metrics()
        bar = max(2.0, cap / 3.5)
        top = (self.height() - cap) / 2
        return QRectF(pad, top, bar, cap), QRectF(pad + bar * 2.2, top, bar, cap)

    def sizeHint(self) -> QSize:
        fm, pad, cap = self._metrics()
        symbol = int(max(2.0, cap / 3.5) * 3.2) + 1
        return QSize(pad + symbol + pad + fm.horizontalAdvance(self.TEXT) + pad, fm.height() + pad)

    def place(self) -> None:
        self.resize(self.sizeHint())
        self.move(max(0, (self._plot.width() - self.width()) // 2), 6)
        self.raise_()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._plot and event.type() == QEvent.Type.Resize:
            self.place()
        return False

    def showEvent(self, event) -> None:
        self.place()
        super().showEvent(event)

    def paintEvent(self, event) -> None:
        fm, pad, cap = self._metrics()
        ink = QColor(theme.REF_FRAME if theme.is_dark() else theme.WARN)
        plate = QColor(theme.BG)
        plate.setAlpha(230)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setPen(ink)
        p.setBrush(plate)
        p.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), pad, pad)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(ink)
        for r in self.symbol_rects():
            p.drawRect(r)
        p.setPen(ink)
        p.setFont(self.font())
        right = self.symbol_rects()[1].right()
        p.drawText(QRectF(right + pad, 0, self.width() - right - pad, self.height()),
                   int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), self.TEXT)
        p.end()


class ShownCurve:
    """The curve a chart shows, for reading (tests, tools): ``xData`` in seconds ago (each held
    column's start), ``yData`` in view coordinates (ms, or log10 of ms); ``None`` before the
    first frame."""

    def __init__(self, chart: HeartbeatChart) -> None:
        self._chart = chart

    @property
    def xData(self) -> np.ndarray | None:
        return self._chart.shown_curve()[0]

    @property
    def yData(self) -> np.ndarray | None:
        return self._chart.shown_curve()[1]


class _ShownColumns:
    """What the plot area reads of the curve (``ScrollPlot.show_frame``'s ``curve``): the held
    columns around a stretch and their maxima in view coordinates, read when it paints them."""

    __slots__ = ("columns", "scale")

    def __init__(self) -> None:
        self.columns: ColumnMax | None = None
        self.scale = YScale(log=False)

    def around(self, a: int, b: int, lo: int, hi: int) -> tuple[list[int], list[float]]:
        """``ColumnMax.around``, the maxima in view coordinates."""
        cols, peaks = self.columns.around(a, b, lo, hi)
        return cols, self.scale.to_view_list(peaks)

    def before(self, c: int, lo: int) -> int | None:
        """``ColumnMax.before``."""
        return self.columns.before(c, lo)


class HeartbeatChart(QWidget):
    log_scale_changed = Signal(bool)

    def __init__(self, heartbeat: Heartbeat, controller: RunController, window_s: int = 20,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.heartbeat = heartbeat
        self.controller = controller
        self._window_s = float(window_s)
        self._frame = 0
        self._scale = YScale(log=False)
        self._top_ms = nice_top(0.0)       # the y axis top in ms ...
        self._top = self._top_ms           # ... and in view coordinates (``_scale``)
        self._nice = (0.0, self._top_ms)   # (peak, nice_top(peak)) of the last frame
        # run shading: a span each (painted into the plot area's ring where it changes), its
        # label drawn over the plot area from a cached pixmap
        self._regions: dict[object, tuple[Span, PlateLabel]] = {}
        self._region_kind: dict[object, str] = {}   # a run's kind by its key (phases and own stalls: none)
        self._short_labels: dict[int, PlateLabel] = {}   # a run's label's short form ("#3") by its id
        self._region_styles: dict[str | None, tuple] = {}   # _region_style's, for the current look
        self._ref_lines: list[tuple[float, PlateLabel, float]] = []   # ms, label, where (0..1 of x)
        self._shown = None                 # (newest column shown, now, dt) of the last frame
        self._curve = _ShownColumns()      # what the plot area reads of the curve
        self._labels_now: list[PlateLabel] = []   # the labels the plot area draws this frame
        self._paused_at: float | None = None
        self._drawn = None                 # the columns the highest lag shown was found in (None: again)
        self._peak_col = 0                 # the column of the highest lag shown
        self._columns: ColumnMax | None = None   # per-column maxima (see _fold_in_ticks)
        self._columns_key = None           # (window, columns) they were made for
        self._seen = 0                     # heartbeat ticks folded into them
        self._vb_size = (0.0, 0.0)         # the plot area in pixels (kept on resize)
        self._own: list[OwnStall] = []     # the window's own stalls, oldest first
        self._own_peak = 0.0               # the highest lag the curve shows (ms), in column _peak_col
        # stalls of the window's loop its watchdog saw (own_watchdog), oldest first, and their labels
        self.own_blocks: deque[OwnBlock] = deque(maxlen=MAX_OWN_BLOCKS)
        self._block_labels: dict[tuple, PlateLabel] = {}
        self.programs: ProgramsOverlay | None = None   # probed programs' lag lines (set_programs)

        # header: title, live figures, floor, controls
        self.title = QLabel("Heartbeat lag")
        self.live = LiveLabel("p50 –   p99 –   max –")   # changes ~4 times a second
        self.floor = QLabel("idle floor: measuring…")
        self.floor.setProperty("muted", True)
        self.period = QSpinBox()
        self.period.setRange(MIN_PERIOD_MS, MAX_PERIOD_MS)
        self.period.setValue(heartbeat.period_ms)
        self.period.setSuffix(" ms")
        self.period.setToolTip("heartbeat period: a precise single-shot Qt timer, re-armed on each tick")
        self.period.valueChanged.connect(heartbeat.set_period_ms)
        self.window = QSpinBox()
        self.window.setRange(10, 30)
        self.window.setValue(int(window_s))
        self.window.setSuffix(" s")
        self.window.setToolTip("how many seconds the chart shows")
        self.window.valueChanged.connect(self.set_window_s)
        self.log_box = QCheckBox("log")
        self.log_box.setToolTip("a logarithmic lag axis: runs of a few ms stay visible next to a run of"
                                " seconds (L; on in presenter mode)")
        self.log_box.toggled.connect(self.set_log_scale)

        head = QHBoxLayout()
        head.setContentsMargins(8, 4, 8, 0)
        head.addWidget(self.title)
        head.addSpacing(18)
        head.addWidget(self.live, 1)     # a LiveLabel takes the width it is given: all that is free
        # the idle floor and the controls: end of the first row, or a second row with large type
        self._controls = QWidget()
        ctl = QHBoxLayout(self._controls)
        ctl.setContentsMargins(0, 0, 0, 0)
        ctl.addWidget(self.floor)
        ctl.addSpacing(18)
        for text, box in (("period", self.period), ("window", self.window)):
            lab = QLabel(text)
            lab.setProperty("muted", True)
            ctl.addWidget(lab)
            ctl.addWidget(box)
        ctl.addSpacing(10)
        ctl.addWidget(self.log_box)
        head.addWidget(self._controls)
        self._head = head
        self._head2 = QHBoxLayout()
        self._head2.setContentsMargins(8, 0, 8, 0)
        self._head2.addStretch(1)
        # the probed programs' colours (set_programs): a row of its own while any is heard
        self.legend = LiveLabel("", fill=False)
        self.legend.setVisible(False)
        self._legend_shown = None
        self._head3 = QHBoxLayout()
        self._head3.setContentsMargins(8, 0, 8, 0)
        self._head3.addWidget(self.legend, 1)

        # plot
        self.plot = live_plot("seconds ago", "lag (ms)")   # axes re-render only when range or style change
        self.paused_label = PausedBadge(self.plot)   # over the plot: pausing moves no header text
        # (a child of the plot, over its viewport and so over the plot area in it)
        self.paused_label.setToolTip("the chart is frozen; the heartbeat keeps recording (Space resumes)")
        self.paused_label.setVisible(False)
        item = self.plot.getPlotItem()
        # the plot area: a plain widget over the view box (the QGraphicsView under it keeps
        # only the axes, repainted when they change): the grid, the shading, the reference
        # lines, the curve (the line from one tick to a late one is the lateness growing while
        # the loop was blocked) and the translucent area under it, the labels (scroll_plot)
        self.area = ScrollPlot(self.plot.viewport())
        self.area.resized.connect(self._plot_resized)
        #: a frame's steps, one turn of the loop each (``frame``; ``kit.turns``)
        self.turns = Turns(self)
        self._frame_now: tuple | None = None   # (now, k_now, changed, spans): the data step's, for the next
        #: the curve last shown: ``xData`` (s ago) and ``yData`` (view coordinates)
        self.trace = ShownCurve(self)
        vb = item.getViewBox()
        vb.geometryChanged.connect(self._place_area)
        self._vb_size = (vb.width(), vb.height())
        # the reference lines are made by _apply_colors (called by apply_fonts)
        #: are the window's own stalls left out of the header's figures now? (the header says so)
        self.own_left_out = False
        self.plot.setXRange(-self._window_s, 0, padding=0)
        self.plot.setYRange(self._scale.bottom, self._top, padding=0)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(head)
        layout.addLayout(self._head2)
        layout.addLayout(self._head3)
        layout.addWidget(self.plot, 1)
        self.apply_fonts()

        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(int(1000 / FPS))
        self.frame_timer.timeout.connect(self.frame)

    # --- public ----------------------------------------------------------------------
    def start(self) -> None:
        self.frame_timer.start()

    def stop(self) -> None:
        self.frame_timer.stop()

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    def set_paused(self, paused: bool) -> None:
        """Freeze (or resume) the picture; the heartbeat keeps recording meanwhile."""
        if paused == self.paused:
            return
        self._paused_at = time.perf_counter() if paused else None
        self.paused_label.setVisible(paused)
        self.redraw()

    def toggle_paused(self) -> bool:
        self.set_paused(not self.paused)
        return self.paused

    def set_programs(self, book) -> ProgramsOverlay:
        """Draw the programs ``book`` (a ``lanemon.probe.book.ProbeBook`` on ``time.perf_counter``)
        hears: each one's p99 line and blocks, in its colour (``programs_overlay``)."""
        if self.programs is not None:
            self.programs.clear()
        self.programs = ProgramsOverlay(self.area, book)
        return self.programs

    def _show_legend(self, legend) -> None:
        """Which probed program is which colour, above the plot (hidden while none is heard)."""
        if legend == self._legend_shown:
            return
        self._legend_shown = legend
        parts = [("programs  ", theme.MUTED, False)] if legend else []
        for text, color, stale in legend:
            parts.append((f"━ {text}" + (" (stale)" if stale else "") + "   ", color, True))
        self.legend.set_parts(parts)
        self.legend.setToolTip("probed programs (lanemon.probe): each one's p99 lag per ~100 ms in its"
                               " colour, its blocks as bars along the bottom; the Programs tab says more")
        self.legend.setVisible(bool(legend))

    def add_own_block(self, block: OwnBlock) -> None:
        """A stall of the window's own loop (its watchdog's ``blocked``): labelled on the chart
        at its start with its duration and the function its time went to -- unless it falls in
        one of the window's own stalls, which is labelled already ("window start-up",
        "presenter mode": a second label there only crowded the top of the chart)."""
        self.own_blocks.append(block)

    def own_block_text(self, block: OwnBlock) -> str:
        """The label of a watchdog block: ``"blocked 412 ms\nin hash_range"``."""
        where = f"\nin {block.culprit}" if block.culprit else ""
        return f"blocked {block.duration_ms:,.0f} ms{where}"

    def own_block_labels(self) -> list[str]:
        """The texts of the watchdog block labels on the chart now (shown or crowded out)."""
        return [label.text() for label in self._block_labels.values()]

    @contextmanager
    def own_stall(self, label: str) -> Iterator[OwnStall]:
        """Mark the work inside the ``with`` as the window's own stall called ``label``:
        shaded and labelled on the chart, its ticks (up to the first tick after it) left out
        of the header's figures. Nothing else changes; exceptions pass through."""
        stall = OwnStall(str(label), time.perf_counter())
        self._own.append(stall)
        del self._own[:-MAX_OWN_STALLS]
        try:
            yield stall
        finally:
            stall.end()

    def own_marks(self) -> tuple[OwnStall, ...]:
        """The window's own stalls kept (at most ``MAX_OWN_STALLS``), oldest first."""
        return tuple(self._own)

    def own_spans(self, t: np.ndarray) -> list[tuple[str, float, float]]:
        """(label, start, end) of the window's own stalls, given the ticks' times ``t``
        (sorted): each ends at the first tick after its work ended (``inf`` while none came
        yet; where that tick is not among ``t``, when the work ended); the controller's
        ``OWN_PHASES`` included."""
        spans = []
        marks = [(s.label, s.t_start, s.t_done) for s in self._own]
        marks += [(ph.label, ph.t_start, ph.t_end) for ph in self.controller.phases if ph.label in OWN_PHASES]
        for label, t0, done in marks:
            if done is None:
                spans.append((label, t0, math.inf))
                continue
            i = int(np.searchsorted(t, done, side="left"))
            if i >= t.size:
                end = math.inf                     # its tick has not come yet
            elif i > 0 or t[0] - done <= MAX_PERIOD_MS / 1000.0:
                end = float(t[i])
            else:
                end = done                         # ended before these ticks: none of them is its
            spans.append((label, t0, end))
        return spans

    def _without_own(self, t: np.ndarray, lag: np.ndarray) -> tuple[np.ndarray, bool]:
        """``lag`` without the ticks of the window's own stalls; whether any was left out."""
        if t.size == 0:
            return lag, False
        first, last = float(t[0]), float(t[-1])
        spans = [(t0, t1) for _label, t0, t1 in self.own_spans(t) if t0 < last and t1 >= first]
        if not spans:                      # (the usual case: no mask to build)
            return lag, False
        keep = np.ones(t.size, dtype=bool)
        for t0, t1 in spans:
            keep &= ~((t > t0) & (t <= t1))
        if keep.all():
            return lag, False
        return lag[keep], True

    @property
    def window_s(self) -> float:
        return self._window_s

    @property
    def log_scale(self) -> bool:
        """Is the lag axis logarithmic?"""
        return self._scale.log

    def set_log_scale(self, on: bool) -> None:
        """A logarithmic (``True``) or linear lag axis: the axis, grid and reference lines at
        once, the curve and the runs on the next frame (``redraw``), as any frame does."""
        on = bool(on)
        if on == self._scale.log:
            return
        self._scale = YScale(log=on)
        self.log_box.blockSignals(True)
        self.log_box.setChecked(on)
        self.log_box.blockSignals(False)
        self._set_top(self._top_ms)
        self._drawn = None                 # the next frame draws the curve (and the runs) in the new scale
        self.log_scale_changed.emit(on)

    def _place_area(self) -> None:
        """The plot area lies over the view box (the scene's coordinates are the view's pixels)."""
        rect = self.plot.getPlotItem().getViewBox().sceneBoundingRect()
        self.area.setGeometry(rect.toAlignedRect())

    def _plot_resized(self) -> None:
        height = self._vb_size[1]
        self._vb_size = (float(self.area.width()), float(self.area.height()))
        if self._scale.log and self.area.height() != height:
            self._set_top(self._top_ms)    # as many log ticks as the height has room for
        else:
            self._scale_to_area()
        self._update_grid()
        self._place_ref_labels()
        self._drawn = None

    def _px_per_decade(self) -> float:
        return self._vb_size[1] / max(1e-9, self._top - self._scale.bottom)

    def _axis_top_ms(self) -> float:
        """The top the axis shows: the one asked for, raised to ``LOG_MIN_TOP_MS`` on the log axis."""
        return max(self._top_ms, LOG_MIN_TOP_MS) if self._scale.log else self._top_ms

    def _set_top(self, top_ms: float) -> None:
        """The y axis from the scale's bottom to ``top_ms`` (at least ``LOG_MIN_TOP_MS`` on the
        log axis), its ticks and the grid. ``_top_ms`` keeps the top asked for, so switching
        back to linear shows the same top as before."""
        self._top_ms = top_ms
        top_ms = self._axis_top_ms()
        self._top = self._scale.to_view(top_ms)
        self.plot.setYRange(self._scale.bottom, self._top, padding=0)
        ticks = self._scale.ticks(top_ms, self._px_per_decade())
        self.plot.getPlotItem().getAxis("left").setTicks(None if ticks is None else [ticks, []])
        self._scale_to_area()
        self._drawn = None

    def _scale_to_area(self) -> None:
        """The plot area's y range, horizontal grid and reference lines (the ring is repainted)."""
        scale = self._scale
        grid = scale.to_view(np.asarray(scale.lines(self._axis_top_ms(), self._px_per_decade()), dtype=np.float64))
        refs = [(scale.to_view(ms), QColor(getattr(theme, color_name)))
                for ms, _text, color_name, _where, _anchor in REF_LINES]
        self.area.set_scale(scale.bottom, self._top, grid.tolist(), refs)
        self._place_ref_labels()

    def _update_grid(self) -> None:
        """The vertical grid: a line per second (every 2 s past 20 s); the horizontal lines go
        where the scale puts them (``_scale_to_area``: ~5 evenly spaced, or 1-2-5 per decade)."""
        w = self._window_s
        step_x = 1 if w <= 20 else 2
        self.area.set_time_grid(range(0, int(w) + 1, step_x))

    def set_window_s(self, seconds: float) -> None:
        self._window_s = float(min(30, max(10, seconds)))
        self.plot.setXRange(-self._window_s, 0, padding=0)
        self._columns_key = None          # the next frame makes the columns for it
        self._fold_in_ticks(self._paused_at if self._paused_at is not None else time.perf_counter())
        self._update_grid()
        self._place_ref_labels()

    def _controls_need_own_row(self) -> bool:
        """Presenter type, or a header too narrow for the title, the whole figures line and
        the controls on one row (a 1024-px screen): the controls go to a second row."""
        if theme.font_scale() > 1.25:
            return True
        figures = self.live.fontMetrics().horizontalAdvance("p50 0000.0   p99 0000.0   max 00000.0   ms · last 20 s")
        one_row = self.title.sizeHint().width() + figures + self._controls.sizeHint().width() + 40
        return self.width() < one_row

    def _place_controls(self) -> None:
        two_rows = self._controls_need_own_row()
        if two_rows != (self._head2.indexOf(self._controls) >= 0):
            (self._head if two_rows else self._head2).removeWidget(self._controls)
            (self._head2 if two_rows else self._head).addWidget(self._controls)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # moving a widget between layouts inside a resize is not safe in Qt: next loop turn
        QTimer.singleShot(0, self, self._place_controls)   # not after the chart is gone

    def _place_ref_labels(self) -> None:
        """The reference lines' labels: on their line, ``where`` along it (pixels of the plot area)."""
        width = self.area.width()
        for ms, label, where in self._ref_lines:
            label.setPos(where * width, math.floor(self.area.y_of(self._scale.to_view(ms))))

    def apply_fonts(self) -> None:
        """Re-apply fonts and colours after ``theme.apply`` changed the font scale or palette."""
        axis_font = self._axis_font = theme.style_axes(self.plot, self.font())
        self._apply_colors()
        self._place_controls()
        big = QFont(self.font())
        big.setPointSizeF(theme.pt(14))
        big.setBold(True)
        self.title.setFont(big)
        self.live.setFont(theme.mono_font(12.5))
        self.paused_label.setFont(big)
        self.paused_label.place()
        for _ms, label, _where in self._ref_lines:
            label.setFont(axis_font)
        self._measure_axes()

    def _measure_axes(self) -> None:
        """Lay the axes' tick labels out now, in the new font: a pyqtgraph axis learns how
        wide its labels are only when it first draws them, and takes that width then, after
        the window's paint: a second layout and paint of the whole chart (6-9 ms of loop
        time after each presenter toggle). Drawn here into a picture the axis keeps (its own
        paint reuses it unless its size or range changes), so the layout that follows the
        change already has the width. Not while the chart is hidden (before its first show,
        or the replay bar in its place): it is laid out and painted anew when shown."""
        if not self.isVisible():
            return
        for name in ("left", "bottom"):
            axis = self.plot.getPlotItem().getAxis(name)
            picture = QPicture()
            painter = QPainter(picture)
            try:
                axis.paint(painter, None, None)
            finally:
                painter.end()

    def _label_fill(self, alpha: int) -> QColor:
        color = QColor(theme.BG)
        color.setAlpha(alpha)
        return color

    def _apply_colors(self) -> None:
        """Background, axes, curve, reference lines from the current palette; run shading is
        restyled in place (the same spans and labels) and the plot area repainted."""
        dark = theme.is_dark()
        self.plot.setBackground(theme.BG)
        for name in ("left", "bottom"):
            ax = self.plot.getPlotItem().getAxis(name)
            ax.setPen(pg.mkPen(theme.MUTED if dark else theme.FG, width=1))
            ax.setTextPen(pg.mkPen(theme.FG))
            ax.label.setDefaultTextColor(QColor(theme.FG))
        grid = QColor(theme.MUTED if dark else theme.FG)
        grid.setAlpha(255)
        base = QColor(theme.BG)
        mix = 0.30 if dark else 0.12   # an opaque colour between background and text
        grid = QColor(int(base.red() + (grid.red() - base.red()) * mix),
                      int(base.green() + (grid.green() - base.green()) * mix),
                      int(base.blue() + (grid.blue() - base.blue()) * mix))
        lag_fill = QColor(theme.LAG_PEN)
        lag_fill.setAlpha(55 if dark else 40)
        self.area.set_look(QColor(theme.BG), grid, QColor(theme.LAG_PEN), lag_fill)
        self._ref_lines = []
        for ms, text, color_name, where, anchor in REF_LINES:
            label = PlateLabel(text, getattr(theme, color_name), fill=self._label_fill(200), anchor=anchor)
            label.setFont(self._axis_font)
            self._ref_lines.append((ms, label, where))
        self.area.set_fixed_labels([label for _ms, label, _where in self._ref_lines])
        self._scale_to_area()             # the reference lines' colours, and their labels placed
        self._update_grid()
        self.paused_label.update()   # its colours are read at paint time
        self._region_styles.clear()
        # in place: removing and making again hundreds of runs in view cost the toggle
        # ~10 ms per 300 runs shown, and the next frame as much again
        for key, (region, label) in self._regions.items():
            kind = self._region_kind.get(key)
            if kind is None:
                self._style_phase_region(region, label)
            else:
                self._style_run_region(kind, region, label, self._short_labels[key])
        for label in self._block_labels.values():
            self._style_block_label(label)
        if self.programs is not None:
            self.programs.restyle()
        self._legend_shown = None
        self._drawn = None

    # --- drawing ----------------------------------------------------------------------
    def frame(self) -> None:
        """The frame tick (what ``frame_timer`` calls): ``redraw``'s frame in turns of the loop
        (``kit.turns``), so that a heartbeat tick due meanwhile waits for one step, not the
        whole frame: the data (new ticks, y range, runs and labels), then the ring's pixels,
        then the repaint asked of Qt (its paint follows at once), then, every
        ``STATS_EVERY`` frames, the figures in the header. A frame whose steps remain when
        the next one starts (or when ``redraw`` is called) is finished first, at once."""
        steps = (self._frame_data, self._frame_pixels, self.area.present)
        if self._frame % STATS_EVERY == 0:
            steps += (self._frame_figures,)
        self.turns.start(steps)

    def redraw(self) -> None:
        """One frame, now: curve, fill, y range, runs, now and then the live figures.

        Only what changed is touched: the plot area paints the columns new in view and those
        where something changed (``ScrollPlot.show_frame``); when paused (the picture is
        frozen) nothing moves unless the window, the scale or the plot's size changes; the y
        range moves on a coarse ladder (``nice_top``)."""
        self.frame()
        self.turns.finish()

    def _frame_data(self) -> None:
        """A frame's first step: the new ticks folded in, the y range, the runs' spans and
        labels (what ``_frame_pixels`` shows)."""
        now = self._paused_at if self._paused_at is not None else time.perf_counter()
        w = self._window_s
        columns, changed = self._fold_in_ticks(now)
        dt = columns.dt
        area = self.area
        if dt != area.dt:
            area.set_columns(dt)
        k_now = math.floor(now / dt)
        lo = k_now - max(1, area.px_w)         # the columns shown: lo..k_now
        key = self._columns_key
        if key != self._drawn or self._peak_col < lo:
            # the highest lag shown, again (new columns, or its column scrolled out); else the
            # new ticks raised it (_fold_in_ticks)
            self._drawn = key
            cols, peaks = columns.held(lo, k_now)
            i = int(peaks.argmax()) if peaks.size else -1
            self._own_peak = float(peaks[i]) if i >= 0 else 0.0
            self._peak_col = int(cols[i]) if i >= 0 else lo
        self._shown = (k_now, now, dt)
        self._curve.columns = columns
        self._curve.scale = self._scale
        peak = self._own_peak
        if self.programs is not None:
            peak = max(peak, self.programs.draw(now, w, self._scale, self._top))
            self._show_legend(self.programs.legend())
        top_ms = self._top_ms
        if peak * 1.18 > top_ms or top_ms > MIN_TOP_MS:   # else nice_top(peak) is top_ms: no change
            nice = self._nice
            if nice[0] != peak:                           # (the same peak frame after frame: kept)
                nice = self._nice = (peak, nice_top(peak))
            want = nice[1]
            if want > top_ms or want <= SHRINK_BELOW * top_ms:
                self._set_top(want)
        spans = self._draw_runs(now, k_now)
        self._frame_now = (now, k_now, changed, spans)
        self._frame += 1

    def _frame_pixels(self) -> None:
        """A frame's second step: the ring's new pixels, and what to repaint worked out (the
        third step, ``ScrollPlot.present``, asks Qt for it)."""
        _now, k_now, changed, spans = self._frame_now
        self.area.show_frame(k_now, self._curve, changed, spans, self._labels_now)

    def _frame_figures(self) -> None:
        """A frame's last step, every ``STATS_EVERY`` frames: the header's figures."""
        now = self._frame_now[0]
        t, lag, _later = self._shown_ticks(self._window_s, now)
        self._update_text(*self._without_own(t, lag))

    def _shown_ticks(self, seconds: float, now: float) -> tuple[np.ndarray, np.ndarray, int]:
        """The ticks of the ``seconds`` before ``now``; while paused, none after the pause
        (the heartbeat keeps recording, the picture does not). Also how many recorded
        ticks were left out (the buffer's last ones)."""
        t, lag = self.heartbeat.recent(seconds, now)
        if self._paused_at is None:
            return t, lag, 0
        keep = int(np.searchsorted(t, now, side="right"))
        return t[:keep], lag[:keep], t.size - keep

    def _fold_in_ticks(self, now: float) -> tuple[ColumnMax, int | None]:
        """The per-column maxima for the current window and plot width (a column per pixel),
        with every tick shown (up to the pause while paused), and the first column whose
        maximum changed since the last call (``None``: none; after new columns, the whole
        picture is new anyway).

        New columns (a new window or width) are filled from the buffer once; after that
        each frame adds only the ticks that came since the last. While paused no tick is
        added; on resume the ones recorded meanwhile are."""
        w = self._window_s
        n_cols = self.area.px_w if self.area.px_w >= 2 else 100   # a column per pixel
        key = (w, n_cols)
        hb = self.heartbeat
        if key != self._columns_key:
            self._columns_key = key
            if self._columns is None or self._columns.capacity < n_cols + 2:
                self._columns = ColumnMax(n_cols + 2, w / n_cols)
            else:
                self._columns.reset(w / n_cols)
            t, lag, later = self._shown_ticks(w + w / n_cols, now)
            self._columns.add(t, lag)
            self._seen = hb.count - later          # those after the pause: folded in on resume
            return self._columns, None
        count = hb.count
        if count != self._seen and self._paused_at is None:
            columns = self._columns
            if count - self._seen <= FEW_TICKS:            # a frame's ~3: plain Python
                t, lag = hb.between_lists(self._seen, count)
                first = columns.add_few(t, lag)
            else:                                          # a resume after a long pause
                t_np, lag_np = hb.between(self._seen, count)
                first = columns.add(t_np, lag_np)
                i = int(lag_np.argmax())
                t, lag = [float(t_np[i])], [float(lag_np[i])]
            self._seen = count
            peak = self._own_peak
            if lag and max(lag) >= peak:                   # the highest lag shown: a new one
                for ti, li in zip(t, lag):
                    if li >= peak:
                        peak, self._peak_col = li, math.floor(ti / columns.dt)
                self._own_peak = peak
            return columns, first
        return self._columns, None

    def shown_curve(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The curve shown: (seconds ago of each held column's start, its maximum in view
        coordinates); ``(None, None)`` before the first frame."""
        if self._shown is None or self._columns is None:
            return None, None
        k_now, now, dt = self._shown
        cols, peaks = self._columns.held(k_now - max(1, self.area.px_w), k_now)
        return cols * dt - now, np.asarray(self._scale.to_view_list(peaks.tolist()), dtype=np.float64)

    def shaded(self) -> list[Span]:
        """The spans shaded now (runs, phases, the window's own stalls), in no order."""
        return [span for span, _label in self._regions.values()]

    def _draw_runs(self, now: float, k_now: int) -> list[Span]:
        """Shade each run (and each self-measurement) in view; lay their labels out in rows.
        Returns the spans in view (the labels to draw are left in ``_labels_now``)."""
        w = self._window_s
        min_s = w / 400            # a very short run stays visible as a sliver
        seen = set()
        # (x0 in pixels, label, priority, its short form or None) for the label layout, any order
        placed = []
        px0 = self.area.px_w - 1 - k_now       # pixel x of absolute column k: k + px0
        dt = self._columns.dt
        for rec in reversed(self.controller.records):
            end = rec.t_end if rec.t_end is not None else now
            if end < now - w:
                break
            seen.add(rec.id)
            region, label = self._regions.get(rec.id) or self._new_region(rec)
            region.t0, region.t1, region.min_s = rec.t_start, min(end, now), min_s
            text = f"#{rec.id} {rec.label}"
            if rec.status == "done":
                text += f"\nmax {rec.stats.max:,.0f} ms"
            elif rec.status != "running":
                text += f"\n{rec.status}"
            label.set_text(text)
            placed.append((math.floor(rec.t_start / dt) + px0, label, LABEL_RUN, self._short_labels[rec.id]))
        explained: list[tuple[float, float]] = []   # the window's own stalls, labelled already
        for i, ph in enumerate(self.controller.phases):
            end = ph.t_end if ph.t_end is not None else now
            if ph.label in OWN_PHASES:
                explained.append((ph.t_start, end))
            if end < now - w:
                continue
            key = -1 - i
            seen.add(key)
            if key not in self._regions:
                self._new_phase_region(key, ph.label)
            region, label = self._regions[key]
            region.t0, region.t1, region.min_s = ph.t_start, min(end, now), 0.0
            placed.append((math.floor(ph.t_start / dt) + px0, label, LABEL_PHASE, None))
        if self._own and self._own_in_view(now - w):
            t, _lag = self.heartbeat.recent(w, now)
            for i, (label, t0, t1) in enumerate(self.own_spans(t)[:len(self._own)]):
                end = min(t1, now)
                explained.append((t0, end))
                if end < now - w:
                    continue
                key = ("own", id(self._own[i]))
                seen.add(key)
                if key not in self._regions:
                    self._new_phase_region(key, label)
                region, text = self._regions[key]
                region.t0, region.t1, region.min_s = t0, end, min_s
                placed.append((math.floor(t0 / dt) + px0, text, LABEL_PHASE, None))
        for rid in [r for r in self._regions if r not in seen]:
            self._regions.pop(rid)
            self._region_kind.pop(rid, None)
            self._short_labels.pop(rid, None)
        blocks = set()
        for block in self.own_blocks:
            b_end = block.t_start + block.duration_ms / 1000.0
            if b_end < now - w:
                continue
            if any(t0 <= b_end and block.t_start <= t1 for t0, t1 in explained):
                continue   # inside a labelled own stall ("window start-up", "presenter mode"): said
            bid = (block.t_start, block.duration_ms)
            blocks.add(bid)
            label = self._block_labels.get(bid)
            if label is None:
                label = self._block_labels[bid] = self._new_block_label(self.own_block_text(block))
            placed.append((math.floor(block.t_start / dt) + px0, label, LABEL_BLOCK, None))
        for bid in [b for b in self._block_labels if b not in blocks]:
            self._block_labels.pop(bid)
        self._layout_labels(placed)
        self._labels_now = ([label for _ms, label, _where in self._ref_lines] + [p[1] for p in placed]
                            + [p[3] for p in placed if p[3] is not None])
        return [span for span, _label in self._regions.values()]

    def _own_in_view(self, t0: float) -> bool:
        """Can an own stall reach past ``t0``? (One still going, or one that ended less than the
        longest tick period before it: its span ends at the first tick after it.) Else the frame
        skips them: they stay remembered for ``own_spans``, only their drawing is not redone."""
        margin = MAX_PERIOD_MS / 1000.0
        return any(s.t_done is None or s.t_done > t0 - margin for s in self._own)

    def _new_block_label(self, text: str) -> PlateLabel:
        label = PlateLabel(text)
        self._style_block_label(label)
        return label

    def _style_block_label(self, label: PlateLabel) -> None:
        label.set_colors(theme.REF_LONG, self._label_fill(200))
        font = QFont(self.font())
        font.setPointSizeF(theme.pt(10))
        font.setBold(True)
        label.setFont(font)

    def _layout_labels(self, placed) -> None:
        """By priority (runs, then unexplained blocks, then phases and the window's own
        stalls), left to right within one, each label takes the highest row where it overlaps
        no label placed before it; a run's label that finds none tries its short form (``#3``,
        in the run's colour), at its place or just after a label in its way (``SHORT_SLIDE``
        of its widths at most): the run is still named where runs close together leave no
        room for their whole labels, as in presenter mode on a 768-px screen; else it hides.
        A run's label is never hidden to make room for a start-up's or a toggle's. (Pixels of
        the plot area, y downwards.)"""
        if not placed:      # nothing in view (an idle frame): no row to work out
            return
        width, height = float(self.area.px_w), float(max(1, self.area.px_h))
        # a row is as tall as the tallest label (large type: taller than 15% of the chart)
        tallest = max((p[1].size()[1] for p in placed), default=0.0)
        row_h = max(0.15 * height, tallest + 2)
        rows = max(1, min(LABEL_ROWS, int(0.75 * height / row_h)))
        taken: list[list[tuple[float, float]]] = [[] for _ in range(rows)]   # (x0, x1) per row
        # the reference lines' labels stay where they are: a run label takes another row
        # rather than cover one
        fixed = [label.box() for _ms, label, _where in self._ref_lines if label.isVisible()]
        fixed = [(x, x + fw, y, y + fh) for x, y, fw, fh in fixed]

        def place(x0: float, label: PlateLabel, slide: float = 0.0) -> bool:
            # at x0, or (``slide``) just after a label in the way, at most ``slide`` px further
            lw, lh = label.size()
            x = max(0.0, min(float(x0), width - lw))   # keep the whole label inside the chart
            for row in range(rows):
                y = math.floor(0.01 * height + row_h * row)
                at = [x] + sorted(t1 + 2 for _t0, t1 in taken[row] if x < t1 + 2 <= min(x + slide, width - lw))
                for xc in at:
                    if not any(xc < t1 and t0 < xc + lw for t0, t1 in taken[row]) and not any(
                            xc < fx1 and fx0 < xc + lw and y < fy1 and fy0 < y + lh
                            for fx0, fx1, fy0, fy1 in fixed):
                        taken[row].append((xc, xc + lw))
                        label.setPos(xc, y)
                        label.setVisible(True)
                        return True
            label.setVisible(False)
            return False

        for x0, label, _priority, short in sorted(placed, key=_BY_PRIORITY_THEN_X):
            whole = place(x0, label)
            if short is not None:
                if whole:
                    short.setVisible(False)
                else:                # beside the labels in its way, in its run's colour
                    place(x0, short, SHORT_SLIDE * short.size()[0])

    def _new_phase_region(self, key, text: str) -> None:
        label = PlateLabel(text.replace(" worker", "\nworker"))
        region = Span(key, self._region_style(None)[0])
        self._style_phase_region(region, label)
        self._regions[key] = (region, label)

    def _style_phase_region(self, region: Span, label: PlateLabel) -> None:
        style, color, fill, font = self._region_style(None)
        region.style = style
        label.set_colors(color, fill)
        label.setFont(font)

    def _region_style(self, kind: str | None) -> tuple:
        """(span style, text colour, plate, font) of a run of ``kind``'s shading and label
        (``None``: a phase or an own stall, under the grid), made once per look
        (``_apply_colors`` forgets them)."""
        style = self._region_styles.get(kind)
        if style is None:
            font = QFont(self.font())
            if kind is None:
                font.setPointSizeF(theme.pt(9))
                style = (SpanStyle(QColor(*theme.PHASE_FILL), QColor(*theme.PHASE_EDGE), under_grid=True),
                         QColor(theme.MUTED), self._label_fill(190), font)
            else:
                font.setPointSizeF(theme.pt(10))
                font.setBold(True)
                color = theme.kind_color(kind)
                style = (SpanStyle(theme.kind_color(kind, 60), theme.kind_color(kind, 160), under_grid=False),
                         color if theme.is_dark() else color.darker(120), self._label_fill(190), font)
            self._region_styles[kind] = style
        return style

    def _new_region(self, rec):
        label = PlateLabel("")
        region = Span(rec.id, self._region_style(rec.kind)[0])
        self._short_labels[rec.id] = short = PlateLabel(f"#{rec.id}")
        self._style_run_region(rec.kind, region, label, short)
        self._regions[rec.id] = (region, label)
        self._region_kind[rec.id] = rec.kind
        return region, label

    def _style_run_region(self, kind: str, region: Span, *labels: PlateLabel) -> None:
        style, color, fill, font = self._region_style(kind)
        region.style = style
        for label in labels:
            label.set_colors(color, fill)
            label.setFont(font)

    def _update_text(self, lag: np.ndarray, left_out: bool = False) -> None:
        s = lag_stats(lag)
        muted = theme.MUTED
        worst = theme.REF_LONG if s.max >= 50 else (theme.REF_FRAME if s.max >= 1000 / 60 else None)
        parts = figure_parts((("p50", f"{s.p50:,.1f}", None), ("p99", f"{s.p99:,.1f}", None),
                              ("max", f"{s.max:,.1f}", worst)), muted, "  ")
        parts.append((f"  ms · last {self._window_s:.0f} s", muted, False))
        if left_out:  # said in the header, beside the figures it is about (in the plot's corner it
            parts.append((OWN_NOTE, muted, False))   # covered the reference lines' labels)
        self.own_left_out = left_out
        self.live.set_parts(parts)
        floor = self.controller.machine.floor
        if floor is not None:
            self.floor.setText(f"idle floor p50 {floor.p50:.2f} · p99 {floor.p99:.2f} ms")
