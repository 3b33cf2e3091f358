"""The replay panel: what takes the heartbeat chart's place while a recording is replayed.

Widgets only (no rule about recordings here; ``lanemon.ui.replay.mode`` drives them):

- the **bar**: the recording's name, step back, play / pause, step forward, the speed,
  a slider over every event (0 = before the first), the position ("event 1,234 /
  56,789 · 12.3 s") and Leave replay;
- the recording's **heartbeat** around the position (``ReplayChart``: the lag curve, the
  16.7 ms and 50 ms lines, the position as a vertical line);
- the **notable moments** (a list: click, Enter or double-click jumps there);
- **what happened**: the event at the position in plain words and, at a double
  assignment, the race explained line by line.

Keys while the focus is in the panel (the slider has it when a replay opens; every
control is reached with Tab): Space or P play / pause, Left / Right one event back /
forward, Page Up / Page Down 100 events, Home / End the first / last event, + / -
speed, M the moments list, Esc leave the replay.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractListModel, QLineF, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QPen, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QGraphicsLineItem,
    QHBoxLayout,
    QLabel,
    QListView,
    QPushButton,
    QScrollArea,
    QSlider,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from lanemon.ui.kit import theme
from lanemon.ui.kit.chart_items import FAR, Curve, cosmetic_pen, hline, live_plot
from lanemon.ui.kit.live_label import LiveLabel
from lanemon.ui.kit.qt_start import pg
from lanemon.ui.kit.titled import titled

SPEEDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0)
DEFAULT_SPEED = 1.0
CHART_SPAN_S = 20.0       # seconds of heartbeat the chart shows around the position
PAGE_EVENTS = 100         # Page Up / Page Down
REF_LINES_MS = ((16.7, "REF_FRAME"), (50.0, "REF_LONG"))


def position_text(k: int, total: int, seconds: float) -> str:
    """"event 1,234 / 56,789 · 12.3 s": the events applied and the time into the recording."""
    return f"event {k:,} / {total:,} · {seconds:.1f} s"


def speed_text(speed: float) -> str:
    return f"{speed:g}×"


class ReplayChart(QWidget):
    """The recording's heartbeat lag around the position: ``show(times, lags, at)`` with
    times in seconds into the recording; the x axis runs from ``at - span/2`` to
    ``at + span/2``, the position is a vertical line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("Heartbeat lag (recorded)")
        self.plot = live_plot("seconds into the recording", "lag (ms)")
        self.curve = Curve(cosmetic_pen(theme.LAG_PEN))
        self.curve.setZValue(10)
        self.cursor = QGraphicsLineItem(QLineF(0.0, -FAR, 0.0, FAR))
        self.cursor.setZValue(20)
        self._refs: list = []
        item = self.plot.getPlotItem()
        item.addItem(self.curve, ignoreBounds=True)
        item.addItem(self.cursor, ignoreBounds=True)
        self.points = 0           # points drawn last (tests)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        self.apply_fonts()

    def apply_fonts(self) -> None:
        self.plot.setBackground(theme.BG)
        item = self.plot.getPlotItem()
        for name in ("left", "bottom"):
            ax = item.getAxis(name)
            ax.setPen(pg.mkPen(theme.MUTED if theme.is_dark() else theme.FG, width=1))
            ax.setTextPen(pg.mkPen(theme.FG))
            ax.label.setDefaultTextColor(QColor(theme.FG))
        font = QFont(self.font())
        font.setPointSizeF(theme.pt(10))
        theme.style_axes(self.plot, font)
        self.curve.setPen(cosmetic_pen(theme.LAG_PEN))
        pen = QPen(QColor(theme.REPLAY_CURSOR), 3)
        pen.setCosmetic(True)      # 3 pixels, whatever the scale
        self.cursor.setPen(pen)
        for line in self._refs:
            self.plot.removeItem(line)
        self._refs = []
        for y, name in REF_LINES_MS:
            line = hline(y, cosmetic_pen(getattr(theme, name), Qt.PenStyle.DashLine))
            line.setZValue(5)
            self.plot.addItem(line, ignoreBounds=True)
            self._refs.append(line)
        bold = QFont(self.font())
        bold.setPointSizeF(theme.pt(11))
        bold.setBold(True)
        self.title.setFont(bold)

    def show_lags(self, times, lags, at: float) -> None:
        t = np.asarray(times, dtype=np.float64)
        y = np.asarray(lags, dtype=np.float64)
        self.points = int(t.size)
        self.curve.setData(t, y)
        self.cursor.setLine(QLineF(at, -FAR, at, FAR))
        half = CHART_SPAN_S / 2
        self.plot.setXRange(at - half, at + half, padding=0)
        top = max(60.0, float(y.max()) * 1.1 if y.size else 0.0)
        self.plot.setYRange(0.0, top, padding=0)


class MomentsModel(QAbstractListModel):
    """The moments list's rows, made only when shown: a long recording has tens of
    thousands of moments (a 10-minute short-lock run: 18,970), and a ``QListWidget``
    item for each, made up front, added ~220 ms of CPU to opening it."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list = []
        self._text = str

    def set_rows(self, rows: list, text) -> None:
        """``rows`` (any objects), each shown as ``text(row)``."""
        self.beginResetModel()
        self._rows = rows
        self._text = text
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self._text(self._rows[index.row()])
        return None


class ReplayPanel(QWidget):
    """The bar, the chart, the moments and the explanation (see the module docstring).

    Signals (the mode acts on them): ``seek_requested(k)``, ``step_requested(delta)``,
    ``play_toggled()``, ``speed_chosen(speed)``, ``moment_chosen(row)``,
    ``leave_requested()``."""

    seek_requested = Signal(int)
    step_requested = Signal(int)
    play_toggled = Signal()
    speed_chosen = Signal(float)
    moment_chosen = Signal(int)
    leave_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._syncing = False
        self.name = LiveLabel("", fill=False)
        self.back_btn = QPushButton("◀ Step")
        self.play_btn = QPushButton("▶ Play")
        self.forward_btn = QPushButton("Step ▶")
        self.speed = QComboBox()
        for s in SPEEDS:
            self.speed.addItem(speed_text(s), s)
        self.speed.setCurrentIndex(SPEEDS.index(DEFAULT_SPEED))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setSingleStep(1)
        self.slider.setPageStep(PAGE_EVENTS)
        self.slider.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.position = LiveLabel("", fill=False)
        self.position.reserve(position_text(9_999_999, 9_999_999, 99999.9))
        self.leave_btn = QPushButton("Leave replay")
        for w, tip in ((self.back_btn, "one event back (Left; Page Up: 100)"),
                       (self.play_btn, "play / pause at the chosen speed (Space or P)"),
                       (self.forward_btn, "one event forward (Right; Page Down: 100)"),
                       (self.speed, "playing speed, times real time (+ / -)"),
                       (self.slider, "every event of the recording: drag to scrub (Home / End: first / last)"),
                       (self.leave_btn, "back to the live window (Esc)")):
            w.setToolTip(tip)
        self.chart = ReplayChart()
        self.moments_title = QLabel("Notable moments")
        self.moments_model = MomentsModel(self)
        self.moments = QListView()
        self.moments.setModel(self.moments_model)
        self.moments.setUniformItemSizes(True)
        self.moments.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.moments.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.moments.setToolTip("Enter, a click or a double-click jumps to the moment (M: here)")
        self.moments.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.moments.setTextElideMode(Qt.TextElideMode.ElideRight)   # (whole in the item's tooltip)
        self.story_title = QLabel("What happened")
        self.story = QLabel("")
        self.story.setWordWrap(True)
        self.story.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.story.setTextFormat(Qt.TextFormat.PlainText)
        self.story.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        top = QHBoxLayout()
        top.setContentsMargins(8, 4, 8, 0)
        top.addWidget(self.name, 1)
        top.addWidget(self.leave_btn)
        bar = QHBoxLayout()
        bar.setContentsMargins(8, 0, 8, 0)
        for w in (self.back_btn, self.play_btn, self.forward_btn, self.speed):
            bar.addWidget(w)
        bar.addWidget(self.slider, 1)
        bar.addWidget(self.position)

        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.chart)
        body.addWidget(titled(self.moments_title, self.moments))
        # the story scrolls when the panel is short (large type on a small projector)
        story = QScrollArea()
        story.setFrameShape(QFrame.Shape.NoFrame)
        story.setWidgetResizable(True)
        story.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        story.setWidget(self.story)
        story.setAutoFillBackground(False)
        story.viewport().setAutoFillBackground(False)
        self.story.setAutoFillBackground(False)
        self.story_scroll = story
        body.addWidget(titled(self.story_title, story))
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 4)
        body.setStretchFactor(2, 6)
        body.setSizes([330, 400, 550])
        body.setChildrenCollapsible(False)
        self.body = body
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 4)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addLayout(bar)
        layout.addWidget(body, 1)

        self.back_btn.clicked.connect(lambda: self.step_requested.emit(-1))
        self.forward_btn.clicked.connect(lambda: self.step_requested.emit(1))
        self.play_btn.clicked.connect(self.play_toggled.emit)
        self.leave_btn.clicked.connect(self.leave_requested.emit)
        self.speed.currentIndexChanged.connect(lambda i: self.speed_chosen.emit(float(self.speed.itemData(i))))
        self.slider.valueChanged.connect(self._slid)
        self.moments.activated.connect(lambda index: self.moment_chosen.emit(index.row()))
        self.moments.clicked.connect(lambda index: self.moment_chosen.emit(index.row()))

        def key(seq, slot) -> QShortcut:
            s = QShortcut(QKeySequence(seq), self)
            s.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            s.activated.connect(slot)
            return s

        self.shortcuts = [
            key(Qt.Key.Key_Space, self.play_toggled.emit), key(Qt.Key.Key_P, self.play_toggled.emit),
            key(Qt.Key.Key_Left, lambda: self.step_requested.emit(-1)),
            key(Qt.Key.Key_Right, lambda: self.step_requested.emit(1)),
            key(Qt.Key.Key_PageUp, lambda: self.step_requested.emit(-PAGE_EVENTS)),
            key(Qt.Key.Key_PageDown, lambda: self.step_requested.emit(PAGE_EVENTS)),
            key(Qt.Key.Key_Home, lambda: self.seek_requested.emit(0)),
            key(Qt.Key.Key_End, lambda: self.seek_requested.emit(self.slider.maximum())),
            key(Qt.Key.Key_Plus, lambda: self.step_speed(1)), key(Qt.Key.Key_Equal, lambda: self.step_speed(1)),
            key(Qt.Key.Key_Minus, lambda: self.step_speed(-1)),
            key(Qt.Key.Key_M, self.focus_moments),
            key(Qt.Key.Key_Escape, self.leave_requested.emit),
        ]
        self.apply_fonts()

    # --- what the mode calls -------------------------------------------------------------------
    def set_recording(self, name: str, total: int, warnings=()) -> None:
        parts = [("REPLAY  ", theme.REPLAY_CURSOR, True), (name, None, True)]
        if warnings:
            parts.append(("  ·  " + "; ".join(warnings), theme.WARN, False))
        self.name.set_parts(parts)
        self._syncing = True
        try:
            self.slider.setRange(0, total)
            self.slider.setValue(0)
        finally:
            self._syncing = False

    def set_moments(self, rows: list, text=str) -> None:
        """The moments to list, each shown as ``text(row)`` (also its tooltip)."""
        self.moments_model.set_rows(rows, text)
        self.moments_title.setText(f"Notable moments ({len(rows):,})" if rows else
                                   "Notable moments: none in this recording")

    def show_position(self, k: int, total: int, seconds: float) -> None:
        self._syncing = True
        try:
            self.slider.setValue(k)
        finally:
            self._syncing = False
        self.position.setText(position_text(k, total, seconds))

    def set_playing(self, playing: bool) -> None:
        self.play_btn.setText("❚❚ Pause" if playing else "▶ Play")

    def show_story(self, title: str, lines, race: bool = False) -> None:
        self.story_title.setText(title)
        self.story.setText("\n".join(lines))
        self._race = race
        self._style_story()

    def select_moment(self, row: int) -> None:
        """Mark the moment the position is at (or after); -1: none."""
        if row < 0:
            self.moments.clearSelection()
        else:
            self.set_current_moment(row)

    def set_current_moment(self, row: int) -> None:
        """Select and show row ``row`` of the moments list (without jumping there)."""
        index = self.moments_model.index(row, 0)
        self.moments.setCurrentIndex(index)
        self.moments.scrollTo(index)

    def current_moment(self) -> int:
        return self.moments.currentIndex().row()

    def step_speed(self, delta: int) -> None:
        i = max(0, min(self.speed.count() - 1, self.speed.currentIndex() + delta))
        self.speed.setCurrentIndex(i)

    def focus_moments(self) -> None:
        self.moments.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if self.current_moment() < 0 and self.moments_model.rowCount():
            self.set_current_moment(0)

    # --- inside ----------------------------------------------------------------------------------
    def _slid(self, value: int) -> None:
        if not self._syncing:
            self.seek_requested.emit(value)

    _race = False

    def _style_story(self) -> None:
        color = theme.RACE_HIGHLIGHT if self._race else theme.FG
        self.story_title.setStyleSheet(f"color: {color};")

    def apply_fonts(self) -> None:
        bold = QFont(self.font())
        bold.setPointSizeF(theme.pt(11))
        bold.setBold(True)
        for lab in (self.moments_title, self.story_title):
            lab.setFont(bold)
        self.name.setFont(bold)
        big = QFont(self.font())
        big.setPointSizeF(theme.pt(11.5))
        self.story.setFont(big)
        pos = QFont(self.font())
        pos.setPointSizeF(theme.pt(11))
        self.position.setFont(pos)
        self.position.reserve(position_text(9_999_999, 9_999_999, 99999.9))
        self.chart.apply_fonts()
        self._style_story()


__all__ = ["CHART_SPAN_S", "DEFAULT_SPEED", "PAGE_EVENTS", "SPEEDS", "ReplayChart", "ReplayPanel",
           "position_text", "speed_text"]
