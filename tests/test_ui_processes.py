"""The Processes tab, driven on a real qasync loop (offscreen) with real processes.

Until ``lanemon agent`` and ``SqlStore.sessions()`` are in this tree, the agents are churn
workers on an SQLite store (each opens a store session under its name) and the sessions are
read from that store's ``sessions`` table (``fleet_fakes``). Every wait is for a condition.
"""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest
from fleet_fakes import FakeSessionRow, FakeSessions, SqliteSessions, churn_command, new_sqlite_store, sleeper_command

from lanemon import procs
from lanemon.agents.fleet import this_host
from lanemon.bench._common import child_processes
from lanemon.ui.tools.testing import activated, keep_shot, run_window, wait_until
from lanemon.work import live_worker_pids, warm_pool


@pytest.fixture(autouse=True)
def _app(window_app):
    return window_app


def _state(view, name: str) -> str | None:
    for row in view.row_texts():
        if row[0] == name:
            return row[3]
    return None


def _reaped(pid: int) -> bool:
    return procs.state(pid) is None


def _opener(source):
    async def opener(url):
        return source
    return opener


def test_start_two_pause_one_kill_the_other_then_close_leaves_none(qtbot, tmp_path):
    url, path = new_sqlite_store(tmp_path)

    async def scenario(win):
        view = win.processes_view
        view.fleet.command = churn_command()
        view.session_opener = _opener(SqliteSessions(path, info={}))
        win.show_view("processes")
        view.url.setText(url)
        view.count.setValue(2)
        view.start_button.click()
        a, b = view.fleet.agents()
        # both listed running, each joined with its store session (its heartbeat is known)
        await wait_until(lambda: _state(view, a.name) == _state(view, b.name) == "running"
                         and all(r.heartbeat_age_s is not None for r in view.rows if r.kind == "agent"), 60)
        joined = [r for r in view.rows if r.kind == "agent"]
        assert view.select(f"agent:{a.name}")
        view.buttons["pause"].click()
        await wait_until(lambda: _state(view, a.name) == "paused", 20)
        paused_head = view.head.text()
        assert view.select(f"agent:{b.name}")
        view.buttons["kill"].click()
        await wait_until(lambda: _state(view, b.name) == "exited -9", 20)
        zombie_free = _reaped(b.pid)
        disabled = not view.buttons["kill"].isEnabled()
        view.act("kill")                         # the killed one again: said, not raised
        again = view.result.text()
        return a.pid, b.pid, joined, paused_head, zombie_free, (disabled, again), view.keep_note.text()

    rc, out, errors = run_window(scenario)
    a_pid, b_pid, joined, paused_head, zombie_free, again, note = out
    assert rc == 0 and errors == []
    assert {r.pid for r in joined} == {a_pid, b_pid} and all(r.here for r in joined)
    assert "2 agents started here running (1 paused)" in paused_head
    assert zombie_free
    disabled, said = again
    assert disabled and f"pid {b_pid}) has already exited (exit status -9)" in said
    assert "Closing the window stops the 1 agent started here." == note
    # closed: the paused agent was stopped too (SIGTERM with SIGCONT), every pid is gone
    assert _reaped(a_pid) and _reaped(b_pid)
    assert child_processes() == []


def test_keep_running_leaves_the_agents_and_the_window_says_so(qtbot, tmp_path, capfd):
    async def scenario(win):
        view = win.processes_view
        view.fleet.command = sleeper_command()
        win.show_view("processes")
        view.url.setText("sqlite:///" + str(tmp_path / "unused.db").lstrip("/"))
        view.count.setValue(1)
        view.start_button.click()
        (a,) = view.fleet.agents()
        view.keep.setChecked(True)
        await wait_until(lambda: "leaves 1 agent running" in view.keep_note.text(), 10)
        return a.pid, a.name, view.keep_note.text(), view.fleet.log_dir

    rc, (pid, name, note, logs), errors = run_window(scenario)
    try:
        assert rc == 0 and errors == []
        assert f"{name} (pid {pid})" in note
        assert procs.alive(pid)                              # left running, as said
        assert f"left 1 agent running (keep agents running was on): {name} (pid {pid})" in capfd.readouterr().err
    finally:
        os.kill(pid, signal.SIGKILL)
        shutil.rmtree(logs, ignore_errors=True)       # (a kept agent's log is left in place)
    deadline = time.monotonic() + 30
    while not _reaped(pid) and time.monotonic() < deadline:   # its reaper thread reaps it
        time.sleep(0.02)
    assert _reaped(pid)


def test_signals_refused_for_other_hosts_and_exited_agents_are_said(qtbot):
    async def scenario(win):
        view = win.processes_view
        view.fleet.command = sleeper_command()
        source = FakeSessions([FakeSessionRow("r", 4242, "far-away", "remote-agent", 0.0, time.time(),
                                              {"role": "staff", "strategy": "claim"})])
        view.session_opener = _opener(source)
        win.show_view("processes")
        view.url.setText("sqlite:///tmp/unused-by-sleepers.db")
        view.url.editingFinished.emit()
        await wait_until(lambda: any(r.key == "session:r" for r in view.rows), 20)
        view.select("session:r")
        buttons = {k: b.isEnabled() for k, b in view.buttons.items()}
        refused = view.act("kill")
        view.count.setValue(1)
        view.start_button.click()
        (a,) = view.fleet.agents()
        await wait_until(lambda: _state(view, a.name) == "running", 20)
        view.select(f"agent:{a.name}")
        view.act("kill")
        await wait_until(lambda: _state(view, a.name) == "exited -9", 20)
        late = view.act("stop")
        return buttons, refused, late, view.result.text()

    rc, (buttons, refused, late, shown), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert not any(buttons.values())
    assert not refused.sent and "another host (far-away)" in refused.message
    assert not late.sent and "already exited" in late.message and "-9" in late.message
    assert shown == late.message


@pytest.mark.parametrize("kind", ["warm", "cold"])
def test_killing_a_worker_from_the_tab_fails_its_run_with_a_clear_error_and_the_pool_refills(qtbot, kind):
    async def scenario(win):
        c, view, panel = win.controller, win.processes_view, win.runs_panel
        pool = warm_pool()
        await wait_until(lambda: c.machine.warm_roundtrip_ms is not None, 60)   # the pool is up
        win.show_view("processes")
        rec = c.start_worker(10**11, kind)               # minutes of work
        key = None

        def busy_listed():
            nonlocal key
            rows = [r for r in view.rows if r.kind == "worker" and r.state == "busy" and r.name == f"{kind} worker"]
            key = rows[0].key if rows else None
            return key
        await wait_until(busy_listed, 30)
        victim = int(key.split(":")[1])
        view.select(key)
        view.buttons["kill"].click()
        said = view.result.text()
        await wait_until(lambda: rec.status != "running", 30)
        await wait_until(lambda: f"Run #{rec.id}" in panel.banner.text(), 10)
        await wait_until(lambda: len(pool.pids()) == pool.size and victim not in pool.pids(), 30)
        await wait_until(lambda: not any(r.key == key for r in view.rows), 10)
        return rec, victim, said, panel.banner.text(), pool.size, len(pool.pids())

    rc, (rec, victim, said, banner, size, alive), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert f"SIGKILL sent to {kind} worker (pid {victim})" in said
    assert rec.status == "failed" and "WorkerDied" in rec.error
    assert f"worker process {victim} died (exit code -9)" in banner and "failed" in banner
    assert alive == size
    assert live_worker_pids() == []


def test_the_tab_with_three_processes_one_paused_grabs_to_a_png(qtbot, tmp_path):
    png = tmp_path / "processes.png"

    async def scenario(win):
        view = win.processes_view
        view.fleet.command = sleeper_command()
        source = FakeSessions()
        view.session_opener = _opener(source)
        win.show_view("processes")
        view.url.setText("sqlite:///tmp/agents.db")
        view.count.setValue(3)
        view.start_button.click()
        agents = view.fleet.agents()
        now = time.time()
        source.rows = [FakeSessionRow(f"s{i}", a.pid, this_host(), a.name, now - 5, now - 0.3 * i,
                                      {"role": "lanes", "lanes": "store", "jobs_running": i % 2, "lanes_held": i % 2})
                       for i, a in enumerate(agents)]
        await wait_until(lambda: all(procs.state(a.pid) in ("S", "R") for a in agents)
                         and len([r for r in view.rows if r.kind == "agent"]) == 3, 20)
        assert view.select(f"agent:{agents[1].name}")
        view.buttons["pause"].click()
        await wait_until(lambda: [r[3] for r in view.row_texts()][:3] == ["running", "paused", "running"], 20)
        await wait_until(lambda: view.watch is not None and view.watch.reads > 0, 20)
        view.refresh_now()
        assert view.grab().save(str(png))
        lanes_role = view.strategy.isEnabled(), view.local_lanes.isEnabled()
        view.role.setCurrentText("staff")
        staff_role = view.strategy.isEnabled(), view.local_lanes.isEnabled()
        assert (lanes_role, staff_role) == ((False, True), (True, False))
        return view.row_texts(), view.size().toTuple()

    rc, (rows, size), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert [r[3] for r in rows[:3]] == ["running", "paused", "running"]
    assert [r[6] != "–" for r in rows[:3]] == [True] * 3          # each joined with its session's heartbeat
    from PySide6.QtGui import QImage
    image = QImage(str(png))
    assert (image.width(), image.height()) == size
    keep_shot(png, "processes-panel.png")


def test_an_agent_that_exits_with_an_error_is_said_with_its_last_line(qtbot, tmp_path):
    import sys

    async def scenario(win):
        view = win.processes_view
        view.fleet.command = lambda spec: [sys.executable, "-c",
                                           "import sys; print('lanemon agent: store not opened: gone'); sys.exit(2)"]
        win.show_view("processes")
        view.url.setText("sqlite:///" + str(tmp_path / "unused.db").lstrip("/"))
        view.count.setValue(1)
        view.start_button.click()
        (a,) = view.fleet.agents()
        await wait_until(lambda: "exited 2" in view.result.text(), 20)
        return a, view.result.text(), _state(view, a.name)

    rc, (a, said, state), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert state == "exited 2"
    assert said.startswith(f"{a.name} (pid {a.pid}) exited 2: lanemon agent: store not opened: gone")


def test_bad_store_urls_are_refused_before_any_process_starts(qtbot):
    async def scenario(win):
        view = win.processes_view
        view.fleet.command = sleeper_command()
        said = []
        for text in ("", "memory:", "ftp://nowhere/x"):
            view.url.setText(text)
            assert view.start_agents() == []
            said.append(view.result.text())
        return said, view.fleet.agents()

    rc, (said, agents), errors = run_window(scenario)
    assert rc == 0 and errors == [] and agents == []
    assert "Give a store URL" in said[0]
    assert "memory: is this window's own" in said[1]
    assert said[2].startswith("Not started:")


def test_in_store_mode_agents_start_on_the_lanes_tabs_store(qtbot, tmp_path):
    url, _path = new_sqlite_store(tmp_path)

    async def scenario(win):
        view = win.processes_view
        win.show_view("processes")
        await wait_until(lambda: view.watch is not None and (view.watch.reads or view.watch.error), 30)
        watch = view.watch
        view.refresh_now()
        out = view.store_url(), view.url_note.text(), watch.error, [r.name for r in view.rows]
        # a URL with a password: the field shows it redacted, agents get the whole URL; back to
        # the window's simulation, the redacted text (no URL to start on) leaves the field
        secret, shown = "postgresql://u:secret@127.0.0.1:1/db", "postgresql://u:***@127.0.0.1:1/db"
        view.use_store(secret, shown=shown)
        switched = view.url.text(), view.store_url()
        view.use_store(None)
        back = view.url.text(), view.store_url(), view.url_note.text()
        return (*out, switched, back)

    rc, (used, note, error, names, switched, back), errors = run_window(scenario, store_url=url)
    assert rc == 0 and errors == []
    assert used == url and note == "from the Lanes tab"
    assert switched == ("postgresql://u:***@127.0.0.1:1/db", "postgresql://u:secret@127.0.0.1:1/db")
    assert back == ("", "", "")
    # before SqlStore.sessions() (contract 2) the tab says it cannot list sessions; after, it lists
    # this window's own sessions (the Lanes tab's and its own), marked as this window
    if error is not None:
        assert "cannot list its sessions" in error
    else:
        assert any(n.endswith("(this window)") for n in names)


def test_the_tab_and_its_controls_are_reached_from_the_keyboard(qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    async def scenario(win):
        view = win.processes_view
        view.fleet.command = sleeper_command()
        await activated(win)
        alt = Qt.KeyboardModifier.AltModifier
        win.show_view("runs")
        win.tabs.tabBar().setFocus()
        await wait_until(lambda: QApplication.focusWidget() is win.tabs.tabBar(), 10)
        for _ in range(win.tabs.count()):                               # the tab: Ctrl+Tab until there
            if win.tabs.tabText(win.tabs.currentIndex()) == "Processes":
                break
            index = win.tabs.currentIndex()
            QTest.keyClick(win.tabs.tabBar(), Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
            await wait_until(lambda index=index: win.tabs.currentIndex() != index, 10)
        assert win.tabs.tabText(win.tabs.currentIndex()) == "Processes"
        await wait_until(view.isVisible, 10)
        QTest.keyClick(win, Qt.Key.Key_S, alt)                         # Start, with no URL yet
        await wait_until(lambda: "Give a store URL" in view.result.text(), 10)
        QTest.keyClick(win, Qt.Key.Key_E, alt)                         # the store URL field
        await wait_until(lambda: QApplication.focusWidget() is view.url, 10)
        QTest.keyClicks(view.url, "sqlite:///tmp/keyboard.db")
        QTest.keyClick(win, Qt.Key.Key_S, alt)
        await wait_until(lambda: len(view.fleet.agents()) == 2 and len(view.rows) >= 2, 20)
        first = view.rows[0]
        view.table.setFocus()
        view.select(first.key)
        QTest.keyClick(win, Qt.Key.Key_P, alt)                         # Pause the selected row
        await wait_until(lambda: _state(view, first.name) == "paused", 20)
        QTest.keyClick(win, Qt.Key.Key_I, alt)                         # Kill it
        await wait_until(lambda: _state(view, first.name) == "exited -9", 20)
        return [a.pid for a in view.fleet.agents()]

    rc, pids, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert all(_reaped(p) for p in pids)


def test_the_store_field_follows_the_store_the_lanes_tab_follows(qtbot, tmp_path):
    url, _path = new_sqlite_store(tmp_path)

    async def scenario(win):
        view, lanes = win.processes_view, win.views["lanes"]
        win.show_view("processes")
        before = view.store_url()
        assert await lanes.follow(url)
        await wait_until(lambda: view.store_url() == url, 10)
        following = view.url.text(), view.url_note.text()
        await lanes.use_window()
        await wait_until(lambda: view.store_url() == "", 10)
        return before, following, view.url_note.text()

    rc, (before, following, note_after), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert before == ""
    assert following == (url, "from the Lanes tab")
    assert note_after == ""


def test_at_1280x800_the_process_table_shows_rows_without_scrolling(qtbot):
    """The agents' form and the Scenarios box sit side by side when the tab is wide enough:
    stacked, they pushed the process table's rows below the fold at 1280x800."""
    from PySide6.QtCore import QPoint, QRect

    from lanemon.ui.shell.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.fit_to_screen(QRect(0, 0, 1280, 800 + 40))     # the window itself 1280x800
    win.show()
    qtbot.waitExposed(win)
    win.show_view("processes")
    view = win.views["processes"]
    qtbot.waitUntil(lambda: view.reflow.wide is True)
    page = win.tabs.currentWidget().viewport()
    table = view.table

    def room() -> tuple[int, int, int]:
        rows_top = table.viewport().mapTo(page, QPoint(0, 0)).y()
        return rows_top, 3 * table.verticalHeader().defaultSectionSize(), page.height()

    def fits() -> bool:
        rows_top, three_rows, height = room()
        return rows_top + three_rows <= height

    # (the layout catches up with the reflow on a later turn of the loop)
    qtbot.waitUntil(fits, timeout=5000)
    assert fits(), room()
    win.talk.set_presenter(True)                        # large type: one above the other again
    qtbot.waitUntil(lambda: view.reflow.wide is False)
    win.talk.set_presenter(False)
