"""Run records and the results table model.

``RunRecord`` is plain data written by ``RunController``; ``RunsTableModel``
only reads the controller's list and formats it (newest run first).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from lanemon.ui.kit import theme
from lanemon.work.lag import LagStats
from lanemon.work.placement import Placement

FAMILY = {"whole": "whole", "sliced": "sliced", "cold": "worker", "warm": "worker", "thread": "worker"}


@dataclass
class RunRecord:
    id: int
    kind: str                  # whole | sliced | cold | warm | thread
    total: int
    t_start: float             # time.perf_counter()
    how: str = ""              # "8 ms budget", "slices of 100,000", ...
    t_end: float | None = None
    status: str = "running"    # running | done | failed | cancelled | timed out
    progress: float = 0.0      # 0..1 (sliced runs)
    work_ms: float | None = None
    result: int | None = None
    slices: int | None = None
    stats: LagStats | None = None
    error: str | None = None
    placement_cold: Placement | None = None   # place() with the cold start-up threshold
    placement_warm: Placement | None = None   # place() with the warm round-trip threshold
    expected_s: float | None = None   # worker runs: the expected time here (None: not calibrated)
    timeout_s: float | None = None    # worker runs: stopped on their own after this long (None: never)
    extra: dict = field(default_factory=dict)

    @property
    def family(self) -> str:
        """whole | sliced | worker: the report's three runs."""
        return FAMILY[self.kind]

    @property
    def label(self) -> str:
        return theme.KIND_LABELS.get(self.kind, self.kind)

    @property
    def running(self) -> bool:
        return self.status == "running"

    def entry(self) -> dict:
        """This run as a report entry (``samples, p50, p99, max, workMs, result`` [+ slices])."""
        from lanemon.work.report import run_entry

        extra = {"slices": self.slices} if self.family == "sliced" else {}
        return run_entry(self.stats, self.work_ms, self.result, **extra)


COLUMNS = ("kind", "total", "workMs", "samples", "p50", "p99", "max", "slices", "result")
NUMERIC = {"total", "workMs", "samples", "p50", "p99", "max", "slices", "result"}


def _ms(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


class RunsTableModel(QAbstractTableModel):
    """Newest first. Call ``refresh()`` after the records changed.

    ``refresh`` tells the view only what changed: new runs are inserted at the
    top, a row whose shown texts or colours changed is announced as changed,
    anything else is left alone (the panel refreshes 4 times a second while a
    run is in flight; a model reset repainted the whole table and its header,
    ~3 ms, each time). Only new records and rows that were still running are
    read, so a refresh costs the same at run 300 as at run 3 (a finished run's
    row never changes). Records dropped by a bounded history leave their rows
    (found by identity, no text formatted); records reordered: a reset."""

    def __init__(self, records: list[RunRecord], parent=None) -> None:
        super().__init__(parent)
        self._records = records
        self._rows: list[RunRecord] = []
        self._shown: list[tuple] = []      # what each row showed when last announced
        self._live: list[RunRecord] = []   # runs still running when last looked at: the only rows that change

    def colours_changed(self) -> None:
        """The theme changed: every row is drawn again (``refresh`` only announces changed texts)."""
        if self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, len(COLUMNS) - 1))

    def _look(self, rec: RunRecord) -> tuple:
        return (rec.status, rec.error, rec.how, *(self.text(rec, name) for name in COLUMNS))

    def refresh(self) -> bool:
        """Announce what changed since the last call; whether anything was (rows in, rows
        out, a reset, a row's texts)."""
        # new records are at the end of the list; only rows still running can change
        records = self._records
        new = 0
        known = self._rows[0] if self._rows else None
        for rec in reversed(records):
            if rec is known:
                break
            new += 1
        if known is not None and new == len(records):
            self._reset()                  # the newest row's record is gone: not a history we grew
            return True
        changed = False
        if len(self._rows) + new > len(records):
            changed = self._drop_departed()   # a bounded history dropped some records
        if self._rows and (self._rows[-1] is not records[0] or self._rows[0] is not records[len(self._rows) - 1]):
            self._reset()                  # reordered, not appended or dropped
            return True
        if new:
            changed = True
            self.beginInsertRows(QModelIndex(), 0, new - 1)
            fresh = [records[-1 - i] for i in range(new)]
            self._rows[:0] = fresh
            self._shown[:0] = [self._look(r) for r in fresh]
            self._live.extend(r for r in fresh if r.running)
            self.endInsertRows()
        for rec in list(self._live):
            i = self._rows.index(rec)
            look = self._look(rec)
            if look != self._shown[i]:
                self._shown[i] = look
                self.dataChanged.emit(self.index(i, 0), self.index(i, len(COLUMNS) - 1))
                changed = True
            if not rec.running:
                self._live.remove(rec)
        return changed

    def _drop_departed(self) -> bool:
        present = {id(r) for r in self._records}
        dropped = False
        for i in range(len(self._rows) - 1, -1, -1):     # bottom up: the indices above stay valid
            rec = self._rows[i]
            if id(rec) not in present:
                self.beginRemoveRows(QModelIndex(), i, i)
                del self._rows[i], self._shown[i]
                if rec in self._live:
                    self._live.remove(rec)
                self.endRemoveRows()
                dropped = True
        return dropped

    def _reset(self) -> None:
        self.beginResetModel()
        self._rows = list(reversed(self._records))
        self._shown = [self._look(r) for r in self._rows]
        self._live = [r for r in self._rows if r.running]
        self.endResetModel()

    def record(self, row: int) -> RunRecord:
        return self._rows[row]

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return COLUMNS[section]
            if role == Qt.ItemDataRole.TextAlignmentRole:
                name = COLUMNS[section]
                return int((Qt.AlignmentFlag.AlignRight if name in NUMERIC else Qt.AlignmentFlag.AlignLeft)
                           | Qt.AlignmentFlag.AlignVCenter)
            if role == Qt.ItemDataRole.ToolTipRole:
                return {
                    "total": "the job's size: iterations of hash_range",
                    "workMs": "wall time of the run, ms",
                    "samples": "heartbeat ticks during the run (plus the first tick after it)",
                    "p50": "median tick lag during the run, ms",
                    "p99": "99th percentile tick lag, ms (nearest rank)",
                    "max": "longest stall during the run, ms",
                    "slices": "number of slices (sliced runs)",
                    "result": "hash_range(0, total)",
                }.get(COLUMNS[section])
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        rec = self._rows[index.row()]
        name = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(rec, name)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int((Qt.AlignmentFlag.AlignRight if name in NUMERIC else Qt.AlignmentFlag.AlignLeft)
                       | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole:
            if name == "kind":
                return QBrush(theme.kind_color(rec.kind).darker(115))
            if rec.status in ("failed", "cancelled", "timed out"):
                return QBrush(QColor(theme.MUTED))
        if role == Qt.ItemDataRole.ToolTipRole:
            if rec.error:
                return rec.error
            if name == "kind" and rec.how:
                return rec.how
        if role == Qt.ItemDataRole.UserRole:
            return rec
        return None

    @staticmethod
    def text(rec: RunRecord, name: str) -> str:
        if name == "kind":
            return rec.label
        if name == "total":
            return f"{rec.total:,}"
        if rec.running:
            if name == "workMs":
                return f"{100 * rec.progress:.0f}%" if rec.family == "sliced" else "running…"
            return ""
        if rec.status != "done":
            return rec.status if name == "result" else ""
        s = rec.stats
        if name == "workMs":
            return f"{rec.work_ms:,.1f}"
        if name == "samples":
            return f"{s.samples:,}"
        if name in ("p50", "p99", "max"):
            return _ms(getattr(s, name))
        if name == "slices":
            return f"{rec.slices:,}" if rec.slices is not None else "–"
        if name == "result":
            return str(rec.result)
        return ""
