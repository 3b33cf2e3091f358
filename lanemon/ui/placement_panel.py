"""The placement panel: where does a job belong on this machine?

Left: describe a job (``cpu_ms``, shared state) and read ``place()``'s word
and the rule branch that chose it, with the threshold that follows from this
machine's measured cold start-up (and, beside it, from the warm round trip
and the seed's default). Right: what ``place()`` said for each finished run's
measured time. Every answer comes from ``lanemon.work.decide``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from lanemon.ui import theme
from lanemon.ui.run_controller import RunController
from lanemon.work import DEFAULT_THRESHOLD_MS, decide


def _item(text: str, color: str | None = None, bold: bool = False, right: bool = False) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    if color:
        it.setForeground(QColor(color))
    if bold:
        f = it.font()
        f.setBold(True)
        it.setFont(f)
    if right:
        it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return it


class PlacementPanel(QWidget):
    def __init__(self, controller: RunController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller

        # --- describe a job ---------------------------------------------------------------
        self.cpu_ms = QDoubleSpinBox()
        self.cpu_ms.setDecimals(1)
        self.cpu_ms.setRange(0, 10_000_000)
        self.cpu_ms.setValue(30)
        self.cpu_ms.setSuffix(" ms")
        self.shared = QCheckBox("touches shared state")
        self.word = QLabel("")
        self.word.setTextFormat(Qt.TextFormat.RichText)
        self.word.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.rule = QLabel("")
        self.rule.setWordWrap(True)
        self.rule.setTextFormat(Qt.TextFormat.RichText)

        self.thresholds = QTableWidget(3, 4)
        self.thresholds.setHorizontalHeaderLabels(["threshold from", "measured", "threshold", "place()"])
        self._table_style(self.thresholds)

        job = QGroupBox("Describe a job")
        g = QGridLayout(job)
        g.addWidget(QLabel("cpu_ms"), 0, 0)
        g.addWidget(self.cpu_ms, 0, 1)
        g.addWidget(self.shared, 0, 2)
        g.addWidget(self.word, 1, 0, 1, 3)
        g.addWidget(self.rule, 2, 0, 1, 3)
        g.addWidget(self.thresholds, 3, 0, 1, 3)
        g.setRowStretch(3, 1)
        g.setColumnStretch(2, 1)

        # --- after each run -------------------------------------------------------------------
        self.after = QTableWidget(0, 4)
        self.after.setHorizontalHeaderLabels(["run", "workMs", "place() · cold threshold", "warm threshold"])
        self._table_style(self.after)
        runs = QGroupBox("After each run: place() for its measured time")
        rl = QVBoxLayout(runs)
        rl.addWidget(self.after)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(job, 1)
        layout.addWidget(runs, 1)

        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(40)
        self._refresh_timer.timeout.connect(self.refresh)
        controller.changed.connect(self.schedule_refresh)
        self.cpu_ms.valueChanged.connect(self.schedule_refresh)
        self.shared.toggled.connect(self.schedule_refresh)
        self.apply_fonts()
        self.refresh()

    @staticmethod
    def _table_style(t: QTableWidget) -> None:
        t.verticalHeader().setVisible(False)
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        t.setShowGrid(False)
        t.setAlternatingRowColors(True)
        t.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        h = t.horizontalHeader()
        h.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        h.setStretchLastSection(True)

    def apply_fonts(self) -> None:
        f = QFont(self.font())
        f.setPointSizeF(theme.pt(22))
        f.setBold(True)
        self.word.setFont(f)

    def schedule_refresh(self) -> None:
        if not self._refresh_timer.isActive():
            self._refresh_timer.start()

    def refresh(self) -> None:
        m = self.controller.machine
        job = {"cpu_ms": self.cpu_ms.value(), "shared_state": self.shared.isChecked()}
        primary = decide(job, m.threshold_cold)
        color = theme.PLACE_COLORS[primary.where]
        source = ("this machine's cold start-up" if m.cold_startup_ms is not None
                  else "the default (cold start-up not measured yet)")
        self.word.setText(f"place() → <span style='color:{color}'>{primary.where}</span>")
        self.rule.setText(f"{primary.rule}<br><span style='color:{theme.MUTED}'>threshold "
                          f"{m.threshold_cold:g} ms, from {source}</span>")

        rows = [
            ("cold worker start-up", m.cold_startup_ms, m.threshold_cold if m.cold_startup_ms is not None else None),
            ("warm pool round trip", m.warm_roundtrip_ms, m.threshold_warm),
            ("seed default", None, DEFAULT_THRESHOLD_MS),
        ]
        for r, (name, measured, threshold) in enumerate(rows):
            self.thresholds.setItem(r, 0, _item(name))
            if measured is None and name != "seed default":
                self.thresholds.setItem(r, 1, _item("measuring…", theme.MUTED, right=True))
            else:
                self.thresholds.setItem(r, 1, _item("–" if measured is None else f"{measured:,.2f} ms", right=True))
            if threshold is None:
                self.thresholds.setItem(r, 2, _item("", right=True))
                self.thresholds.setItem(r, 3, _item(""))
            else:
                where = decide(job, threshold).where
                self.thresholds.setItem(r, 2, _item(f"{threshold:g} ms", right=True))
                self.thresholds.setItem(r, 3, _item(where, theme.PLACE_COLORS[where], bold=True))

        done = [rec for rec in reversed(self.controller.records) if rec.placement_cold is not None]
        self.after.setRowCount(len(done))
        for r, rec in enumerate(done):
            self.after.setItem(r, 0, _item(f"#{rec.id} {rec.label}", theme.kind_color(rec.kind).darker(115).name()))
            self.after.setItem(r, 1, _item(f"{rec.work_ms:,.1f}", right=True))
            pc = rec.placement_cold
            it = _item(pc.where, theme.PLACE_COLORS[pc.where], bold=True)
            it.setToolTip(pc.rule)
            self.after.setItem(r, 2, it)
            pw = rec.placement_warm
            if pw is None:
                self.after.setItem(r, 3, _item("–", theme.MUTED))
            else:
                it = _item(pw.where, theme.PLACE_COLORS[pw.where], bold=True)
                it.setToolTip(pw.rule)
                self.after.setItem(r, 3, it)
