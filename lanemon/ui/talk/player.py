"""Playing a talk in the window: the keys a presenter's clicker sends, the steps, the actions.

``install(window)`` adds File -> Open talk... and File -> Close talk to the window and the
talk's keys, and returns the ``TalkPlayer`` (``window.talk_player``). ``load(talk)`` (a
``lanemon.talk.Talk``, already checked) shows its caption and enters step 1; ``close()``
(File -> Close talk, enabled while a talk is loaded; no key: Esc closes overlays and
cancels runs) takes the caption and the keys away again.

Keys (window shortcuts, live only while a talk is loaded; a clicker sends these):

    PageDown, Right, Space   next step
    PageUp, Left             previous step (its caption; actions are not undone, except
                             the step's ``undo`` actions, which run when it is left)
    Home                     from the start: step 1's caption and its actions, run again
                             as when the talk was loaded (the undo actions of the steps
                             left are not run)
    B or .                   blank the screen (black); again, or any of the keys above,
                             brings the window back (without moving)

While a talk is loaded, Space is "next step" and pausing the chart moves to **P**
(View -> Pause chart; the shortcut list says so); closing the talk gives Space back.

The keys and the focused widget: a focused text or number field keeps every one of these
keys (they are given to it, not to the talk). Everywhere else they are the talk's, so a
speaker's key never acts on whatever was last clicked: a focused table or list keeps Up,
Down and End (no talk key), but Home, PageUp/PageDown, Left/Right and Space move the talk
(Space does not toggle a workspace's busy in the Lanes tab's table, nor press a focused
button or check box: Enter does, talk or not, and so does its Alt+letter); a
closed list box (combo) keeps Up and Down and opens with Alt+Down or F4, and its open list
keeps every key (the talk's shortcuts do not reach a popup). Enter on any other focused
widget is given to it.

Steps: a step's actions run when it is reached with a next key (step 1's when the talk
is loaded), in order, each through the same public method its control calls (the runs
panel, the Lanes & queues, Counters and Processes views, the scenarios); a failed
action is said in the status bar and the step goes on. A scenario action is under way
until the scenario's store is open and its tab follows it (a stop: until its agents
exited and its throwaway store is gone); ``agents = "start"`` starts them on the action's
``store``, else on the store the Processes tab shows (a scenario's throwaway store while
one runs), else it is refused with what to do (the status bar; see ``lanemon.talk.script``).
A step with ``wait`` holds the
talk while the runs it started (``run``) or the compare (``compare``) are in flight: a
next key pressed meanwhile moves on when they end (the caption's note says so), a
second one moves on at once. The talk decides nothing about the domains.

``LANEMON_TRACE``: "lanemon: talk step N/M TITLE" when a step is shown, "lanemon: talk
step N ready" when its actions (and wait) are done, "lanemon: talk blank on|off",
"lanemon: talk closed".
"""

from __future__ import annotations

import asyncio
import time

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QAbstractButton, QApplication, QFileDialog, QMessageBox

from lanemon.talk.script import (
    AgentsAction,
    CountersAction,
    LanesAction,
    RunAction,
    ScenarioAction,
    TabAction,
    Talk,
    TalkError,
    load,
)
from lanemon.ui.shell.talk_mode import trace, typing_into
from lanemon.ui.talk.caption import BlankScreen, TalkCaption

WAIT_POLL_S = 0.05
CALIBRATION_WAIT_S = 20.0     # a CPU ms size waits at most this long for this machine's calibration
RUN_FAMILIES = ("whole", "sliced", "worker")

#: (key, Qt key, text it types, what it does)
KEYS = (
    ("PgDown", Qt.Key.Key_PageDown, "", "next"),
    ("Right", Qt.Key.Key_Right, "", "next"),
    ("Space", Qt.Key.Key_Space, " ", "next"),
    ("PgUp", Qt.Key.Key_PageUp, "", "previous"),
    ("Left", Qt.Key.Key_Left, "", "previous"),
    ("Home", Qt.Key.Key_Home, "", "first"),
    ("B", Qt.Key.Key_B, "b", "blank"),
    (".", Qt.Key.Key_Period, ".", "blank"),
)
SHORTCUT_ROWS = [("PgDown or Right or Space", "talk: next step"), ("PgUp or Left", "talk: previous step"),
                 ("Home", "talk: from the start"), ("B or .", "talk: blank the screen")]


class TalkPlayer(QObject):
    """The talk loaded in one window and where it is (see the module docstring)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self._window = window
        self.talk: Talk | None = None
        self.index = 0                          # the step shown (0-based)
        self.blank = False
        self.pending_next = False               # a next key pressed while the step waits
        self.errors: list[str] = []             # actions that failed (said in the status bar)
        self._task: asyncio.Task | None = None  # the current step's actions and wait
        self._waiting = False                   # ... in its wait
        self._compare: asyncio.Task | None = None
        self._agents_started: list[str] = []    # names of the agents this talk started
        self._message: QMessageBox | None = None
        self.caption = TalkCaption()
        window.chart.layout().insertWidget(0, self.caption)
        self.blank_screen = BlankScreen(window)
        self.blank_screen.key_pressed.connect(lambda: self.set_blank(False))   # any key brings it back
        self.keys: list[QAction] = []
        for name, key, text, what in KEYS:
            a = QAction(f"Talk: {what}", window)
            a.setShortcut(QKeySequence(name))
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            a.setEnabled(False)
            a.triggered.connect(lambda _c=False, key=key, text=text, what=what: self._key(key, text, what))
            window.addAction(a)
            self.keys.append(a)
        # Enter presses a focused button or check box (a main window's buttons take no Enter
        # of their own, and Space is the window's: the chart's pause, or a talk's next step),
        # so every button has a key, talk or not
        press = QAction("Press the focused button", window)
        press.setShortcuts([QKeySequence(Qt.Key.Key_Return), QKeySequence(Qt.Key.Key_Enter)])
        press.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        press.triggered.connect(self._press)
        window.addAction(press)
        self.press_action = press
        self.open_action = QAction("Open &talk…", window)
        self.open_action.setStatusTip("a talk script (TOML): its steps are walked with PageDown / PageUp")
        self.open_action.triggered.connect(self.open_dialog)
        window.addAction(self.open_action)
        self.close_action = QAction("&Close talk", window)
        self.close_action.setStatusTip("the talk's caption goes; Space pauses the chart again")
        self.close_action.setEnabled(False)
        self.close_action.triggered.connect(self.close)
        window.addAction(self.close_action)
        file_menu = window.talk.file_menu()
        first = file_menu.actions()[0] if file_menu.actions() else None
        file_menu.insertAction(first, self.open_action)
        file_menu.insertAction(first, self.close_action)
        if first is not None:
            file_menu.insertSeparator(first)
        window.resized.connect(self._window_resized)   # (not an event filter: see MainWindow's resized)
        window.close_requested.connect(self._closing)

    # --- loading -----------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self.talk is not None

    @property
    def busy(self) -> bool:
        """Are the current step's actions (or its wait) still going on?"""
        return self._task is not None and not self._task.done()

    def load(self, talk: Talk) -> None:
        """Play ``talk`` from step 1 (a talk loaded before is left where it was: its runs
        and jobs go on, its caption goes)."""
        self._cancel_step()
        self.talk = talk
        self.index = 0
        self._agents_started.clear()        # (pause / resume: this talk's own agents first)
        self.set_blank(False)
        for a in self.keys:
            a.setEnabled(True)
        self.close_action.setEnabled(True)
        self._window.talk.set_talk_keys(SHORTCUT_ROWS)
        self.caption.show()
        name = talk.title or talk.where
        self._say(f"Talk loaded: {name}, {len(talk.steps)} steps. PageDown: next step · PageUp: back · "
                  "B: blank · P: pause the chart", 10000)
        self._enter()

    def open_file(self, path: str) -> bool:
        """Load the talk in ``path``; a talk with an error is said in a message box (with its
        line) and changes nothing. Whether it was loaded."""
        try:
            talk = load(path)
        except TalkError as exc:
            self._tell(str(exc))
            return False
        self.load(talk)
        return True

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self._window, "Open talk", "", "Talk scripts (*.toml);;All files (*)")
        if path:
            self.open_file(path)

    def _tell(self, text: str) -> None:
        """A window-modal message (not a nested event loop) saying why a talk was not opened."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Talk not opened", text, QMessageBox.StandardButton.Ok,
                          self._window)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        self._message = box
        box.open()

    @property
    def agents_started(self) -> tuple[str, ...]:
        """The names of the agents this talk's ``agents = "start"`` actions started."""
        return tuple(self._agents_started)

    @property
    def message(self) -> QMessageBox | None:
        """The last "Talk not opened" message box (tests read it)."""
        return self._message

    # --- moving ------------------------------------------------------------------------------
    def _key(self, key: Qt.Key, text: str, what: str) -> None:
        focus = QApplication.focusWidget()
        if typing_into(focus):       # the field's key, not the talk's: given to it
            self._hand_on(focus, key, text)
            return
        getattr(self, what if what != "blank" else "toggle_blank")()

    def _hand_on(self, focus, key: Qt.Key, text: str) -> None:
        """Give the key to the focused widget, as if no talk were loaded."""
        mods = Qt.KeyboardModifier.NoModifier
        actions = [*self.keys, self.press_action]
        was = [a.isEnabled() for a in actions]
        for a in actions:            # (a key sent to a widget goes through the shortcuts again)
            a.setEnabled(False)
        try:
            QApplication.sendEvent(focus, QKeyEvent(QEvent.Type.KeyPress, key, mods, text))
            QApplication.sendEvent(focus, QKeyEvent(QEvent.Type.KeyRelease, key, mods, text))
        finally:
            for a, on in zip(actions, was):
                a.setEnabled(on)

    def _press(self) -> None:
        """Enter: click the focused button or check box (Space is the window's: the chart's
        pause, or a loaded talk's next step); any other focused widget gets its Enter as usual."""
        focus = QApplication.focusWidget()
        if isinstance(focus, QAbstractButton):
            if focus.isEnabled():
                focus.click()
        elif focus is not None:
            self._hand_on(focus, Qt.Key.Key_Return, "\r")

    def next(self) -> None:
        """The next step (see the module docstring: blank, actions under way, waiting, the
        last step)."""
        if self.talk is None:
            return
        if self.blank:
            self.set_blank(False)
            return
        if self.busy:
            if self._waiting and self.pending_next:
                self._advance()          # pressed again while waiting: now
                return
            self.pending_next = True     # after the actions (and the wait)
            if self._waiting:
                self.caption.set_note(f"{self._waiting_for()} · next step when it ends "
                                      "(PageDown again: now)")
            return
        self._advance()

    def _advance(self) -> None:
        if self.index + 1 >= len(self.talk.steps):
            self._cancel_step()
            self.caption.set_note("the last step")
            self._say("That was the last step (Home: from the start; File -> Close talk: the window "
                      "without it).")
            return
        self._cancel_step()
        self.index += 1
        self._enter()

    def previous(self) -> None:
        """The step before: its caption; the step left runs its ``undo`` actions."""
        if self.talk is None:
            return
        if self.blank:
            self.set_blank(False)
            return
        if self.index == 0:
            self._say("This is the first step.")
            return
        self._cancel_step()
        left = self.talk.steps[self.index]
        self.index -= 1
        self._show()
        if left.undo:
            self._task = asyncio.ensure_future(self._play(left, undo=True))

    def first(self) -> None:
        """The talk from the start: step 1's caption and its actions, run again (as when the
        talk was loaded); the undo actions of the steps left are not run."""
        if self.talk is None:
            return
        if self.blank:
            self.set_blank(False)
            return
        self._cancel_step()
        self.index = 0
        self._enter()

    def close(self) -> None:
        """Close the talk (File -> Close talk): its caption goes, its keys go back to what they
        do without a talk (Space pauses the chart again; P no longer does); a blank screen
        comes back. What its steps started (runs, jobs, agents, a scenario) goes on."""
        if self.talk is None:
            return
        self._cancel_step()
        self.set_blank(False)
        self.talk = None
        self.index = 0
        for a in self.keys:
            a.setEnabled(False)
        self.close_action.setEnabled(False)
        self.caption.hide()
        self._window.talk.set_talk_keys(None)
        self._agents_started.clear()
        self._say("Talk closed: Space pauses the chart again.")
        trace("talk closed")

    def toggle_blank(self) -> None:
        if self.talk is not None:
            self.set_blank(not self.blank)

    def set_blank(self, on: bool) -> None:
        """Blank the window (black over all of it) or bring it back."""
        on = bool(on)
        if on == self.blank:
            return
        self.blank = on
        if on:
            self.blank_screen.cover()
        else:
            self.blank_screen.uncover()
        trace(f"talk blank {'on' if on else 'off'}")

    # --- a step ------------------------------------------------------------------------------
    def _show(self) -> None:
        step = self.talk.steps[self.index]
        self.caption.show_step(step.title, step.text, step.number, len(self.talk.steps))
        trace(f"talk step {step.number}/{len(self.talk.steps)} {step.title}")

    def _enter(self) -> None:
        self._show()
        step = self.talk.steps[self.index]
        if step.actions or step.wait:
            self._task = asyncio.ensure_future(self._play(step))
        else:
            trace(f"talk step {step.number} ready")

    def _cancel_step(self) -> None:
        """Stop waiting for the current step (what its actions started goes on)."""
        self.pending_next = False
        self._waiting = False
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()

    async def _play(self, step, undo: bool = False) -> None:
        """The step's actions (``undo``: its undo actions, the step shown being the one
        before it), the tab shown brought up to date, its wait, then the next step if one
        was asked for meanwhile."""
        await self._run_actions(step.undo if undo else step.actions, step.number)
        for view in self._window.views.values():
            if view.isVisible():
                view.refresh_now()       # what the step did is on screen now, not a tick later
        if step.wait is not None and not undo:
            self._waiting = True
            note = self._waiting_for(step.wait)
            if self.pending_next:
                note += " · next step when it ends (PageDown again: now)"
            self.caption.set_note(note)
            await self._until(lambda: self._ended(step.wait))
            self._waiting = False
        if self.pending_next:
            self.pending_next = False
            self._task = None
            self._advance()
            return
        self.caption.set_note("")
        trace(f"talk step {self.talk.steps[self.index].number} ready")

    def _waiting_for(self, wait: str | None = None) -> str:
        wait = wait or self.talk.steps[self.index].wait
        return {"run": "waiting for the run to end", "compare": "waiting for the compare to end"}.get(
            wait, "the step's actions are under way")

    def _ended(self, wait: str) -> bool:
        if wait == "run":
            controller = self._window.controller
            return all(controller.busy(family) is None for family in RUN_FAMILIES)
        return self._compare is None or self._compare.done()

    @staticmethod
    async def _until(predicate, timeout_s: float | None = None) -> bool:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not predicate():
            if deadline is not None and time.monotonic() > deadline:
                return False
            await asyncio.sleep(WAIT_POLL_S)
        return True

    async def _run_actions(self, actions, number: int) -> None:
        for action in actions:
            try:
                await self._do(action)
            except asyncio.CancelledError:
                raise
            except Exception as exc:       # said, and the talk goes on
                text = f"Talk step {number}, line {action.line}: {type(exc).__name__}: {exc}"
                self.errors.append(text)
                self._say(text, 15000)

    # --- the actions: each through the public method its control calls --------------------------
    async def _do(self, action) -> None:
        w = self._window
        if isinstance(action, TabAction):
            w.show_view(action.tab)
        elif isinstance(action, RunAction):
            await self._run(action)
        elif isinstance(action, LanesAction):
            await self._lanes(action)
        elif isinstance(action, CountersAction):
            self._counters(action)
        elif isinstance(action, ScenarioAction):
            # until its store is open and its tab follows it (a stop: its agents exited); shielded:
            # the talk moving on stops waiting, not the scenario's start or stop
            task = w.scenarios.stop() if action.scenario == "stop" else w.scenarios.start(action.scenario)
            await asyncio.shield(task)
        elif isinstance(action, AgentsAction):
            self._agents(action)
        else:
            raise TypeError(f"not a talk action: {action!r}")

    async def _run(self, a: RunAction) -> None:
        panel = self._window.runs_panel
        if a.cpu_ms is not None:
            controller = self._window.controller
            # a CPU ms size needs this machine's calibration (the window's first second)
            await self._until(lambda: controller.iterations_for_ms(1.0) is not None, CALIBRATION_WAIT_S)
            panel.set_job(a.cpu_ms, "CPU ms")
        else:
            panel.set_job(a.iterations, "iterations")
        if a.kind == "worker" and a.worker is not None:
            panel.worker_kind.setCurrentText(a.worker)
        {"whole": panel.run_whole, "sliced": panel.run_sliced, "worker": panel.run_worker}[a.kind]()

    async def _lanes(self, a: LanesAction) -> None:
        view = self._window.views["lanes"]
        c = view.controls
        if a.do == "add":
            c.fill_simulated(a.workspace, a.queue, a.seconds, a.fails)
            task = view.add_job()
            c.fails.setChecked(False)
        elif a.do == "burst":
            c.kind_box.setCurrentText("simulated")
            c.queue_box.setCurrentText(a.queue)
            c.length.setValue(a.seconds)
            c.fails.setChecked(False)
            c.burst_jobs.setValue(a.jobs)
            c.burst_ws.setValue(a.workspaces)
            task = view.add_burst()
        elif a.do in ("hold", "fail", "release"):
            jid = 0 if a.workspace is None else self._job_of(view, a.workspace, held=a.do == "release")
            if jid is None:
                view.controls.say(f"No job in {a.workspace} to {a.do} (talk line {a.line}).", error=True)
                return
            c.set_job(jid)
            {"hold": view.hold_save, "fail": view.fail_next_save, "release": view.release_save}[a.do]()
            task = None
        elif a.do == "stop":
            c.set_workspace(a.workspace)
            view.request_stop()
            task = None
        else:   # busy
            c.set_workspace(a.workspace)
            if c.busy_button.isChecked() != a.on:
                view.toggle_busy()
            task = None
        if task is not None:
            await task

    @staticmethod
    def _job_of(view, workspace: str, held: bool) -> int | None:
        """The job of ``workspace`` a person would pick: (for a release, the one whose save
        is held,) the running one, else the oldest waiting one."""
        snap = view.scheduler.snapshot(queue_lanes=False)
        mine = [j for q in snap.queues.values() for j in (*q.running, *q.waiting) if j.workspace == workspace]
        if held:
            for j in mine:
                if j.save_held:
                    return j.id
        running = [j for j in mine if j.phase != "waiting"]
        if running:
            return min(running, key=lambda j: j.id).id
        return min(mine, key=lambda j: j.id).id if mine else None

    def _counters(self, a: CountersAction) -> None:
        view = self._window.views["counters"]
        if a.strategy is not None:
            view.form.set_strategy(a.strategy)
        if a.do == "start":
            view.start()
        elif a.do == "stop":
            view.stop()
        elif a.do == "compare":
            self._compare = view.compare_all()

    def _agents(self, a: AgentsAction) -> None:
        view = self._window.processes_view
        if a.do == "start":
            self._start_agents(view, a)
        elif a.do == "stop":
            view.stop_all()
        else:
            want = "running" if a.do == "pause" else "paused"
            view.refresh_now()
            rows = [r for r in view.rows if r.kind == "agent" and r.state == want]
            # the talk's own agents first: a scenario's are its script's to pause
            row = next((r for r in rows if r.name in self._agents_started), rows[0] if rows else None)
            if row is None:
                self._say(f"No agent started here is {want}: none to {a.do}.", 10000)
                return
            view.select(row.key)
            view.act(a.do)

    def _start_agents(self, view, a: AgentsAction) -> None:
        """Start ``a.count`` agents on ``a.store``, else on the store the Processes tab shows
        (it follows the Lanes & queues tab: ``--store``'s, a scenario's throwaway store)."""
        if a.store is not None:
            from lanemon.store.url import parse as parse_url

            view.use_store(a.store, shown=parse_url(a.store).redacted(), source="the talk")
        else:
            view.refresh_now()           # (the field takes the store the Lanes tab follows now)
        view.count.setValue(a.count)
        if not view.store_url():
            view.start_agents()          # (the tab's own refusal, under its buttons)
            self._say(f"Talk line {a.line}: no store to start agents on: give the action "
                      'store = "sqlite:///path/store.db", or start a scenario first (its throwaway store), '
                      "or start lanemon with --store.", 15000)
            return
        self._agents_started.extend(agent.name for agent in view.start_agents())

    # --- the window ----------------------------------------------------------------------------
    def _say(self, text: str, ms: int = 6000) -> None:
        self._window.statusBar().showMessage(text, ms)

    def _closing(self) -> None:
        self._cancel_step()

    def _window_resized(self) -> None:
        if self.blank:
            self.blank_screen.setGeometry(self._window.rect())


def install(window) -> TalkPlayer:
    """File -> Open talk... and the talk keys on ``window`` (needs ``talk``, ``chart``,
    ``runs_panel``, ``views``); the player."""
    return TalkPlayer(window)


__all__ = ["KEYS", "SHORTCUT_ROWS", "TalkPlayer", "install"]
