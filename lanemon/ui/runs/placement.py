"""The placement panel: where does a job belong on this machine?

Left: describe a job (``cpu_ms``, shared state) and read ``place()``'s word
and the rule branch that chose it, with the threshold that follows from this
machine's measured cold start-up (and, beside it, from the warm round trip
and the seed's default). Right: what ``place()`` said for each finished run's
measured time. Every answer comes from ``lanemon.work.decide``.

The right-hand table is a model (``PlacedRunsModel``) that learns of new
placed runs without re-reading the history, and its columns are fitted to the newest rows
only (``tables.fit_columns``): a refresh and a font change cost the same at run 300
as at run 3.
"""

from __future__ import annotations

import bisect

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QTableView,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from lanemon.ui.kit import theme
from lanemon.ui.kit.live_view import LiveView
from lanemon.ui.kit.reflow import Reflow
from lanemon.ui.kit.tables import NEW_ROWS, fit_columns, keep_within_width, table_item
from lanemon.ui.runs.controller import MAX_RECORDS, RunController
from lanemon.ui.runs.model import RunRecord
from lanemon.work import DEFAULT_THRESHOLD_MS, decide

_item = table_item


WIDE_AT = 1100   # px at font scale 1: below it the job form goes above the runs (both tables whole)

PLACED_COLUMNS = ("run", "workMs", "place() · cold threshold", "warm threshold")
PLACED_LIMIT = MAX_RECORDS   # rows kept (newest first), as many as the runs history; older ones leave


class PlacedRunsModel(QAbstractTableModel):
    """What ``place()`` said for each finished run, newest (highest id) first.

    ``refresh()`` reads only the records it has not seen yet and those still
    running when it last looked (a record is placed once, when it is done, and
    never changes after that): its cost does not grow with the history.
    Guaranteed: every record of ``records`` with a ``placement_cold`` is shown
    once, ordered by id, at most ``limit`` rows (the oldest leave first).
    Refused: records that are edited after they were placed are not shown
    again (runs are not edited).
    """

    def __init__(self, records: list[RunRecord], limit: int = PLACED_LIMIT, parent=None) -> None:
        super().__init__(parent)
        self._records = records
        self._limit = limit
        self._rows: list[RunRecord] = []     # newest first
        self._keys: list[int] = []           # -id of each row: ascending, for bisect
        self._last_id = 0                    # the highest record id read so far
        self._pending: list[RunRecord] = []  # read, not yet placed (still running)

    def refresh(self) -> bool:
        """Take in the newly placed runs; whether any came in (rows leave only then: the limit)."""
        fresh = []
        for rec in reversed(self._records):  # new records are at the end
            if rec.id <= self._last_id:
                break
            fresh.append(rec)
        if fresh:
            self._last_id = fresh[0].id
        waiting, self._pending = self._pending + fresh, []
        inserted = 0
        for rec in waiting:
            if rec.placement_cold is not None:
                self._insert(rec)
                inserted += 1
            elif rec.running:
                self._pending.append(rec)
        if len(self._rows) > self._limit:
            self.beginRemoveRows(QModelIndex(), self._limit, len(self._rows) - 1)
            del self._rows[self._limit:], self._keys[self._limit:]
            self.endRemoveRows()
        return inserted > 0

    def _insert(self, rec: RunRecord) -> None:
        at = bisect.bisect_left(self._keys, -rec.id)
        self.beginInsertRows(QModelIndex(), at, at)
        self._rows.insert(at, rec)
        self._keys.insert(at, -rec.id)
        self.endInsertRows()

    def colours_changed(self) -> None:
        if self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, len(PLACED_COLUMNS) - 1))

    def record(self, row: int) -> RunRecord:
        return self._rows[row]

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(PLACED_COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return PLACED_COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        rec = self._rows[index.row()]
        col = index.column()
        placement = rec.placement_cold if col == 2 else rec.placement_warm if col == 3 else None
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return f"#{rec.id} {rec.label}"
            if col == 1:
                return f"{rec.work_ms:,.1f}"
            return "–" if placement is None else placement.where
        if role == Qt.ItemDataRole.ForegroundRole:
            if col == 0:
                return QBrush(theme.kind_color(rec.kind).darker(115))
            if col >= 2:
                return QBrush(QColor(theme.MUTED if placement is None else theme.PLACE_COLORS[placement.where]))
        if role == Qt.ItemDataRole.FontRole and col >= 2 and placement is not None:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and col == 1:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and placement is not None:
            return placement.rule
        return None


class PlacementPanel(LiveView):
    """place() for a described job, and for each run's measured time; refreshed (on the
    next frame tick of its ``LiveView``) when the controller or an input changed."""

    REFRESH_HIDDEN = True   # its table follows the runs from any tab

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
        keep_within_width(self.thresholds)

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
        self.placed = PlacedRunsModel(controller.records, parent=self)
        self.after = QTableView()
        self.after.setModel(self.placed)
        self._table_style(self.after)
        keep_within_width(self.after)
        runs = QGroupBox("After each run: place() for its measured time")
        rl = QVBoxLayout(runs)
        rl.addWidget(self.after)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(job, 1)
        layout.addWidget(runs, 1)
        # the job beside the runs when both tables show their columns whole, above them when not
        self.reflow = Reflow(self, layout, lambda: int(WIDE_AT * theme.font_scale()))

        controller.changed.connect(self.schedule_refresh)
        self.cpu_ms.valueChanged.connect(self.schedule_refresh)
        self.shared.toggled.connect(self.schedule_refresh)
        self.apply_fonts()
        self.refresh()

    @staticmethod
    def _table_style(t: QTableView) -> None:
        t.verticalHeader().setVisible(False)
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        t.setShowGrid(False)
        t.setAlternatingRowColors(True)
        t.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        h = t.horizontalHeader()
        h.setStretchLastSection(True)       # widths: fit_columns (within the width: keep_within_width)

    def fonts_changed(self) -> None:
        f = QFont(self.font())
        f.setPointSizeF(theme.pt(22))
        f.setBold(True)
        self.word.setFont(f)
        fit_columns(self.after, bold_cells=True)
        fit_columns(self.thresholds, bold_cells=True)
        self.reflow.apply()
        self.placed.colours_changed()

    def schedule_refresh(self, *_args) -> None:
        """Something changed: refresh on the next frame tick (changes in between coalesce)."""
        self.mark_dirty(urgent=True)

    def refresh_steps(self, urgent: bool):
        return (self.refresh,)

    def refresh(self) -> None:
        """Show everything now."""
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

        fit_columns(self.thresholds, bold_cells=True)
        if self.placed.refresh():            # new rows (on top, mostly): the columns may widen
            fit_columns(self.after, NEW_ROWS, bold_cells=True, grow_only=True)
