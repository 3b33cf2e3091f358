"""The refused-write ledger of a followed store, as a table (formatting only).

One row per refused write, newest first (``lanemon.agents.follow.LedgerView``
rows): when (the store clock as local time), the writer (the agent that tried),
which write (job and the state it tried to save), the lane and workspace, the
epoch it held and the lane's epoch then ("free" when no one held it). Updated
in place like the other lanes tables (``model._RowsModel``).
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt

from lanemon.ui.kit import theme
from lanemon.ui.lanes.model import _RowsModel, brush

_DISPLAY = Qt.ItemDataRole.DisplayRole
_FG = Qt.ItemDataRole.ForegroundRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_TIP = Qt.ItemDataRole.ToolTipRole
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


def when(at: float) -> str:
    """A store-clock time (Unix seconds) as local time of day, to the millisecond."""
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1000) % 1000:03d}"


class LedgerModel(_RowsModel):
    COLUMNS = ("when", "writer", "job", "write", "lane · ws", "epoch held", "epoch now")
    TIPS = {
        "when": "when the store refused the write (store clock, local time)",
        "writer": "the process that tried to write (its agent name, or session)",
        "job": "the job it tried to write",
        "write": "the state it tried to save",
        "lane · ws": "the lane whose fence refused it, and its workspace",
        "epoch held": "the epoch (fencing token) the writer still held",
        "epoch now": "the lane's epoch when the write came (free: no one held it)",
    }

    def _cells(self, e) -> tuple:
        return (e.at, e.writer, e.job_id, e.state, e.lane, e.workspace, e.epoch_held, e.epoch_current)

    def entry(self, row: int):
        return self.row_data(row)

    def data(self, index, role=_DISPLAY):
        e = self._rows[index.row()]
        c = index.column()
        if role == _DISPLAY:
            return (when(e.at), e.writer, f"#{e.job_id}", e.state, f"{e.lane} · {e.workspace}",
                    str(e.epoch_held), "free" if e.epoch_current is None else str(e.epoch_current))[c]
        if role == _FG and c in (1, 5):
            return brush(theme.ERROR_TEXT)
        if role == _ALIGN:
            return _RIGHT if c in (2, 5, 6) else _LEFT
        if role == _TIP and c == 1:
            return e.writer
        return None
