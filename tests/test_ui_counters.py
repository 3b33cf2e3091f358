"""The counters view, driven through its widgets on a real qasync loop (offscreen).

Behaviour only: wait on conditions with a timeout, no timed asserts.
"""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from lanemon.counters import CounterState, SimConfig, Simulation
from lanemon.ui.counters.grid import CLAIMED, DOUBLE, cells_from
from lanemon.ui.tools.testing import run_window, wait_until


@pytest.fixture(autouse=True)
def _app(qapp):
    from lanemon.ui.shell.app import application

    return application()


def _view(win):
    win.show_view("counters")
    return win.views["counters"]


def _run(scenario):
    rc, value, errors = run_window(scenario)
    assert rc == 0 and errors == []
    return value


def test_start_stop_reset_through_the_buttons(qtbot):
    async def scenario(win):
        v = _view(win)
        v.form.speed.setValue(2.0)
        qtbot.mouseClick(v.start_btn, Qt.MouseButton.LeftButton)
        sim = v.sim
        await wait_until(lambda: v.last_snapshot is not None and v.last_snapshot.tallies.served >= 5, 20)
        running = sim.state
        qtbot.mouseClick(v.stop_btn, Qt.MouseButton.LeftButton)
        await wait_until(lambda: sim.state == "stopped", 10)
        served_at_stop = sim.snapshot().tallies.served
        await wait_until(lambda: v.last_snapshot.state == "stopped", 10)
        # once the view rests, its text shows the last snapshot (ticks may have skipped the text)
        await wait_until(lambda: not v.frame_timer.isActive(), 10)
        shown_at_rest = (v.tallies.text_of("served"), v.last_snapshot.tallies.served,
                         "".join(text for text, _, _ in v.headline.parts))
        qtbot.mouseClick(v.reset_btn, Qt.MouseButton.LeftButton)
        await wait_until(lambda: v.last_snapshot.state == "ready", 10)
        fresh = v.sim
        return running, served_at_stop, fresh is not sim, fresh.state, v.last_snapshot.tallies.served, shown_at_rest

    running, served, new, state, served_after, (shown, last_served, headline) = _run(scenario)
    assert running == "running" and served >= 5
    assert shown == f"{last_served:,}" and "stopped" in headline
    assert new and state == "ready" and served_after == 0


def test_strategy_change_resets_with_the_new_strategy_and_keeps_running(qtbot):
    async def scenario(win):
        v = _view(win)
        v.form.set_strategy("short_lock")
        assert v.start()
        await wait_until(lambda: v.running)
        old = v.sim
        v.form.set_strategy("long_lock")          # through the combo's signal
        await wait_until(lambda: v.last_snapshot is not None and v.last_snapshot.strategy == "long_lock")
        return old.state, v.sim is not old, v.sim.config.strategy, v.running

    old_state, new, strategy, running = _run(scenario)
    assert new and strategy == "long_lock" and running
    assert old_state in ("running", "stopped")   # cancelled: it finishes stopping on the loop


def test_speed_applies_live_and_zero_pauses(qtbot):
    async def scenario(win):
        v = _view(win)
        v.form.speed.setValue(1.0)
        v.start()
        await wait_until(lambda: v.sim.clock.now() > 0.1)
        v.form.speed.setValue(0.0)
        paused_at = v.sim.clock.now()
        await wait_until(lambda: v.last_snapshot.speed == 0.0)
        still = v.sim.clock.now()
        v.form.speed.setValue(3.0)
        await wait_until(lambda: v.sim.clock.now() > still + 0.3)
        return paused_at, still, v.sim.clock.speed

    paused_at, still, speed = _run(scenario)
    assert still == paused_at and speed == 3.0


def test_bad_ttl_and_staff_are_refused_with_a_reason(qtbot):
    """Typed TTL 0 and staff 0 are refused where the user looks (the message line) and the inputs
    hold the nearest accepted value; settings the model refuses start nothing (issue 19: the inputs
    can no longer hold 0, see tests/test_ui_small_fixes.py for the forced case)."""
    from PySide6.QtTest import QTest

    async def type_into(w, text):
        w.setFocus()
        await wait_until(lambda: w.hasFocus(), 10)
        w.selectAll()
        QTest.keyClicks(w, text)
        QTest.keyClick(w, Qt.Key.Key_Tab)
        await wait_until(lambda: not w.hasFocus(), 10)

    async def scenario(win):
        v = _view(win)
        await wait_until(lambda: v.form.ttl.isVisible(), 10)
        await type_into(v.form.ttl, "0")
        msg_ttl, err_ttl, ttl = v.message.text(), v.message.error, v.form.ttl.value()
        await type_into(v.form.staff, "0")
        msg_staff, err_staff, staff = v.message.text(), v.message.error, v.form.staff.value()
        v.form.ttl.setValue(1.0)
        v.form.staff.setValue(8)
        ok = v.start()
        ran = v.sim.config.staff, v.sim.config.ttl
        v.stop()
        return msg_ttl, err_ttl, ttl, msg_staff, err_staff, staff, ok, ran

    msg_ttl, err_ttl, ttl, msg_staff, err_staff, staff, ok, ran = _run(scenario)
    assert err_ttl and msg_ttl.startswith("TTL: “0") and ttl == pytest.approx(0.01)
    assert err_staff and msg_staff.startswith("Staff: “0”") and staff == 1
    assert ok and ran == (8, 1.0)
    with pytest.raises(ValueError, match="ttl"):
        SimConfig(ttl=0.0)
    with pytest.raises(ValueError, match="staff"):
        SimConfig(staff=0)


def test_compare_all_three_fills_the_table(qtbot):
    async def scenario(win):
        v = _view(win)
        qtbot.mouseClick(v.compare_btn, Qt.MouseButton.LeftButton)
        await wait_until(lambda: v.compare.results is not None, 60)
        t = v.compare.table
        rows = {t.item(r, 0).text(): [t.item(r, c).text() for c in range(t.columnCount())]
                for r in range(t.rowCount())}
        return v.compare.results, rows, v.compare.ratio_text(), v.compare_btn.isEnabled()

    results, rows, ratio, enabled = _run(scenario)
    assert results["short_lock"].double_assignments > 0
    assert results["long_lock"].double_assignments == 0 and results["claim"].double_assignments == 0
    assert set(rows) == {"short lock", "long lock", "claim"}
    assert rows["short lock"][2] != "0" and rows["claim"][2] == "0"
    assert "claim ÷ long lock throughput" in ratio and enabled


def test_a_double_assignment_shows_in_the_grid_and_the_tallies(qtbot):
    async def scenario(win):
        v = _view(win)
        v.form.set_strategy("short_lock")
        v.form.speed.setValue(1.0)
        v.start()
        await wait_until(lambda: any(c.kind == DOUBLE for c in v.grid.cells), 30)
        cell = next(c for c in v.grid.cells if c.kind == DOUBLE)
        view = v.last_snapshot.counters[cell.id]
        # the tallies follow the grid within 1 / TEXT_FPS s
        await wait_until(lambda: v.tallies.text_of("double_assignments") not in ("", "0"), 5)
        return cell, view, v.tallies.text_of("double_assignments"), v.tallies.color_of("double_assignments")

    cell, view, doubles, color = _run(scenario)
    assert view.conflict and len(cell.customers) >= 2 and cell.customers == view.customers
    assert int(doubles.replace(",", "")) >= 1
    from lanemon.ui.kit import theme
    assert color == theme.REF_LONG


def test_cells_model_maps_each_counter_state():
    from lanemon.counters import Board, ManualClock
    from lanemon.store.memory_claims import MemoryClaims

    clock = ManualClock()
    cfg = SimConfig(counters=4, ttl=2.0)
    board = Board(4, clock=clock, default_ttl=2.0)
    # a board driven by hand, read through the simulation's snapshot: the simulation's store
    sim = Simulation(cfg, claims=lambda **_: MemoryClaims(board))
    board.claim(1, "S1", "C1", 2.0)
    board.assign(2, "C2", "S2")
    board.assign(3, "C3", "S2")
    board.assign(3, "C4", "S3")  # a double assignment
    clock.advance(0.5)
    cells = cells_from(sim.snapshot())
    assert [c.kind for c in cells] == ["free", CLAIMED, "assigned", DOUBLE]
    assert cells[1].ttl_fraction == pytest.approx(0.75) and "S1" in cells[1].main
    assert cells[3].customers == ("C3", "C4") and "C3" in cells[3].main and "C4" in cells[3].main
    assert sim.snapshot().counters[3].state == CounterState.ASSIGNED
    # with a kept mapping: the same cells; counters that did not change keep their cell objects
    kept = {}
    first = cells_from(sim.snapshot(), kept)
    clock.advance(0.25)
    board.assign(0, "C5", "S4")
    second = cells_from(sim.snapshot(), kept)
    assert second == cells_from(sim.snapshot())
    assert second[0].kind == "assigned" and second[0] is not first[0]
    assert second[1].ttl_fraction == pytest.approx(0.625)        # the live claim moves on
    assert second[2] is first[2] and second[3] is first[3]


def test_expire_a_claim_and_walk_away(qtbot):
    async def scenario(win):
        v = _view(win)
        v.form.set_strategy("claim")
        v.form.speed.setValue(0.5)
        v.start()
        await wait_until(lambda: any(c.kind == CLAIMED for c in v.grid.cells), 20)
        v.form.speed.setValue(0.0)           # hold the board still while we pick
        target = next(c.id for c in v.grid.cells if c.kind == CLAIMED)
        v.grid.selected = target
        qtbot.mouseClick(v.expire_btn, Qt.MouseButton.LeftButton)
        expired = v.sim.snapshot().tallies.claims_expired
        state = v.sim.snapshot().counters[target].state
        v.staff.selected = "S2"
        qtbot.mouseClick(v.abandon_btn, Qt.MouseButton.LeftButton)
        v.form.speed.setValue(2.0)
        await wait_until(lambda: v.sim.snapshot().tallies.abandoned >= 1, 30)
        return expired, state, v.sim.abandoned, v.message.error

    expired, state, abandoned, error = _run(scenario)
    assert expired >= 1 and state == CounterState.FREE
    assert abandoned >= 1 and not error


def test_refresh_is_coalesced_and_stops_when_hidden(qtbot):
    async def scenario(win):
        v = _view(win)
        v.form.counters.setValue(64)
        v.form.speed.setValue(2.0)
        v.start()
        await wait_until(lambda: v.grid_frames >= 10 and v.frames >= 2)
        win.show_view("runs")
        await wait_until(lambda: not v.frame_timer.isActive())
        frames, grid = v.frames, v.grid_frames
        events = []
        unsubscribe = v.sim.subscribe(events.append)
        await wait_until(lambda: len(events) >= 50)   # events keep coming; nothing is drawn for a hidden view
        unsubscribe()
        hidden = (v.frames - frames, v.grid_frames - grid)
        win.show_view("counters")
        await wait_until(lambda: v.grid_frames > grid and v.frames > frames)
        return hidden, v.frame_timer.interval(), len(v.grid.cells)

    hidden, interval, cells = _run(scenario)
    assert hidden == (0, 0) and interval >= 33 and cells == 64


def _snapshots_of_a_busy_claim_run(frames: int) -> list:
    from lanemon.counters.clock import VirtualTimeLoop

    async def go():
        sim = Simulation(SimConfig(strategy="claim", staff=16, counters=64, customers=400, ttl=0.5,
                                   abandon_rate=0.2, time_limit=60))
        task = asyncio.get_running_loop().create_task(sim.run())
        out = []
        for _ in range(frames):
            await sim.clock.sleep(0.05)
            out.append(sim.snapshot())
        sim.stop()
        await asyncio.gather(task, return_exceptions=True)
        return out

    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(go())


def test_grid_and_staff_partial_repaints_match_a_full_paint(qapp):
    """Only changed cells/chips are repainted; what is on screen equals a full paint (texts
    wider than a cell, drawn over the neighbours, included)."""
    from lanemon.ui.counters.grid import CountersGrid, StaffStrip, chips_from

    grid, staff = CountersGrid(), StaffStrip()
    grid.resize(333, 211)   # small cells: "S3's claim expired" is wider than its cell
    staff.resize(400, 60)
    grid.show()
    staff.show()
    for _ in range(3):      # the windows' activation, the focus it moves and the repaints of its edge
        qapp.processEvents()
    snaps = _snapshots_of_a_busy_claim_run(40)
    assert any(len(c.sub) > 12 for s in snaps for c in cells_from(s))
    for snap in snaps:
        grid.set_cells(cells_from(snap))
        staff.set_chips(chips_from(snap))
        qapp.processEvents()
        for w in (grid, staff):
            on_screen = w.screen().grabWindow(w.winId()).toImage()
            assert on_screen == w.grab().toImage()
    grid.close()
    staff.close()


def test_a_planned_grid_repaint_waits_for_present_and_a_new_plan_presents_the_last(qapp):
    """``plan_cells`` takes the model and works out what to repaint without asking Qt: no
    paint until ``present()`` (the live view asks in the loop's next turn); a plan made
    before the last one was presented presents that one first, so what is on screen after
    ``present`` equals a full paint."""
    from lanemon.ui.counters.grid import CountersGrid

    grid = CountersGrid()
    grid.resize(333, 211)
    grid.show()
    snaps = _snapshots_of_a_busy_claim_run(12)
    grid.set_cells(cells_from(snaps[0]))
    qapp.processEvents()
    unpresented = False
    for i, snap in enumerate(snaps[1:]):
        before = grid.paints
        grid.plan_cells(cells_from(snap))
        if i % 3 == 2:
            unpresented = True           # planned again before presented: the next plan presents it
            continue
        qapp.processEvents()
        if unpresented:
            assert grid.paints > before  # the plan before this one, presented by it
        else:
            assert grid.paints == before  # nothing asked of Qt yet
        unpresented = False
        grid.present()
        qapp.processEvents()
        on_screen = grid.screen().grabWindow(grid.winId()).toImage()
        assert on_screen == grid.grab().toImage()
    grid.close()


def test_shutdown_during_a_long_compare_ends_the_compare_and_its_thread(qtbot, monkeypatch):
    """Issue 20: Ctrl+Q during "Compare all three" over 1,000,000 customers. The view's
    shutdown hook (run by the window's shutdown) returns only when the compare's worker
    thread has stopped computing; no task of the view is left running."""
    import threading

    from test_counters_cancel import watch_compare

    seen = watch_compare(monkeypatch)

    async def scenario(win):
        v = _view(win)
        v.form.customers.setValue(1_000_000)
        assert v.start()                       # a live run too
        task = v.compare_all()
        await wait_until(seen["entered"].is_set, 30)   # in the work: from here on, any moment will do
        await win.shutdown()                   # what closing the window runs
        return (task.done(), seen["running"], seen["outcome"], v.sim, v.compare_btn.isEnabled(),
                [t.name for t in threading.enumerate() if t.name.startswith("lanemon-compare")])

    done, running, outcome, sim, enabled, threads = _run(scenario)
    assert done and not running and threads == []
    assert isinstance(outcome, asyncio.CancelledError)
    assert sim is None and enabled


def test_customers_turned_away_show_in_the_tallies_and_the_compare_table(qtbot):
    from lanemon.ui.kit import theme

    async def scenario(win):
        v = _view(win)
        v.form.arrival_rate.setValue(10_000)   # the default queue fills in a tenth of a second
        v.form.customers.setValue(3_000)
        task = v.compare_all()
        await wait_until(task.done, 60)
        t = v.compare.table
        served = {t.item(r, 0).text(): t.item(r, 1) for r in range(t.rowCount())}
        compared = {name: (item.text(), item.foreground().color().name(), item.toolTip())
                    for name, item in served.items()}
        v.form.customers.setValue(0)           # endless, live
        v.form.speed.setValue(1.0)
        v.start()
        await wait_until(lambda: v.last_snapshot is not None and v.last_snapshot.tallies.turned_away > 0, 30)
        v.stop()
        await wait_until(lambda: v.last_snapshot.state == "stopped" and not v.frame_timer.isActive(), 10)
        return (v.compare.results, compared, v.last_snapshot.tallies, v.tallies.text_of("turned_away"),
                v.tallies.color_of("turned_away"), v.sim.config)

    results, compared, t, shown, color, config = _run(scenario)
    for key, label in (("short_lock", "short lock"), ("long_lock", "long lock"), ("claim", "claim")):
        r = results[key]
        assert r.turned_away > 0 and r.arrived == 3_000
        text, cell_color, tip = compared[label]
        assert text == f"{r.served:,}" and cell_color == theme.WARN and f"{r.turned_away:,} turned away" in tip
    assert t.turned_away > 0 and shown == f"{t.turned_away:,}" and color == theme.WARN
    assert t.arrived == t.served + t.queued + t.with_staff + t.turned_away
    assert t.queued <= config.queue_limit + config.staff


def test_an_arrival_flood_goes_in_chunks_and_reset_releases_the_run(qtbot):
    """Issue 19 finding 9: arrivals 9,999/s at 9x run behind real time; the window's run
    admits them at most ``ARRIVAL_CHUNK`` per loop turn (other tasks run in between), and
    Reset leaves nothing holding the old run."""
    import gc
    import weakref

    from lanemon.ui.counters.view import ARRIVAL_CHUNK

    async def scenario(win):
        v = _view(win)
        v.form.customers.setValue(0)          # endless
        v.form.arrival_rate.setValue(9_999)
        v.form.speed.setValue(9.0)
        assert v.start()
        sim = v.sim
        seen = [sim.arrived]
        while sim.arrival_yields < 20:        # behind real time: chunks given back 20 times
            await asyncio.sleep(0)
            seen.append(sim.arrived)
        v.stop()
        old = weakref.ref(sim)
        del sim
        await wait_until(lambda: v.sim.state == "stopped", 10)
        steps = [b - a for a, b in zip(seen, seen[1:])]
        v.reset()
        await wait_until(lambda: v.last_snapshot is not None and v.last_snapshot.state == "ready", 10)
        gc.collect()
        return steps, old() is None

    steps, released = _run(scenario)
    assert sum(steps) > 20 and max(steps) <= ARRIVAL_CHUNK
    assert released


@pytest.mark.parametrize("width", [240, 420, 900])
def test_a_staff_chip_never_draws_what_it_does_over_its_name(qtbot, width):
    """At 1024x768 in presenter mode the long-lock holder's chip read "S5 · LOCKguides C5 → 5":
    what a staff member does is elided in the room its name leaves."""
    from lanemon.ui.counters.grid import Chip, StaffStrip
    from lanemon.ui.kit import theme

    strip = StaffStrip()
    qtbot.addWidget(strip)
    chips = [Chip(f"S{i}", "guiding", f"guides C{i} → {i} (customer c-{i:05d})", i == 5) for i in range(1, 9)]
    try:
        for scale in (1.0, 1.5):
            theme.apply_font_and_palette(QApplication.instance(), scale)
            strip.apply_fonts()
            strip.resize(width, 100)
            strip.set_chips(chips)
            strip.show()
            qtbot.waitExposed(strip)
            boxes = strip.text_boxes()
            assert len(boxes) == len(chips)
            for (name, told), chip in zip(boxes, chips):
                if told is not None:
                    assert not name.intersects(told), (scale, chip.name, name, told)
    finally:
        theme.apply_font_and_palette(QApplication.instance(), 1.0)


def test_counters_and_staff_are_picked_with_the_keyboard_too(qtbot):
    """The grid and the staff strip were picked with the mouse alone (no focus, no keys): a
    keyboard user's Expire always hit the freshest claim and Walk away always S1. Both take the
    focus (Tab) and move their pick with the arrows, Home and End; Enter unpicks."""
    from PySide6.QtTest import QTest

    from lanemon.ui.counters.grid import moved

    # the rule, on a 3-wide layout of 7 items: from nothing, then by item and by row, clamped
    assert moved(None, 7, 3, Qt.Key.Key_Down) == 0
    assert [moved(4, 7, 3, k) for k in (Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up, Qt.Key.Key_Down,
                                        Qt.Key.Key_Home, Qt.Key.Key_End)] == [3, 5, 1, 6, 0, 6]
    assert moved(6, 7, 3, Qt.Key.Key_Down) == 6 and moved(0, 7, 3, Qt.Key.Key_Up) == 0
    assert moved(2, 7, 3, Qt.Key.Key_A) is None and moved(None, 0, 3, Qt.Key.Key_Down) is None

    async def scenario(win):
        v = _view(win)
        await wait_until(lambda: len(v.grid.cells) > 2 and len(v.staff.chips) > 1, 10)
        clicked = []
        v.grid.counter_clicked.connect(clicked.append)
        seen = {}
        for widget in (v.grid, v.staff):
            widget.setFocus(Qt.FocusReason.TabFocusReason)
            await wait_until(lambda w=widget: QApplication.focusWidget() is w, 10)
            picks = []
            for k in (Qt.Key.Key_Down, Qt.Key.Key_Right, Qt.Key.Key_End, Qt.Key.Key_Home, Qt.Key.Key_Return):
                QTest.keyClick(QApplication.focusWidget(), k)
                picks.append(widget.selected)
            seen[widget is v.grid] = picks
        v.staff.setFocus()
        QTest.keyClick(v.staff, Qt.Key.Key_Right)           # S1, picked for Walk away
        return seen, clicked, v.staff.selected, len(v.grid.cells), [c.name for c in v.staff.chips]

    seen, clicked, staff_pick, n, names = _run(scenario)
    assert seen[True] == [0, 1, n - 1, 0, None]              # counters: ids 0..n-1
    assert clicked == [0, 1, n - 1, 0]                       # each pick told, as a click is
    assert seen[False] == [names[0], names[1], names[-1], names[0], None]
    assert staff_pick == names[0]
