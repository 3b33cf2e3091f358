"""The window's recording and replay: File -> Record, File -> Open recording..., the replay.

``install(window)`` (``MainWindow`` calls it) adds two actions to the File menu and
returns the ``ReplayMode`` kept as ``window.replay``:

- **Record** (Ctrl+R; "Stop recording" while recording): asks for a file name
  (default ``~/lanemon-YYYYmmdd-HHMMSS.jsonl.gz``) and records the Counters tab's
  simulation, the Lanes & queues tab's scheduler and the heartbeat
  (``lanemon.ui.replay.record``) until it is stopped -- explicitly, from the same
  action, or by closing the window (the file is then closed cleanly after the
  window's views have shut down, so their last events are in it). A recording whose
  writes fail (disk full) stops, and the window says why (status bar and warning).
  While recording a red "● REC" badge in the status bar says for how long, how many
  events and where to. ``start_recording(path)`` /
  ``stop_recording()`` do the same without a dialog.
- **Open recording...** (Ctrl+Shift+O; ``open_recording(path)``; ``lanemon --replay
  FILE``): reads the recording (``lanemon.replay.open_recording``) and shows it in the
  window's own views: the heartbeat chart's place takes the replay panel
  (``lanemon.ui.replay.panel``), the Counters tab draws the recording's counters and
  the Lanes & queues tab its lanes, at the replay's position (``CountersView`` /
  ``LanesView.show_replay``). A recording that cannot be read (malformed, truncated,
  newer version, not a recording, missing) is said in a message box (the
  ``RecordingError`` text) and the window stays as it was. Refused while recording
  (the status bar says to stop first): the views cannot show both.

While a replay is shown, its keys are the replay bar's: a loaded talk's keys (Space,
Left, Right, Page Up / Down, Home) and the chart's pause rest until the replay is left.

The replay (``seek(k)``: the state after the first ``k`` events, 0 = before any):
play / pause at a speed (``SPEEDS``, times real time: the position follows the
recording's own clock), step one event, scrub with the slider, jump to a notable
moment (``jump_to_moment(row)``: to its ``position``, the state just after its event). At a double
assignment -- from the event that made it until that counter is no longer double
assigned -- the two staff members and the counter are ringed in
``theme.RACE_HIGHLIGHT`` and "what happened" tells the race in plain words
(``Replay.explain``); elsewhere it says the event at the position. ``leave()`` (Esc,
Leave replay) stops playing and gives the window back to the live views.

``LANEMON_TRACE``: "lanemon: replay opened NAME: N events, M moments", "lanemon: replay
at moment R (KIND), event K", "lanemon: replay left" (scripts that drive the real window).
"""

from __future__ import annotations

import bisect
import datetime
import os
import time
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox, QVBoxLayout, QWidget

from lanemon.ui.kit import theme
from lanemon.ui.kit.live_label import LiveLabel
from lanemon.ui.replay.panel import DEFAULT_SPEED, ReplayPanel
from lanemon.ui.replay.record import RecordingSession
from lanemon.ui.shell.talk_mode import trace

PLAY_MS = 33            # the playing position moves this often
REC_UPDATE_MS = 500     # the REC badge's figures
DOUBLE = "double assignment"
LANES_KINDS = ("refused write", "stale release", "overlapping runs")
CHART_HALF_S = 10.0     # seconds of heartbeat either side of the position
RECORDING_FILTER = "lanemon recordings (*.jsonl.gz *.jsonl);;All files (*)"


def default_recording_path(now: datetime.datetime | None = None) -> str:
    """``~/lanemon-YYYYmmdd-HHMMSS.jsonl.gz`` (the moment given, else now; the recorder
    writes gzip-compressed JSON lines)."""
    now = now or datetime.datetime.now()
    return str(Path.home() / f"lanemon-{now:%Y%m%d-%H%M%S}.jsonl.gz")


def _open_problem(path: str, exc: BaseException) -> str:
    """One sentence for a recording that could not be opened."""
    from lanemon.replay import RecordingError

    if isinstance(exc, RecordingError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{path}: cannot read it: {exc.strerror or exc}."
    return f"{path}: not opened: {type(exc).__name__}: {exc}."


class ReplayMode(QObject):
    """Recording and replay of one window (see the module docstring)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.session: RecordingSession | None = None
        self.replay = None
        self.recording = None
        self.error_box: QMessageBox | None = None      # the last "not opened" / "damaged" message box
        self._path = ""                                # the recording replayed (its messages name it)
        self._t0 = 0.0
        self._moments: list = []
        self._doubles: list[int] = []                  # event indices of the double assignments
        self._explained: dict[int, object] = {}        # moment index -> Explanation (cache)
        self._double_moments: list = []
        self._row_at: dict[int, int] = {}
        self._speed = DEFAULT_SPEED
        self._play_from: tuple[float, float] | None = None   # (wall time, recording time) at play
        self._rec_started = 0.0
        self.panel = ReplayPanel()
        self.panel.setVisible(False)
        # the chart and the panel share the chart's place in the window's splitter (one of the
        # two shown): the splitter keeps its two parts (talk mode's presenter split, the
        # screenshot tools) and a hidden panel adds nothing to the window's least size
        split = window.centralWidget()
        place = QWidget()
        box = QVBoxLayout(place)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        split.replaceWidget(split.indexOf(window.chart), place)
        box.addWidget(window.chart)
        box.addWidget(self.panel)
        window.chart.setVisible(True)
        self.place = place
        self.panel.seek_requested.connect(self.seek)
        self.panel.step_requested.connect(self.step)
        self.panel.play_toggled.connect(self.toggle_play)
        self.panel.speed_chosen.connect(self.set_speed)
        self.panel.moment_chosen.connect(self.jump_to_moment)
        self.panel.leave_requested.connect(self.leave)
        runs = getattr(window, "runs_panel", None)
        if runs is not None:                 # the bar's Esc leaves the replay, even with a run in flight
            runs.yield_esc_while_shown(self.panel)
        self._play_timer = QTimer(self)
        self._play_timer.setInterval(PLAY_MS)
        self._play_timer.timeout.connect(self._play_tick)

        self.rec_label = LiveLabel("", fill=False)
        self.rec_label.setVisible(False)
        window.statusBar().addPermanentWidget(self.rec_label)
        self._rec_timer = QTimer(self)
        self._rec_timer.setInterval(REC_UPDATE_MS)
        self._rec_timer.timeout.connect(self._update_rec)

        def action(text, keys, slot, tip):
            a = QAction(text, window)
            a.setShortcuts([QKeySequence(k) for k in keys])
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            a.setToolTip(tip)
            a.setStatusTip(tip)
            a.triggered.connect(slot)
            window.addAction(a)
            return a

        self.record_action = action("Record…", ["Ctrl+R"], self.toggle_record,
                                    "record what the counters, the lanes and the heartbeat do, to a file")
        self.open_action = action("Open recording…", ["Ctrl+Shift+O"], self.choose_recording,
                                  "replay a recording in the window: step, scrub, jump to its moments")
        # in the File menu's first group (after Open talk…, before Export report…)
        menu = window.talk.file_menu()
        actions = menu.actions()
        before = next((a for a in actions if a.isSeparator()), None)
        if before is None and actions:
            before = menu.insertSeparator(actions[0])
        menu.insertAction(before, self.record_action)
        menu.insertAction(before, self.open_action)
        window.add_shutdown_hook(self._closing)

    # --- recording -------------------------------------------------------------------------------
    @property
    def is_recording(self) -> bool:
        return self.session is not None

    def toggle_record(self) -> None:
        if self.session is not None:
            self.stop_recording()
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Record to", default_recording_path(),
                                              RECORDING_FILTER)
        if path:
            self.start_recording(path)

    def start_recording(self, path: str) -> bool:
        """Record to ``path`` from now on; False (said in the status bar) if the file cannot be
        opened, or during a replay (the views show the recording, not what would be recorded)."""
        bar = self.window.statusBar()
        if self.session is not None:
            bar.showMessage(f"Recording already, to {self.session.path}.", 8000)
            return False
        if self.replay is not None:
            bar.showMessage("Not recording during a replay: leave the replay first (Esc).", 8000)
            return False
        try:
            # (the first one imports the recorder: ~19 ms here; named on the chart)
            with self.window.chart.own_stall("starting a recording"):
                self.session = RecordingSession(self.window, path)
        except Exception as exc:
            bar.showMessage(f"Not recording: {_open_problem(path, exc)}", 15000)
            return False
        self._rec_started = time.monotonic()
        self.record_action.setText("Stop recording")
        self.record_action.setToolTip("stop recording and close the file")
        self.rec_label.setVisible(True)
        self._update_rec()
        self._rec_timer.start()
        bar.showMessage(f"Recording to {self.session.path} (File → Stop recording, Ctrl+R).", 8000)
        return True

    def stop_recording(self) -> str | None:
        """Stop and close the file; returns its path (None if not recording)."""
        session, self.session = self.session, None
        if session is None:
            return None
        self._rec_timer.stop()
        self.rec_label.setVisible(False)
        self.record_action.setText("Record…")
        self.record_action.setToolTip("record what the counters, the lanes and the heartbeat do, to a file")
        try:
            path = session.stop()
        except Exception as exc:
            self.window.statusBar().showMessage(f"Recording not closed cleanly: {exc}", 15000)
            return session.path
        self.window.statusBar().showMessage(
            f"Recording saved: {path} ({session.events_written:,} events). File → Open recording… replays it.",
            15000)
        return path

    def _update_rec(self) -> None:
        s = self.session
        if s is None:
            return
        if s.error:          # the recorder stopped writing (disk full, file removed)
            error = s.error
            self.stop_recording()
            self.window.statusBar().showMessage(f"Recording stopped: {error}", 30000)
            self.window.warn(f"Recording stopped: {error}")
            return
        secs = int(time.monotonic() - self._rec_started)
        parts = [("● REC ", theme.RECORDING, True),
                 (f"{secs // 60}:{secs % 60:02d} · {s.events_written:,} events · {os.path.basename(s.path)}  ",
                  None, False)]
        if s.problem:
            parts.append((s.problem + "  ", theme.WARN, False))
        self.rec_label.set_parts(parts)
        self.rec_label.setToolTip(f"recording to {s.path}")

    async def _closing(self) -> None:
        """The window closes: a recording is stopped and its file closed (after the views shut
        down, so the simulation's last events are in it)."""
        self._play_timer.stop()
        self.stop_recording()

    # --- opening -------------------------------------------------------------------------------------
    def choose_recording(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open recording", str(Path.home()),
                                              RECORDING_FILTER)
        if path:
            self.open_recording(path)

    def open_recording(self, path: str) -> bool:
        """Replay the recording at ``path`` (see the module docstring); False when it was not
        opened: a message box says why (``error_box``), the window is as it was."""
        from lanemon.replay import Replay, open_recording

        if self.session is not None:
            self.window.statusBar().showMessage(
                "Stop recording first (File → Stop recording, Ctrl+R): a replay takes over the views.", 10000)
            return False
        try:
            with self.window.chart.own_stall("opening a recording"):
                recording = open_recording(path)
                replay = Replay(recording)
        except Exception as exc:
            self._say_not_opened(_open_problem(path, exc))
            return False
        self._path = path
        try:
            self.enter(replay, recording, os.path.basename(path))
        except Exception as exc:     # (read past its first block: its moments, its first state)
            self._damaged(exc)
            return False
        return True

    def _damaged(self, exc: Exception) -> None:
        """The recording turned out damaged past what opening it read (a block, a line): the
        replay is left, the window back live, a message box says where and why (a file is
        read block by block as it is replayed; a replay must not raise in a Qt slot, nor
        every tick of Play)."""
        at = self.replay.position if self.replay is not None else 0
        self.pause()
        try:
            self.leave()
        except Exception:            # (leaving read nothing more of it; the views go back live)
            self.replay = self.recording = None
        self._say_not_opened(f"{_open_problem(self._path, exc)} The replay stopped (near event {at:,}) and the "
                             "window is live again.", title="Recording damaged")

    def _say_not_opened(self, text: str, title: str = "Recording not opened") -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, text,
                          QMessageBox.StandardButton.Ok, self.window)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        self.error_box = box
        box.open()      # (not exec(): no nested loop inside the asyncio loop)
        self.window.statusBar().showMessage(f"{title}: {text}", 15000)

    # --- entering and leaving ----------------------------------------------------------------------
    def enter(self, replay, recording, name: str) -> None:
        """Show ``replay`` in the window (leaving a replay shown before)."""
        if self.replay is not None:
            self.leave()
        w = self.window
        self.replay = replay
        self.recording = recording
        self._t0 = 0.0        # the recording's timeline: seconds since the recorder started
        self._moments = list(replay.moments())
        self._doubles = [m.index for m in self._moments if m.kind == DOUBLE]
        self._double_moments = [m for m in self._moments if m.kind == DOUBLE]
        self._explained = {}
        self.panel.set_recording(name, len(replay), tuple(getattr(recording, "warnings", ()) or ()))
        self._row_at = {}                              # position -> the first moment there
        for row, m in enumerate(self._moments):
            self._row_at.setdefault(m.position, row)
        self.panel.set_moments(self._moments, self._moment_text)
        self.panel.set_playing(False)
        w.chart.stop()
        w.chart.setVisible(False)
        w.bring_up_to_date(self.panel)      # (a look changed while it was hidden)
        self.panel.setVisible(True)
        pause = getattr(w, "talk", None) and w.talk.actions.get("pause")
        if pause:
            pause.setEnabled(False)   # Space plays and pauses the replay
        for a in self._talk_keys():
            a.setEnabled(False)       # Space, Left, Right, PageUp/Down, Home: the replay's now
        self.record_action.setEnabled(False)
        self.seek(0)
        # the tab shown stays if it is one the recording has; else the counters, else the lanes
        has = {"counters": replay.counters_snapshot() is not None, "lanes": replay.lanes_snapshot() is not None}
        if not has.get(w.shown_view(), False):
            for key in ("counters", "lanes"):
                if has[key] and key in w.views:
                    w.show_view(key)
                    break
        self.panel.slider.setFocus(Qt.FocusReason.OtherFocusReason)
        w.statusBar().showMessage(f"Replaying {name}: {len(replay):,} events, {len(self._moments):,} "
                                  "notable moments. Esc leaves the replay.", 10000)
        trace(f"replay opened {name}: {len(replay)} events, {len(self._moments)} moments")

    def leave(self) -> None:
        """Back to the live window (nothing of the replay is kept)."""
        if self.replay is None:
            return
        w = self.window
        self.pause()
        self.replay = None
        self.recording = None
        self._explained = {}
        for key in ("counters", "lanes"):
            view = w.views.get(key)
            if view is not None:
                view.end_replay()
        self.panel.setVisible(False)
        w.bring_up_to_date(w.chart)         # (a look changed during the replay)
        w.chart.setVisible(True)
        w.chart.start()
        pause = getattr(w, "talk", None) and w.talk.actions.get("pause")
        if pause:
            pause.setEnabled(True)
        player = getattr(w, "talk_player", None)
        for a in self._talk_keys():
            a.setEnabled(player.loaded)   # (a loaded talk's keys are live again)
        self.record_action.setEnabled(True)
        w.chart.setFocus(Qt.FocusReason.OtherFocusReason)
        w.statusBar().showMessage("Back to the live window.", 5000)
        trace("replay left")

    def _talk_keys(self) -> list:
        """A talk player's key actions (``window.talk_player.keys``), if the window has one."""
        player = getattr(self.window, "talk_player", None)
        return list(getattr(player, "keys", ()))

    # --- the position ---------------------------------------------------------------------------------
    @property
    def position(self) -> int:
        return self.replay.position if self.replay is not None else 0

    def seek(self, k: int) -> None:
        """Show the state after the first ``k`` events (clipped to 0..len)."""
        replay = self.replay
        if replay is None:
            return
        k = max(0, min(len(replay), int(k)))
        try:
            replay.seek(k)
            self._show()
        except Exception as exc:     # a damaged block of the recording, reached only now
            self._damaged(exc)

    def step(self, delta: int) -> None:
        if self.replay is not None:
            self.pause()
            self.seek(self.replay.position + delta)

    def jump_to_moment(self, row: int) -> None:
        """Jump to the state just after the moment's event; its tab is shown."""
        if self.replay is None or not 0 <= row < len(self._moments):
            return
        self.pause()
        m = self._moments[row]
        self.seek(m.position)
        trace(f"replay at moment {row + 1} ({m.kind}), event {m.position}")
        key = "counters" if m.kind == DOUBLE else "lanes" if m.kind in LANES_KINDS else None
        if key is not None and key in self.window.views:
            self.window.show_view(key)

    def race_at(self, k: int):
        """The explanation shown at position ``k``: the last double assignment among the first
        ``k`` events whose counter is still double assigned there, else None."""
        i = bisect.bisect_left(self._doubles, k) - 1
        if i < 0:
            return None
        m = self._double_moments[i]
        expl = self._explained.get(m.index, ...)
        if expl is ...:
            expl = self._explained[m.index] = self.replay.explain(m.index)
        if expl is None:
            return None
        snap = self.replay.counters_snapshot()
        if snap is not None:
            views = snap.counters
            if not (0 <= expl.counter < len(views)) or not views[expl.counter].conflict:
                return None
        return expl

    def _show(self) -> None:
        replay = self.replay
        k = replay.position
        w = self.window
        expl = self.race_at(k)
        counters = w.views.get("counters")
        if counters is not None:
            counters.show_replay(replay.counters_snapshot(),
                                 counters=(expl.counter,) if expl is not None else (),
                                 staff=expl.staff if expl is not None else ())
        lanes = w.views.get("lanes")
        if lanes is not None:
            lanes.show_replay(replay.lanes_snapshot())
        shown = w.views.get(w.shown_view() or "")
        if shown is counters or shown is lanes:
            shown.refresh_now()      # the tab shown agrees with the bar at once (not a frame later)
        now = replay.time_at(k)
        self.panel.show_position(k, len(replay), now - self._t0)
        times, lags = replay.heartbeat(now - CHART_HALF_S, now + CHART_HALF_S)
        self.panel.chart.show_lags([t - self._t0 for t in times], lags, now - self._t0)
        row = self._row_at.get(k, -1)
        lines = []
        if row >= 0:         # a moment is here: say it first (a long stall has no event of its own)
            m = self._moments[row]
            lines.append(f"{m.time - self._t0:.3f} s · {m.kind}: {m.title}")
        if k > 0:
            ev = replay.event(k - 1)
            lines.append(f"{ev.time - self._t0:.3f} s · {ev.source}: {ev.text}")
        else:
            lines.append("The start of the recording: no event yet.")
        if expl is not None:          # (another kind of moment here is said above the race)
            said = lines[:1] if row >= 0 and self._moments[row].kind != DOUBLE else []
            self.panel.show_story(f"Double assignment: counter {expl.counter + 1}", [*said, *expl.lines],
                                  race=True)
        else:
            self.panel.show_story(self._moments[row].kind.capitalize() if row >= 0 else "What happened", lines)
        self.panel.select_moment(row)

    def _moment_text(self, m) -> str:
        return f"{m.time - self._t0:8.1f} s   {m.title}"

    # --- playing ------------------------------------------------------------------------------------------
    @property
    def playing(self) -> bool:
        return self._play_timer.isActive()

    def toggle_play(self) -> None:
        if self.playing:
            self.pause()
        else:
            self.play()

    def play(self) -> None:
        replay = self.replay
        if replay is None:
            return
        if replay.position >= len(replay):
            self.seek(0)           # at the end: play from the start
        self._play_from = (time.perf_counter(), replay.time_at(replay.position))
        self._play_timer.start()
        self.panel.set_playing(True)

    def pause(self) -> None:
        self._play_timer.stop()
        self._play_from = None
        self.panel.set_playing(False)

    def set_speed(self, speed: float) -> None:
        self._speed = float(speed)
        if self.playing:           # the new speed from where the position is now
            self._play_from = (time.perf_counter(), self.replay.time_at(self.replay.position))

    def _play_tick(self) -> None:
        replay = self.replay
        if replay is None or self._play_from is None:
            self.pause()
            return
        wall0, rec0 = self._play_from
        target = rec0 + (time.perf_counter() - wall0) * self._speed
        n = len(replay)
        k = max(replay.position_at(target), replay.position)
        if k != replay.position:
            self.seek(k)
        if k >= n:
            self.pause()


def install(window) -> ReplayMode:
    """Add recording and replay to ``window`` (a ``MainWindow``: its chart, views, status bar,
    File menu); kept as ``window.replay``."""
    return ReplayMode(window)


__all__ = ["ReplayMode", "default_recording_path", "install"]
