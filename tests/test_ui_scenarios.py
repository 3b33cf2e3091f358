"""The scenarios in the window (offscreen, a real qasync loop, real ``lanemon agent`` processes).

* Item 6's window test: agents started from the Processes panel (its Start button, on an
  SQLite store with a 1 s lease), the one running a long job paused from the panel (its
  Pause button) past its lease, resumed: its refused write is a row of the Lanes tab's
  ledger panel, counted in the tab's top line.
* The pause scenario from its button in the Processes tab's Scenarios box, on a throwaway
  store: the Lanes tab follows it, shows the description, the ledger row of the paused
  agent; a grab of the window is saved then. Stop scenario stops its agents and removes
  the store.
* The counters scenario from its button: the Counters tab follows the throwaway store;
  grabs during the short-lock round (doubles) and at the compare.

PNGs are copied to ``$LANEMON_SHOTS`` when it is set. Every wait is for a condition.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from lanemon import procs
from lanemon.agents.scenarios import ScenarioOptions
from lanemon.bench._common import child_processes
from lanemon.store.sql.backend import JobSpec
from lanemon.ui.tools.testing import keep_shot, run_window, wait_until

FAST = ScenarioOptions(lease_s=1.0, long_job_s=5.0, workspaces=2, jobs_per_ws=4, job_s=0.6,
                       counters_window_s=3.0, wait_s=90.0)


@pytest.fixture(autouse=True)
def _app(window_app):
    return window_app


def _exists(path) -> bool:
    return os.path.exists(path)


def _grab(win, png) -> None:
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication
    QApplication.sendPostedEvents(None, QEvent.Type.UpdateRequest)
    assert win.grab().save(str(png))


def test_agents_started_from_the_processes_panel_one_paused_past_its_lease_its_write_in_the_ledger(qtbot, tmp_path):
    from lanemon.store.sql import open_sql_store
    from lanemon.store.url import parse

    url = "sqlite:///" + str(tmp_path / "agents.db").lstrip("/") + "?lease=1"

    async def scenario(win):
        store = await open_sql_store(parse(url), create=True, name="test")
        try:
            lanes = win.views["lanes"]
            assert await lanes.follow(url)
            view = win.processes_view
            win.show_view("processes")
            view.url.setText(url)
            view.count.setValue(2)
            view.start_button.click()
            agents = [a.name for a in view.fleet.agents()]
            assert len(agents) == 2
            await wait_until(lambda: all(any(r.name == n and r.heartbeat_age_s is not None for r in view.rows)
                                         for n in agents), 90)
            (jid,) = await store.submit([JobSpec(workspace="ws-1", queue="reservations", seconds=5.0)])
            deadline = time.monotonic() + 90
            while True:    # an agent runs it under its lane (read from the store)
                d = await store.dump()
                job = next(j for j in d["jobs"] if j["id"] == jid)
                if job["state"] == "running" and job["owner"] in agents:
                    break
                assert job["state"] in ("queued", "running") and time.monotonic() < deadline, job
                await asyncio.sleep(0.05)
            owner, epoch = job["owner"], job["epoch"]
            assert view.select(f"agent:{owner}")
            view.buttons["pause"].click()
            assert view.last_result.sent
            while True:    # its lease runs out: the job is re-queued, the other agent runs it (new epoch)
                d = await store.dump()
                job = next(j for j in d["jobs"] if j["id"] == jid)
                if job["state"] == "running" and job["epoch"] not in (None, epoch):
                    break
                assert job["state"] in ("queued", "running") and time.monotonic() < deadline, job
                await asyncio.sleep(0.05)
            taken_by = job["owner"]
            view.select(f"agent:{owner}")
            view.buttons["resume"].click()
            assert view.last_result.sent
            win.show_view("lanes")

            def ledger_row():
                m = lanes.ledger_model
                rows = [m.entry(i) for i in range(m.rowCount())]
                return next((e for e in rows if e.writer == owner and e.job_id == jid), None)
            await wait_until(lambda: ledger_row() is not None, 90)
            row = ledger_row()
            lanes.refresh_now()
            return (owner, taken_by, epoch, row, lanes.ledger_box.isVisible(), lanes.counters.text(),
                    [a.pid for a in view.fleet.agents()])
        finally:
            await store.close()

    rc, out, errors = run_window(scenario)
    assert rc == 0 and errors == []
    owner, taken_by, epoch, row, ledger_shown, top_line, pids = out
    assert taken_by != owner
    assert row.writer == owner and row.epoch_current is not None and row.epoch_held < row.epoch_current
    assert ledger_shown
    assert "refused writes (ledger)" in top_line
    assert all(procs.state(pid) is None for pid in pids)     # the window's close stopped them
    assert child_processes() == []


def test_the_pause_scenario_from_its_button_shows_its_ledger_row_and_says_what_happens(qtbot, tmp_path):
    png = tmp_path / "scenario-pause.png"
    lanes_png = tmp_path / "scenario-pause-lanes.png"

    async def scenario(win):
        sc = win.scenarios
        sc.options = FAST
        idle_refreshing = sc.refreshing          # no scenario yet: no timer for it
        win.show_view("processes")
        sc.box.buttons["pause"].click()
        await wait_until(lambda: sc.run is not None and sc.run.status().step >= 1, 30)
        run = sc.run
        running_refreshing = sc.refreshing
        folder = run.folder
        lanes = win.views["lanes"]
        await wait_until(lambda: lanes.follower is not None and lanes.follower.url.text == run.url, 60)
        # the agents are the Processes tab's: listed there
        await wait_until(lambda: len([r for r in win.processes_view.fleet.agents() if r.alive]) == 2, 60)

        def ledger_row():
            m = lanes.ledger_model
            paused = run.result.get("paused")
            return next((m.entry(i) for i in range(m.rowCount()) if m.entry(i).writer == paused), None)
        await wait_until(lambda: ledger_row() is not None, 120)
        await wait_until(lambda: run.status().state == "proved" or run.status().state == "failed", 120)
        lanes.refresh_now()
        caption = next(c for c in sc.captions if c is not sc.box.caption and c.parent() is lanes)
        await wait_until(lambda: "Proof:" in caption.text_shown, 10)
        _grab(win, png)
        assert lanes.grab().save(str(lanes_png))     # the whole tab: description, top line, ledger
        shown = (win.tabs.currentWidget() is win._pages["lanes"], caption.isVisible(), caption.text_shown,
                 ledger_row(), dict(run.result), run.status())
        pids = [a.pid for a in win.processes_view.fleet.agents()]
        await sc.stop()
        stopped = (lanes.follower is None, _exists(folder), all(procs.state(p) is None for p in pids))
        return shown, stopped, (idle_refreshing, running_refreshing, sc.refreshing)

    rc, (shown, stopped, refreshing), errors = run_window(scenario, size=(1280, 1024))
    assert rc == 0 and errors == []
    assert refreshing == (False, True, False)    # the description's timer runs only while it is there
    on_lanes, caption_visible, text, row, result, status = shown
    assert status.state == "proved", status.error
    assert on_lanes and caption_visible
    assert "Proof:" in text and "epoch held" in text
    assert row.writer == result["paused"] and row.job_id == result["job"]
    assert row.epoch_current is not None and row.epoch_held < row.epoch_current
    assert stopped == (True, False, True)     # back to the window, the store removed, no agent left
    assert child_processes() == []
    keep_shot(png, "scenario-pause.png")
    keep_shot(lanes_png, "scenario-pause-lanes.png")


def test_the_counters_scenario_from_its_button_compares_the_three_on_the_counters_tab(qtbot, tmp_path):
    doubles_png = tmp_path / "scenario-counters-short.png"
    compare_png = tmp_path / "scenario-counters-compare.png"

    async def scenario(win):
        sc = win.scenarios
        sc.options = FAST
        win.show_view("processes")
        sc.box.buttons["counters"].click()
        await wait_until(lambda: sc.run is not None and sc.run.status().step >= 1, 30)
        run = sc.run
        counters = win.views["counters"]
        await wait_until(lambda: counters.source is not None and win.tabs.currentWidget() is win._pages["counters"],
                         60)

        def red():
            state = counters.last_store_state
            return state is not None and any(len(c.customers) > 1 for c in state.counters)
        deadline = time.monotonic() + 120
        while not red() and run.status().step == 1:      # a double assignment on the board
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        counters.refresh_now()
        _grab(win, doubles_png)
        was_red = red()
        await wait_until(lambda: run.status().over, 180)
        caption = next(c for c in sc.captions if c is not sc.box.caption and c.parent() is counters)
        await wait_until(lambda: "Proof:" in caption.text_shown, 10)
        counters.refresh_now()
        _grab(win, compare_png)
        return was_red, run.status(), dict(run.result), counters.figures.text()

    rc, (was_red, status, result, figures), errors = run_window(scenario, size=(1280, 1024))
    assert rc == 0 and errors == []
    assert status.state == "proved", status.error
    assert result["short"]["doubles"] > 0 and result["long"]["doubles"] == 0 and result["claim"]["doubles"] == 0
    assert "double assignments" in figures
    assert child_processes() == []
    keep_shot(doubles_png, "scenario-counters-short.png" if was_red else "scenario-counters-short-no-red.png")
    keep_shot(compare_png, "scenario-counters-compare.png")


def test_closing_the_window_mid_scenario_stops_its_agents_and_removes_its_store(qtbot):
    async def scenario(win):
        sc = win.scenarios
        sc.options = FAST
        sc.box.buttons["overlap"].click()
        await wait_until(lambda: sc.run is not None
                         and len([a for a in win.processes_view.fleet.agents() if a.alive]) == 2, 60)
        return [a.pid for a in win.processes_view.fleet.agents()], sc.run.folder, sc.run

    rc, (pids, folder, run), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert all(procs.state(pid) is None for pid in pids)
    assert not os.path.exists(folder)
    assert run.status().state == "stopped"
    assert child_processes() == []


@pytest.mark.parametrize("key", ["overlap", "kill"])
def test_the_overlap_and_kill_scenarios_from_their_buttons_reach_their_proof_on_the_lanes_tab(qtbot, tmp_path, key):
    png = tmp_path / f"scenario-{key}-lanes.png"

    async def scenario(win):
        sc = win.scenarios
        sc.options = FAST
        sc.box.buttons[key].click()
        await wait_until(lambda: sc.run is not None and sc.run.status().step >= 1, 30)
        run = sc.run
        lanes = win.views["lanes"]
        caption = next(c for c in sc.captions if c is not sc.box.caption and c.parent() is lanes)
        await wait_until(lambda: run.status().over, 120)
        await wait_until(lambda: "Proof:" in caption.text_shown or "Not proved" in caption.text_shown, 10)
        def all_shown() -> bool:     # the tab has every job's end from the change feed
            n = lanes.follower.snapshot().counts if lanes.follower is not None else None
            return n is not None and n.jobs_submitted > 0 and n.jobs_finished == n.jobs_submitted
        await wait_until(all_shown, 30)
        lanes.refresh_now()
        assert lanes.grab().save(str(png))
        snap = lanes.follower.snapshot()
        return run.status(), dict(run.result), snap.overlaps, lanes.counters.text(), caption.text_shown

    rc, (status, result, overlaps, top_line, text), errors = run_window(scenario, size=(1280, 1024))
    assert rc == 0 and errors == []
    assert status.state == "proved", status.error
    assert "Proof:" in text
    if key == "overlap":
        # the Lanes tab draws the local round's overlapping runs in red and counts them
        assert result["local_overlaps"] > 0 and result["new_overlaps"] == 0
        assert overlaps == result["local_overlaps"] and f"overlapping runs {overlaps}" in top_line
    else:
        assert result["lanes_left"] == 0
    assert child_processes() == []
    keep_shot(png, f"scenario-{key}-lanes.png")
