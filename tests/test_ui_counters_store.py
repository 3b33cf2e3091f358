"""The Counters tab in store mode (``CountersView.set_source``), on a real qasync loop (offscreen).

Another session writes the store's board as staff agents would; the view, given a
``BoardFollower``, shows the store's counters (a double in red, saying which agents),
the agents, the store-wide figures and the scenario's text; ``set_source(None)``
brings the window's simulation back and closes the follower, as closing the window
does. Waits are on conditions with a timeout; nothing is timed.
"""

from __future__ import annotations

import pytest
from engines import open_test_store

from lanemon.agents.board_follow import BoardFollower
from lanemon.ui.counters.grid import ASSIGNED, CLAIMED, DOUBLE, FREE
from lanemon.ui.counters.view import STORE_SCENARIO
from lanemon.ui.kit import theme
from lanemon.ui.tools.testing import run_window, wait_until


@pytest.fixture(autouse=True)
def _app(qapp):
    from lanemon.ui.shell.app import application

    return application()


def _run(scenario):
    rc, value, errors = run_window(scenario)
    assert rc == 0 and errors == []
    return value


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_counters_tab_shows_a_stores_board_and_goes_back_to_its_simulation(request, engine):
    async def scenario(win):
        win.show_view("counters")
        v = win.views["counters"]
        other = await open_test_store(request, engine)     # the staff agents' side of the store
        try:
            claims = other.claims(counters=4)
            await claims.refresh()
            await claims.assign(1, "a1/C1", "a1/S1")
            await claims.assign(1, "a2/C7", "a2/S1")       # a double assignment
            await claims.claim(2, "a3/S1", "a3/C2", ttl=600)
            follower = BoardFollower(other.url.text)
            v.start()
            v.set_source(follower)
            await wait_until(lambda: len(v.grid.cells) == 4 and v.grid.cell(1).kind == DOUBLE, 30)
            await wait_until(lambda: "double assignments 1" in v.figures.text(), 30)
            double, claimed = v.grid.cell(1), v.grid.cell(2)
            shown = {
                "sim stopped": v.sim.state != "running",
                "double": (double.main, double.sub),
                "claimed": (claimed.kind, claimed.main, claimed.ttl_fraction is not None),
                "free": v.grid.cell(0).kind,
                "headline": v.headline.text(),
                "scenario": (v.scenario.isVisible(), v.scenario.text()),
                "red": next(v.figures.parts[i + 1] for i, (t, _, _) in enumerate(v.figures.parts)
                            if t.endswith("double assignments ")),
                "controls": v._controls.isEnabled(),
                "chips": sorted(c.name for c in v.staff.chips),
            }
            # the agents' next writes are followed: a vacate, then the double's other customer leaves
            await claims.vacate(1, "a1/C1")
            await wait_until(lambda: v.grid.cell(1).kind == ASSIGNED, 30)
            shown["after vacate"] = (v.grid.cell(1).main, v.grid.cell(1).sub)
            v.set_source(None)
            await wait_until(lambda: not follower.running, 30)
            await wait_until(lambda: len(v.grid.cells) == v.sim.config.counters, 30)
            shown["back"] = (v._controls.isEnabled(), v.scenario.isVisible(), v.figures.isVisible(),
                             v.source is None)
            return shown
        finally:
            await other.close()

    shown = _run(scenario)
    assert shown["sim stopped"]
    assert shown["double"] == ("×2", "DOUBLE · a1 + a2")
    assert shown["claimed"] == (CLAIMED, "a3/S1 → C2", True)
    assert shown["free"] == FREE
    assert shown["headline"].startswith("store  ·  ") and "lock: free" in shown["headline"]
    assert shown["scenario"] == (True, STORE_SCENARIO)
    assert shown["red"] == ("1", theme.REF_LONG, True)
    assert shown["controls"] is False
    assert shown["chips"] == ["a1", "a2", "a3"]
    assert shown["after vacate"] == ("C7", "by a2/S1")
    assert shown["back"] == (True, False, False, True)


def test_closing_the_window_closes_the_stores_follower(tmp_path):
    url = "sqlite:///" + str(tmp_path / "store.db").lstrip("/")
    followers, views = [], []

    async def scenario(win):
        from lanemon.store.sql import open_sql_store
        from lanemon.store.url import parse

        other = await open_sql_store(parse(url), create=True, name="agent")
        try:
            await other.claims(counters=2).refresh()
        finally:
            await other.close()
        win.show_view("counters")
        v = win.views["counters"]
        views.append(v)
        followers.append(BoardFollower(url))
        v.set_source(followers[0])
        await wait_until(lambda: v.last_store_state is not None and len(v.last_store_state.counters) == 2, 30)
        return followers[0].running

    assert _run(scenario) is True
    assert not followers[0].running
    late = BoardFollower(url)
    assert views[0].set_source(late) is False and not late.running   # a shut view takes none


def test_the_counters_tab_picks_its_source_like_the_lanes_tab(request, tmp_path):
    """The Counters tab has the Lanes tab's source picker: a store URL typed is followed once
    its board was read; a bad URL and a store that cannot be read are said beside it, the tab
    keeping its source; the simulation comes back from the list's first item."""
    async def scenario(win):
        win.show_view("counters")
        v = win.views["counters"]
        picker = v.source_picker
        other = await open_test_store(request, "sqlite")
        try:
            claims = other.claims(counters=3)
            await claims.refresh()
            await claims.assign(0, "a1/C1", "a1/S1")
            said = {}
            picker.choose("postgres:/nowhere")
            await wait_until(lambda: "Not followed" in picker.status.text(), 30)
            said["bad url"] = (picker.status.text(), v.source is None)
            picker.choose(f"sqlite:///{tmp_path}/no/such/dir/x.db")
            await wait_until(lambda: "Not followed" in picker.status.text()
                             and picker.status.text() != said["bad url"][0], 30)
            said["unreadable"] = (picker.status.text(), v.source is None)
            picker.choose(other.url.text)
            await wait_until(lambda: v.source is not None and len(v.grid.cells) == 3, 30)
            said["followed"] = (picker.source, picker.status.text(), v.grid.cell(0).kind)
            picker.choose("")
            await wait_until(lambda: v.source is None and v._controls.isEnabled(), 30)
            said["back"] = (picker.source, picker.status.text())
            return said
        finally:
            await other.close()

    said = _run(scenario)
    assert said["bad url"][1] and said["unreadable"][1]
    assert "postgres:/nowhere" in said["bad url"][0] or "URL" in said["bad url"][0], said
    assert "x.db" in said["unreadable"][0] or "no such" in said["unreadable"][0].lower(), said
    assert said["followed"][0] and said["followed"][0].startswith("sqlite:///")
    assert "Following" in said["followed"][1] and said["followed"][2] == ASSIGNED
    assert said["back"] == (None, "This window's own simulation.")
