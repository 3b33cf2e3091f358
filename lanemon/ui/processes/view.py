"""The Processes tab: agent processes started from the window, the store's sessions, the
window's worker processes, with Pause / Resume / Stop / Kill.

``ProcessesView`` (a ``LiveView``) is a thin layer over ``lanemon.agents.fleet``:

- **Start N agents**: N real OS processes running ``lanemon agent`` (the fleet's
  command) on the store URL of the field (which ``use_store(url)`` fills with the
  Lanes & queues tab's store: the one ``lanemon --store`` gave it, or the one its
  source picker follows, looked at on each refresh), with "local lanes" (each
  agent its own in-memory lanes: the seed's design scaled out by mistake), the
  role (lanes or staff) and, for staff, the strategy. A URL the store module
  cannot parse, or ``memory:``, is refused with the reason. **Stop all** stops
  the agents started here (SIGTERM, SIGKILL after ``STOP_GRACE_S``).
- **The table**: the agents started here (name, pid, state: running / paused /
  stopping / exited N, and from their store session jobs running, lanes held,
  last heartbeat), the store's other sessions (marked not started here; another
  host's cannot be signalled, and the row says why), and the worker processes of
  the Runs tab (warm pool, a cold worker in flight). The store's sessions are read
  every ``SESSIONS_PERIOD_S`` while the tab is shown (``SessionWatch``); a store
  that cannot be read is said in the header, the rest still works.
- **Pause / Resume / Stop / Kill** act on the selected row (``Fleet.act``); the line
  under them says what was sent, or why nothing was (a process that has already
  exited is reported, never raised). Kill on a worker process ends its run in
  flight with the Runs tab's "failed: WorkerDied ..." and the warm pool replaces
  the worker.
- **Closing the window** stops every agent started here and waits until each has
  exited (``close_domain``): no orphan. With "keep agents running when the window
  closes" checked they are left running; the tab says so while it is checked, and
  the close says which on stderr.

Keyboard: the tab is reached with Ctrl+Tab / Ctrl+Shift+Tab (it has no Alt+letter: every
letter of "Processes" belongs to another tab's control or a menu); Start (Alt+S), the store
URL (Alt+E), role (Alt+L), strategy (Alt+Y), local lanes (Alt+C), Stop all (Alt+A), Forget
exited (Alt+G), keep running (Alt+K), Pause (Alt+P), Resume (Alt+R), Stop (Alt+T), Kill
(Alt+I); the table and the agents' count by Tab, rows by the arrow keys.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable

from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from lanemon.agents.fleet import (
    SESSIONS_PERIOD_S,
    STRATEGIES,
    AgentSpec,
    Fleet,
    FleetError,
    ProcessRow,
    SessionWatch,
    SignalResult,
    process_rows,
)
from lanemon.tasks import cancel_and_wait
from lanemon.ui.kit import theme
from lanemon.ui.kit.live_view import LiveView
from lanemon.ui.kit.reflow import Reflow
from lanemon.ui.kit.tables import column_fit, fit_columns, keep_within_width, table_item

COLUMNS = ("name", "pid", "started", "state", "jobs", "lanes", "heartbeat", "host", "role")
MAX_AGENTS = 16           # started at once
SLACK_PX = 6


def _item(text: str, color=None, bold: bool = False, right: bool = False, tip: str = ""):
    it = table_item(text, color, bold, right, read_only=True)
    if tip:
        it.setToolTip(tip)
    return it


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 10:
        return f"{seconds:.1f} s ago"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    return f"{seconds / 60:.0f} min ago"


def _state_color(state: str) -> str | None:
    if state == "running":
        return theme.OK_TEXT
    if state in ("paused", "stopping"):
        return theme.WARN
    if state == "exited 0":
        return theme.MUTED
    if state.startswith("exited"):
        return theme.ERROR_TEXT
    if state == "gone":
        return theme.PROGRAM_STALE
    return None


def _count(n: int, what: str) -> str:
    """``n`` and ``what``, plural unless one ("2 agents", "2 worker processes")."""
    if n == 1:
        return f"{n} {what}"
    return f"{n} {what}" + ("es" if what.endswith("s") else "s")


class ProcessesView(LiveView):
    """The Processes tab (see the module docstring)."""

    TEXT_FPS = 2.0

    def __init__(self, fleet: Fleet | None = None, *, session_opener=None,
                 workers: Callable[[], list] | None = None,
                 lanes_source: Callable[[], tuple[str, str] | None] | None = None,
                 parent: QWidget | None = None) -> None:
        """``fleet``: the agents' fleet (default: a new one running ``lanemon agent``);
        ``session_opener(url)``: how ``SessionWatch`` opens a store session (default: the
        store module); ``workers()``: the worker processes (default
        ``lanemon.work.worker_processes``); ``lanes_source()``: the store the Lanes & queues
        tab follows, ``(url, redacted url)`` or ``None``, read at each refresh: a change is
        taken with ``use_store``."""
        super().__init__(parent)
        self._lanes_source = lanes_source
        self._lanes_seen: tuple[str, str] | None = None
        if workers is None:
            from lanemon.work import worker_processes as workers
        self.fleet = fleet if fleet is not None else Fleet()
        self._workers = workers
        self.session_opener = session_opener               # (read when the store URL changes)
        self.watch: SessionWatch | None = None
        self._watch_task = None
        self._lanes_url: tuple[str, str] | None = None     # (shown, real) from the Lanes tab
        self.rows: list[ProcessRow] = []
        self._selected: str | None = None                   # the selected row's key
        self.last_result: SignalResult | None = None
        self.kept: list = []                                # agents left running at close
        self._announced: set[tuple[str, int]] = set()     # (name, pid) of failed agents already said

        self.head = QLabel("Processes")
        self.head.setWordWrap(True)
        self.count = QSpinBox()
        self.count.setRange(1, MAX_AGENTS)
        self.count.setValue(2)
        self.count.setAccessibleName("agents to start")
        self.start_button = QPushButton("&Start")
        self.start_button.setToolTip("start this many `lanemon agent` processes on the store")
        self.start_button.clicked.connect(self.start_agents)
        self.url = QLineEdit()
        self.url.setPlaceholderText("sqlite:///path/store.db  or  postgresql://host/db")
        self.url.editingFinished.connect(self._url_edited)
        self.url_note = QLabel("")
        self.url_note.setProperty("muted", True)
        self.local_lanes = QCheckBox("lo&cal lanes")
        self.local_lanes.setToolTip("each agent keeps its own in-memory lanes (the seed's design scaled out "
                                    "by mistake): one workspace can run in two agents at once")
        self.role = QComboBox()
        self.role.addItems(["lanes", "staff"])
        self.strategy = QComboBox()
        self.strategy.addItems(list(STRATEGIES))
        self.strategy.setCurrentText("claim")
        self.role.currentTextChanged.connect(self._role_changed)
        self.stop_all_button = QPushButton("Stop &all")
        self.stop_all_button.setToolTip("SIGTERM every agent started here (SIGKILL if one does not exit)")
        self.stop_all_button.clicked.connect(self.stop_all)
        self.forget_button = QPushButton("For&get exited")
        self.forget_button.clicked.connect(self._forget)
        self.keep = QCheckBox("&keep agents running when the window closes")
        self.keep.toggled.connect(lambda _on: self.mark_dirty(urgent=True))
        self.keep_note = QLabel("")
        self.keep_note.setWordWrap(True)

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setAccessibleName("processes")
        keep_within_width(self.table, drop=(8, 7, 2))       # role, host, then started go first
        self.table.itemSelectionChanged.connect(self._chosen)

        self.buttons = {
            "pause": QPushButton("&Pause"),
            "resume": QPushButton("&Resume"),
            "stop": QPushButton("S&top"),
            "kill": QPushButton("K&ill"),
        }
        tips = {"pause": "SIGSTOP: the process stops running (its leases run out)",
                "resume": "SIGCONT: a paused process runs again",
                "stop": "SIGTERM: a clean stop (SIGKILL if it has not exited a few seconds later)",
                "kill": "SIGKILL: it ends now, mid-save or not"}
        self._tips = tips
        for action, button in self.buttons.items():
            button.setToolTip(tips[action])
            button.clicked.connect(lambda _checked=False, a=action: self.act(a))
        self.result = QLabel("Select a process, then Pause, Resume, Stop or Kill.")
        self.result.setWordWrap(True)

        form = QGridLayout()
        form.setContentsMargins(0, 0, 0, 0)
        start_row = QHBoxLayout()
        start_row.addWidget(self.start_button)
        start_row.addWidget(self.count)
        start_row.addWidget(QLabel("agents,"))
        role_label = QLabel("ro&le")
        role_label.setBuddy(self.role)
        start_row.addWidget(role_label)
        start_row.addWidget(self.role)
        strategy_label = QLabel("strateg&y")
        strategy_label.setBuddy(self.strategy)
        start_row.addWidget(strategy_label)
        start_row.addWidget(self.strategy)
        start_row.addWidget(self.local_lanes)
        start_row.addStretch(1)
        form.addLayout(start_row, 0, 0, 1, 2)
        url_label = QLabel("on stor&e")
        url_label.setBuddy(self.url)
        form.addWidget(url_label, 1, 0)
        url_row = QHBoxLayout()
        url_row.addWidget(self.url, 1)
        url_row.addWidget(self.url_note)
        form.addLayout(url_row, 1, 1)
        form.setColumnStretch(1, 1)
        keep_row = QHBoxLayout()
        keep_row.addWidget(self.keep)
        keep_row.addStretch(1)
        keep_row.addWidget(self.stop_all_button)
        keep_row.addWidget(self.forget_button)
        form.addLayout(keep_row, 2, 0, 1, 2)
        act_row = QHBoxLayout()
        for button in self.buttons.values():
            act_row.addWidget(button)
        act_row.addWidget(self.result, 1)

        starting = QGroupBox("Agents: lanemon agent processes on a store")
        box = QVBoxLayout(starting)
        box.addLayout(form)
        box.addWidget(self.keep_note)
        listing = QGroupBox("Processes: agents, the store's sessions, the Runs tab's workers")
        box = QVBoxLayout(listing)
        box.addWidget(self.head)
        box.addWidget(self.table, 1)
        box.addLayout(act_row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        # the agents' form and what sits beside it (the Scenarios box): side by side when the
        # tab is wide enough, so the process table starts higher (at 1280x800 its rows were
        # below the fold); one above the other when not
        self._top = QBoxLayout(QBoxLayout.Direction.TopToBottom)
        self._top.addWidget(starting, 1)
        layout.addLayout(self._top)
        layout.addWidget(listing, 1)
        self.reflow = Reflow(self, self._top, self._wide_at)
        self.table.setMinimumHeight(120)
        self._role_changed(self.role.currentText())
        self._enable_buttons(None)
        self.fonts_changed()

    def add_beside_agents(self, widget: QWidget) -> None:
        """Put ``widget`` beside the agents' form (below it when the tab is narrow)."""
        self._top.addWidget(widget, 1)
        self.reflow.apply()

    def _wide_at(self) -> int:
        """The least width at which the agents' form and its neighbours fit side by side."""
        items = [self._top.itemAt(i).widget() for i in range(self._top.count())]
        widths = [w.minimumSizeHint().width() for w in items if w is not None]
        if len(widths) < 2:
            return 1 << 30          # nothing beside it: always one above the other
        m = self.layout().contentsMargins()
        return sum(widths) + self._top.spacing() * (len(widths) - 1) + m.left() + m.right()

    # --- the store ------------------------------------------------------------------------
    def use_store(self, url: str | None, shown: str | None = None, source: str = "the Lanes tab") -> None:
        """The store the Lanes & queues tab follows (``None``: it runs its own simulation):
        the field shows it (``shown``: its redacted form, default ``url``) and agents start
        on ``url`` while the field is left as it is."""
        if url is None:
            if self._lanes_url is not None and self.url.text().strip() == self._lanes_url[0]:
                self.url.clear()        # (a redacted URL is no URL to start agents on)
            self._lanes_url = None
            self.url_note.setText("")
        else:
            shown = shown or url
            self._lanes_url = (shown, url)
            self.url.setText(shown)
            self.url_note.setText(f"from {source}")
        self._url_edited()

    def store_url(self) -> str:
        """The URL agents start on (the field's text; the Lanes tab's URL while the field shows it)."""
        text = self.url.text().strip()
        if self._lanes_url is not None and text == self._lanes_url[0]:
            return self._lanes_url[1]
        return text

    def _url_edited(self) -> None:
        url = self.store_url()
        if self._lanes_url is not None and self.url.text().strip() != self._lanes_url[0]:
            self.url_note.setText("")
        if self.watch is not None and self.watch.url == url:
            return
        self.spawn(self._switch_watch(url))

    async def _switch_watch(self, url: str) -> None:
        old, self.watch = self.watch, None
        task, self._watch_task = self._watch_task, None
        if task is not None:
            await cancel_and_wait({task})
        if old is not None:
            await old.aclose()
        if not url or self.is_shut:
            self.mark_dirty(urgent=True)
            return
        opener = self.session_opener
        watch = SessionWatch(url) if opener is None else SessionWatch(url, opener=opener)
        self.watch = watch
        self._watch_task = self.spawn(self._keep_watching(watch))

    async def _keep_watching(self, watch: SessionWatch) -> None:
        """Read the store's sessions every ``SESSIONS_PERIOD_S`` while the tab is shown."""
        try:
            while True:
                if self.isVisible():
                    await watch.read_once()
                    self.mark_dirty()
                await asyncio.sleep(watch.period_s if watch.period_s else SESSIONS_PERIOD_S)
        finally:
            await watch.aclose()

    # --- starting and stopping ---------------------------------------------------------------
    def _role_changed(self, role: str) -> None:
        self.strategy.setEnabled(role == "staff")
        self.local_lanes.setEnabled(role == "lanes")

    def start_agents(self) -> list:
        """Start ``count`` agents with the form's options; the agents started (the reason for
        a refusal is shown under the buttons)."""
        from lanemon.store.url import StoreError, parse

        url = self.store_url()
        if not url:
            self._say(False, "Give a store URL first (sqlite:///path/store.db or postgresql://host/db).")
            return []
        try:
            engine = parse(url).engine
        except StoreError as exc:
            self._say(False, f"Not started: {exc}")
            return []
        if engine == "memory":
            self._say(False, "Not started: agents share a store; memory: is this window's own (use sqlite or "
                             "postgresql).")
            return []
        role = self.role.currentText()
        started = []
        try:
            for _ in range(self.count.value()):
                spec = AgentSpec(url, self.fleet.next_name(), role=role,
                                 lanes="local" if role == "lanes" and self.local_lanes.isChecked() else "store",
                                 strategy=self.strategy.currentText() if role == "staff" else None)
                started.append(self.fleet.start(spec))
        except FleetError as exc:
            self._say(False, f"{exc}" + (f" ({len(started)} started)" if started else ""))
        else:
            names = ", ".join(f"{a.name} (pid {a.pid})" for a in started)
            self._say(True, f"Started {_count(len(started), 'agent')}: {names}.")
        self._url_edited()                  # (watch that store's sessions, if not yet)
        self.mark_dirty(urgent=True)
        return started

    def stop_all(self) -> list[SignalResult]:
        results = self.fleet.stop_all()
        sent = [r for r in results if r.sent]
        if results:
            self._say(bool(sent), f"SIGTERM sent to {_count(len(sent), 'agent')} started here; one still "
                                  f"running after a few seconds gets SIGKILL.")
        else:
            self._say(False, "No agent started here is running.")
        self.mark_dirty(urgent=True)
        return results

    def _forget(self) -> None:
        n = self.fleet.forget_exited()
        self._say(True, f"{_count(n, 'exited agent')} taken off the list.")
        self.mark_dirty(urgent=True)

    # --- the selected row ------------------------------------------------------------------------
    def select(self, key: str) -> bool:
        """Select the row ``key`` (``ProcessRow.key``); whether it is listed."""
        for i, row in enumerate(self.rows):
            if row.key == key:
                self.table.selectRow(i)
                self._selected = key
                self._enable_buttons(row)
                return True
        return False

    def selected_row(self) -> ProcessRow | None:
        for row in self.rows:
            if row.key == self._selected:
                return row
        return None

    def act(self, action: str) -> SignalResult:
        """``action`` on the selected row; what was done is shown under the buttons."""
        row = self.selected_row()
        if row is None:
            result = SignalResult(False, "Select a process first.")
        else:
            result = self.fleet.act(row, action)
            if result.sent and row.kind == "worker":
                result = SignalResult(True, f"{result.message}: its run in flight fails (the Runs tab says so) "
                                            f"and the warm pool starts a replacement.")
        self._say(result.sent, result.message)
        self.last_result = result
        self.mark_dirty(urgent=True)
        return result

    def _chosen(self) -> None:
        picked = self.table.selectionModel().selectedRows()
        if not picked:
            return
        i = picked[0].row()
        if 0 <= i < len(self.rows):
            self._selected = self.rows[i].key
            self._enable_buttons(self.rows[i])

    def _enable_buttons(self, row: ProcessRow | None) -> None:
        ok = row is not None and row.can_signal
        worker = row is not None and row.kind == "worker"
        state = row.state if row is not None else ""
        self.buttons["pause"].setEnabled(ok and not worker and state in ("running", "stopping"))
        self.buttons["resume"].setEnabled(ok and not worker and state in ("paused", "stopping"))
        self.buttons["stop"].setEnabled(ok and not worker and state in ("running", "paused"))
        self.buttons["kill"].setEnabled(ok)
        why = f"{row.name}: {row.why_not}" if row is not None and not row.can_signal and row.why_not else ""
        for action, button in self.buttons.items():
            tip = why or self._tips[action]
            if button.toolTip() != tip:
                button.setToolTip(tip)

    def _say(self, ok: bool, text: str) -> None:
        self.result.setText(text)
        sheet = f"color: {theme.FG if ok else theme.ERROR_TEXT};"
        if self.result.styleSheet() != sheet:     # (a new sheet re-polishes the label)
            self.result.setStyleSheet(sheet)

    # --- LiveView ------------------------------------------------------------------------------
    def frame_motion(self, changed: bool, refreshing: bool, text_due: bool) -> bool:
        """Ticks while processes are listed (states and heartbeat ages change)."""
        listed = bool(self.rows)
        if listed and text_due:
            self.mark_stale()
        return listed

    def refresh_steps(self, urgent: bool):
        return (self._show,)

    def fonts_changed(self) -> None:
        big = QFont(self.font())
        big.setPointSizeF(theme.pt(12))
        big.setBold(True)
        self.head.setFont(big)
        self._fit()

    def _fit(self) -> None:
        fit_columns(self.table, bold_cells=True)
        fit = column_fit(self.table)
        for column in range(self.table.columnCount()):
            natural = fit.natural(column)
            if natural is not None:
                fit.set_natural(column, natural + SLACK_PX)
        fit.apply()

    def _follow_lanes_source(self) -> None:
        """The Lanes tab followed another store (or went back to its simulation): take it."""
        if self._lanes_source is None:
            return
        try:
            now = self._lanes_source()
        except Exception:                  # (a read: never in the way of the rest)
            return
        if now != self._lanes_seen:
            self._lanes_seen = now
            if now is None:
                self.use_store(None)
            else:
                self.use_store(now[0], shown=now[1])

    def _show(self) -> None:
        self._follow_lanes_source()
        agents = self.fleet.agents()
        watch = self.watch
        sessions = watch.rows if watch is not None else []
        try:
            workers = list(self._workers())
        except Exception:                  # (a read: never in the way of the rest)
            workers = []
        own = (watch.own_session,) if watch is not None and watch.own_session else ()
        rows = process_rows(agents, sessions, workers, now=time.time(), hide=own)
        self.rows = rows
        self._show_head(agents, rows, watch)
        self._say_failures(agents)
        self._show_keep(agents)
        t = self.table
        t.blockSignals(True)
        try:
            t.setRowCount(len(rows))
            chosen = -1
            for i, row in enumerate(rows):
                tip = row.why_not or row.detail
                cells = (
                    _item(row.name, bold=row.here, tip=tip),
                    _item("–" if row.pid is None else str(row.pid), right=True),
                    _item(row.origin, theme.MUTED if not row.here else None),
                    _item(row.state, _state_color(row.state), bold=True, tip=row.detail),
                    _item("–" if row.jobs_running is None else str(row.jobs_running), right=True),
                    _item("–" if row.lanes_held is None else str(row.lanes_held), right=True),
                    _item(_age(row.heartbeat_age_s), right=True),
                    _item(row.host),
                    _item(row.role),
                )
                for col, it in enumerate(cells):
                    t.setItem(i, col, it)
                if row.key == self._selected:
                    chosen = i
            if chosen >= 0:
                t.selectRow(chosen)
            else:
                t.clearSelection()
        finally:
            t.blockSignals(False)
        self._enable_buttons(rows[chosen] if chosen >= 0 else None)
        self._fit()

    def _say_failures(self, agents) -> None:
        """An agent that exited with an error status is said once under the buttons, with
        its log's last line (a store that cannot be opened, a bad option...)."""
        for a in agents:
            if a.returncode is not None and a.returncode > 0 and (a.name, a.pid) not in self._announced:
                self._announced.add((a.name, a.pid))
                why = f": {a.last_line}" if a.last_line else ""
                self._say(False, f"{a.name} (pid {a.pid}) {a.state}{why} (its log: {a.log_path})")

    def _show_head(self, agents, rows, watch) -> None:
        live = [a for a in agents if a.alive]
        paused = sum(1 for a in live if a.state == "paused")
        parts = [f"{_count(len(live), 'agent')} started here running"
                 + (f" ({paused} paused)" if paused else "")]
        exited = len(agents) - len(live)
        if exited:
            parts.append(f"{exited} exited")
        if watch is None:
            parts.append("no store: give its URL to see its sessions")
        elif watch.error is not None:
            parts.append(watch.error)
        else:
            others = [r for r in rows if r.kind == "session"]
            remote = sum(1 for r in others if r.state == "remote")
            parts.append(f"store: {_count(len(others), 'other session')}"
                         + (f" ({remote} on other hosts)" if remote else ""))
        workers = [r for r in rows if r.kind == "worker"]
        busy = sum(1 for r in workers if r.state == "busy")
        parts.append(f"{_count(len(workers), 'worker process')}" + (f" ({busy} busy)" if busy else ""))
        self.head.setText(" · ".join(parts))

    def _show_keep(self, agents) -> None:
        live = [a for a in agents if a.alive]
        if not live:
            text = ("Agents started here are left running when the window closes." if self.keep.isChecked()
                    else "Closing the window stops the agents started here.")
            color = theme.MUTED
        elif self.keep.isChecked():
            text = (f"Closing the window leaves {_count(len(live), 'agent')} running: "
                    + ", ".join(f"{a.name} (pid {a.pid})" for a in live)
                    + ". Stop them here first, or later with kill.")
            color = theme.WARN
        else:
            text = f"Closing the window stops the {_count(len(live), 'agent')} started here."
            color = theme.MUTED
        if self.keep_note.text() != text:
            self.keep_note.setText(text)
            self.keep_note.setStyleSheet(f"color: {color};")

    def row_texts(self) -> list[tuple[str, ...]]:
        """The table's texts as shown (tests and screenshots)."""
        t = self.table
        return [tuple(t.item(r, c).text() for c in range(t.columnCount())) for r in range(t.rowCount())]

    # --- the end --------------------------------------------------------------------------------
    async def close_domain(self) -> None:
        """Stop the agents started here and wait for each to exit (or leave them running when
        "keep" is checked: said on stderr); close the store session."""
        watch, self.watch = self.watch, None
        if watch is not None:
            await watch.aclose()
        self.kept = await self.fleet.aclose(keep=self.keep.isChecked())
        if self.kept:
            names = ", ".join(f"{a.name} (pid {a.pid})" for a in self.kept)
            print(f"lanemon: left {_count(len(self.kept), 'agent')} running (keep agents running was on): {names}; "
                  f"their logs: {self.fleet.log_dir}", file=sys.stderr)


def install_processes_view(window, fleet: Fleet | None = None) -> ProcessesView:
    """Add the Processes tab to ``window`` (a ``MainWindow``); the window's shutdown
    (``view.shutdown`` -> ``close_domain``) stops the agents it started. The store field
    follows the store the Lanes & queues tab follows (its ``follower``), when it follows one."""
    def lanes_source() -> tuple[str, str] | None:
        follower = getattr(window.views.get("lanes"), "follower", None)
        return None if follower is None else (follower.url.text, follower.url.redacted())

    view = ProcessesView(fleet, lanes_source=lanes_source)
    window.add_view("processes", "Processes", view)
    return view


__all__ = ["COLUMNS", "ProcessesView", "install_processes_view"]
