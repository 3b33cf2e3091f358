"""The replay in the window (issue 18): File -> Open recording, the bar, the moments, the race
highlighted, bad files said in a message box; File -> Record from the window.

The window is driven on a real qasync loop (``run_window``). Tests that need the recording
core's real files (``lanemon.replay``) are marked by what they use; the replay UI is also
driven with ``FakeReplay`` below: a seeded short-lock simulation run on virtual time with
the live snapshot taken after every event -- what ``lanemon.replay.Replay`` promises
(the state after event k equals the live state after event k).
"""

from __future__ import annotations

import json
import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from lanemon.counters.clock import run_in_virtual_time
from lanemon.counters.simulation import SimConfig, Simulation
from lanemon.replay import Explanation, Moment, ReplayEvent
from lanemon.ui.kit import theme
from lanemon.ui.tools.testing import activated, run_window, wait_until

RACE_CONFIG = SimConfig(strategy="short_lock", staff=6, counters=8, customers=60, arrival_rate=40.0,
                        choose_time=0.02, seed=1, time_limit=60.0)


class FakeRecording:
    header = {"format": "lanemon-recording", "version": 1}
    warnings: list[str] = []


class FakeReplay:
    """The contract's Replay over a seeded run kept snapshot by snapshot (tests only)."""

    def __init__(self, config: SimConfig = RACE_CONFIG) -> None:
        sim = Simulation(config)
        rows = []
        sim.subscribe(lambda e: rows.append((e, sim.snapshot())))
        first = sim.snapshot()
        run_in_virtual_time(sim.run())
        self._raw = [e for e, _ in rows]
        self._snaps = [first] + [s for _, s in rows]
        self._events = [ReplayEvent(i, e.time, "counters", e.kind,
                                    f"{e.owner or '-'} {e.kind.replace('_', ' ')} "
                                    f"{'' if e.counter is None else f'counter {e.counter + 1}'}")
                        for i, e in enumerate(self._raw)]
        self._k = 0
        self.explained: list[int] = []

    def __len__(self) -> int:
        return len(self._events)

    def seek(self, k: int) -> None:
        if not 0 <= k <= len(self):
            raise IndexError(k)
        self._k = k

    @property
    def position(self) -> int:
        return self._k

    def event(self, i: int) -> ReplayEvent:
        return self._events[i]

    def time_at(self, k: int) -> float:
        return self._events[k - 1].time if k > 0 else 0.0

    def counters_snapshot(self):
        return self._snaps[self._k]

    def lanes_snapshot(self):
        return None

    def heartbeat(self, t0: float, t1: float):
        times = [i / 100 for i in range(max(0, int(t0 * 100)), int(t1 * 100))]
        return times, [80.0 if abs(t - 1.0) < 0.005 else 1.0 for t in times]

    def moments(self) -> list[Moment]:
        return [Moment(i, e.time, "double assignment", f"counter {e.counter + 1} given twice", i + 1)
                for i, e in enumerate(self._raw) if e.kind == "double_assignment"]

    def position_at(self, t: float) -> int:
        return sum(1 for e in self._events if e.time <= t)

    def explain(self, index: int) -> Explanation | None:
        e = self._raw[index]
        if e.kind != "double_assignment":
            return None
        self.explained.append(index)
        first = next(p for p in reversed(self._raw[:index])
                     if p.counter == e.counter and p.kind in ("assigned", "double_assignment"))
        return Explanation(e.counter, (first.owner, e.owner), (index,),
                           (f"{first.owner} chose counter {e.counter + 1}",
                            f"{e.owner} chose counter {e.counter + 1} too"))


@pytest.fixture(scope="module")
def fake() -> FakeReplay:
    replay = FakeReplay()
    assert replay.moments(), "the seeded short-lock run must double-assign (the fixture's point)"
    return replay


def test_the_replay_shows_the_recorded_counters_and_moves_with_the_bar(qtbot, fake):
    async def scenario(win):
        await activated(win)
        mode = win.replay
        view = win.views["counters"]
        mode.enter(fake, FakeRecording(), "fake.jsonl")
        await wait_until(lambda: view.last_snapshot is fake.counters_snapshot(), 10)
        got = {"chart_hidden": not win.chart.isVisible(), "panel": mode.panel.isVisible(),
               "controls": view._controls.isVisible(), "tab": win.shown_view() == "counters",
               "total": mode.panel.slider.maximum(), "text0": mode.panel.position.text()}
        # the slider scrubs: dragged to 40, the view shows the snapshot after 40 events
        mode.panel.slider.setValue(40)
        await wait_until(lambda: view.last_snapshot is fake._snaps[40], 10)
        got["at40"] = mode.position
        # Right and Left step one event (the slider has the focus)
        mode.panel.slider.setFocus()
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Right)
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Right)
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Left)
        got["stepped"] = mode.position
        await wait_until(lambda: view.last_snapshot is fake._snaps[41], 10)
        got["label"] = mode.panel.position.text()
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_End)
        got["end"] = mode.position
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Home)
        got["home"] = mode.position
        # Esc leaves: the chart and the controls are back, the views live again
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Escape)
        await wait_until(lambda: view.last_snapshot is not None and view.last_snapshot.config == view.sim.config, 10)
        got["after"] = (win.chart.isVisible(), mode.panel.isVisible(), view._controls.isVisible(),
                        view.replaying, mode.replay is None)
        return got

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    n = len(fake)
    assert got["chart_hidden"] and got["panel"] and not got["controls"] and got["tab"]
    assert got["total"] == n and got["text0"] == f"event 0 / {n:,} · 0.0 s"
    assert got["at40"] == 40 and got["stepped"] == 41
    assert got["label"] == f"event 41 / {n:,} · {fake.time_at(41):.1f} s"
    assert got["end"] == n and got["home"] == 0
    assert got["after"] == (True, False, True, False, True)


def test_a_moment_jumps_there_and_the_race_is_ringed_and_told(qtbot, fake):
    first = fake.moments()[0]
    expl = fake.explain(first.index)

    async def scenario(win):
        await activated(win)
        mode = win.replay
        view = win.views["counters"]
        mode.enter(fake, FakeRecording(), "fake.jsonl")
        got = {"rows": mode.panel.moments_model.rowCount()}
        # before the double assignment: nothing ringed
        mode.seek(first.index)
        got["before"] = (set(view.grid.highlighted), set(view.staff.highlighted))
        # the moments list: M focuses it, Enter jumps to the first moment
        mode.panel.slider.setFocus()
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_M)
        got["focus"] = QApplication.focusWidget() is mode.panel.moments
        mode.panel.set_current_moment(0)
        QTest.keyClick(mode.panel.moments, Qt.Key.Key_Return)
        got["at"] = mode.position
        await wait_until(lambda: view.last_snapshot is fake._snaps[first.index + 1], 10)
        got["ringed"] = (set(view.grid.highlighted), set(view.staff.highlighted))
        got["story"] = (mode.panel.story_title.text(), mode.panel.story.text())
        got["cell"] = view.grid.cell(expl.counter).kind
        img = view.grab()
        got["pixels"] = img.size().width() > 0
        return got

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert got["rows"] == len(fake.moments())
    assert got["before"] == (set(), set())
    assert got["focus"]
    assert got["at"] == first.index + 1
    assert got["ringed"] == ({expl.counter}, set(expl.staff))
    assert got["story"] == (f"Double assignment: counter {expl.counter + 1}", "\n".join(expl.lines))
    assert got["cell"] == "double"


def test_playing_moves_the_position_and_pauses_at_the_end(qtbot, fake):
    async def scenario(win):
        await activated(win)
        mode = win.replay
        mode.enter(fake, FakeRecording(), "fake.jsonl")
        mode.panel.slider.setFocus()
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Space)
        playing = mode.playing
        await wait_until(lambda: mode.position > 0, 20)
        moved = mode.position
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Space)
        paused = not mode.playing
        held = mode.position
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Plus)     # faster: 2x
        faster = mode.panel.speed.currentText()
        mode.seek(len(fake) - 3)
        mode.play()
        await wait_until(lambda: not mode.playing, 30)
        return playing, moved, paused, held, mode.position, mode.panel.play_btn.text(), faster

    rc, (playing, moved, paused, held, end, label, faster), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert faster == "2×"
    assert playing and moved > 0 and paused and held >= moved
    assert end == len(fake) and "Play" in label


BAD_FILES = {
    "not-json.jsonl": "this is not a recording\n",
    "newer.jsonl": json.dumps({"format": "lanemon-recording", "version": 999}) + "\n",
    "empty.jsonl": "",
    "cut-header.jsonl": '{"format": "lanemon-recording", "vers',
    "malformed.jsonl": json.dumps({"format": "lanemon-recording", "version": 1, "sources": {}}) + "\n"
                       + '["K", 0, 0.0, {}]\n' + "this line is no event\n" + '["E", 1.0, 0]\n',
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_recording_is_said_in_a_message_box_and_the_window_stays_up(qtbot, tmp_path, name):
    path = tmp_path / name
    path.write_text(BAD_FILES[name])

    async def scenario(win):
        mode = win.replay
        ok = mode.open_recording(str(path))
        box = mode.error_box
        text = box.text() if box is not None else ""
        shown = box is not None and box.isVisible()
        if box is not None:
            box.close()
        return ok, text, shown, win.chart.isVisible(), mode.replay is None, win.isVisible()

    rc, (ok, text, shown, chart, no_replay, up), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert not ok and shown and chart and no_replay and up
    assert text.startswith(name), text      # the RecordingError's sentence names the file


def test_a_missing_recording_is_said_too(qtbot, tmp_path):
    async def scenario(win):
        ok = win.replay.open_recording(str(tmp_path / "nowhere.jsonl"))
        box = win.replay.error_box
        text = box.text()
        box.close()
        return ok, text

    rc, (ok, text), errors = run_window(scenario)
    assert rc == 0 and errors == [] and not ok
    assert "nowhere.jsonl" in text


def test_the_race_colours_are_in_both_palettes():
    for name in ("RECORDING", "REPLAY_CURSOR", "RACE_HIGHLIGHT"):
        assert name in theme.COLOR_NAMES
        assert all(name in p for p in theme.PALETTES.values())


def test_record_from_the_window_then_replay_it(qtbot, tmp_path):
    """File -> Record while the counters run, stop, open the file: the replay has the events."""
    path = str(tmp_path / "session.jsonl")

    async def scenario(win):
        mode = win.replay
        view = win.views["counters"]
        win.show_view("counters")
        view.form.speed.setValue(8.0) if hasattr(view.form, "speed") else None
        started = mode.start_recording(path)
        rec_shown = mode.rec_label.isVisible() and "REC" in mode.rec_label.text()
        action_text = mode.record_action.text()
        view.start()
        await wait_until(lambda: view.sim is not None and view.sim.served >= 5, 30)
        mode.session.pump()
        written = mode.session.events_written
        saved = mode.stop_recording()
        after = (mode.rec_label.isVisible(), mode.record_action.text())
        opened = mode.open_recording(saved)
        n = len(mode.replay) if mode.replay is not None else -1
        mode.leave()
        return started, rec_shown, action_text, written, saved, after, opened, n

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    started, rec_shown, action_text, written, saved, after, opened, n = got
    assert started and rec_shown and action_text == "Stop recording"
    assert written > 0 and saved == path and os.path.getsize(path) > 0
    assert after == (False, "Record…")
    assert opened and n > 0


def test_closing_the_window_while_recording_closes_the_file(qtbot, tmp_path):
    path = str(tmp_path / "closed.jsonl")

    async def scenario(win):
        ok = win.replay.start_recording(path)
        win.views["counters"].start()
        await wait_until(lambda: win.views["counters"].sim.served >= 2, 30)
        return ok     # run_window closes the window now

    rc, ok, errors = run_window(scenario)
    assert rc == 0 and errors == [] and ok
    from lanemon.replay import Replay, open_recording

    recording = open_recording(path)
    assert not recording.warnings          # closed cleanly: no cut last line
    assert len(Replay(recording)) > 0


def record_virtual(path: str, config: SimConfig = RACE_CONFIG) -> None:
    """A seeded simulation recorded with the real Recorder, run on virtual time (the
    recording's clock is the simulation's)."""
    from lanemon.replay import Recorder

    sim = Simulation(config)
    recorder = Recorder(path, sources_info={"test": True}, clock=lambda: sim.clock.now())
    recorder.attach_counters(sim)
    try:
        run_in_virtual_time(sim.run())
    finally:
        recorder.close()


def test_a_real_recording_opens_at_its_first_double_assignment_with_the_race_told(qtbot, tmp_path):
    """lanemon.replay end to end: a recorded short-lock run, opened with File -> Open
    recording (``open_recording``), the first double assignment from the moments list."""
    from lanemon.replay import Replay, open_recording

    path = str(tmp_path / "race.jsonl")
    record_virtual(path)
    replay = Replay(open_recording(path))
    first = next(m for m in replay.moments() if m.kind == "double assignment")
    expl = replay.explain(first.index)
    replay.seek(first.position)
    want = replay.counters_snapshot()

    async def scenario(win):
        await activated(win)
        mode = win.replay
        view = win.views["counters"]
        ok = mode.open_recording(path)
        row = next(i for i, m in enumerate(mode.replay.moments()) if m.kind == "double assignment")
        mode.panel.moments.setFocus()
        mode.panel.set_current_moment(row)
        QTest.keyClick(mode.panel.moments, Qt.Key.Key_Return)
        # (the staff list's highlight comes with its own deferred text refresh, after the grid's)
        await wait_until(lambda: view.last_snapshot is not None and view.last_snapshot.time == want.time
                         and view.grid.highlighted and set(view.staff.highlighted) == set(expl.staff), 10)
        return (ok, mode.position, set(view.grid.highlighted), set(view.staff.highlighted),
                mode.panel.story.text(), view.last_snapshot == want, view.grid.cell(expl.counter).kind)

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    ok, position, counters, staff, story, same, kind = got
    assert ok and position == first.position
    assert counters == {expl.counter} and staff == set(expl.staff)
    assert story == "\n".join(expl.lines) and same and kind == "double"


def test_the_lanes_tab_draws_a_replayed_snapshot_and_comes_back_live(qtbot):
    """LanesView.show_replay: the snapshot handed in (its workspaces and jobs), controls off;
    None: says the recording has no lanes; end_replay: the live scheduler again."""
    from lanemon.ui.tools.testing import add_simulated_job

    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        await add_simulated_job(view, "ws-a", "reservations", 30.0)
        await add_simulated_job(view, "ws-b", "cafe", 30.0)
        snap = view.scheduler.snapshot()
        await add_simulated_job(view, "ws-c", "cafe", 30.0)     # after the snapshot: not in the replay
        view.show_replay(snap)
        await wait_until(lambda: view.lanes_model.rowCount() == len(snap.workspaces)
                         and "REPLAY" in view.counters.text(), 10)
        shown = (view.lanes_model.rowCount(), view.controls.isVisible(), view.source_picker.isEnabled(),
                 view.clock() == snap.at)
        view.show_replay(None)
        await wait_until(lambda: "no lanes" in view.counters.text(), 10)
        empty = view.lanes_model.rowCount()
        view.end_replay()
        await wait_until(lambda: view.lanes_model.rowCount() == 3 and "REPLAY" not in view.counters.text(), 10)
        return shown, empty, view.controls.isVisible(), view.replaying, len(snap.workspaces)

    rc, (shown, empty, controls, replaying, n), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert n == 2 and shown == (2, False, False, True)
    assert empty == 0 and controls and not replaying


def test_lanemon_replay_refuses_a_missing_file_or_a_command_in_one_line(tmp_path, capsys):
    from lanemon.cli import main

    assert main(["--replay", str(tmp_path / "nowhere.jsonl.gz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"lanemon: error: --replay: no such file: {tmp_path / 'nowhere.jsonl.gz'}"]
    (tmp_path / "r.jsonl").write_text("")
    assert main(["--replay", str(tmp_path / "r.jsonl"), "place", "--cpu-ms", "3"]) == 2
    assert "--replay" in capsys.readouterr().err


def test_lanemon_replay_passes_the_file_to_the_window(tmp_path, monkeypatch):
    """``lanemon --replay FILE`` opens the window with that recording (run_app's replay_path)."""
    import lanemon.cli as cli
    import lanemon.ui.shell.app as app

    seen = {}
    monkeypatch.setattr(cli, "_check_display", lambda: None)
    monkeypatch.setattr(app, "run_app", lambda **kw: seen.update(kw) or 0)
    path = tmp_path / "r.jsonl.gz"
    path.write_bytes(b"")
    assert cli.main(["--replay", str(path)]) == 0
    assert seen["replay_path"] == str(path) and seen["store_url"] is None and seen.get("talk") is None


def test_no_replay_while_recording_and_no_recording_during_a_replay(qtbot, tmp_path, fake):
    """The views show one thing at a time: each refusal is said in the status bar."""
    path = str(tmp_path / "busy.jsonl.gz")
    record_virtual(path)

    async def scenario(win):
        mode = win.replay
        bar = win.statusBar()
        assert mode.start_recording(str(tmp_path / "live.jsonl.gz"))
        opened = mode.open_recording(path)
        said_open = bar.currentMessage()
        mode.stop_recording()
        mode.enter(fake, FakeRecording(), "fake.jsonl")
        recorded = mode.start_recording(str(tmp_path / "other.jsonl.gz"))
        said_record = bar.currentMessage()
        record_enabled = mode.record_action.isEnabled()
        mode.leave()
        return opened, said_open, recorded, said_record, record_enabled, mode.record_action.isEnabled()

    rc, (opened, said_open, recorded, said_record, during, after), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert not opened and "Stop recording first" in said_open
    assert not recorded and "leave the replay first" in said_record
    assert not during and after
    assert not os.path.exists(tmp_path / "other.jsonl.gz")


def test_recorded_lanes_replay_in_the_lanes_tab(qtbot, tmp_path):
    """File -> Record while jobs run in the Lanes & queues tab; opened, the tab draws the
    recorded lanes at the replay's position (equal to the replay's own snapshot)."""
    from lanemon.ui.tools.testing import add_simulated_job

    path = os.environ.get("KEEP_LANES") or str(tmp_path / "lanes.jsonl.gz")

    async def scenario(win):
        mode = win.replay
        view = win.views["lanes"]
        win.show_view("lanes")
        assert mode.start_recording(path), win.statusBar().currentMessage()
        problem = mode.session.problem
        await add_simulated_job(view, "ws-a", "reservations", 0.05)
        await add_simulated_job(view, "ws-b", "cafe", 0.05)
        await wait_until(lambda: view.scheduler.snapshot().counts.jobs_finished >= 2, 20)
        mode.stop_recording()
        assert mode.open_recording(path)
        replay = mode.replay
        mode.seek(len(replay))
        want = replay.lanes_snapshot()
        await wait_until(lambda: view._snap is want and view.lanes_model.rowCount() == len(want.workspaces), 10)
        at_end = (view.lanes_model.rowCount(), sorted(want.workspaces), want.counts.jobs_finished)
        mode.seek(0)
        first = replay.lanes_snapshot()
        await wait_until(lambda: view._snap is first and view.lanes_model.rowCount() == len(first.workspaces), 10)
        return problem, at_end, view.lanes_model.rowCount(), len(first.workspaces)

    rc, (problem, at_end, rows0, ws0), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert problem is None
    assert at_end == (2, ["ws-a", "ws-b"], 2)
    assert rows0 == ws0 == 0


def test_a_long_stall_moment_is_told_and_drawn_at_its_place(qtbot, tmp_path):
    """A heartbeat tick 250 ms late in the recording: a moment; jumping there says it first
    and the recorded heartbeat around the position holds that tick."""
    from lanemon.replay import Recorder

    path = str(tmp_path / "stall.jsonl.gz")
    sim = Simulation(RACE_CONFIG)
    recorder = Recorder(path, sources_info={}, clock=lambda: sim.clock.now())
    recorder.attach_counters(sim)
    ticks = [(i * 0.01, 250.0 if i in (3, 50) else 0.5) for i in range(100)]

    def beat(event) -> None:       # the ticks as a live heartbeat gives them: in time order
        while ticks and ticks[0][0] <= event.time:
            recorder.heartbeat(*ticks.pop(0))

    sim.subscribe(beat)
    run_in_virtual_time(sim.run())
    for tick in ticks:
        recorder.heartbeat(*tick)
    recorder.close()

    async def scenario(win):
        mode = win.replay
        assert mode.open_recording(path)
        rows = [i for i, m in enumerate(mode.replay.moments()) if m.kind == "long stall"]
        got = []
        for row in rows:
            mode.jump_to_moment(row)
            got.append((mode.panel.story_title.text(), mode.panel.story.text().splitlines()[0],
                        mode.panel.chart.points, mode.panel.current_moment() == row,
                        win.views["counters"].grid.highlighted))
        return got

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    (title, first, points, selected, ringed), (title2, first2, _, selected2, ringed2) = got
    # at 0.03 s no race is on: the stall is the story
    assert title == "Long stall" and first.startswith("0.030 s · long stall: ") and not ringed
    assert points > 0 and selected
    # at 0.5 s a counter is double assigned: the race is told, the stall said above it
    assert title2.startswith("Double assignment") and first2.startswith("0.500 s · long stall: ") and ringed2
    assert selected2


def test_the_file_menu_has_record_and_open_recording_in_its_first_group(qtbot):
    async def scenario(win):
        menu = win.talk.file_menu()
        return [a.text() if not a.isSeparator() else "-" for a in menu.actions()]

    rc, items, errors = run_window(scenario)
    assert rc == 0 and errors == []
    first = items[:items.index("-")]
    assert "Record…" in first and "Open recording…" in first
    assert items[-1].replace("&", "") == "Quit"


def test_a_recording_cut_by_a_crash_opens_with_a_note(qtbot, tmp_path):
    """A file without its end (the recorder killed): it opens, and the note says so."""
    from lanemon.replay import open_recording

    whole = tmp_path / "whole.jsonl.gz"
    record_virtual(str(whole))
    data = whole.read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    warnings = open_recording(str(cut)).warnings
    assert warnings          # (what lanemon.replay says of such a file)

    async def scenario(win):
        ok = win.replay.open_recording(str(cut))
        return ok, win.replay.panel.name.text(), len(win.replay.replay) if win.replay.replay else 0

    rc, (ok, name, n), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert ok and n > 0
    assert name.startswith("REPLAY  cut.jsonl.gz") and warnings[0] in name


def test_with_a_talk_loaded_the_replay_keys_are_the_replays(qtbot, fake):
    """A talk's keys (Right: next step, Space...) rest while a replay is shown, so Right in the
    replay bar steps one event (not ambiguous, not a talk step); after it the talk's are back."""
    from lanemon.talk import EXAMPLE
    from lanemon.talk.script import parse

    async def scenario(win):
        await activated(win)
        player = win.talk_player
        player.load(parse(EXAMPLE, "example.toml"))
        step = player.index
        mode = win.replay
        mode.enter(fake, FakeRecording(), "fake.jsonl")
        mode.seek(10)
        mode.panel.slider.setFocus()
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Right)
        QTest.keyClick(mode.panel.focusWidget() or mode.panel.slider, Qt.Key.Key_PageDown)
        during = (mode.position, player.index == step, any(a.isEnabled() for a in player.keys))
        mode.leave()
        return during, all(a.isEnabled() for a in player.keys)

    rc, (during, after), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert during == (111, True, False) and after


def test_esc_leaves_the_replay_while_a_run_is_in_flight_and_cancels_it_after(qtbot, fake):
    """Esc cancels a run from every tab, as 1/2/3 start one from every tab (it was a shortcut
    of the Runs tab, live only while that tab was shown). So it is the window's, and while a
    replay is shown it is the replay bar's alone (two live Escs are ambiguous to Qt, which then
    runs neither): the replay is left, the run goes on; back live, on the tab the replay
    chose (not Runs), Esc cancels."""
    from lanemon.ui.tools.testing import cold_run_in_flight

    async def scenario(win):
        await activated(win)
        rec = await cold_run_in_flight(win)
        mode = win.replay
        mode.enter(fake, FakeRecording(), "fake.jsonl")
        await wait_until(lambda: QApplication.focusWidget() is mode.panel.slider, 5)
        QTest.keyClick(mode.panel.slider, Qt.Key.Key_Escape)
        await wait_until(lambda: mode.replay is None, 5)          # the replay's Esc
        left_running = rec.running
        tab = win.shown_view()
        win.chart.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is win.chart and win.runs_panel.esc_cancels, 5)
        QTest.keyClick(win.chart, Qt.Key.Key_Escape)               # live again: the run's Esc
        await wait_until(lambda: not rec.running, 20)
        return left_running, tab, rec.status

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    left_running, tab, status = got
    assert left_running and tab != "runs" and status == "cancelled"


def test_a_recording_damaged_past_its_first_block_is_left_with_a_message_not_a_traceback(qtbot, tmp_path):
    """Opening a recording reads its start; a line damaged further on (of the right shape at a
    glance, ``["c",1,"claimed"]``) raised out of the replay's Qt slots: half entered, nothing to
    leave, and with Play a traceback every tick. The replay is left now, the window live, and a
    message box says where and why."""
    import dataclasses
    import gzip

    plain = tmp_path / "plain.jsonl"
    record_virtual(str(tmp_path / "race.jsonl"), dataclasses.replace(RACE_CONFIG, customers=400))  # blocks
    lines = gzip.decompress((tmp_path / "race.jsonl").read_bytes()).decode().splitlines()
    lines = [line for line in lines if not line.startswith(('["I"', '["Z"'))]   # a plain file: no index
    lines[-5] = '["c",1,"claimed"]'
    plain.write_text("\n".join(lines) + "\n")

    async def scenario(win):
        await activated(win)
        mode = win.replay
        opened = mode.open_recording(str(plain))
        await wait_until(lambda: mode.error_box is not None and mode.error_box.isVisible(), 10)
        got = (opened, mode.replay, mode.error_box.windowTitle(), mode.error_box.text(),
               win.chart.isVisible(), mode.panel.isVisible(), mode.record_action.isEnabled())
        mode.error_box.close()
        return got

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    opened, replay, title, text, chart, panel, can_record = got
    assert (opened, replay, title, chart, panel, can_record) == (False, None, "Recording damaged", True, False, True)
    assert "malformed line" in text and "plain.jsonl" in text and "window is live again" in text
