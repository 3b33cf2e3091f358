"""A talk played in the window (``lanemon.ui.talk``), on a real qasync loop (offscreen):
the clicker's keys, the caption, blank, undo, waits, and actions reaching the real views.

Waits are on conditions, with timeouts; no timed asserts.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

from lanemon.talk import parse
from lanemon.ui.tools.testing import activated, chart_focused, run_window, wait_until

SMALL = 300_000


@pytest.fixture(autouse=True)
def _app(window_app):
    return window_app


def key(win, k):
    """A key press as the user (or a clicker) makes it: to the widget that has the focus."""
    QTest.keyClick(QApplication.focusWidget() or win, k, Qt.KeyboardModifier.NoModifier)


async def press(win, k):
    """A key press, then until the step's actions (and wait) are done."""
    key(win, k)
    await wait_until(lambda: not win.talk_player.busy, 60)


def _shown(win):
    cap = win.talk_player.caption
    return cap.title.text(), cap.counter.text()


NAV = f'''
title = "nav"
[[step]]
title = "One"
text = "the first"
do = [ {{ tab = "runs" }} ]

[[step]]
title = "Two"
do = [ {{ run = "sliced", iterations = {SMALL} }} ]
undo = [ {{ tab = "placement" }} ]

[[step]]
title = "Three"

[[step]]
title = "Four"
'''


def test_clicker_keys_walk_the_steps_and_prev_does_not_run_actions_again(qtbot):
    async def scenario(win):
        seen = []
        p, c = win.talk_player, win.controller
        await chart_focused(win)
        win.show_view("counters")
        p.load(parse(NAV))
        await wait_until(lambda: not p.busy, 10)
        seen.append(("loaded", _shown(win), win.tabs.currentIndex(), p.caption.isVisible()))
        await press(win, Qt.Key.Key_PageDown)                            # -> 2: a sliced run
        await wait_until(lambda: len(c.records) == 1 and c.records[0].status != "running", 60)
        seen.append(("two", _shown(win), len(c.records)))
        await press(win, Qt.Key.Key_PageUp)                              # <- 1: undo of 2, no run
        seen.append(("back", _shown(win), len(c.records), win.tabs.currentIndex()))
        await press(win, Qt.Key.Key_Right)                               # -> 2 again: runs again
        await wait_until(lambda: len(c.records) == 2 and c.records[1].status != "running", 60)
        await press(win, Qt.Key.Key_Space)                               # -> 3 (Space: next, not pause)
        seen.append(("space", _shown(win), win.chart.paused))
        await press(win, Qt.Key.Key_Left)                                # <- 2: no run
        await press(win, Qt.Key.Key_PageDown)                            # -> 3: no run (2 is left)
        await press(win, Qt.Key.Key_PageDown)                            # -> 4
        await press(win, Qt.Key.Key_PageDown)                            # the last: stays
        seen.append(("last", _shown(win), p.caption.note.text()))
        await press(win, Qt.Key.Key_Home)
        seen.append(("home", _shown(win), len(c.records)))
        key(win, Qt.Key.Key_B)
        seen.append(("blank", p.blank, p.blank_screen.isVisible(), p.blank_screen.geometry() == win.rect()))
        key(win, Qt.Key.Key_PageDown)                                    # unblanks, does not move
        seen.append(("unblank", p.blank, p.blank_screen.isVisible(), _shown(win)))
        key(win, Qt.Key.Key_Period)
        key(win, Qt.Key.Key_Period)
        seen.append(("dot", p.blank, _shown(win)))
        key(win, Qt.Key.Key_P)                                           # P pauses the chart now
        seen.append(("p", win.chart.paused, win.talk.actions["pause"].isChecked()))
        return seen, p.errors

    rc, (seen, errors_said), errors = run_window(scenario)
    assert rc == 0 and errors == [] and errors_said == []
    runs, placement = 0, 1
    assert seen == [
        ("loaded", ("One", "step 1 / 4"), runs, True),
        ("two", ("Two", "step 2 / 4"), 1),
        ("back", ("One", "step 1 / 4"), 1, placement),
        ("space", ("Three", "step 3 / 4"), False),
        ("last", ("Four", "step 4 / 4"), "the last step"),
        ("home", ("One", "step 1 / 4"), 2),
        ("blank", True, True, True),
        ("unblank", False, False, ("One", "step 1 / 4")),
        ("dot", False, ("One", "step 1 / 4")),
        ("p", True, True),
    ]


def test_a_focused_field_keeps_the_talk_keys_and_the_shortcut_list_shows_them(qtbot):
    async def scenario(win):
        p, panel = win.talk_player, win.runs_panel
        await chart_focused(win)
        p.load(parse(NAV.replace(f'{{ run = "sliced", iterations = {SMALL} }}', '{ tab = "runs" }')))
        lanes = win.views["lanes"]
        win.show_view("lanes")
        box = lanes.controls.workspace_box
        box.setFocus()
        await wait_until(lambda: QApplication.focusWidget() in (box, box.lineEdit()), 10)
        box.lineEdit().setText("ws")
        box.lineEdit().setCursorPosition(2)
        for k in (Qt.Key.Key_Space, Qt.Key.Key_B, Qt.Key.Key_Period, Qt.Key.Key_Left, Qt.Key.Key_Home):
            key(win, k)
        typed = (box.currentText(), box.lineEdit().cursorPosition(), p.index, p.blank)
        win.show_view("runs")
        panel.set_job(1000, "iterations")
        panel.size.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is not None
                         and (QApplication.focusWidget() is panel.size
                              or panel.size.isAncestorOf(QApplication.focusWidget())), 10)
        key(win, Qt.Key.Key_PageUp)           # the number field's step up, not the talk's back
        stepped = (panel.size.value() > 1000, p.index)
        return typed, stepped, win.talk.overlay.text.text()

    rc, (typed, stepped, listed), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert typed == ("ws b.", 0, 0, False)       # typed into the field; Left and Home moved its cursor
    assert stepped == (True, 0)
    for keys, what in (("PgDown or Right or Space", "talk: next step"), ("PgUp or Left", "talk: previous step"),
                       ("Home", "talk: from the start"), ("B or .", "talk: blank the screen"),
                       ("P", "pause / resume the chart")):
        assert f">{keys}</td><td>{what}</td>" in listed, keys


WAIT = f'''
[[step]]
title = "Run and wait"
do = [ {{ run = "sliced", iterations = {SMALL * 10} }} ]
wait = "run"

[[step]]
title = "After"
'''


def test_next_during_a_wait_moves_on_when_the_run_ends_and_twice_moves_at_once(qtbot):
    async def scenario(win):
        p, c = win.talk_player, win.controller
        await chart_focused(win)
        p.load(parse(WAIT))
        await wait_until(lambda: c.busy("sliced") is not None, 10)
        note = p.caption.note.text()
        p.next()
        pending = (p.index, p.pending_next, p.caption.note.text())
        await wait_until(lambda: c.busy("sliced") is None, 60)
        await wait_until(lambda: p.index == 1, 10)
        after = (_shown(win), c.records[-1].status)
        p.first()
        await wait_until(lambda: not p.busy, 10)
        # twice: at once, whatever is in flight
        p.load(parse(WAIT))
        await wait_until(lambda: c.busy("sliced") is not None, 10)
        p.next()
        p.next()
        at_once = (p.index, c.busy("sliced") is not None)
        await wait_until(lambda: c.busy("sliced") is None, 60)
        return note, pending, after, at_once

    rc, (note, pending, after, at_once), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert note == "waiting for the run to end"
    assert pending == (0, True, "waiting for the run to end · next step when it ends (PageDown again: now)")
    assert after == (("After", "step 2 / 2"), "done")
    assert at_once == (1, True)


LANES = '''
[[step]]
title = "Hold"
do = [
  { tab = "lanes" },
  { lanes = "add", workspace = "ws-07", queue = "reservations", seconds = 0.2 },
  { lanes = "hold", workspace = "ws-07" },
  { lanes = "add", workspace = "ws-07", queue = "cafe", seconds = 0.1 },
  { lanes = "busy", workspace = "ws-08" },
]

[[step]]
title = "Release"
do = [ { lanes = "release", workspace = "ws-07" }, { lanes = "busy", workspace = "ws-08", on = false } ]

[[step]]
title = "Fail, stop, burst"
do = [
  { lanes = "add", workspace = "ws-09", seconds = 0.1 },
  { lanes = "fail", workspace = "ws-09" },
  { lanes = "add", workspace = "ws-10", seconds = 30 },
  { lanes = "stop", workspace = "ws-10" },
  { lanes = "burst", jobs = 4, workspaces = 2, queue = "cafe", seconds = 0.1 },
]

[[step]]
title = "Counters"
do = [ { counters = "strategy", strategy = "claim" }, { counters = "start", strategy = "long_lock" } ]

[[step]]
title = "Compare"
do = [ { counters = "stop" }, { counters = "compare" } ]
wait = "compare"

[[step]]
title = "Agents"
do = [ { agents = "start", count = 1 }, { agents = "pause" }, { scenario = "stop" } ]
'''


def test_actions_reach_the_real_views(qtbot):
    async def scenario(win):
        p = win.talk_player
        lanes, counters, procs = win.views["lanes"], win.views["counters"], win.processes_view
        s = lanes.scheduler
        await chart_focused(win)
        p.load(parse(LANES))
        await wait_until(lambda: not p.busy, 10)
        held, behind = s._next_id - 1, s._next_id
        await wait_until(lambda: (j := s.job(held)) is not None and j.save_held, 20)
        before = (win.tabs.currentWidget().widget() is lanes, s.job(held).phase, s.job(behind).phase,
                  s.occupancy.is_busy("ws-08"), lanes.controls.notice.text())
        p.next()
        await wait_until(lambda: s.job(behind) is not None and s.job(behind).phase == "done", 20)
        after = (s.job(held).state, s.job(behind).state, s.occupancy.is_busy("ws-08"))
        first = s._next_id + 1
        p.next()
        await wait_until(lambda: not p.busy, 10)
        await wait_until(lambda: all((j := s.job(i)) is not None and j.phase == "done"
                                     for i in range(first, first + 6)), 30)
        ended = [(s.job(i).workspace, s.job(i).queue, s.job(i).state) for i in range(first, first + 6)]
        p.next()
        await wait_until(lambda: not p.busy, 10)
        running = (counters.running, counters.form.strategy_key())
        p.next()
        await wait_until(lambda: not p.busy, 120)
        compared = (counters.running, sorted(counters.compare.results or {}))
        p.next()
        await wait_until(lambda: not p.busy, 10)
        agents = (procs.result.text(), win.statusBar().currentMessage())
        return before, after, ended, running, compared, agents, p.errors

    rc, (before, after, ended, running, compared, agents, said), errors = run_window(scenario)
    assert rc == 0 and errors == [] and said == []
    shown, held_phase, behind_phase, busy, notice = before
    assert shown and held_phase == "saving" and behind_phase == "waiting" and busy
    assert "ws-08 is busy outside" in notice
    assert after == ("succeeded", "succeeded", False)
    assert ended == [("ws-09", "reservations", "failed"), ("ws-10", "reservations", "cancelled"),
                     ("ws-01", "cafe", "succeeded"), ("ws-02", "cafe", "succeeded"),
                     ("ws-01", "cafe", "succeeded"), ("ws-02", "cafe", "succeeded")]
    assert running == (True, "long_lock")
    assert compared == (False, ["claim", "long_lock", "short_lock"])
    text, status = agents
    assert text.startswith("Give a store URL first")      # the Processes tab's own refusal: no store here
    assert status == "No agent started here is running: none to pause."


def test_open_talk_with_an_error_says_the_line_and_the_window_stays(qtbot, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[step]]\ntitle = "ok"\n\n[[step]]\ntitle = "x"\ndo = [ { tab = "slides" } ]\n')
    good = tmp_path / "good.toml"
    good.write_text('[[step]]\ntitle = "Hello"\n')

    async def scenario(win):
        p = win.talk_player
        await chart_focused(win)
        refused = p.open_file(str(bad))
        box = p.message
        said = (refused, box.isVisible(), box.text(), p.loaded, p.caption.isVisible(),
                win.talk.actions["pause"].shortcut().toString())
        box.done(QMessageBox.StandardButton.Ok)
        opened = p.open_file(str(good))
        menu = [a.text() for a in win.talk.file_menu().actions()]
        return said, (opened, _shown(win), win.talk.actions["pause"].shortcut().toString()), menu

    rc, (said, opened, menu), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert said == (False, True, f'{bad}, line 6: tab "slides" is not one of "runs", "placement", "lanes", '
                                 '"counters", "programs", "processes"', False, False, "Space")
    assert opened == (True, ("Hello", "step 1 / 1"), "P")
    assert menu[0] == "Open &talk…"


def test_the_shortcut_list_with_a_talks_keys_fits_a_1024x768_window_in_presenter_mode(qtbot):
    """Four more rows did not fit at presenter mode's type: the last one was cut off."""
    async def scenario(win):
        await chart_focused(win)
        win.talk.set_presenter(True)
        win.talk_player.load(parse(NAV))
        win.talk.toggle_overlay()
        overlay = win.talk.overlay
        await wait_until(lambda: overlay.isVisible(), 10)
        # (a layout squeezes a panel taller than the window into it, cutting its last rows off)
        return overlay.panel.sizeHint().height() <= overlay.height(), overlay.text.text().count("<tr>")

    rc, (fits, rows), errors = run_window(scenario, size=(1024, 768))
    assert rc == 0 and errors == []
    assert fits and rows == 17     # 13 of the window (Esc and Enter among them) + 4 of the talk


def test_the_whole_example_talk_runs_to_its_end_with_no_action_failing(qtbot):
    from lanemon.talk import EXAMPLE

    async def scenario(win):
        p = win.talk_player
        await chart_focused(win)
        p.load(parse(EXAMPLE, "example"))
        titles = []
        for _ in range(len(p.talk.steps)):
            await wait_until(lambda: not p.busy, 120)
            titles.append(p.caption.title.text())
            p.next()
        counters = win.views["counters"]
        return (titles, p.errors, [(r.kind, r.status) for r in win.controller.records],
                sorted(counters.compare.results or {}), win.views["lanes"].checker.violations)

    rc, (titles, said, runs, compared, violations), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert said == []
    assert len(titles) == 12 and titles[-1] == "Questions?"
    assert runs == [("whole", "done"), ("sliced", "done"), ("warm", "done")]
    assert compared == ["claim", "long_lock", "short_lock"]
    assert violations == []


HOME = '''
[[step]]
title = "One"
do = [ { tab = "runs" }, { lanes = "add", workspace = "ws-05", seconds = 0.1 } ]

[[step]]
title = "Two"
do = [ { tab = "placement" } ]
undo = [ { lanes = "busy", workspace = "ws-09" } ]

[[step]]
title = "Three"
do = [ { tab = "counters" } ]
undo = [ { lanes = "busy", workspace = "ws-08" } ]
'''


def test_home_starts_the_talk_over_step_1s_actions_run_again_no_undo(qtbot):
    """Home is "from the start": step 1's caption and its actions, as when the talk was loaded;
    the undo actions of the steps left are not run (on the old code Home ran nothing)."""
    async def scenario(win):
        p, s = win.talk_player, win.views["lanes"].scheduler
        await chart_focused(win)
        p.load(parse(HOME))
        await wait_until(lambda: not p.busy and s.jobs_submitted == 1, 10)
        await press(win, Qt.Key.Key_PageDown)
        await press(win, Qt.Key.Key_PageDown)
        before = (_shown(win), win.tabs.currentIndex(), s.jobs_submitted)
        await press(win, Qt.Key.Key_Home)
        await wait_until(lambda: s.jobs_submitted == 2, 10)
        after = (_shown(win), win.tabs.currentIndex(), s.jobs_submitted,
                 s.occupancy.is_busy("ws-08"), s.occupancy.is_busy("ws-09"))
        return before, after, p.errors

    rc, (before, after, said), errors = run_window(scenario)
    assert rc == 0 and errors == [] and said == []
    runs, counters = 0, 3
    assert before == (("Three", "step 3 / 3"), counters, 1)
    assert after == (("One", "step 1 / 3"), runs, 2, False, False)


def test_file_close_talk_takes_the_caption_and_the_keys_away_space_pauses_again(qtbot):
    async def scenario(win):
        p, chart = win.talk_player, win.chart
        await chart_focused(win)
        win.talk.set_presenter(True)
        split = win.centralWidget()
        menu = [a for a in win.talk.file_menu().actions() if a.text() == "&Close talk"]
        closed_before = (len(menu), p.close_action.isEnabled())
        p.load(parse(NAV))
        await wait_until(lambda: not p.busy, 10)
        loaded_share = split.sizes()[0] / sum(split.sizes())
        await press(win, Qt.Key.Key_PageDown)
        key(win, Qt.Key.Key_B)
        loaded = (p.close_action.isEnabled(), p.caption.isVisible(), p.blank, p.index)
        p.close_action.trigger()                                         # File -> Close talk
        closed = (p.loaded, p.caption.isVisible(), p.blank, p.blank_screen.isVisible(),
                  p.close_action.isEnabled(), win.talk.actions["pause"].shortcut().toString(),
                  "talk:" in win.talk.overlay.text.text(), win.statusBar().currentMessage())
        share = split.sizes()[0] / sum(split.sizes())
        key(win, Qt.Key.Key_Space)                                       # the chart's pause again
        paused = chart.paused
        key(win, Qt.Key.Key_P)                                           # no longer a pause key
        key(win, Qt.Key.Key_PageDown)                                    # no talk to move
        after = (chart.paused, p.index, p.caption.isVisible(), win.talk.actions["pause"].isChecked())
        key(win, Qt.Key.Key_Space)
        p.load(parse(NAV))                                               # opened again: from step 1
        await wait_until(lambda: not p.busy, 10)
        again = (_shown(win), p.caption.isVisible(), p.close_action.isEnabled())
        return closed_before, loaded, closed, (loaded_share, share), paused, after, again

    rc, (closed_before, loaded, closed, shares, paused, after, again), errors = run_window(scenario, size=(1024, 768))
    assert rc == 0 and errors == []
    assert closed_before == (1, False)
    assert loaded == (True, True, True, 1)
    assert closed[:7] == (False, False, False, False, False, "Space", False)
    assert closed[7] == "Talk closed: Space pauses the chart again."
    loaded_share, share = shares
    assert loaded_share == pytest.approx(0.52, abs=0.02) and share == pytest.approx(0.44, abs=0.02)
    assert paused is True
    assert after == (True, 0, False, True)          # P and PageDown did nothing
    assert again == (("One", "step 1 / 4"), True, True)


def test_keys_of_a_focused_table_and_list_box_with_a_talk_loaded(qtbot):
    """A focused table keeps Up/Down; Home and Space are the talk's (Space presses no focused
    button either: Enter does); a closed list box keeps Up/Down, its open list every key; a
    field keeps its Enter."""
    from PySide6.QtWidgets import QComboBox, QTableView

    async def scenario(win):
        p, lanes = win.talk_player, win.views["lanes"]
        await chart_focused(win)
        win.show_view("lanes")
        p.load(parse('[[step]]\ntitle = "One"\n[[step]]\ntitle = "Two"\n[[step]]\ntitle = "Three"\n'))
        c = lanes.controls
        c.kind_box.setCurrentText("simulated")
        c.length.setValue(60)
        c.burst_jobs.setValue(5)
        c.burst_ws.setValue(5)
        await lanes.add_burst()
        await wait_until(lambda: lanes.scheduler.jobs_submitted == 5, 10)
        lanes.refresh_now()
        table = max((t for t in lanes.findChildren(QTableView) if t.isVisible()), key=lambda t: t.model().rowCount())
        table.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is table, 10)
        table.setCurrentIndex(table.model().index(0, 0))
        seen = []
        for k in (Qt.Key.Key_Down, Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_Home, Qt.Key.Key_Space):
            key(win, k)
            seen.append((k.name, table.currentIndex().row(), p.index))
        await wait_until(lambda: not p.busy, 10)
        box = c.queue_box
        box.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is box, 10)
        box.setCurrentIndex(0)
        for k in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_Down):
            key(win, k)
            seen.append((k.name, box.currentIndex(), p.index))
        QTest.keyClick(box, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)   # opens its list
        await wait_until(lambda: box.view().isVisible(), 10)
        for k in (Qt.Key.Key_Home, Qt.Key.Key_PageDown, Qt.Key.Key_Space):
            key(win, k)
            seen.append(("list " + k.name, box.view().currentIndex().row(), p.index))
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
        await wait_until(lambda: not box.view().isVisible(), 10)
        await activated(win)              # (offscreen: the closed list stayed the active window)
        clicks = []
        button = c.burst_button                 # (Add job is the form's default button: Enter was its own)
        button.clicked.connect(lambda: clicks.append("burst"))
        button.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is button, 10)
        key(win, Qt.Key.Key_Space)
        seen.append(("button Space", list(clicks), p.index))
        key(win, Qt.Key.Key_Return)                                      # Enter presses it
        await wait_until(lambda: lanes.scheduler.jobs_submitted == 10, 10)
        seen.append(("button Enter", list(clicks), p.index))
        procs = win.processes_view
        win.show_view("processes")
        await wait_until(lambda: procs.url.isVisible(), 10)
        edited = []
        procs.url.returnPressed.connect(lambda: edited.append(procs.url.text()))
        procs.url.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is procs.url, 10)
        procs.url.setText("sqlite:///nowhere/x.db")
        key(win, Qt.Key.Key_Enter)                                       # a field's Enter stays its own
        seen.append(("field Enter", edited, p.index))
        return seen, isinstance(box, QComboBox) and not box.isEditable()

    rc, (seen, plain_box), errors = run_window(scenario)
    assert rc == 0 and errors == [] and plain_box
    assert seen == [
        ("Key_Down", 1, 0), ("Key_Down", 2, 0), ("Key_Up", 1, 0),      # the table's rows
        ("Key_Home", 1, 0),                                            # the talk's: from the start
        ("Key_Space", 1, 1),                                           # the talk's: next step
        ("Key_Down", 1, 1), ("Key_Up", 0, 1), ("Key_Down", 1, 1),      # the list box's choice
        ("list Key_Home", 0, 1), ("list Key_PageDown", 1, 1),          # its open list: its own keys
        ("list Key_Space", 1, 1),
        ("button Space", [], 2),                                       # the talk's, not the button's
        ("button Enter", ["burst"], 2),
        ("field Enter", ["sqlite:///nowhere/x.db"], 2),
    ]


def test_agents_start_with_no_store_known_is_refused_saying_what_to_do(qtbot):
    async def scenario(win):
        p, view = win.talk_player, win.processes_view
        await chart_focused(win)
        p.load(parse('[[step]]\ntitle = "Agents"\ndo = [ { agents = "start", count = 2 } ]\n'))
        await wait_until(lambda: not p.busy, 10)
        return win.statusBar().currentMessage(), view.result.text(), view.fleet.agents(), p.agents_started

    rc, (status, tab, agents, started), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert status == ('Talk line 3: no store to start agents on: give the action store = "sqlite:///path/store.db", '
                      "or start a scenario first (its throwaway store), or start lanemon with --store.")
    assert tab.startswith("Give a store URL first")
    assert agents == [] and started == ()


def test_space_in_the_workspaces_table_is_the_talks_while_one_is_loaded(qtbot):
    """The Lanes tab's workspaces table toggles "busy outside" with Space, claiming the key
    before the window's pause; with a talk loaded Space is the talk's next step there too
    (it toggled busy and the talk stood still); closed, Space toggles again."""
    async def scenario(win):
        p, lanes = win.talk_player, win.views["lanes"]
        await chart_focused(win)
        win.show_view("lanes")
        s = lanes.scheduler
        for ws in ("w1", "w2"):
            s.mark_busy(ws, "outside")          # two rows in the workspaces table
        lanes.refresh_now()
        table = lanes.lanes_table
        await wait_until(lambda: table.model().rowCount() == 2, 10)
        p.load(parse('[[step]]\ntitle = "One"\n[[step]]\ntitle = "Two"\n[[step]]\ntitle = "Three"\n'))
        await wait_until(lambda: not p.busy, 10)
        table.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is table, 10)
        table.setCurrentIndex(table.model().index(0, 0))
        ws = table.model().row_data(0).workspace
        start = p.index
        await press(win, Qt.Key.Key_Space)
        loaded = (p.index - start, s.occupancy.is_busy(ws))
        p.close_action.trigger()
        await wait_until(lambda: not p.loaded, 10)
        table.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is table, 10)
        key(win, Qt.Key.Key_Space)
        await wait_until(lambda: not s.occupancy.is_busy(ws), 5)
        return loaded, win.chart.paused

    rc, (loaded, paused), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert loaded == (1, True)              # the talk moved on; the workspace still busy
    assert paused is False                  # closed: the table's Space, not the chart's pause


def test_enter_presses_a_focused_button_with_no_talk_loaded_and_a_field_keeps_its_enter(qtbot):
    """Space is the window's (the chart's pause), and a main window's buttons take no Enter of
    their own: a keyboard user could reach a button with Tab and not press it. Enter presses
    the focused button, talk or not; a field still gets its Enter, once."""
    from PySide6.QtWidgets import QLineEdit, QPushButton

    async def scenario(win):
        await chart_focused(win)
        clicks, returns = [], []
        button = QPushButton("probe", win.runs_panel)
        field = QLineEdit(win.runs_panel)
        button.clicked.connect(lambda: clicks.append(1))
        field.returnPressed.connect(lambda: returns.append(1))
        button.show()
        field.show()
        assert not win.talk_player.loaded
        for widget, k in ((button, Qt.Key.Key_Return), (button, Qt.Key.Key_Enter), (field, Qt.Key.Key_Return)):
            widget.setFocus()
            await wait_until(lambda w=widget: QApplication.focusWidget() is w, 10)
            key(win, k)
        return len(clicks), len(returns)

    rc, got, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert got == (2, 1)


def test_a_blank_screen_keeps_the_keyboard_and_any_key_brings_the_window_back(qtbot):
    """Under the blank screen the window's keys still acted, unseen: a digit started a run,
    L switched the axis. The blank screen has the keyboard now; any key brings the window
    back and does nothing else; the focus goes back where it was."""
    async def scenario(win):
        p, c = win.talk_player, win.controller
        await chart_focused(win)
        p.load(parse('[[step]]\ntitle = "One"\n[[step]]\ntitle = "Two"\n'))
        await wait_until(lambda: not p.busy, 10)
        seen = []
        for k in (Qt.Key.Key_1, Qt.Key.Key_L, Qt.Key.Key_Escape, Qt.Key.Key_PageDown):
            key(win, Qt.Key.Key_B)
            await wait_until(lambda: QApplication.focusWidget() is p.blank_screen, 5)
            key(win, k)
            seen.append((k.name, p.blank, p.index, len(c.records), win.talk.actions["log"].isChecked(),
                         QApplication.focusWidget() is win.chart))
        return seen

    rc, seen, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert seen == [(name, False, 0, 0, False, True) for name in ("Key_1", "Key_L", "Key_Escape", "Key_PageDown")]
