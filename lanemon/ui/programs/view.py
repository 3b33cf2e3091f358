"""The Programs tab: the asyncio programs the window hears through ``lanemon.probe``.

``ProgramsView`` (a ``LiveView``) reads a ``ProbeBook`` (``lanemon.probe.book``,
the listener's model: the view decodes nothing itself) and shows:

- the programs table: one row per program (name, pid, host, last seen,
  current p99, blocks in the last minute), its name in the program's colour
  (the colour of its line on the heartbeat chart); a stale program's row is
  greyed (``theme.PROGRAM_STALE``);
- the blocks table under it: every block the book keeps, newest first
  (program, when, duration, the function its time went to, the task);
- clicking a block shows where its time went: the task and the sample count,
  and the folded stacks as a ranked list (share of samples, function,
  file:line, and the program's own function that called into it)
  (``lanemon.ui.programs.where``).

``start_listening()`` binds the listener (``lanemon.probe.book.listen``) to
``address`` (default ``127.0.0.1:47200``) in a task of the view; a refusal
(the port in use) is handed to ``on_error`` (the window's ``warn``) and the view
says it in its header: the window stays up, the tab shows no program. The
transport is closed by ``close_domain`` (the window's shutdown), and no
datagram is read after.

The book changes on the listener's callbacks; the view redraws its tables
only when ``book.version`` moved (or ``TEXT_FPS`` times a second while any
program is shown, for the "last seen" ages), at most ``TEXT_FPS`` times a
second.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QLabel,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from lanemon.ui.kit import theme
from lanemon.ui.kit.live_view import LiveView
from lanemon.ui.kit.tables import column_fit, fit_columns, keep_within_width, table_item
from lanemon.ui.programs.where import culprit, ranked

PROGRAM_COLUMNS = ("program", "pid", "host", "last seen", "p99 now", "blocks / min")
BLOCK_COLUMNS = ("program", "when", "blocked", "time went to", "task")
WHERE_COLUMNS = ("share", "function", "file:line", "in")
ADDRESS_ENV = "LANEMON_PROBE_ADDRESS"   # where to listen when the window is given no address
SLACK_PX = 6                # added to each fitted column
MAX_BLOCK_ROWS = 200        # newest blocks listed
MAX_WHERE_ROWS = 32         # a block's folded stacks are at most 32


def _item(text: str, color=None, bold: bool = False, right: bool = False):
    return table_item(text, color, bold, right, read_only=True)


def _ago(seconds: float) -> str:
    if seconds < 1.0:
        return "now"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    return f"{seconds / 60:.0f} min ago"


def _short(where: str) -> str:
    """``file:line`` with only the file's folder and name (the whole path is the tooltip)."""
    parts = where.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def _table(columns: Iterable[str]) -> QTableWidget:
    cols = tuple(columns)
    table = QTableWidget(0, len(cols))
    table.setHorizontalHeaderLabels(list(cols))
    table.verticalHeader().setVisible(False)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    return table


def _fit(table: QTableWidget) -> None:
    """Columns fitted to their newest rows (``tables.fit_columns``, bold cells) plus ``SLACK_PX``
    (a bold text measured to the pixel was still elided by a pixel), kept within the table's
    width (``keep_within_width``: low-priority columns dropped first, then texts elided)."""
    fit_columns(table, bold_cells=True)
    fit = column_fit(table)
    for column in range(table.columnCount()):
        natural = fit.natural(column)
        if natural is not None:
            fit.set_natural(column, natural + SLACK_PX)
    fit.apply()


class ProgramsView(LiveView):
    """The Programs tab (see the module docstring)."""

    TEXT_FPS = 2.0

    def __init__(self, book, address: str | None = None, clock: Callable[[], float] = time.perf_counter,
                 on_error: Callable[[str], None] | None = None, parent: QWidget | None = None) -> None:
        """``book``: a ``ProbeBook`` on ``clock`` (the chart's ``time.perf_counter``);
        ``address``: where to listen (``None``: the listener's default, 127.0.0.1:47200)."""
        super().__init__(parent)
        self.book = book
        self.address = address
        self._clock = clock
        self._on_error = on_error
        self.transport: asyncio.DatagramTransport | None = None
        self.listen_error: str | None = None
        self.bound: str | None = None          # host:port listened on (the real port when 0 was asked)
        self._shown_version = None
        self._block_rows: list[tuple[tuple, object]] = []   # (program key, BlockView) per row
        self._chosen: tuple | None = None                   # (key, seq) of the block shown

        self.head = QLabel("Programs: not listening yet")
        self.head.setWordWrap(True)
        self.hint = QLabel("In an asyncio program: <tt>import lanemon.probe</tt>; "
                           "<tt>lanemon.probe.start()</tt> in its loop (or run <tt>lanemon probe demo</tt>)."
                           " Click a block: where its time went.")
        self.hint.setProperty("muted", True)
        self.hint.setWordWrap(True)
        self.programs_table = _table(PROGRAM_COLUMNS)
        keep_within_width(self.programs_table, drop=(2, 3, 1))   # host, last seen, then pid go first
        self.blocks_table = _table(BLOCK_COLUMNS)
        keep_within_width(self.blocks_table, drop=(4, 1))        # task, then when
        self.blocks_table.itemSelectionChanged.connect(self._block_chosen)
        self.where_title = QLabel("Click a block")
        self.where_title.setWordWrap(True)
        self.where_table = _table(WHERE_COLUMNS)
        keep_within_width(self.where_table, drop=(3, 2))         # the caller, then file:line

        # left: the programs over their blocks; right: where the chosen block's time went
        tables = QSplitter(Qt.Orientation.Vertical)
        tables.addWidget(self.programs_table)
        tables.addWidget(self.blocks_table)
        tables.setChildrenCollapsible(False)
        tables.setStretchFactor(0, 2)
        tables.setStretchFactor(1, 3)
        left = QGroupBox("Programs · their blocks")
        QVBoxLayout(left).addWidget(tables)
        right = QGroupBox("Where a block's time went")
        lo = QVBoxLayout(right)
        lo.addWidget(self.where_title)
        lo.addWidget(self.where_table, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(self.head)
        layout.addWidget(self.hint)
        layout.addWidget(split, 1)
        self.fonts_changed()

    # --- the listener --------------------------------------------------------------------------
    def start_listening(self) -> asyncio.Task | None:
        """Bind the listener in a task of the view (see the module docstring)."""
        return self.spawn(self._listen())

    async def _listen(self) -> None:
        from lanemon.probe.listen import ListenError, bound_address, listen

        try:
            if self.address is None:
                self.transport = await listen(self.book)
            else:
                self.transport = await listen(self.book, self.address)
            self.bound = bound_address(self.transport)
        except ListenError as exc:
            self.listen_error = str(exc)
            if self._on_error is not None:
                self._on_error(f"Programs: not listening: {exc}")
        self._shown_version = None

    async def close_domain(self) -> None:
        transport, self.transport = self.transport, None
        if transport is not None:
            transport.close()

    # --- LiveView ------------------------------------------------------------------------------
    def frame_motion(self, changed: bool, refreshing: bool, text_due: bool) -> bool:
        """Ticks while programs are listed (their ages change); a new book version is owed."""
        if self.book.version != self._shown_version:
            self.mark_stale()
        listed = self.programs_table.rowCount() > 0
        if listed and text_due:
            self.mark_stale()
        return listed or self.transport is not None

    def refresh_steps(self, urgent: bool):
        return (self._show_programs, self._show_blocks)

    def fonts_changed(self) -> None:
        big = QFont(self.font())
        big.setPointSizeF(theme.pt(12))
        big.setBold(True)
        self.head.setFont(big)
        for table in (self.programs_table, self.blocks_table, self.where_table):
            _fit(table)

    # --- drawing -------------------------------------------------------------------------------
    def _show_programs(self) -> None:
        book = self.book
        book.sweep()
        self._shown_version = book.version
        now = self._clock()
        progs = book.programs()
        if self.listen_error is not None:
            head = f"Programs: not listening ({self.listen_error})"
        elif self.transport is None:
            head = "Programs: not listening yet"
        else:
            where = self.bound
            dropped = sum(book.dropped.values())
            head = f"Programs: {len(progs)} heard on udp {where}"
            if dropped:
                head += f" · {dropped:,} datagrams dropped (" + ", ".join(
                    f"{k} {v:,}" for k, v in sorted(book.dropped.items()) if v) + ")"
        self.head.setText(head)
        t = self.programs_table
        t.setRowCount(len(progs))
        for row, p in enumerate(progs):
            color = theme.PROGRAM_STALE if p.stale else theme.program_color(p.index).name()
            ink = theme.PROGRAM_STALE if p.stale else None
            p99 = "–" if p.p99_now is None else f"{p.p99_now:,.1f} ms"
            cells = (_item(p.name + (" (stale)" if p.stale else ""), color, bold=True),
                     _item(str(p.pid), ink, right=True), _item(p.host, ink),
                     _item(_ago(now - p.last_seen), ink), _item(p99, ink, right=True),
                     _item(str(p.blocks_last_minute), ink, right=True))
            for col, it in enumerate(cells):
                t.setItem(row, col, it)
        _fit(t)     # at most 20 rows measured: cheap at 2 refreshes a second

    def _show_blocks(self) -> None:
        book = self.book
        now = self._clock()
        rows = []
        names = {}
        for p in book.programs():
            names[p.key] = (f"{p.name} · {p.pid}", theme.PROGRAM_STALE if p.stale
                            else theme.program_color(p.index).name())
            rows.extend((p.key, b) for b in book.blocks(p.key))
        rows.sort(key=lambda r: -r[1].t_start)
        rows = rows[:MAX_BLOCK_ROWS]
        self._block_rows = rows
        t = self.blocks_table
        t.blockSignals(True)
        try:
            t.setRowCount(len(rows))
            chosen_row = -1
            for row, (key, b) in enumerate(rows):
                name, color = names[key]
                cells = (_item(name, color, bold=True), _item(_ago(now - b.t_start)),
                         _item(f"{b.duration_ms:,.0f} ms", right=True),
                         _item(culprit(b.folded) or "?", bold=True), _item(b.task or "–"))
                for col, it in enumerate(cells):
                    t.setItem(row, col, it)
                if (key, b.seq) == self._chosen:
                    chosen_row = row
            if chosen_row >= 0:
                t.selectRow(chosen_row)
            else:
                t.clearSelection()
        finally:
            t.blockSignals(False)
        _fit(t)

    def _block_chosen(self) -> None:
        rows = self.blocks_table.selectionModel().selectedRows()
        if not rows:
            return
        row = rows[0].row()
        if 0 <= row < len(self._block_rows):
            key, block = self._block_rows[row]
            self.show_block(key, block)

    def show_block(self, key, block) -> None:
        """Show where ``block``'s time went (of the program ``key``) in the lower table."""
        self._chosen = (key, block.seq)
        name = key[0] if isinstance(key, tuple) and key else str(key)
        task = block.task or "no task known"
        self.where_title.setText(f"{name} · {block.duration_ms:,.0f} ms · task: {task} · "
                                 f"{block.samples} samples")
        shares = ranked(block.folded)[:MAX_WHERE_ROWS]
        t = self.where_table
        t.setRowCount(len(shares))
        for row, s in enumerate(shares):
            where = _item(_short(s.where))
            where.setToolTip(s.where)
            cells = (_item(f"{s.share:.0%}", bold=True, right=True), _item(s.function, bold=True),
                     where, _item(s.caller if s.caller != s.function else ""))
            for col, it in enumerate(cells):
                t.setItem(row, col, it)
        _fit(t)

    def where_rows(self) -> list[tuple[str, ...]]:
        """The texts of the ranked list now shown (for tests and screenshots)."""
        t = self.where_table
        return [tuple(t.item(r, c).text() for c in range(t.columnCount())) for r in range(t.rowCount())]


def install_programs_view(window, address: str | None = None) -> ProgramsView:
    """Add the Programs tab to ``window`` (a ``MainWindow``) with a new ``ProbeBook`` on
    ``time.perf_counter`` (the chart's clock), and draw its programs on the heartbeat chart.
    ``address`` ``None``: ``$LANEMON_PROBE_ADDRESS`` if set (the tests set ``127.0.0.1:0``, any
    free port), else the listener's default, 127.0.0.1:47200.
    The listener starts with ``view.start_listening()`` (the window's ``start``); a refusal
    goes to ``window.warn``."""
    from lanemon.probe.book import ProbeBook

    if address is None:
        address = os.environ.get(ADDRESS_ENV) or None
    book = ProbeBook(clock=time.perf_counter)
    view = ProgramsView(book, address, on_error=window.warn)
    window.add_view("programs", "Programs", view)
    window.chart.set_programs(book)
    return view


__all__ = ["ProgramsView", "install_programs_view"]
