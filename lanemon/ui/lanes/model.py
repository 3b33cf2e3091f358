"""Table models of the lanes & queues view: formatting only, no domain rule.

Both models take plain rows built from one ``Scheduler.snapshot()`` and update
**in place**: a row that is the same object as before is skipped (but for
its time text), a changed row is compared cell by cell and only the changed
cells of the rows in view are announced (the view repaints only those), the
row count grows or shrinks at the end.
No model reset per frame, so the view keeps its scroll position; the view
re-selects the chosen job by id after each update.

- ``WorkspacesModel``: one row per workspace: its scheduled-lane owner (queue
  and job), token epoch, time held, stop request, last run, and the
  checkable "busy outside" column (``on_busy(workspace, busy)`` is called when
  the user toggles it; the view turns that into a domain call).
- ``JobsModel``: one queue: running jobs, then waiting (FIFO), then recently
  finished (newest first), each state colour-coded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont

from lanemon.ui.kit import theme

QUEUE_LABELS = {"reservations": "reservations", "cafe": "cafe delivery"}

_DISPLAY = Qt.ItemDataRole.DisplayRole
_FG = Qt.ItemDataRole.ForegroundRole
_BG = Qt.ItemDataRole.BackgroundRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_TIP = Qt.ItemDataRole.ToolTipRole
_CHECK = Qt.ItemDataRole.CheckStateRole
_FONT = Qt.ItemDataRole.FontRole
_USER = Qt.ItemDataRole.UserRole
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_CENTER = int(Qt.AlignmentFlag.AlignCenter)

_brushes: dict[str, QBrush] = {}


def brush(color: str) -> QBrush:
    b = _brushes.get(color)
    if b is None:
        b = _brushes[color] = QBrush(QColor(color))
    return b


def _last_run_color(state: str) -> str:
    """A workspace's last run: failed in ``ERROR_TEXT``, succeeded in ``OK_TEXT``, else muted."""
    if state == "failed":
        return theme.ERROR_TEXT
    return theme.OK_TEXT if state == "succeeded" else theme.MUTED


def seconds(s: float | None) -> str:
    if s is None:
        return ""
    if s < 10:
        return f"{s:.1f} s"
    if s < 600:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min"


_TERMINAL_WORDS = frozenset(("succeeded", "failed", "cancelled"))
_RED_DETAIL = frozenset(("failed", "save held", "unsaved"))  # labels whose detail is an error


def job_label(job) -> str:
    """The state word a person reads for a ``JobView`` (display only).

    A finished job whose final record could not be written (its stored state is
    not terminal) reads "unsaved", never the state the store still shows."""
    if job.phase == "done":
        return job.state if job.state in _TERMINAL_WORDS else "unsaved"
    if job.save_held:
        return "save held"
    if job.stop_requested and job.phase in ("starting", "running"):
        return "stopping"
    if job.phase == "waiting":
        return "queued"
    return job.phase


class _RowsModel(QAbstractTableModel):
    COLUMNS: tuple[str, ...] = ()
    TIPS: dict[str, str] = {}
    TIME_COLUMN = -1

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list[tuple] = []
        self._keys: list = []
        self.now = 0.0
        self._bold = QFont()
        self._bold.setBold(True)
        self._visible_rows: Callable[[], tuple[int, int]] | None = None
        # row index -> (row, its cells), for the rows shown at the last update;
        # describes the model's current rows (time texts as last compared)
        self._shown: dict[int, tuple] = {}

    def set_visible_rows(self, rows: Callable[[], tuple[int, int]] | None) -> None:
        """``rows() -> (first, last)``: the rows the view shows (``None``, the default:
        every row). Only those are compared and announced by ``set_rows`` and ``tick``:
        a row out of view is painted from the model when it scrolls in."""
        self._visible_rows = rows

    # --- updating in place -------------------------------------------------------------
    def set_rows(self, rows: Sequence[tuple], keys: Sequence, now: float) -> None:
        """Replace the rows; only the shown cells whose rendering changed are announced.
        ``rows`` and ``keys`` are kept as given (not copied): the caller hands over
        sequences it no longer changes; ``rows`` may make each row when it is asked for
        (only the rows shown are: the workspaces table of 10,000 workspaces).

        A row that is the same object as before is unchanged but for its time
        text (live rows); a different row object is compared cell by cell
        (``_cells``). One ``dataChanged`` per column spans the shown rows whose
        cell in that column changed, so the view repaints those cells, not the
        whole table. The row count grows or shrinks at the end.
        """
        self.now = now
        n_old, n_new = len(self._rows), len(rows)
        if n_new < n_old:
            self.beginRemoveRows(QModelIndex(), n_new, n_old - 1)
            self._rows, self._keys = rows, keys
            self.endRemoveRows()
        elif n_new > n_old:
            self.beginInsertRows(QModelIndex(), n_old, n_new - 1)
            self._rows, self._keys = rows, keys
            self.endInsertRows()
        self._rows, self._keys = rows, keys
        self._announce(n_old)

    def tick(self, now: float, announce: bool = True) -> None:
        """The clock moved: only the time texts of live rows change."""
        self.now = now
        if announce:
            self._announce(len(self._rows))

    def _announce(self, n_old: int) -> None:
        rows = self._rows
        n = len(rows)
        if self._visible_rows is None:
            lo, hi = 0, n - 1
        else:
            lo, hi = self._visible_rows()
            lo, hi = max(lo, 0), min(hi, n - 1)
        shown, new_shown = self._shown, {}
        tc = self.TIME_COLUMN
        ncol = len(self.COLUMNS)
        spans: dict[int, list[int]] = {}
        whole = [-1, -1]
        for i in range(lo, hi + 1):
            row = rows[i]
            prev = shown.get(i)
            if prev is not None and prev[0] is row:
                cells = prev[1]
                if tc >= 0 and self._is_live(row):
                    t = self._time_text(row)
                    if cells[tc] != t:
                        cells = cells[:tc] + (t,) + cells[tc + 1:]
                        _mark(spans, tc, i)
                new_shown[i] = (row, cells)
                continue
            cells = self._cells(row)
            new_shown[i] = (row, cells)
            if i >= n_old:
                continue            # inserted: the view paints it
            if prev is None:        # came into view: its cells are unknown
                if whole[0] < 0:
                    whole[0] = i
                whole[1] = i
                continue
            old_cells = prev[1]
            if old_cells != cells:
                for c in range(ncol):
                    if old_cells[c] != cells[c]:
                        _mark(spans, c, i)
        self._shown = new_shown
        if whole[0] >= 0:
            self.dataChanged.emit(self.index(whole[0], 0), self.index(whole[1], ncol - 1))
        for c, (first, last) in spans.items():
            self.dataChanged.emit(self.index(first, c), self.index(last, c))

    def _is_live(self, row: tuple) -> bool:
        return False

    def _time_text(self, row: tuple) -> str:
        return ""

    def _cells(self, row: tuple) -> tuple:
        """What each column of ``row`` looks like (text, colours, font, tip), per column."""
        return tuple(row)

    def key(self, row: int):
        return self._keys[row] if 0 <= row < len(self._keys) else None

    def row_of(self, key) -> int:
        try:
            return self._keys.index(key)
        except ValueError:
            return -1

    def row_data(self, row: int) -> tuple:
        return self._rows[row]

    # --- Qt -----------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section, orientation, role=_DISPLAY):
        if orientation == Qt.Orientation.Horizontal:
            if role == _DISPLAY:
                return self.COLUMNS[section]
            if role == _TIP:
                return self.TIPS.get(self.COLUMNS[section])
        return None


def _mark(spans: dict[int, list[int]], column: int, row: int) -> None:
    span = spans.get(column)
    if span is None:
        spans[column] = [row, row]
    else:
        span[1] = row


class LaneRow(NamedTuple):
    workspace: str
    queue: str | None
    job_id: int | None
    epoch: int | None
    claimed_at: float | None
    stop_reason: str | None
    stop: bool
    last: str          # "#12 succeeded" (the last finished run)
    last_state: str | None
    busy: tuple[str, ...]
    agent: str | None = None          # a followed store: the agent holding the lane ...
    lease_until: float | None = None  # ... and when its lease runs out (store clock)


class WorkspacesModel(_RowsModel):
    COLUMNS = ("ws", "lane owner", "epoch", "held", "stop", "last run", "busy outside")
    TIPS = {
        "ws": "workspace (project)",
        "lane owner": "who holds the workspace's shared lane (scheduled_lanes): queue and job",
        "epoch": "the owner's fencing token (a counter that only grows)",
        "held": "how long the current owner has held the lane",
        "stop": "a stop request on the lane, seen by the owner at its next checkpoint",
        "last run": "the workspace's last finished run",
        "busy outside": "a program, notebook or unconfirmed result keeps the workspace busy:"
                        " no job starts in it (click or press Space to toggle)",
    }
    TIME_COLUMN = 3
    BUSY_COLUMN = 6

    def __init__(self, on_busy: Callable[[str, bool], None] | None = None, parent=None) -> None:
        super().__init__(parent)
        self.on_busy = on_busy

    def _is_live(self, row: LaneRow) -> bool:
        return row.claimed_at is not None

    def _time_text(self, r: LaneRow) -> str:
        held = seconds(None if r.claimed_at is None else max(0.0, self.now - r.claimed_at))
        if r.lease_until is None or r.claimed_at is None:
            return held
        left = r.lease_until - self.now
        return f"{held} · lease {seconds(left)}" if left > 0 else f"{held} · lease over"

    def _cells(self, r: LaneRow) -> tuple:
        return (r.workspace, (r.queue, r.job_id, r.agent), r.epoch, self._time_text(r),
                (r.stop, r.stop_reason), (r.last, r.last_state), r.busy)

    def workspace(self, row: int) -> str | None:
        return self.key(row)

    def flags(self, index):
        f = super().flags(index)
        if index.column() == self.BUSY_COLUMN:
            f |= Qt.ItemFlag.ItemIsUserCheckable
        return f

    def setData(self, index, value, role=_CHECK):
        if role != _CHECK or index.column() != self.BUSY_COLUMN or self.on_busy is None:
            return False
        busy = Qt.CheckState(value) == Qt.CheckState.Checked if not isinstance(value, bool) else value
        self.on_busy(self._rows[index.row()].workspace, busy)
        return True   # the domain event repaints the row

    def data(self, index, role=_DISPLAY):
        r: LaneRow = self._rows[index.row()]
        c = index.column()
        if role == _DISPLAY:
            if c == 0:
                return r.workspace
            if c == 1:
                if not r.queue:
                    return "free"
                return f"{r.queue} #{r.job_id}" + (f" · {r.agent}" if r.agent else "")
            if c == 2:
                return "" if r.epoch is None else str(r.epoch)
            if c == 3:
                return self._time_text(r)
            if c == 4:
                return (r.stop_reason or "requested") if r.stop else ""
            if c == 5:
                return r.last
            if c == 6:
                return ", ".join(r.busy) if r.busy else ""
            return None
        if role == _CHECK and c == self.BUSY_COLUMN:
            return Qt.CheckState.Checked if r.busy else Qt.CheckState.Unchecked
        if role == _FG:
            if c == 1:
                return brush(theme.QUEUE_COLORS.get(r.queue, theme.MUTED))
            if c == 4 and r.stop:
                return brush(theme.ERROR_TEXT)
            if c == 5 and r.last_state:
                return brush(_last_run_color(r.last_state))
            if c == 6 and r.busy:
                return brush(theme.ERROR_TEXT)
            return None
        if role == _FONT and c == 1 and r.queue:
            return self._bold
        if role == _ALIGN:
            return _RIGHT if c in (2, 3) else _LEFT
        if role == _TIP and c == 0:
            return r.workspace       # a long name is elided in the cell
        if role == _USER:
            return r.workspace
        return None


class JobRow(NamedTuple):
    id: int
    workspace: str
    label: str        # job_label()
    work: str
    epoch: int | None
    t0: float | None  # start of the time shown (created, started)
    t1: float | None  # end (None: still going)
    detail: str
    run_id: str | None


def job_row(job) -> JobRow:
    if job.phase == "waiting":
        t0, t1 = job.created_at, None
    elif job.phase == "done":
        t0, t1 = (job.started_at or job.created_at), job.finished_at
    else:
        t0, t1 = job.started_at, None
    owner = job.owner
    if job.error:
        detail = job.error
    elif job.save_held:
        detail = "final save held open: the workspace stays claimed"
    elif job.placement:
        detail = f"placed: {job.placement}"
    elif job.stop_requested:
        detail = "stop requested"
    else:
        detail = job.run_id or ""
    if owner:
        detail = f"{owner} · {detail}" if detail else owner
    return JobRow(job.id, job.workspace, job_label(job), job.work, job.epoch, t0, t1, detail,
                  job.run_id)


class JobsModel(_RowsModel):
    COLUMNS = ("#", "ws", "state", "time", "work", "detail")
    TIPS = {
        "#": "reservation ID",
        "state": "queued → running → saving → succeeded / failed / cancelled",
        "ws": "workspace",
        "time": "waiting: time queued · running: time running · done: run time",
        "detail": "a followed store's job: the process that wrote it last; then error, placement, "
                  "stop request or run ID",
    }
    TIME_COLUMN = 3

    def _is_live(self, row: JobRow) -> bool:
        return row.t1 is None and row.t0 is not None

    def _time_text(self, r: JobRow) -> str:
        if r.t0 is None:
            return ""
        return seconds(max(0.0, (self.now if r.t1 is None else r.t1) - r.t0))

    def _cells(self, r: JobRow) -> tuple:
        return (r.id, r.workspace, r.label, self._time_text(r), r.work,
                (r.epoch, r.detail, r.label in _RED_DETAIL))

    def job_id(self, row: int) -> int | None:
        return self.key(row)

    def data(self, index, role=_DISPLAY):
        r: JobRow = self._rows[index.row()]
        c = index.column()
        if role == _DISPLAY:
            if c == 0:
                return str(r.id)
            if c == 1:
                return r.workspace
            if c == 2:
                return r.label
            if c == 3:
                return self._time_text(r)
            if c == 4:
                return r.work
            if c == 5:
                return r.detail if r.epoch is None else f"epoch {r.epoch} · {r.detail}"
            return None
        if c == 2:
            if role == _BG:
                return brush(theme.JOB_STATE_COLORS.get(r.label, (theme.FG, theme.BG))[1])
            if role == _FG:
                return brush(theme.JOB_STATE_COLORS.get(r.label, (theme.FG, theme.BG))[0])
            if role == _FONT:
                return self._bold
            if role == _ALIGN:
                return _CENTER
        if role == _FG and c == 5 and r.label in _RED_DETAIL:
            return brush(theme.ERROR_TEXT)
        if role == _ALIGN:
            return _RIGHT if c in (0, 3) else _LEFT
        if role == _TIP and c in (1, 4, 5):
            return r.detail if c == 5 else r.work if c == 4 else r.workspace
        if role == _USER:
            return r.id
        return None
