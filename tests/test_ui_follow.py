"""The Lanes & queues tab follows a store (source picker), on a real qasync loop.

An SQLite store is written by "other processes" (sessions of this test):
two runs of one workspace at once (their own lanes: unfenced saves), a lane
held by a named agent, a refused write. The tab, switched to the store through
its source picker, shows them -- the ledger row, the overlaps in red and in
the top line, the agent and lease of the held lane, the runs' owners -- then a
bad URL is refused beside the picker while the tab keeps following, Add
submits to the store, and switching back shows the window's own simulation.
Every check waits for what the window's models show.
"""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pytest

from lanemon.lanes import Reservation, State
from lanemon.lanes.records import StaleWrite
from lanemon.store.sql import open_sql_store
from lanemon.store.sql.backend import JobSpec
from lanemon.store.url import parse
from lanemon.ui.kit.source_picker import SIMULATED
from lanemon.ui.tools.testing import run_window, wait_until

SHOT_ENV = "LANEMON_FOLLOW_SHOT"   # where to copy the grab (the test always writes one in tmp_path)


@pytest.fixture(autouse=True)
def _app(qapp):
    from lanemon.ui.shell.app import application

    return application()


async def _fill_store(url: str) -> dict:
    """What other processes did to the store: overlapping runs, a held lane, a refused write."""
    other = await open_sql_store(parse(url), create=True, name="agent-x")
    try:
        a, b = other.records(writer="agent-a"), other.records(writer="agent-b")
        ids = await other.submit([JobSpec(workspace="ws-07", queue="reservations", seconds=1.0),
                                  JobSpec(workspace="ws-07", queue="cafe", seconds=1.0),
                                  JobSpec(workspace="ws-08", queue="cafe", seconds=1.0),
                                  JobSpec(workspace="ws-09", queue="cafe")])
        first, second = (await a.load(ids[0])), (await b.load(ids[1]))
        other.backend.clock_skew = -12.0      # (the store clock of these saves: runs seconds long)
        await a.save(first._replace(state=State.RUNNING))
        other.backend.clock_skew = -9.0
        await b.save(second._replace(state=State.RUNNING))
        other.backend.clock_skew = -4.0
        await a.save(first._replace(state=State.SUCCEEDED))
        other.backend.clock_skew = 0.0
        lanes = other.lanes("scheduled", clock=time.monotonic, emit=None)
        held = await lanes.aclaim("ws-08", f"cafe#{ids[2]}")
        token = await lanes.aclaim("ws-09", f"cafe#{ids[3]}")
        await lanes.arevoke("ws-09")
        zombie = other.records(writer="agent-z")
        with pytest.raises(StaleWrite):
            await zombie.save(Reservation(id=ids[3], workspace="ws-09", queue="cafe", state=State.RUNNING,
                                          created_at=0.0, updated_at=0.0), fence=(token,))
        return {"ids": ids, "held_epoch": held.epoch, "zombie_epoch": token.epoch}
    finally:
        # the lane stays in the store for its lease (10 s) after the session ends
        await other.close()


def test_the_lanes_tab_follows_a_store_shows_overlaps_and_the_ledger_and_comes_back(tmp_path):
    url = "sqlite:///" + str(tmp_path / "store.db").lstrip("/")
    shot = tmp_path / "lanes-store-mode.png"

    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        picker = view.source_picker
        assert picker.text() == "" and picker.box.currentText() == SIMULATED and not view.ledger_box.isVisible()
        made = await _fill_store(url)
        ids = made["ids"]

        picker.choose(url)
        await wait_until(lambda: view.follower is not None and view.ledger_model.rowCount() == 1, 30)
        await wait_until(lambda: "overlapping runs 2" in view.counters.text(), 30)
        assert view.ledger_box.isVisible() and picker.source == url and picker.recent()[0] == url
        entry = view.ledger_model.entry(0)
        assert (entry.writer, entry.job_id, entry.state, entry.epoch_held, entry.epoch_current) == \
            ("agent-z", ids[3], "running", made["zombie_epoch"], None)
        assert "refused writes (ledger) 1" in view.counters.text()
        assert "1 in the ledger" in view.ledger_title.text() and "agent-z 1" in view.ledger_title.text()
        # the held lane: its agent, epoch and lease
        lane = view.lanes_model.row_data(view.lanes_model.row_of("ws-08"))
        assert (lane.agent, lane.epoch) == ("agent-x", made["held_epoch"]) and lane.lease_until is not None
        # both queues from the store; the runs' owners on the timeline, the overlaps in red
        await wait_until(lambda: view.queue_models["cafe"].row_of(ids[1]) >= 0, 10)
        row = view.queue_models["cafe"].row_data(view.queue_models["cafe"].row_of(ids[1]))
        assert row.label == "running" and row.detail.startswith("agent-b")
        await wait_until(lambda: view.timeline.counts.get("overlap") == 2, 10)
        assert {"agent-a", "agent-b"} <= set(view.timeline.labels)
        # controls of the window's own scheduler are off; Add submits to the store
        assert not view.controls.hold_button.isEnabled() and view.controls.add_button.isEnabled()
        view.refresh_now()
        assert view.grab().save(str(shot))

        view.controls.fill_simulated("ws-10", "reservations", 0.5)
        view.controls.add_button.click()
        await wait_until(lambda: "submitted to the store" in view.controls.notice.text(), 10)
        await wait_until(lambda: view.queue_models["reservations"].row_of(ids[-1] + 1) >= 0, 10)

        # a bad URL is said beside the picker; the tab keeps following
        picker.choose("nonsense")
        await wait_until(lambda: "Not followed" in picker.status.text(), 10)
        assert view.follower is not None and view.follower.connected and picker.box.currentText() == url

        # the store goes away: said in the top line, the window keeps running; back: followed again
        db = tmp_path / "store.db"
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / (db.name + suffix)).unlink(missing_ok=True)
        await wait_until(lambda: "store lost" in view.counters.text(), 30)
        again = await open_sql_store(parse(url), create=True, name="agent-y")
        try:
            await again.submit([JobSpec(workspace="ws-11", queue="cafe")])
            await wait_until(lambda: "following sqlite store" in view.counters.text()
                             and "jobs 0/1" in view.counters.text(), 30)
        finally:
            await again.close()

        # back to this window's simulation
        picker.choose("")
        await wait_until(lambda: view.follower is None and not view.ledger_box.isVisible(), 10)
        await wait_until(lambda: view.queue_models["cafe"].rowCount() == 0
                         and "max runs at once per workspace" in view.counters.text(), 10)
        assert view.controls.hold_button.isEnabled() and view.ledger_model.rowCount() == 0
        return True

    rc, ok, errors = run_window(scenario)
    assert rc == 0 and ok and errors == []
    assert shot.stat().st_size > 10_000
    if os.environ.get(SHOT_ENV):
        shutil.copyfile(shot, os.environ[SHOT_ENV])


def test_the_picker_keeps_recent_urls_redacted_newest_first_in_the_settings(tmp_path):
    from lanemon.ui.kit.source_picker import SourcePicker
    from lanemon.ui.shell import settings

    store = settings.open_store(str(tmp_path / "kept.ini"))
    picker = SourcePicker(store)
    asked: list[str] = []
    picker.chosen.connect(asked.append)
    picker.set_source("sqlite:///a.db")
    picker.set_source("postgresql://me:secret@db.example/lanes")
    picker.set_source("sqlite:///a.db")
    assert picker.recent() == ["sqlite:///a.db", "postgresql://me:***@db.example/lanes"]
    again = SourcePicker(settings.open_store(str(tmp_path / "kept.ini")))   # the next start
    assert again.recent() == picker.recent() and "secret" not in (tmp_path / "kept.ini").read_text()
    assert asked == []                         # showing a source is not a user's choice
    picker.choose("")
    assert asked == [""] and picker.box.currentText() == SIMULATED


def test_following_a_store_is_named_on_the_chart_as_the_windows_own_stall(tmp_path):
    """The follower's import, its first read of the store and the tab drawn anew run on the
    loop: at a Go they were an unlabelled spike on the chart ("blocked 118 ms in
    _QEventLoop.run_forever" under Xvfb). They are the window's own stall, named and shaded."""
    url = "sqlite:///" + str(tmp_path / "store.db").lstrip("/")

    async def scenario(win):
        await _fill_store(url)
        win.show_view("lanes")
        view = win.views["lanes"]
        none = np.empty(0)      # (no tick times: each span's label and start are what is read)
        before = [label for label, _t0, _t1 in win.chart.own_spans(none)]
        assert await view.follow(url)
        after = [label for label, _t0, _t1 in win.chart.own_spans(none)]
        await view.use_window()
        return before, after

    rc, (before, after), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert "following a store" not in before
    assert after.count("following a store") == 1
