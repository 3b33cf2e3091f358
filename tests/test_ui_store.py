"""The window on a shared store (``lanemon --store URL``), driven on a real qasync loop.

The Lanes & queues tab's scheduler keeps its lanes and records in the store:
another session sees its runs and cannot take a lane it holds; a lane another
process holds makes the window's job wait, then run once it is given back; a
store that cannot be opened is said in the window, which stays up.
"""

from __future__ import annotations

import asyncio

import pytest
from engines import open_test_store

from lanemon.lanes import SimulatedWork, State
from lanemon.store.url import parse
from lanemon.ui.tools.testing import run_window, wait_until


@pytest.fixture(autouse=True)
def _app(qapp):
    from lanemon.ui.shell.app import application

    return application()


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_lanes_tab_runs_on_the_store_and_waits_for_a_lane_another_process_holds(tmp_path, request, engine):
    if engine == "sqlite":
        url = "sqlite:///" + str(tmp_path / "store.db").lstrip("/")
    else:
        url = request.getfixturevalue("postgres_url")

    async def scenario(win):
        assert f"store {engine}:" in win.windowTitle() and win.store_label.text().startswith(f"store {engine}:")
        scheduler = win.views["lanes"].scheduler
        other = await open_test_store(request, engine)  # another process's session on the store
        try:
            outside = other.lanes("scheduled", clock=lambda: 0.0, emit=None)
            held = await outside.aclaim("ws-b", "agent#1")
            a = await scheduler.submit("reservations", "ws-a", SimulatedWork(0))
            b = await scheduler.submit("cafe", "ws-b", SimulatedWork(0))
            await wait_until(lambda: scheduler.store.get(a) is not None
                             and scheduler.store.get(a).state is State.SUCCEEDED, 30)
            assert scheduler.job(b).phase == "waiting"      # the other process holds ws-b
            dumped = await other.dump()
            assert {j["id"]: j["state"] for j in dumped["jobs"]} == {a: "succeeded", b: "queued"}
            assert await outside.arelease(held) is True     # given back without telling the window
            await wait_until(lambda: scheduler.store.get(b).state is State.SUCCEEDED, 30)
            dumped = await other.dump()
            assert [j["state"] for j in dumped["jobs"]] == ["succeeded", "succeeded"]
            assert {h["owner"] for h in dumped["history"]} >= {"agent#1"}
            return dumped["sessions"]
        finally:
            await other.close()

    rc, sessions, errors = run_window(scenario, store_url=url)
    assert rc == 0 and errors == []
    assert any(s["name"] == "lanemon-window" for s in sessions)

    async def after():
        store = await open_test_store(request, engine)
        try:
            return await store.dump()
        finally:
            await store.close()
    dumped = asyncio.run(after())
    # the window closed its session after its scheduler let go of every lane
    assert dumped["lanes"] == [] and not any(s["name"] == "lanemon-window" for s in dumped["sessions"])


def test_a_store_that_cannot_be_opened_is_said_in_the_window_which_stays_up():
    url = "postgresql://ada:hunter2@127.0.0.1:1/lanes"

    async def scenario(win):
        await wait_until(lambda: win.warning.isVisible(), 30)
        text = win.warning.text()
        scheduler = win.views["lanes"].scheduler
        job = await scheduler.submit("reservations", "ws-a", SimulatedWork(0))   # its own simulation runs
        await wait_until(lambda: scheduler.store.get(job).state is State.SUCCEEDED, 30)
        return text, win.windowTitle() + (win.store_label.text() if win.store_label else "")

    rc, (text, title), errors = run_window(scenario, store_url=url)
    assert rc == 0 and errors == []
    assert text.startswith("Store not opened: ") and text.endswith("This window runs its own simulation.")
    assert "unreachable" in text and "hunter2" not in text and "\n" not in text
    assert "store" not in title


def test_open_lanes_store_refuses_in_one_line_and_memory_is_the_window_s_own():
    from lanemon.ui.shell.app import open_lanes_store

    assert asyncio.run(open_lanes_store("memory:")) == (None, None)
    store, problem = asyncio.run(open_lanes_store("sqlite:///nonexistent-folder-x/lanes.db"))
    assert store is None and "does not exist" in problem and "\n" not in problem
    assert parse("sqlite:///nonexistent-folder-x/lanes.db").engine == "sqlite"
