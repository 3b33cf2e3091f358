"""The controls of the lanes & queues view: inputs and buttons, no domain call.

``LanesControls`` only reads and checks what the user typed (``workspace()``,
``job_id()``, ``work()``, ``burst_workspaces()`` raise ``ValueError`` with a
sentence a person can act on); ``LanesView`` connects the buttons to the
scheduler. Every button has a mnemonic (Alt+letter) and the tab order follows
the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from lanemon.lanes import QUEUE_NAMES, CpuWork, SimulatedWork
from lanemon.lanes.names import MAX_WORKSPACE_NAME, workspace_problem
from lanemon.ui.kit import theme

WORK_KINDS = ("simulated", "CPU")
PLACEMENTS = ("auto", "loop", "slice", "worker")
DEFAULT_DURATION_S = 2.0
DEFAULT_CPU_MS = 200.0
MAX_WS_NAME = MAX_WORKSPACE_NAME   # characters: a longer workspace name is refused (see ``workspace``)


def ws_name(i: int) -> str:
    """The default workspace names: ws-01, ws-02, …"""
    return f"ws-{i:02d}"



class BurstWorkspaces(Sequence):
    """Job ``i``'s workspace of a burst of ``jobs`` over ``workspaces``: ``ws_name(i % M + 1)``,
    named on demand (``len``, indexing, iteration; ``distinct`` = how many workspaces)."""

    __slots__ = ("jobs", "workspaces")

    def __init__(self, jobs: int, workspaces: int) -> None:
        if jobs < 0 or workspaces < 1:
            raise ValueError("a burst has 0 or more jobs over 1 or more workspaces")
        self.jobs = jobs
        self.workspaces = workspaces

    def __len__(self) -> int:
        return self.jobs

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.jobs))]
        if i < 0:
            i += self.jobs
        if not 0 <= i < self.jobs:
            raise IndexError(i)
        return ws_name(i % self.workspaces + 1)

    @property
    def distinct(self) -> int:
        return min(self.jobs, self.workspaces)


def busy_text(on: bool) -> str:
    """The busy-outside button's text: it says its state, whatever the theme draws for "checked"."""
    return "Busy &outside: on" if on else "Busy &outside: off"

class LanesControls(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # --- a job ------------------------------------------------------------------------
        self.workspace_box = QComboBox()
        self.workspace_box.setEditable(True)
        self.workspace_box.addItems([ws_name(i) for i in range(1, 9)])
        self.workspace_box.setCurrentText(ws_name(1))
        self.workspace_box.setToolTip(f"any name up to {MAX_WS_NAME} characters; a click on a table row "
                                      "fills it in")
        self.queue_box = QComboBox()
        self.queue_box.addItems(list(QUEUE_NAMES))   # the scheduler's queues, in its order
        self.kind_box = QComboBox()
        self.kind_box.addItems(WORK_KINDS)
        self.kind_box.setToolTip("simulated: sleeps for its duration · CPU: the calibrated CPU job")
        self.length = QDoubleSpinBox()
        self.length.setDecimals(1)
        self.length.setRange(0.0, 600.0)
        self.length.setValue(DEFAULT_DURATION_S)
        self.length.setSuffix(" s")
        self.placement_box = QComboBox()
        self.placement_box.addItems(PLACEMENTS)
        self.placement_box.setToolTip("CPU work: where it runs (auto = lanemon.work.place)")
        self.fails = QCheckBox("work fa&ils")
        self.fails.setToolTip("a simulated job that fails at its end (its failure is recorded)")
        self.add_button = QPushButton("&Add job")
        self.add_button.setDefault(True)

        self.burst_jobs = QSpinBox()
        self.burst_jobs.setRange(1, 100_000)
        self.burst_jobs.setValue(24)
        self.burst_jobs.setSuffix(" jobs")
        self.burst_ws = QSpinBox()
        self.burst_ws.setRange(1, 10_000)
        self.burst_ws.setValue(6)
        self.burst_ws.setPrefix("over ")
        self.burst_ws.setSuffix(" ws")
        self.burst_button = QPushButton("&Burst")
        self.burst_button.setToolTip("N jobs over ws-01 … ws-M (round robin), same queue and work")

        # --- a chosen job / workspace --------------------------------------------------------
        self.job_box = QSpinBox()
        self.job_box.setRange(0, 2_000_000_000)
        self.job_box.setSpecialValueText("none")
        self.job_box.setPrefix("#")
        self.job_box.setToolTip("the job the buttons below act on; a click on a queue row fills it in")
        self.cancel_button = QPushButton("&Cancel")
        self.cancel_button.setToolTip("queued: cancelled · running: a stop request through its lane")
        self.hold_button = QPushButton("Hol&d final save")
        self.hold_button.setToolTip("hold the job's final save open: its workspace stays claimed")
        self.release_button = QPushButton("R&elease save")
        self.release_button.setToolTip("release the holds on this job's save (none: every hold)")
        self.fail_button = QPushButton("Fail ne&xt save")
        self.fail_button.setToolTip("the next save of this job raises: it ends failed, lanes released")
        self.stop_button = QPushButton("Request &stop")
        self.stop_button.setToolTip("ask whatever runs in the workspace to stop at its next checkpoint")
        self.busy_button = QPushButton(busy_text(False))
        self.busy_button.setCheckable(True)
        self.busy_button.setToolTip("mark the workspace busy outside the scheduler (a program, a "
                                    "notebook, an unconfirmed result): nothing starts in it")
        self.reset_button = QPushButton("&Reset")
        self.reset_button.setToolTip("stop a burst, end every job (waiting: cancelled, running: "
                                     "stopped) and forget the finished ones: the tab starts empty")

        # --- layout -----------------------------------------------------------------------------
        def label(text: str, buddy: QWidget) -> QLabel:
            lab = QLabel(text)
            lab.setBuddy(buddy)
            return lab

        job = QGroupBox("New job")
        g = QGridLayout(job)
        g.setHorizontalSpacing(6)
        g.setVerticalSpacing(4)
        g.addWidget(label("&Workspace", self.workspace_box), 0, 0)
        g.addWidget(self.workspace_box, 0, 1)
        g.addWidget(label("&Queue", self.queue_box), 0, 2)
        g.addWidget(self.queue_box, 0, 3)
        g.addWidget(label("wor&k", self.kind_box), 1, 0)
        g.addWidget(self.kind_box, 1, 1)
        self.length_label = label("&length", self.length)
        g.addWidget(self.length_label, 1, 2)
        g.addWidget(self.length, 1, 3)
        g.addWidget(label("&place", self.placement_box), 2, 0)
        g.addWidget(self.placement_box, 2, 1)
        g.addWidget(self.fails, 2, 2, 1, 2)
        g.addWidget(self.add_button, 3, 0, 1, 4)
        burst = QHBoxLayout()
        burst.setSpacing(4)
        burst.addWidget(self.burst_jobs, 1)
        burst.addWidget(self.burst_ws, 1)
        burst.addWidget(self.burst_button, 1)
        g.addLayout(burst, 4, 0, 1, 4)
        g.setColumnStretch(1, 1)
        g.setColumnStretch(3, 1)

        act = QGroupBox("Act on")
        a = QGridLayout(act)
        a.setHorizontalSpacing(6)
        a.setVerticalSpacing(4)
        a.addWidget(label("&job", self.job_box), 0, 0)
        a.addWidget(self.job_box, 0, 1)
        a.addWidget(self.cancel_button, 0, 2)
        a.addWidget(self.hold_button, 1, 0, 1, 2)
        a.addWidget(self.release_button, 1, 2)
        a.addWidget(self.fail_button, 2, 0, 1, 2)
        a.addWidget(self.reset_button, 2, 2)
        a.addWidget(self.stop_button, 3, 0, 1, 2)
        a.addWidget(self.busy_button, 3, 2)
        a.setColumnStretch(1, 1)
        a.setColumnStretch(2, 1)

        self.notice = QLabel("")
        self._notice_error = False
        self.notice.setWordWrap(True)
        self.notice.setTextFormat(Qt.TextFormat.PlainText)
        self.notice.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.notice.setMinimumHeight(36)

        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(4)
        v.addWidget(job)
        v.addWidget(act)
        v.addWidget(self.notice, 1)

        order = [self.workspace_box, self.queue_box, self.kind_box, self.length, self.placement_box,
                 self.fails, self.add_button, self.burst_jobs, self.burst_ws, self.burst_button,
                 self.job_box, self.cancel_button, self.hold_button, self.release_button,
                 self.fail_button, self.reset_button, self.stop_button, self.busy_button]
        for first, second in zip(order, order[1:]):
            QWidget.setTabOrder(first, second)
        self.kind_box.currentTextChanged.connect(self._kind_changed)
        self._kind_changed(self.kind_box.currentText())

    # --- what the user asked for ------------------------------------------------------------
    def _kind_changed(self, kind: str) -> None:
        cpu = kind == "CPU"
        self.placement_box.setEnabled(cpu)
        self.fails.setEnabled(not cpu)
        if cpu:
            self.length.setDecimals(0)
            self.length.setRange(1.0, 60_000.0)
            self.length.setSuffix(" CPU ms")
            self.length.setValue(DEFAULT_CPU_MS)
        else:
            self.length.setDecimals(1)
            self.length.setRange(0.0, 600.0)
            self.length.setSuffix(" s")
            self.length.setValue(DEFAULT_DURATION_S)

    def workspace(self) -> str:
        """The workspace typed (stripped). Refused (``ValueError``): empty, longer than
        ``MAX_WS_NAME`` characters, or with characters other than letters, digits and
        ``- _ . : @ /``."""
        ws = self.workspace_box.currentText().strip()
        if not ws:
            raise ValueError("Type a workspace name first (e.g. ws-01).")
        if len(ws) > MAX_WS_NAME:
            raise ValueError(f"A workspace name has at most {MAX_WS_NAME} characters; this one has "
                             f"{len(ws)} ({ws[:12]}…). Shorten it.")
        problem = workspace_problem(ws)      # (the one rule: lanemon.lanes.names)
        if problem is not None:
            raise ValueError(f"{problem}.")
        return ws

    def fill_simulated(self, ws: str, queue: str, seconds: float, fails: bool = False) -> None:
        """Fill the form for a simulated job (as a user would; scripts and tests use it)."""
        self.kind_box.setCurrentText("simulated")
        self.set_workspace(ws)
        self.queue_box.setCurrentText(queue)
        self.length.setValue(seconds)
        self.fails.setChecked(fails)

    def set_workspace(self, ws: str) -> None:
        self.workspace_box.setCurrentText(ws)

    def queue(self) -> str:
        return self.queue_box.currentText()

    def work(self):
        """The work the fields describe (a fresh object)."""
        if self.kind_box.currentText() == "CPU":
            where = self.placement_box.currentText()
            return CpuWork(self.length.value(), where=None if where == "auto" else where)
        fail = "simulated failure (work fails)" if self.fails.isChecked() else None
        return SimulatedWork(self.length.value(), fail=fail)

    def job_id(self) -> int:
        jid = self.job_box.value()
        if jid <= 0:
            raise ValueError("Choose a job first: click a row in a queue table or type its number.")
        return jid

    def set_job(self, job_id: int) -> None:
        self.job_box.setValue(job_id)

    def burst_workspaces(self) -> BurstWorkspaces:
        """The burst's workspaces, job by job (round robin over ws-01 … ws-M): a sequence
        that names each when asked, so a click on Burst does not build 99,999 names at once
        (~30 ms of the loop)."""
        return BurstWorkspaces(self.burst_jobs.value(), self.burst_ws.value())

    def say(self, text: str, error: bool = False) -> None:
        """Show ``text`` in the notice under the controls: plain in the palette's text colour,
        or (``error``) bold in the theme's alarm colour, re-read on every palette change (F5,
        the dark theme), so the notice stays readable in both palettes."""
        self._notice_error = bool(error)
        self._paint_notice()
        self.notice.setText(text)

    def _paint_notice(self) -> None:
        # as the Runs banner: plain text takes the palette's colour (it follows the theme); the
        # alarm colour (theme.WARN: >= 4.5:1 on both palettes' backgrounds) is read again here
        sheet = f"color: {theme.WARN}; font-weight: bold;" if self._notice_error else ""
        if self.notice.styleSheet() != sheet:
            self.notice.setStyleSheet(sheet)

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:     # theme.apply swapped the app's palette
            self._paint_notice()
        super().changeEvent(event)
