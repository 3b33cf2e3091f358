"""A talk that drives real processes (offscreen, a real qasync loop, real ``lanemon agent``
processes): a step starts a scenario on its throwaway SQLite store, a later one starts an
agent on that store and pauses it, the next stops the scenario and the agents, the last
starts an agent on a store the action names. What the window shows is asserted at each
step (the Lanes tab following the store, the scenario's caption, the Processes table), and
that closing the window leaves no process. Every wait is for a condition (with a timeout).

PNGs are copied to ``$LANEMON_SHOTS`` when it is set.
"""

from __future__ import annotations

import os

import pytest

from lanemon import procs
from lanemon.agents.scenarios import ScenarioOptions
from lanemon.bench._common import child_processes
from lanemon.talk import parse
from lanemon.ui.tools.testing import keep_shot, run_window, wait_until

FAST = ScenarioOptions(lease_s=1.0, long_job_s=5.0, workspaces=2, jobs_per_ws=4, job_s=0.6,
                       counters_window_s=3.0, wait_s=90.0)

TALK = '''
title = "Real processes"

[[step]]
title = "Two agents, each with its own lanes"
do = [ { scenario = "overlap" } ]

[[step]]
title = "One more agent on the same store, paused"
do = [ { agents = "start", count = 1 }, { agents = "pause" } ]

[[step]]
title = "Stop it all"
do = [ { scenario = "stop" }, { agents = "stop" } ]

[[step]]
title = "An agent on a store of our own"
do = [ { tab = "processes" }, { agents = "start", count = 1, store = "STORE" } ]
'''


@pytest.fixture(autouse=True)
def _app(window_app):
    return window_app


def _grab(win, png) -> None:
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication
    QApplication.sendPostedEvents(None, QEvent.Type.UpdateRequest)
    assert win.grab().save(str(png))


def _exists(path) -> bool:
    return os.path.exists(path)


def _row(view, name: str):
    view.refresh_now()
    return next((r for r in view.rows if r.kind == "agent" and r.name == name), None)


def test_a_talk_runs_a_scenario_pauses_an_agent_on_its_store_stops_them_and_leaves_no_process(qtbot, tmp_path):
    own = tmp_path / "own.db"
    own_url = "sqlite:///" + str(own).lstrip("/")
    png = tmp_path / "talk-agents-paused.png"

    async def scenario(win):
        from lanemon.store.sql import open_sql_store
        from lanemon.store.url import parse as parse_url

        made = await open_sql_store(parse_url(own_url), create=True, name="test")   # (agents open, never make, a store)
        await made.close()
        p, sc, lanes, view = win.talk_player, win.scenarios, win.views["lanes"], win.processes_view
        sc.options = FAST
        p.load(parse(TALK.replace("STORE", own_url)))
        # step 1: the action is done once the scenario's store is open and the Lanes tab follows it
        await wait_until(lambda: not p.busy, 120)
        run = sc.run
        caption = next(c for c in sc.captions if c is not sc.box.caption and c.parent() is lanes)
        one = (run.key, run.throwaway, lanes.follower is not None and lanes.follower.url.text == run.url,
               win.tabs.currentWidget() is win._pages["lanes"], caption.isVisible(), caption.text_shown)
        await wait_until(lambda: len([a for a in view.fleet.agents() if a.alive]) == 2, 90)
        scenario_agents = {a.name for a in view.fleet.agents()}

        # step 2: an agent on the scenario's store (the Processes tab's field follows the Lanes tab), paused
        p.next()
        await wait_until(lambda: not p.busy, 60)
        (mine,) = p.agents_started
        await wait_until(lambda: (r := _row(view, mine)) is not None and r.state == "paused", 30)
        agent = next(a for a in view.fleet.agents() if a.name == mine)
        win.show_view("processes")
        view.refresh_now()
        _grab(win, png)
        two = (mine, mine in scenario_agents, agent.spec.store_url == run.url, view.store_url() == run.url,
               view.last_result.message, [t for t in view.row_texts() if t[0] == mine],
               sorted(r.state for r in view.rows if r.kind == "agent" and r.name != mine))
        pids = [a.pid for a in view.fleet.agents()]
        folder = run.folder

        # step 3: the scenario stopped (its agents, its store), the talk's agent stopped too
        p.next()
        await wait_until(lambda: not p.busy, 120)
        await wait_until(lambda: all(procs.state(pid) is None for pid in pids), 60)
        # (the fleet's reaper hears of the exit a little after the process is gone: "stopping" till then)
        await wait_until(lambda: all(a.state != "stopping" for a in view.fleet.agents() if a.name == mine), 30)
        three = (sc.run is None, lanes.follower is None, _exists(folder), caption.isVisible(),
                 [a.state for a in view.fleet.agents() if a.name == mine])

        # step 4: an agent on the store the action names
        p.next()
        await wait_until(lambda: not p.busy, 60)
        (_, second) = p.agents_started
        await wait_until(lambda: (r := _row(view, second)) is not None and r.heartbeat_age_s is not None, 90)
        agent = next(a for a in view.fleet.agents() if a.name == second)
        four = (agent.spec.store_url, view.url.text(), view.url_note.text(), _row(view, second).state,
                win.tabs.currentWidget() is win._pages["processes"])
        return one, two, three, four, [a.pid for a in view.fleet.agents()], p.errors

    rc, (one, two, three, four, pids, said), errors = run_window(scenario, size=(1280, 1024))
    assert rc == 0 and errors == [] and said == []
    key, throwaway, follows, on_lanes, caption_shown, caption_text = one
    assert (key, throwaway, follows, on_lanes, caption_shown) == ("overlap", True, True, True, True)
    assert caption_text.startswith("Scenario: Overlap")
    mine, theirs, on_its_store, field, said_paused, rows, others = two
    assert not theirs and on_its_store and field
    assert said_paused.startswith(f"SIGSTOP sent to {mine} (pid ")
    assert len(rows) == 1 and rows[0][3] == "paused"
    assert others and "paused" not in others          # the scenario's agents: the talk paused its own
    # (paused at once, the talk's agent may not have set up its SIGTERM handler yet: -15)
    assert three[:4] == (True, True, False, False) and three[4] in (["exited 0"], ["exited -15"])
    assert four == (own_url, own_url, "from the talk", "running", True)
    assert all(procs.state(pid) is None for pid in pids)                 # the window's close stopped it
    assert child_processes() == []
    keep_shot(png, "talk-agents-paused.png")
