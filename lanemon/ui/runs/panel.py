"""The runs panel: describe the job, start runs, read the results, export.

A thin view over ``RunController``: buttons call ``start_*``; the table and
figures repaint (coalesced: on the next frame tick of its ``LiveView``) when
the controller says ``changed`` or an input changed, and ``TEXT_FPS`` times a
second while a run is in flight (a sliced run's progress).

Under the buttons, the panel always describes the present: ``in_flight``
has one line per run in flight (what it is, how long it has run, how to stop
it), word-wrapped in a room of at least ``IN_FLIGHT_LINES`` lines that stays
when nothing is in flight (a run's start and end change no geometry), and
``banner`` (the same kind of room) the latest ``MESSAGES_SHOWN`` messages that are still
true: the outcomes of the runs that ended since the last run started, and
other messages (refusals, exports) said since the last run started or ended
(a refusal naming a run in flight is out of date once that run ends). Cancel
(or Esc, while a sliced or worker run is in flight and the focus is in the
window's content) stops the sliced and worker runs in flight.

A whole run expected to hold the loop longer than ``WHOLE_RUN_ASK_ABOVE_S``
(``RunController.whole_run_block_s``) starts only once the user said yes to
``confirm_long_whole(text, start)``: by default a window-modal question whose
default (Enter) and Esc answer no; a test or a tool may set its own.

The job size is at most ``MAX_TOTAL`` iterations (``lanemon.work.runs``,
the same limit as ``lanemon measure``); a CPU ms size beyond it is refused
with a message.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from lanemon.files import cannot_write
from lanemon.ui.kit import theme
from lanemon.ui.kit.live_view import LiveView
from lanemon.ui.kit.reflow import Reflow
from lanemon.ui.kit.reserved_lines import ReservedLines
from lanemon.ui.kit.tables import NEW_ROWS, fit_columns, keep_within_width
from lanemon.ui.runs.controller import RunController
from lanemon.ui.runs.model import COLUMNS, RunsTableModel
from lanemon.ui.shell import exports
from lanemon.work.runs import MAX_TOTAL, WINDOW_TOTAL
from lanemon.work.slicing import AIM, MAX_SLICE_MS

UNITS = ("iterations", "CPU ms")
SLICING = ("ms budget", "size")
MAX_CPU_MS = 600_000      # the largest job size in CPU ms (MAX_TOTAL bounds it again when run)
MESSAGES_SHOWN = 2
IN_FLIGHT_LINES = 3       # the in-flight text's room, kept when nothing is in flight
BANNER_LINES = 3          # the banner's room, kept when it says nothing


def _restyle(widget, sheet: str) -> None:
    """Set a widget's style sheet only when it changes: each ``setStyleSheet`` re-polishes the
    widget and asks for a new layout (~1 ms), and the panel refreshes 4 times a second while a
    run is in flight."""
    if widget.styleSheet() != sheet:
        widget.setStyleSheet(sheet)


# the results' columns that give way first when the table is narrow (least needed first)
RESULT_DROP_ORDER = ("result", "slices", "samples", "p50", "workMs", "p99")   # never the size or max
RESULTS_AT = 260   # px at font scale 1: the results' least width beside the job form

class RunsPanel(LiveView):
    """Job size, Whole / Sliced / Worker, the results table and exports."""

    TEXT_FPS = 4.0      # a run's progress, while one is in flight
    REFRESH_HIDDEN = True   # its buttons, Esc and tables follow the runs from any tab

    export_chart_requested = Signal()   # the window owns the chart; it saves the PNG
    noticed = Signal(str)               # each ``show_notice`` text: the window's status bar repeats it

    def __init__(self, controller: RunController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        # asked before a whole run longer than WHOLE_RUN_ASK_ABOVE_S: (text, start) -> None
        self.confirm_long_whole: Callable[[str, Callable[[], None]], None] = self.ask_before_long_whole
        self._job: tuple[float, str] = (float(WINDOW_TOTAL), "iterations")   # the source of truth

        # --- the job ---------------------------------------------------------------
        self.size = QDoubleSpinBox()
        self.size.setDecimals(0)
        self.size.setGroupSeparatorShown(True)
        self.size.setRange(1, MAX_TOTAL)
        self.size.setValue(WINDOW_TOTAL)
        self.unit = QComboBox()
        self.unit.addItems(UNITS)
        self.size_hint = QLabel("calibrating…")
        self.size_hint.setProperty("muted", True)

        self.slicing = QComboBox()
        self.slicing.addItems(SLICING)
        self.slice_value = QDoubleSpinBox()
        self.slicing_hint = QLabel("")
        self.slicing_hint.setProperty("muted", True)

        self.worker_kind = QComboBox()
        self.worker_kind.addItems(["cold", "warm", "thread"])
        self.worker_kind.setCurrentText("warm")
        self.worker_hint = QLabel("")
        self.worker_hint.setProperty("muted", True)

        self.buttons = {}
        for family, kind, text in (("whole", "whole", "Whole"), ("sliced", "sliced", "Sliced"),
                                   ("worker", "warm", "Worker")):
            b = QPushButton(text)
            b.setProperty("run", True)
            b.setStyleSheet(theme.run_button_style(kind))
            b.setMinimumWidth(90)
            self.buttons[family] = b
        self._tips = {"whole": "hash_range(0, total) on the loop: blocks the window, deliberately",
                      "sliced": "await run_sliced(...): yields to the loop between slices",
                      "worker": "await run_in_worker(total, kind)"}
        for family, tip in self._tips.items():
            self.buttons[family].setToolTip(tip)
        self.buttons["whole"].clicked.connect(self.run_whole)
        self.buttons["sliced"].clicked.connect(self.run_sliced)
        self.buttons["worker"].clicked.connect(self.run_worker)

        self.cancel_btn = QPushButton("Cancel run (Esc)")
        self.cancel_btn.setToolTip("stop the sliced and worker runs in flight (a stopped worker "
                                   "process is killed and the warm pool replaces it)")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(self.cancel_runs)
        self._esc: QShortcut | None = self._esc_shortcut(self)   # (the window's, once it calls serve_esc_in)
        self._esc_yielded: list[QWidget] = []     # while one of these is shown, Esc is its
        app = QApplication.instance()
        if app is not None:              # a layer over the window (the shortcut list) keeps its Esc
            app.focusChanged.connect(self._update_esc)
        self._running = False            # a run was in flight at the last refresh
        # (text, error, outcome, runs started then, runs ended then)
        self._messages: list[tuple[str, bool, bool, int, int]] = []

        # always there, ``IN_FLIGHT_LINES`` tall at least (empty when nothing is in flight): a
        # run's start, end and running time change no geometry. Shown at a run's start and
        # hidden at its end, it moved the whole panel (a relayout and a repaint of every
        # widget in it: 2-6 ms of loop at each start and end, the warm run's p99 in ``bench lag``)
        self.in_flight = ReservedLines(IN_FLIGHT_LINES)
        self.in_flight.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.in_flight.setTextFormat(Qt.TextFormat.PlainText)
        self.banner = ReservedLines(BANNER_LINES)      # (likewise: a run's outcome moves nothing)
        self.banner.setTextFormat(Qt.TextFormat.PlainText)
        self.banner.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)

        job = QGroupBox("Job")
        grid = QGridLayout(job)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        grid.addWidget(QLabel("size"), 0, 0)
        grid.addWidget(self.size, 0, 1)
        grid.addWidget(self.unit, 0, 2)
        grid.addWidget(self.size_hint, 1, 1, 1, 2)
        grid.addWidget(QLabel("slice by"), 2, 0)
        grid.addWidget(self.slicing, 2, 1)
        grid.addWidget(self.slice_value, 2, 2)
        grid.addWidget(self.slicing_hint, 3, 1, 1, 2)
        grid.addWidget(QLabel("worker"), 4, 0)
        grid.addWidget(self.worker_kind, 4, 1)
        grid.addWidget(self.worker_hint, 4, 2)
        row = QHBoxLayout()
        row.setSpacing(8)
        for b in self.buttons.values():
            row.addWidget(b)
        grid.addLayout(row, 5, 0, 1, 3)
        cancel_row = QHBoxLayout()
        cancel_row.addStretch(1)
        cancel_row.addWidget(self.cancel_btn)
        grid.addLayout(cancel_row, 6, 0, 1, 3)
        grid.addWidget(self.in_flight, 7, 0, 1, 3)
        grid.addWidget(self.banner, 8, 0, 1, 3)
        grid.setRowStretch(9, 1)
        grid.setColumnStretch(1, 1)

        # --- results -----------------------------------------------------------------
        self.model = RunsTableModel(controller.records, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        # never sideways: the least needed columns go first, then the widest texts elide
        keep_within_width(self.table, drop=tuple(COLUMNS.index(n) for n in RESULT_DROP_ORDER))
        # widths from the newest rows (fit_columns, on each refresh and font change):
        # ResizeToContents re-measured every row on each change, a cost that grew with the history

        self.figures = QLabel("")
        self.figures.setTextFormat(Qt.TextFormat.RichText)
        self.figures.setWordWrap(True)

        self.export_report_btn = QPushButton("Export report…")
        self.export_report_btn.setToolTip("the seed report (JSON) from the latest whole, sliced and worker runs")
        self.export_csv_btn = QPushButton("Heartbeat CSV…")
        self.export_png_btn = QPushButton("Chart PNG…")
        self.export_report_btn.clicked.connect(self.export_report)
        self.export_csv_btn.clicked.connect(self._export_csv)
        self.export_png_btn.clicked.connect(self.export_chart_requested)

        results = QGroupBox("Results")
        rl = QVBoxLayout(results)
        rl.addWidget(self.table, 1)
        rl.addWidget(self.figures)
        self._exports = QGridLayout()           # one row when it fits, else two (_place_exports)
        self._exports.setColumnStretch(0, 1)
        self._exports_in_one_row: bool | None = None
        rl.addLayout(self._exports)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(job, 0)
        layout.addWidget(results, 1)
        self._job_box = job
        self._results_box = results
        self._place_exports(True)
        # the job form beside the results when both fit, above them when not
        self.reflow = Reflow(self, layout, self._wide_at, lambda _wide: self._fit_exports())
        results.installEventFilter(self)
        self.apply_fonts()

        # --- wiring: inputs and controller events -> coalesced repaint -------------------
        controller.changed.connect(self.schedule_refresh)
        controller.changed.connect(self._update_esc)     # (from any tab: Esc follows the runs)
        controller.said.connect(self.show_notice)
        controller.outcome.connect(self._show_outcome)
        controller.notice.connect(self._paint_banner)     # "blocking the loop…" paints before the block
        self.unit.currentIndexChanged.connect(self._unit_changed)
        self.size.valueChanged.connect(self._size_typed)
        self.slicing.currentIndexChanged.connect(self._slicing_changed)
        for w in (self.size, self.slice_value):
            w.valueChanged.connect(self.schedule_refresh)
        self.worker_kind.currentTextChanged.connect(self.schedule_refresh)
        self._slicing_changed()
        self.refresh()

    def _export_buttons(self) -> tuple[QPushButton, ...]:
        return (self.export_report_btn, self.export_csv_btn, self.export_png_btn)

    def _exports_width(self, one_row: bool) -> int:
        """The width the export buttons take in one row, or in two (two, then one under)."""
        w = [b.sizeHint().width() for b in self._export_buttons()]
        gap = self._exports.horizontalSpacing()
        return sum(w) + 2 * gap if one_row else max(w[0] + w[1] + gap, w[2])

    def _place_exports(self, one_row: bool) -> None:
        if one_row == self._exports_in_one_row:
            return
        self._exports_in_one_row = one_row
        report, csv, png = self._export_buttons()
        for b in (report, csv, png):
            self._exports.removeWidget(b)
        self._exports.addWidget(report, 0, 1)
        self._exports.addWidget(csv, 0, 2)
        if one_row:
            self._exports.addWidget(png, 0, 3)
        else:
            self._exports.addWidget(png, 1, 2)

    def _fit_exports(self) -> None:
        """One row of export buttons if the room the results are given (from the width the
        panel is given, not the results' own: that follows the buttons) holds it."""
        m, rm = self.layout().contentsMargins(), self._results_box.layout().contentsMargins()
        room = self.reflow.room() - m.left() - m.right() - rm.left() - rm.right()
        if self.reflow.wide:
            room -= self._job_box.width() + self.layout().spacing()
        self._place_exports(room >= self._exports_width(True))

    def eventFilter(self, watched, event) -> bool:
        if watched is self._results_box and event.type() == QEvent.Type.Resize:
            self._fit_exports()
        elif watched in self._esc_yielded and event.type() in (QEvent.Type.Show, QEvent.Type.Hide):
            self._update_esc()
        return super().eventFilter(watched, event)

    # --- Esc ---------------------------------------------------------------------------------
    def _esc_shortcut(self, host: QWidget) -> QShortcut:
        esc = QShortcut(QKeySequence(Qt.Key.Key_Escape), host)
        esc.setContext(Qt.ShortcutContext.WindowShortcut)
        esc.setEnabled(False)      # only while a run can be cancelled: Esc is free otherwise
        esc.activated.connect(self.cancel_runs)
        return esc

    def serve_esc_in(self, host: QWidget) -> None:
        """Esc cancels in all of ``host`` (the window), whichever tab is shown, as the keys
        that start runs do; until this is called only while this panel is shown (a shortcut
        of a hidden widget is not live). ``host`` may go first (a window's children are
        deleted in turn): from then on nothing here touches its shortcut."""
        self._esc.setEnabled(False)
        self._esc.deleteLater()
        self._esc = self._esc_shortcut(host)
        self._esc.destroyed.connect(self._esc_gone)
        self._update_esc()

    def _esc_gone(self, *_args) -> None:
        self._esc = None

    def yield_esc_while_shown(self, widget: QWidget) -> None:
        """While ``widget`` is shown, Esc is not this panel's (it is ``widget``'s own, e.g.
        the replay bar's "leave"): two live shortcuts on one key are ambiguous to Qt, which
        then runs neither."""
        self._esc_yielded.append(widget)
        widget.installEventFilter(self)
        self._update_esc()

    def _wide_at(self) -> int:
        """The least width at which the job form and the results fit side by side (the
        export buttons in two rows if need be)."""
        m = self.layout().contentsMargins()
        rm = self._results_box.layout().contentsMargins()
        least = max(int(RESULTS_AT * theme.font_scale()), self._exports_width(False),
                    self.figures.minimumSizeHint().width(), self.table.minimumSizeHint().width(),
                    self._results_box.fontMetrics().horizontalAdvance(self._results_box.title()) + 40)
        results = least + rm.left() + rm.right()
        return self._job_box.width() + results + self.layout().spacing() + m.left() + m.right()

    def fonts_changed(self) -> None:
        """Follow ``theme.font_scale`` (``LiveView.apply_fonts``, called by ``MainWindow.set_font_scale``)."""
        s = theme.font_scale()
        self._job_box.setFixedWidth(int(380 + 260 * (s - 1)))
        # large type (presenter mode): the size and lag columns matter (a 5 ms and a 2 s run of
        # different sizes must not look alike); the rest is in the report and figures
        for name in ("slices", "result"):
            self.table.setColumnHidden(COLUMNS.index(name), s > 1.25)
        fit_columns(self.table, stretch_last=False)
        self.reflow.apply()
        # colours too (the palette may have changed): run buttons, the results' rows, then the
        # texts on the next refresh
        for family, kind in (("whole", "whole"), ("sliced", "sliced"), ("worker", self.worker_kind.currentText())):
            _restyle(self.buttons[family], theme.run_button_style(kind))
        self.model.colours_changed()
        self._paint_banner()

    # --- reading the inputs ------------------------------------------------------------
    def job(self) -> tuple[float, str]:
        """The job as chosen: (size, unit), the unit one of ``UNITS``. The size and unit
        widgets show it and edit it; settings keep and restore it."""
        return self._job

    def job_total(self) -> int | None:
        """The job size in iterations (``None`` while CPU ms cannot be converted yet)."""
        size, unit = self._job
        if unit == "iterations":
            return int(size)
        return self.controller.iterations_for_ms(size)

    def set_job(self, value: float, unit: str = "iterations") -> None:
        """Choose the job: ``value`` in ``unit`` (one of ``UNITS``, else ``ValueError``),
        clamped to 1..``MAX_TOTAL`` iterations or 1..``MAX_CPU_MS`` CPU ms and rounded to a
        whole number (a value that is not a finite number: ``ValueError``). The widgets follow."""
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r}: one of {', '.join(UNITS)}")
        if not math.isfinite(value):
            raise ValueError(f"the job size must be a finite number, not {value!r}")
        top = MAX_TOTAL if unit == "iterations" else MAX_CPU_MS
        self._job = (float(round(min(max(value, 1), top))), unit)
        size, unit = self._job
        widgets = (self.size, self.unit)
        for w in widgets:
            w.blockSignals(True)
        try:
            self.unit.setCurrentText(unit)
            self.size.setRange(1, top)
            self.size.setValue(size)
        finally:
            for w in widgets:
                w.blockSignals(False)
        self.schedule_refresh()

    def _size_typed(self, value: float) -> None:
        self._job = (float(value), self._job[1])
        self.schedule_refresh()

    def _unit_changed(self) -> None:
        """Another unit chosen: the same job in that unit (a default until calibrated)."""
        size, old = self._job
        unit = self.unit.currentText()
        if unit == old:
            return
        if unit == "CPU ms":
            est = self.controller.estimate_ms(int(size))
            self.set_job(round(est) if est else 400, unit)
        else:
            self.set_job(self.controller.iterations_for_ms(size) or WINDOW_TOTAL, unit)

    def _slicing_changed(self) -> None:
        if self.slicing.currentText() == "ms budget":
            self.slice_value.setDecimals(1)
            self.slice_value.setRange(0.5, MAX_SLICE_MS)
            self.slice_value.setSingleStep(1)
            self.slice_value.setSuffix(" ms")
            self.slice_value.setValue(8)
        else:
            self.slice_value.setDecimals(0)
            self.slice_value.setRange(1_000, 2_000_000_000)
            self.slice_value.setSingleStep(10_000)
            self.slice_value.setSuffix("")
            self.slice_value.setGroupSeparatorShown(True)
            self.slice_value.setValue(self.controller.iterations_for_ms(8) or 50_000)
        self.schedule_refresh()

    # --- actions -------------------------------------------------------------------------
    def _total_or_say(self) -> int | None:
        total = self.job_total()
        if total is None:
            self.show_notice("Still calibrating this machine; the CPU ms size is ready in a moment.")
        elif total > MAX_TOTAL:
            est = self.controller.estimate_ms(MAX_TOTAL)
            here = f" (~{est / 1000:,.0f} s of CPU here)" if est else ""
            self.show_notice(f"The job is too big: {total:,} iterations; at most {MAX_TOTAL:,}{here}.")
            return None
        return total

    @property
    def esc_cancels(self) -> bool:
        """Does Esc cancel now (a run can be cancelled and the focus is in the window's
        content, as of the last refresh or focus change)? Otherwise Esc is the rest of the
        window's."""
        return self._esc is not None and self._esc.isEnabled()

    def _update_esc(self, *_args) -> None:
        """Esc cancels while a run can be cancelled and the focus is in the window's content
        (not in a layer over it, such as the shortcut list, which closes on Esc), and no
        widget it yields Esc to is shown (``yield_esc_while_shown``)."""
        if self._esc is None:
            return
        self._esc.setEnabled(bool(self.controller.cancellable()) and self._focus_in_content()
                             and not any(w.isVisible() for w in self._esc_yielded))

    def _focus_in_content(self) -> bool:
        focus = QApplication.focusWidget()
        if focus is None:
            return True
        win = self.window()
        content = win.centralWidget() if isinstance(win, QMainWindow) else win
        return content is not None and (focus is content or content.isAncestorOf(focus))

    def cancel_runs(self) -> None:
        """Stop the sliced and worker runs in flight (Cancel, Esc); say so if there is none."""
        if not self.controller.cancel():
            self.show_notice("No sliced or worker run in flight to cancel.", error=False)

    def run_whole(self) -> None:
        """A whole run of the job; one expected to block longer than ``WHOLE_RUN_ASK_ABOVE_S``
        starts only if ``confirm_long_whole`` says yes."""
        total = self._total_or_say()
        if total is None:
            return
        block_s = self.controller.whole_run_block_s(total)
        if block_s is None:
            self.controller.start_whole(total)
            return
        text = (f"A whole run of {total:,} iterations holds the loop for about {block_s:,.0f} s here: "
                "the window freezes and nothing can be clicked until it ends. A sliced or worker run "
                "does the same work without freezing.")
        self.confirm_long_whole(text, lambda: self.controller.start_whole(total))

    def ask_before_long_whole(self, text: str, start: Callable[[], None]) -> None:
        """The default ``confirm_long_whole``: a window-modal question (not a nested event loop);
        Enter and Esc answer no, Alt+B (or Tab then Enter) runs it."""
        box = QMessageBox(QMessageBox.Icon.Warning, "A long whole run", text, QMessageBox.StandardButton.NoButton,
                          self.window())
        go = box.addButton("&Block the window", QMessageBox.ButtonRole.AcceptRole)
        no = box.addButton("Cancel", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(no)
        box.setEscapeButton(no)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        box.finished.connect(lambda _result: start() if box.clickedButton() is go else None)
        box.open()

    def run_sliced(self) -> None:
        total = self._total_or_say()
        if total is None:
            return
        if self.slicing.currentText() == "ms budget":
            self.controller.start_sliced(total, slice_ms=self.slice_value.value())
        else:
            self.controller.start_sliced(total, slice_size=int(self.slice_value.value()))

    def run_worker(self) -> None:
        total = self._total_or_say()
        if total is not None:
            self.controller.start_worker(total, self.worker_kind.currentText())

    def export_report(self) -> None:
        """Ask where, write the report; or say (in the banner) what the report still needs."""
        try:
            report = self.controller.report()
        except ValueError as exc:
            self.show_notice(str(exc))
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export report", "lanemon-report.json", "JSON (*.json)")
        if path:
            self.export_report_to(path, report)

    def export_report_to(self, path: str, report: dict | None = None) -> bool:
        """Write the report (the current one unless given) to ``path``; the banner says the
        outcome: written, what the report still needs, or why the file was not written (the
        write is atomic: an old file of that name stays as it was). Whether it was written."""
        try:
            exports.write_report(path, self.controller.report() if report is None else report)
        except ValueError as exc:
            self.show_notice(str(exc))
            return False
        except OSError as exc:
            self.show_notice(f"Report not written: {cannot_write(path, exc)}", error=True)
            return False
        self.show_notice(f"Report written to {path}", error=False)
        return True

    def _export_csv(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export heartbeat", "lanemon-heartbeat.csv", "CSV (*.csv)")
        if path:
            self.export_csv_to(path)

    def export_csv_to(self, path: str) -> bool:
        """Write the heartbeat's ticks as CSV to ``path``; the banner says the outcome (as
        ``export_report_to``). Whether it was written."""
        try:
            n = exports.write_heartbeat_csv(path, self.controller.heartbeat)
        except OSError as exc:
            self.show_notice(f"Heartbeat CSV not written: {cannot_write(path, exc)}", error=True)
            return False
        self.show_notice(f"{n:,} heartbeat ticks written to {path}", error=False)
        return True

    # --- drawing --------------------------------------------------------------------------
    def show_notice(self, text: str, error: bool | None = None) -> None:
        """Add ``text`` to the banner (an error unless ``error`` is False) until a run starts or
        ends (or newer messages push it out); ``noticed`` carries it where the user looks
        whatever the tab shows or the page is scrolled to (the window's status bar)."""
        self._add_message(text, True if error is None else bool(error), outcome=False)
        self.noticed.emit(text)

    def _show_outcome(self, text: str, error: bool) -> None:
        self._add_message(text, error, outcome=True)

    def _add_message(self, text: str, error: bool, *, outcome: bool) -> None:
        c = self.controller
        kept = [m for m in self._current_messages() if m[:3] != (text, error, outcome)]   # the same: once
        self._messages = [*kept, (text, error, outcome, c.started, c.ended)][-MESSAGES_SHOWN:]
        self._paint_banner()

    def _current_messages(self) -> list[tuple[str, bool, bool, int, int]]:
        c = self.controller
        return [m for m in self._messages if m[3] == c.started and (m[2] or m[4] == c.ended)]

    def _paint_banner(self, *_args) -> None:
        c = self.controller
        self._messages = self._current_messages()
        flight = "\n".join(c.in_flight_lines())
        # plain text takes the palette's colour (it follows the theme); an alarm colour is
        # re-read from the theme on every paint and on a palette change (fonts_changed)
        _restyle(self.in_flight, f"color: {theme.REF_LONG}; font-weight: bold;" if c.banner else "font-weight: bold;")
        if self.in_flight.text() != flight:
            self.in_flight.setText(flight)
        error = bool(self._messages) and self._messages[-1][1]
        _restyle(self.banner, f"color: {theme.WARN}; font-weight: bold;" if error else "font-weight: bold;")
        text = "\n".join(m[0] for m in self._messages)
        if self.banner.text() != text:
            self.banner.setText(text)

    def schedule_refresh(self, *_args) -> None:
        """Something changed: refresh on the next frame tick (changes in between coalesce)."""
        self.mark_dirty(urgent=True)

    def refresh_steps(self, urgent: bool):
        return (self.refresh,)

    def frame_motion(self, changed: bool, refreshing: bool, text_due: bool) -> bool:
        """While a run is in flight, refresh ``TEXT_FPS`` times a second (a sliced run's
        progress, the time in flight)."""
        if not self._running:
            return False
        if text_due and not refreshing:
            self.mark_stale()
        return True

    def refresh(self) -> None:
        """Show everything now: hints, buttons, banner, table, figures."""
        c = self.controller
        # job size hint
        total = self.job_total()
        if self._job[1] == "iterations":
            est = c.estimate_ms(total)
            self.size_hint.setText(f"≈ {est:,.0f} ms of CPU on this machine" if est else "calibrating…")
        else:
            over = f", over the maximum of {MAX_TOTAL:,}" if total and total > MAX_TOTAL else ""
            self.size_hint.setText(f"= {total:,} iterations{over}" if total else "calibrating…")
        if self.slicing.currentText() == "ms budget":
            # slices aim at AIM of the budget (lanemon.work.slicing), so that one that runs
            # slow still stays within it
            per = c.iterations_for_ms(self.slice_value.value() * AIM)
            self.slicing_hint.setText(f"size follows: ≈ {per:,} per slice" if per else "")
        else:
            est = c.estimate_ms(int(self.slice_value.value()))
            self.slicing_hint.setText(f"≈ {est:.1f} ms per slice" if est else "")
        kind = self.worker_kind.currentText()
        _restyle(self.buttons["worker"], theme.run_button_style(kind))
        self.worker_hint.setText({"cold": "a process per run", "warm": "pre-started pool",
                                  "thread": "shares the GIL"}[kind])

        # buttons say when their kind is busy (a click then explains, it is not ignored)
        running = False
        for family, b in self.buttons.items():
            rec = c.busy(family)
            base = {"whole": "Whole", "sliced": "Sliced", "worker": "Worker"}[family]
            if rec is None:
                b.setText(base)
            else:
                running = True
                b.setText(f"{base} {100 * rec.progress:.0f}%" if family == "sliced" else f"{base}…")
            b.setToolTip(self._tips[family] + ("" if rec is None else
                         f"\nRun #{rec.id} is running: one {family} run at a time."))
        self.cancel_btn.setEnabled(bool(c.cancellable()))
        self._update_esc()
        self._paint_banner()
        self._running = running

        if self.model.refresh():              # the newest rows changed: the columns may widen
            fit_columns(self.table, NEW_ROWS, stretch_last=False, grow_only=True)
        self.figures.setText(self._figures_html())

    def _figures_html(self) -> str:
        c = self.controller
        m = c.machine
        muted = theme.MUTED

        def item(name, value):
            return f"<span style='color:{muted}'>{name}</span>&nbsp;<b>{value}</b>"

        sep = "&nbsp;&nbsp;&nbsp;"
        fig = c.slicing_figures()
        if fig:
            slicing = sep.join([item("costRatio", fig["costRatio"]), item("tailRatio", fig["tailRatio"]),
                                item("sliceMs", fig["sliceMs"])])
        else:
            slicing = f"<span style='color:{muted}'>run whole and sliced at one size</span>"
        cold = f"{m.cold_startup_ms:,.1f} ms" if m.cold_startup_ms is not None else "measuring…"
        warm = f"{m.warm_roundtrip_ms:,.2f} ms" if m.warm_roundtrip_ms is not None else "measuring…"
        worker = sep.join([item("cold start-up", cold), item("warm round trip", warm)])
        return (f"<table cellspacing=0 cellpadding=1><tr><td style='color:{muted}'>slicing&nbsp;&nbsp;</td>"
                f"<td>{slicing}</td></tr><tr><td style='color:{muted}'>worker&nbsp;&nbsp;</td>"
                f"<td>{worker}</td></tr></table>")
