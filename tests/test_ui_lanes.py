"""The lanes & queues view, driven through its own widgets on a real qasync loop.

Every check waits for a condition seen *in the window's models* (what the
tables show) with a timeout; nothing depends on how long something takes.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from lanemon.ui.tools.testing import activated, add_simulated_job, run_window, wait_until


@pytest.fixture(autouse=True)
def _app(qapp):
    from lanemon.ui.shell.app import application

    return application()


def _shown(view, queue: str, jid: int):
    """The row the window shows for job ``jid`` in ``queue`` (None if not shown)."""
    m = view.queue_models[queue]
    row = m.row_of(jid)
    return None if row < 0 else m.row_data(row)


def _label(view, queue: str, jid: int) -> str | None:
    r = _shown(view, queue, jid)
    return None if r is None else r.label


def _lane(view, ws: str):
    m = view.lanes_model
    row = m.row_of(ws)
    return None if row < 0 else m.row_data(row)


async def _add(view, ws: str, queue: str, seconds: float, fails: bool = False) -> int:
    jid = await add_simulated_job(view, ws, queue, seconds, fails)
    await wait_until(lambda: _shown(view, queue, jid) is not None, 10)
    return jid


def _lanes_tab(win):
    """The Lanes & queues tab shown: its view, controls and scheduler."""
    win.show_view("lanes")
    view = win.views["lanes"]
    return view, view.controls, view.scheduler


def _choose(view, queue: str, jid: int) -> None:
    """Click the job's row: the controls take its number and workspace."""
    t = view.queue_tables[queue]
    row = view.queue_models[queue].row_of(jid)
    t.setCurrentIndex(view.queue_models[queue].index(row, 0))


async def _chosen_running(view, ws: str, queue: str, seconds: float) -> int:
    """A simulated job added, waited for until it runs, then picked by a click on its row."""
    jid = await _add(view, ws, queue, seconds)
    await wait_until(lambda: _label(view, queue, jid) == "running", 10)
    _choose(view, queue, jid)
    return jid


def test_add_burst_cancel_and_bad_input(qtbot):
    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        c = view.controls
        assert c.workspace_box.currentText() == "ws-01" and c.length.value() == 2.0

        # bad input is said, nothing is submitted
        c.set_workspace("   ")
        c.add_button.click()
        empty_error = c.notice.text()
        c.set_workspace("two words")
        c.add_button.click()
        space_error = c.notice.text()
        c.set_job(0)
        c.cancel_button.click()
        no_job_error = c.notice.text()
        submitted_after_errors = view.scheduler.jobs_submitted

        running = await _add(view, "ws-01", "reservations", 60.0)
        await wait_until(lambda: _label(view, "reservations", running) == "running", 10)
        await wait_until(lambda: (_lane(view, "ws-01") or ()) and _lane(view, "ws-01").job_id == running)

        # burst: 6 jobs over ws-01..ws-03 in the cafe queue
        c.queue_box.setCurrentText("cafe")
        c.length.setValue(60.0)
        c.burst_jobs.setValue(6)
        c.burst_ws.setValue(3)
        c.burst_button.click()
        await wait_until(lambda: view.queue_models["cafe"].rowCount() == 6, 10)
        cafe = [view.queue_models["cafe"].row_data(r) for r in range(6)]

        # cancel a queued job (chosen by clicking its row) and the running one
        queued = next(r.id for r in cafe if r.label == "queued" and r.workspace == "ws-01")
        _choose(view, "cafe", queued)
        chosen = c.job_box.value()
        c.cancel_button.click()
        await wait_until(lambda: _label(view, "cafe", queued) == "cancelled", 10)
        _choose(view, "reservations", running)
        c.cancel_button.click()
        await wait_until(lambda: _label(view, "reservations", running) == "cancelled", 10)
        stop_said = c.notice.text()
        return (empty_error, space_error, no_job_error, submitted_after_errors, cafe, queued,
                chosen, stop_said, view.checker.max_active, view.checker.violations)

    rc, value, errors = run_window(scenario)
    (empty_error, space_error, no_job_error, submitted_after_errors, cafe, queued, chosen,
     stop_said, max_active, violations) = value
    assert rc == 0 and errors == []
    assert "workspace name" in empty_error and "not a workspace name" in space_error
    assert "Choose a job" in no_job_error
    assert submitted_after_errors == 0
    assert sorted(r.workspace for r in cafe) == ["ws-01", "ws-01", "ws-02", "ws-02", "ws-03", "ws-03"]
    # ws-01 is held by the reservations job: both of its cafe jobs wait; ws-02 and ws-03 run
    assert {r.workspace for r in cafe if r.label == "running"} == {"ws-02", "ws-03"}
    assert chosen == queued
    assert "stop" in stop_said
    assert max_active == 1 and violations == []


def test_a_quiet_run_is_followed_to_the_end_of_the_refresh_and_its_clock_moves(qtbot):
    """One job runs and no further event comes: every step of the refresh is still shown
    (the queue's row, the timeline's bar) and then the clock keeps moving (the lane's
    "held" time grows). Regression: the timeline's step waited for the next event."""
    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        jid = await _add(view, "ws-07", "reservations", 60.0)
        await wait_until(lambda: _label(view, "reservations", jid) == "running", 10)
        await wait_until(lambda: "ws-07" in view.timeline.rows, 5)
        bars = view.timeline.items["reservations"].isVisible()
        m = view.lanes_model
        held = m.index(m.row_of("ws-07"), m.COLUMNS.index("held"))
        first = m.data(held)
        await wait_until(lambda: m.data(held) != first, 5)
        return bars, first, m.data(held), view.ticks

    rc, value, errors = run_window(scenario)
    assert rc == 0 and errors == []
    bars, first, later, ticks = value
    assert bars
    assert float(later.rstrip(" s")) > float(first.rstrip(" s"))
    assert ticks > 0


def test_held_save_keeps_the_workspace_while_others_finish(qtbot):
    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        c = view.controls
        a = await _add(view, "ws-01", "reservations", 0.2)
        _choose(view, "reservations", a)
        c.hold_button.click()
        b = await _add(view, "ws-01", "cafe", 0.1)          # same workspace, other queue
        other = await _add(view, "ws-02", "cafe", 0.1)      # another workspace
        await wait_until(lambda: _label(view, "reservations", a) == "save held", 10)
        await wait_until(lambda: _label(view, "cafe", other) == "succeeded", 10)
        # the timeline's bars follow the tables one tick later
        await wait_until(lambda: view.timeline.items["held"].isVisible(), 10)
        seen = {
            "a": _label(view, "reservations", a),
            "b": _label(view, "cafe", b),
            "other": _label(view, "cafe", other),
            "owner": (_lane(view, "ws-01").queue, _lane(view, "ws-01").job_id),
            "timeline_rows": view.timeline.rows,
            "held_bars": view.timeline.items["held"].isVisible(),
            "holds_text": view.counters.text(),
        }
        c.set_job(a)
        c.release_button.click()
        await wait_until(lambda: _label(view, "reservations", a) == "succeeded", 10)
        await wait_until(lambda: _label(view, "cafe", b) == "succeeded", 10)
        # holding the save of a finished job is refused, with a reason
        c.set_job(a)
        c.hold_button.click()
        late = c.notice.text()
        c.release_button.click()
        nothing = c.notice.text()
        return seen, late, nothing, view.checker.max_active, view.checker.violations

    rc, (seen, late, nothing, max_active, violations), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert seen["a"] == "save held"
    assert seen["b"] == "queued"                      # behind the held save, in the other queue
    assert seen["other"] == "succeeded"               # another workspace went on
    assert seen["owner"] == ("reservations", 1)
    assert "ws-01" in seen["timeline_rows"] and seen["held_bars"]
    assert "holds" in seen["holds_text"]
    assert "already finished" in late and "No hold" in nothing
    assert max_active == 1 and violations == []


def test_fail_next_save_failing_work_stop_and_busy_outside(qtbot):
    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        c = view.controls
        out = {}
        # the next save of a waiting job fails: it ends failed, its lanes are released
        blocker = await _add(view, "ws-05", "reservations", 60.0)
        victim = await _add(view, "ws-05", "cafe", 0.1)
        _choose(view, "cafe", victim)
        c.fail_button.click()
        _choose(view, "reservations", blocker)
        c.cancel_button.click()
        await wait_until(lambda: _label(view, "cafe", victim) == "failed", 10)
        out["victim_error"] = _shown(view, "cafe", victim).detail
        # work that fails
        bad = await _add(view, "ws-06", "cafe", 0.05, fails=True)
        await wait_until(lambda: _label(view, "cafe", bad) == "failed", 10)
        out["bad_error"] = _shown(view, "cafe", bad).detail

        # request stop through the workspace's lane
        long = await _add(view, "ws-03", "reservations", 60.0)
        await wait_until(lambda: _label(view, "reservations", long) == "running", 10)
        c.set_workspace("ws-03")
        c.stop_button.click()
        await wait_until(lambda: _label(view, "reservations", long) == "cancelled", 10)
        c.stop_button.click()                       # nothing runs there any more
        out["idle_stop"] = c.notice.text()

        # busy outside: the button, then the table's checkbox (Space on the cell)
        c.set_workspace("ws-04")
        c.busy_button.click()
        await wait_until(lambda: (_lane(view, "ws-04") or ()) and _lane(view, "ws-04").busy, 10)
        out["button_checked"] = c.busy_button.isChecked()
        parked = await _add(view, "ws-04", "reservations", 0.05)
        view.refresh_now()                   # what the window shows now: still queued
        out["parked"] = _label(view, "reservations", parked)
        m, t = view.lanes_model, view.lanes_table
        t.setFocus()
        t.setCurrentIndex(m.index(m.row_of("ws-04"), m.BUSY_COLUMN))
        qtbot.keyClick(t, Qt.Key.Key_Space)
        await wait_until(lambda: _label(view, "reservations", parked) == "succeeded", 10)
        out["busy_after"] = _lane(view, "ws-04").busy
        out["button_after"] = c.busy_button.isChecked()
        return out, view.checker.violations

    rc, (out, violations), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert "injected save failure" in out["victim_error"]
    assert "simulated failure" in out["bad_error"]
    assert "Nothing runs in ws-03" in out["idle_stop"]
    assert out["button_checked"] is True
    assert out["parked"] == "queued"
    assert out["busy_after"] == () and out["button_after"] is False
    assert violations == []


def test_models_announce_only_the_changed_cells_in_view():
    from lanemon.ui.lanes.model import JobRow, JobsModel

    m = JobsModel()
    seen = []
    m.dataChanged.connect(lambda a, b, roles=(): seen.append((a.row(), a.column(), b.row(), b.column())))
    rows = [JobRow(i, f"ws-{i}", "queued", "sim", None, 0.0, None, "", None) for i in range(6)]
    m.set_rows(rows, [r.id for r in rows], 1.0)       # all inserted: nothing to announce
    assert seen == [] and m.rowCount() == 6
    m.set_rows(list(rows), [r.id for r in rows], 1.01)  # same objects, same time text
    assert seen == []
    rows2 = list(rows)
    rows2[1] = rows[1]._replace(label="running")
    rows2[4] = rows[4]._replace(label="running", detail="run-4")
    m.set_rows(rows2, [r.id for r in rows2], 1.02)
    assert sorted(seen) == [(1, 2, 4, 2), (4, 5, 4, 5)]
    assert m.data(m.index(4, 2)) == "running"
    seen.clear()
    m.tick(2.5)                                          # the clock: the time column only
    assert seen == [(0, 3, 5, 3)] and m.data(m.index(5, 3)) == "2.5 s"
    seen.clear()
    m.set_visible_rows(lambda: (2, 3))                      # rows out of view are not compared
    rows3 = [r._replace(work="other") for r in rows2]
    m.set_rows(rows3, [r.id for r in rows3], 2.5)
    assert seen == [(2, 4, 3, 4)]
    assert m.data(m.index(0, 4)) == "other"              # but the model holds them


def test_timeline_scrolls_by_whole_pixels_only(qtbot):
    """Between snapshots the bars slide left by whole pixels; a tick that would move
    them less than a pixel repaints nothing."""
    from lanemon.lanes import Scheduler
    from lanemon.ui.lanes.timeline import LanesTimeline

    tl = LanesTimeline(window_s=20.0)
    tl.resize(600, 300)
    tl.show()
    qtbot.waitExposed(tl)
    tl.draw(Scheduler().snapshot(), 100.0, {})
    px_per_s = tl.plot.getViewBox().width() / 20.0
    assert px_per_s > 10
    item = tl.items["reservations"]
    moved = [tl.scroll(100.0 + k * 0.35 / px_per_s) for k in range(1, 12)]   # 0.35 px a tick
    assert moved == [False, False, True, False, False, True, False, False, True, False, False]
    assert round(-item.pos().x() * px_per_s, 6) == 3.0
    assert tl.scroll(100.0 + 7.5 / px_per_s) and round(-item.pos().x() * px_per_s, 6) == 7.0


def test_events_that_keep_coming_never_starve_the_last_steps_of_a_refresh(qtbot):
    """A snapshot is shown over a few ticks; when every tick finds new events and the text
    rate allows a new snapshot, the steps already queued are still all shown first
    (regression: a new snapshot replaced the unfinished plan, and on a slow loop the
    timeline was never drawn)."""
    from lanemon.lanes import Scheduler
    from lanemon.ui.lanes.view import LanesView

    class Eager(LanesView):
        TEXT_FPS = float("inf")                 # the text rate always allows a new snapshot

    async def scenario(win):
        view = Eager(Scheduler())
        win.add_view("eager", "Eager", view)
        win.show_view("eager")
        await _add(view, "ws-03", "reservations", 60.0)
        view.frame_timer.stop()
        snapshots = view.frames
        shown = []
        for _ in range(30):                     # ticks, each after events and with text due
            view.mark_dirty()
            was_refreshing = view.refreshing
            view.frame()
            view.turns.finish()                 # (its step, which runs in the loop's next turn)
            shown.append((was_refreshing, view.frames - snapshots))
        # a new snapshot is read only once the last one's steps have all been shown
        new_while_refreshing = [n for (busy, n), (_, before) in zip(shown, [(False, 0)] + shown)
                                if busy and n != before]
        return new_while_refreshing, view.frames - snapshots, "ws-03" in view.timeline.rows

    rc, (early, snapshots, drawn), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert early == [] and snapshots >= 4 and drawn


def test_ctrl_q_with_a_held_final_save_on_a_long_job_quits(qtbot):
    """The issue's hang: Lanes tab -> a simulated 60 s job -> select it -> Hold
    final save -> Ctrl+Q. The window's shutdown (the lanes view's hook,
    ``Scheduler.aclose``) used to wait forever on the held save. Now it ends:
    the job is cancelled with the reason, its final record saved before its
    lanes went, no hold left. (Should it hang again, the test releases the
    hold after waiting, so that it fails instead of hanging.)"""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        s = view.scheduler
        jid = await _chosen_running(view, "ws-01", "reservations", 60.0)
        view.controls.hold_button.click()
        held = view.controls.notice.text()
        events: list = []
        s.subscribe(events.append)
        await activated(win)
        QTest.keyClick(QApplication.focusWidget() or win, Qt.Key.Key_Q,
                       Qt.KeyboardModifier.ControlModifier)
        try:
            await wait_until(lambda: s.closed and view.is_shut
                             and s.counts().jobs_finished == s.counts().jobs_submitted, 30)
        except BaseException:
            s.release_holds()   # never leave a hung shutdown behind: fail instead
            raise
        return jid, held, events, s, view.checker.violations

    rc, (jid, held, events, s, violations), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert "Holding job #1's final save" in held
    rec = s.store.get(jid)
    assert rec.state.value == "cancelled" and rec.error == "task cancelled (window closed)"
    kinds = [(ev.kind, ev.job_id, ev.state) for ev in events if ev.job_id == jid]
    assert kinds.index(("saved", jid, "cancelled")) < kinds.index(("finished", jid, "cancelled"))
    assert not [k for k in kinds if k[0] == "unsaved"]
    assert s.store.holds() == () and s.idle_clean() == [] and violations == []


def test_a_job_whose_final_record_could_not_be_saved_reads_unsaved(qtbot):
    """Every save of a running job fails (four clicks on "Fail next save": its
    final save and the three attempts to record that); it is stopped. It ends,
    its lanes are released, and the window says it: "unsaved", the reason in its
    detail, the count in the counters strip - not the "running" its record keeps."""
    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        c = view.controls
        jid = await _chosen_running(view, "ws-02", "cafe", 60.0)
        for _ in range(4):
            c.fail_button.click()
        c.set_workspace("ws-02")
        c.stop_button.click()
        await wait_until(lambda: _label(view, "cafe", jid) == "unsaved", 10)
        await wait_until(lambda: "unsaved finals" in view.counters.text(), 10)
        return (_shown(view, "cafe", jid).detail, view.counters.text(),
                view.scheduler.store.get(jid).state.value, view.checker.violations,
                _lane(view, "ws-02").queue)

    rc, (detail, counters, stored, violations, owner), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert detail.startswith("final record not saved:") and "injected save failure" in detail
    assert "outcome was cancelled" in detail
    assert "unsaved finals 1" in counters
    assert stored == "running" and owner is None and violations == []


def test_the_view_keeps_only_a_window_of_finished_jobs(qtbot):
    """Thousands of jobs through a view's scheduler: the view's invariant checker
    keeps a bounded window, its tables hold at most what they show, and what they
    show is the newest."""
    import asyncio

    from lanemon.lanes import Scheduler
    from lanemon.ui.lanes.view import LanesView

    view = LanesView(Scheduler(keep_finished=100, recent_limit=30, history_limit=4,
                               history_total=200))
    qtbot.addWidget(view)
    view.resize(1200, 700)
    s = view.scheduler

    async def push():
        for start in range(0, 6_000, 300):
            for i in range(300):
                await s.submit(("reservations", "cafe")[i % 2], f"ws-{(start + i) % 97:02d}")
            await s.join()

    asyncio.run(push())
    view.refresh_now()
    stats = view.checker.stats()
    assert view.checker.violations == [] and view.checker.runs == 6_000
    assert stats["live"] == 0 and stats["finished_ids"] <= view.checker.keep_finished
    assert s.stats()["records"] <= 100
    for q, m in view.queue_models.items():
        assert 0 < m.rowCount() <= 30
        assert m.job_id(0) == s.snapshot().queues[q].recent[-1].id   # the last one finished


def test_act_on_keeps_the_users_pick_while_a_burst_moves_the_rows(qtbot):
    """Finding 2 (issue 19): click finished job #2, Burst, wait: the job field still says
    #2 and the workspace field did not change by itself (no change at all was announced);
    Cancel then acts on #2. Regression: rows removed under the current row moved it."""
    async def scenario(win):
        view, c, s = _lanes_tab(win)
        for _ in range(3):
            jid = await _add(view, "ws-01", "reservations", 0.0)
        await wait_until(lambda: _label(view, "reservations", jid) == "succeeded", 10)
        _choose(view, "reservations", 2)
        picked = (c.job_box.value(), c.workspace_box.currentText())
        changes = []
        c.job_box.valueChanged.connect(lambda v: changes.append(("job", v)))
        c.workspace_box.currentTextChanged.connect(lambda t: changes.append(("ws", t)))
        c.length.setValue(0.3)
        c.burst_jobs.setValue(24)
        c.burst_ws.setValue(6)
        c.burst_button.click()
        await wait_until(lambda: s.jobs_finished == 27, 30)
        last = s.snapshot().queues["reservations"].recent[-1].id
        await wait_until(lambda: _label(view, "reservations", last) == "succeeded", 10)
        after = (c.job_box.value(), c.workspace_box.currentText())
        c.cancel_button.click()
        await wait_until(lambda: c.notice.text().startswith("Job #"), 10)
        return picked, changes, after, c.notice.text()

    rc, (picked, changes, after, said), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert picked == (2, "ws-01")
    assert changes == [] and after == picked
    assert said.startswith("Job #2:") and "already finished" in said


def test_a_long_workspace_name_is_refused_and_never_takes_over_the_timeline(qtbot):
    """Finding 10 (issue 19): a 200-character name typed in the form is refused with a
    reason (nothing submitted); a long name that reaches the scheduler another way is
    elided on the timeline's axis and shown whole in the table's tooltip."""
    from lanemon.ui.lanes.controls import MAX_WS_NAME
    from lanemon.ui.lanes.timeline import ROW_LABEL_CHARS

    async def scenario(win):
        win.show_view("lanes")
        view = win.views["lanes"]
        c = view.controls
        c.set_workspace("w" * 200)
        c.add_button.click()
        refused = (c.notice.text(), view.scheduler.jobs_submitted)
        c.set_workspace("w" * MAX_WS_NAME)
        c.length.setValue(60.0)
        c.add_button.click()
        await wait_until(lambda: view.scheduler.jobs_submitted == 1, 10)
        long_name = "p" * 100 + "-end"
        await view.scheduler.submit("cafe", long_name, 60.0)
        await wait_until(lambda: long_name in view.timeline.rows
                         and "w" * MAX_WS_NAME in view.timeline.rows, 10)
        m = view.lanes_model
        tip = m.data(m.index(m.row_of(long_name), 0), Qt.ItemDataRole.ToolTipRole)
        axis = view.timeline.plot.getPlotItem().getAxis("left")
        return refused, view.timeline.row_labels, tip, axis.width(), view.timeline.plot.width()

    rc, (refused, labels, tip, axis_w, plot_w), errors = run_window(scenario)
    assert rc == 0 and errors == []
    said, submitted = refused
    assert submitted == 0 and f"at most {MAX_WS_NAME} characters" in said and "200" in said
    assert len(labels) == 2 and all(len(t) <= ROW_LABEL_CHARS for t in labels)
    assert any(t.endswith("-end") and "…" in t for t in labels)
    assert tip == "p" * 100 + "-end"
    assert axis_w < plot_w / 2      # before: the 104-character label pushed the bars off


def test_the_timeline_keeps_the_story_and_one_release_lets_one_hold_go(qtbot):
    """Finding 8 (issue 19): Hold clicked twice sets up one hold (the second click says so);
    one Release lets it go and the save completes; after release the held part of the bar
    stays hatched; failed and cancelled runs are marked apart from succeeded ones."""
    async def scenario(win):
        view, c, s = _lanes_tab(win)
        tl = view.timeline
        a = await _add(view, "ws-01", "reservations", 0.2)
        _choose(view, "reservations", a)
        c.hold_button.click()
        c.hold_button.click()
        twice = (c.notice.text(), s.holds_for(a))
        await wait_until(lambda: _label(view, "reservations", a) == "save held", 10)
        c.release_button.click()
        released = c.notice.text()
        await wait_until(lambda: _label(view, "reservations", a) == "succeeded", 10)
        await wait_until(lambda: _lane(view, "ws-01").job_id is None, 10)
        await wait_until(lambda: tl.counts.get("held") == 1 and "ws-01" in tl.rows, 10)
        held_after = tl.counts["held"]
        ok = await _add(view, "ws-02", "cafe", 0.0)
        bad = await _add(view, "ws-03", "cafe", 0.0, fails=True)
        gone = await _chosen_running(view, "ws-04", "cafe", 60.0)
        c.cancel_button.click()
        for jid, word in ((ok, "succeeded"), (bad, "failed"), (gone, "cancelled")):
            await wait_until(lambda j=jid, w=word: _label(view, "cafe", j) == w, 10)
        await wait_until(lambda: tl.counts.get("failed") == 1 and tl.counts.get("cancelled") == 1
                         and {"ws-02", "ws-03", "ws-04"} <= set(tl.rows), 10)
        return twice, released, held_after, dict(tl.counts), s.snapshot().holds

    rc, (twice, released, held_after, counts, holds), errors = run_window(scenario)
    assert rc == 0 and errors == []
    said, n_holds = twice
    assert "already held" in said and n_holds == 1
    assert released.startswith("Released 1 hold on job #1") and holds == ()
    assert held_after == 1                   # the released hold's hatching stays
    assert counts["failed"] == 1 and counts["cancelled"] == 1
    assert counts["reservations"] + counts["cafe"] == 4   # the marks lie over the runs' bars


def test_a_burst_goes_in_bounded_chunks_with_progress_and_a_second_click_stops_it(qtbot):
    """Finding 9 (issue 19): a burst submits at most ``BURST_CHUNK`` jobs per loop turn
    (the frame and heartbeat timers run between chunks); clicking Burst while one is under
    way stops it and says how many were queued. The structure is checked, not the time."""
    from lanemon.ui.lanes.view import BURST_CHUNK

    async def scenario(win):
        view, c, s = _lanes_tab(win)
        n = 3 * BURST_CHUNK + 7
        c.length.setValue(0.0)
        c.burst_jobs.setValue(n)
        c.burst_ws.setValue(50)
        c.burst_button.click()
        await wait_until(lambda: c.notice.text().startswith(f"Burst: {n:,} jobs"), 60)
        full = (list(view.burst_chunks), c.notice.text(), s.jobs_submitted)
        await s.join()
        # a queued save of ws-03 held open: the second burst waits at its third job
        hold = s.hold_save(workspace="ws-03", state="queued")
        c.burst_button.click()
        await hold.wait_engaged()
        c.burst_button.click()                    # stop it
        await wait_until(lambda: c.notice.text().startswith("Burst stopped"), 10)
        stopped = c.notice.text()
        s.release_holds()
        await s.join()
        return full, stopped, s.jobs_submitted

    rc, (full, stopped, submitted), errors = run_window(scenario)
    assert rc == 0 and errors == []
    chunks, said, n = full
    assert sum(chunks) == n == 3 * BURST_CHUNK + 7
    assert len(chunks) >= 4 and max(chunks) <= BURST_CHUNK
    assert said.startswith(f"Burst: {n:,} jobs")
    assert stopped.startswith(f"Burst stopped: 2 of {n:,} jobs queued")
    assert submitted == n + 2                 # the third one's save was stopped: no job


def test_a_burst_keeps_its_live_jobs_under_the_cap_and_feeds_the_rest_as_jobs_end(qtbot, monkeypatch):
    """Finding 9 (issue 19), memory: a burst never takes the scheduler's live jobs over
    ``BURST_LIVE_MAX`` (the allocator's arenas a 99,999-job peak took stayed after a
    Reset); it waits for jobs to end, says so, and still submits every job. Checked at
    every scheduler event (each submit and each end), with a small cap."""
    import lanemon.ui.lanes.view as view_mod

    cap = 40
    monkeypatch.setattr(view_mod, "BURST_LIVE_MAX", cap)

    async def scenario(win):
        view, c, s = _lanes_tab(win)
        n = 6 * cap + 3
        most, waiting_said = [0], []

        def on(_ev):
            most[0] = max(most[0], s.live_jobs)
            if "go in as jobs end" in c.notice.text():
                waiting_said.append(c.notice.text())

        s.events.subscribe(on)
        c.length.setValue(0.05)
        c.burst_jobs.setValue(n)
        c.burst_ws.setValue(n)                    # one job per workspace: nothing waits for a lane
        c.burst_button.click()
        await wait_until(lambda: c.notice.text().startswith(f"Burst: {n:,} jobs"), 60)
        await s.join()
        return n, most[0], waiting_said, s.jobs_submitted, s.counts().jobs_finished

    rc, (n, most, said, submitted, finished), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert submitted == finished == n
    assert most == cap                             # the cap reached, never passed
    assert said and f"at most {cap:,} live at once" in said[0]


def test_the_workspaces_table_makes_only_the_rows_in_view_when_there_are_thousands(qtbot, monkeypatch):
    """Finding 9 (issue 19): with thousands of workspaces a refresh makes the workspaces
    table's rows the table shows, not all of them, in one step: the refresh has as many
    steps as with one workspace, the table lists them all, and a row scrolled to is made
    then. (Before, rows were built 1,500 per tick, every one of them, over more steps.)"""
    import asyncio

    import lanemon.ui.lanes.view as view_mod
    from lanemon.lanes import Scheduler
    from lanemon.ui.lanes.view import LanesView

    made = []
    real = view_mod.LaneRow

    def counting(*args):
        made.append(args[0])
        return real(*args)

    monkeypatch.setattr(view_mod, "LaneRow", counting)
    view = LanesView(Scheduler())
    qtbot.addWidget(view)
    view.resize(1200, 700)
    view.show()
    s = view.scheduler
    n = 3001

    async def push() -> int:
        await s.burst("reservations", ["w00000"], 0.0)
        await s.join()
        view.refresh_now()
        steps = len(view.refresh_steps(False))
        await s.burst("reservations", [f"w{i:05d}" for i in range(n)], 0.0)
        await s.join()
        return steps

    one = asyncio.run(push())
    made.clear()
    view.refresh_now()
    assert len(view.refresh_steps(False)) == one
    assert view.lanes_model.rowCount() == n
    assert view.lanes_model.workspace(n - 1) == f"w{n - 1:05d}"
    assert 0 < len(made) < 200, len(made)          # the rows in view (and a few around)
    assert view.lanes_model.row_data(n - 1).workspace == f"w{n - 1:05d}"   # made when asked
    assert made[-1] == f"w{n - 1:05d}"


def test_an_empty_timeline_labels_no_rows(qtbot):
    """With no workspace yet (a store just chosen, a fresh window) the timeline's left axis
    showed pyqtgraph's numbers (-0.4 … 0.4) where workspace names go."""
    from lanemon.ui.lanes.timeline import LanesTimeline

    t = LanesTimeline()
    qtbot.addWidget(t)
    from PySide6.QtGui import QImage, QPainter

    t.resize(600, 300)
    t.show()
    qtbot.waitExposed(t)
    ax = t.plot.getPlotItem().getAxis("left")
    img = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(img)
    try:
        _axis, _ticks, texts = ax.generateDrawSpecs(painter)
    finally:
        painter.end()
    assert [text for _rect, _flags, text in texts] == []


def test_a_burst_names_its_workspaces_on_demand():
    """A click on Burst does not build the burst's 99,999 workspace names at once (~30 ms
    of the loop): the controls give a sequence that names job ``i``'s workspace when
    asked, round robin as before."""
    from lanemon.ui.lanes.controls import BurstWorkspaces, LanesControls, ws_name

    c = LanesControls()
    c.burst_jobs.setValue(99_999)
    c.burst_ws.setValue(9_999)
    wss = c.burst_workspaces()
    assert not isinstance(wss, list)
    assert len(wss) == 99_999 and wss.distinct == 9_999
    assert wss[0] == ws_name(1) and wss[9_998] == ws_name(9_999) and wss[9_999] == ws_name(1)
    assert wss[-1] == ws_name(99_998 % 9_999 + 1)
    assert list(BurstWorkspaces(5, 2)) == [ws_name(1), ws_name(2), ws_name(1), ws_name(2), ws_name(1)]
    assert BurstWorkspaces(3, 10).distinct == 3
    with pytest.raises(IndexError):
        wss[99_999]


def test_the_timeline_with_more_held_lanes_than_rows_shows_the_first_held(qtbot):
    """With more workspaces running than the timeline has rows (a burst), its rows are the
    first held lanes' workspaces (what scoring every workspace and a stable sort chose),
    drawn without scoring every workspace's history; with fewer, the rest are the newest
    ended (a guard: the same rows as before this shortcut)."""
    import asyncio

    from lanemon.lanes import GatedWork, Scheduler
    from lanemon.ui.lanes.timeline import LanesTimeline
    from lanemon.ui.tools.testing import wait_until

    tl = LanesTimeline()
    qtbot.addWidget(tl)
    tl.resize(800, 400)
    tl.show()
    k = tl.max_rows()
    s = Scheduler()

    async def go():
        await s.burst("reservations", ["done"], 0.0)
        await s.join()
        gate = GatedWork()
        await s.burst("reservations", [f"w{i:04d}" for i in range(3 * k)][::-1], gate)
        await wait_until(lambda: len(s.snapshot(limit=20).scheduled) == 3 * k, 10)   # all started
        many = s.snapshot(limit=20)
        tl.draw(many, s.clock(), {})
        rows_many = tl.rows
        gate.open()
        await s.join()
        gate2 = GatedWork()
        await s.burst("cafe", ["w0001"], gate2)
        await wait_until(lambda: len(s.snapshot(limit=20).scheduled) == 1, 10)
        few = s.snapshot(limit=20)
        tl.draw(few, s.clock(), {})
        gate2.open()
        await s.join()
        return many, rows_many, tl.rows

    many, rows_many, rows_few = asyncio.run(go())
    assert len(many.scheduled) == 3 * k
    assert rows_many == tuple(sorted(f"w{i:04d}" for i in range(k)))
    assert "w0001" in rows_few and len(rows_few) == k      # the running one, then the newest ended


def test_reset_ends_every_job_and_the_tab_shows_the_empty_state(qtbot):
    """Finding 9 (issue 19): the Lanes tab's Reset (Alt+R) stops a burst under way, ends
    every job and drops the finished ones: the tables, the timeline and the counters show
    the empty state, and nothing keeps a finished job (a weak reference to one's work dies).
    """
    import gc
    import weakref

    from PySide6.QtTest import QTest

    from lanemon.lanes import GatedWork
    from lanemon.ui.kit.static_texts import StaticTexts

    async def scenario(win):
        view, c, s = _lanes_tab(win)
        await activated(win)
        done_work = GatedWork()
        done_work.open()
        done_id = await s.submit("reservations", "ws-01", done_work)
        await wait_until(lambda: _label(view, "reservations", done_id) == "succeeded", 10)
        finished = weakref.ref(done_work)
        del done_work
        await _add(view, "ws-02", "cafe", 30.0)          # running
        c.length.setValue(30.0)
        c.burst_jobs.setValue(5_000)
        c.burst_ws.setValue(40)
        c.burst_button.click()                           # a burst under way
        await wait_until(lambda: s.jobs_submitted > 300 and view.lanes_model.rowCount() > 10
                         and sum(view.timeline.counts.values()) > 10, 30)
        before = (view.lanes_model.rowCount(), sum(m.rowCount() for m in view.queue_models.values()),
                  sum(view.timeline.counts.values()))
        laid_out = StaticTexts((view.font(),))           # texts laid out during the burst
        laid_out.get(0, f"{s.jobs_submitted:,} submitted")
        QTest.keyClick(win, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)   # Reset
        await wait_until(lambda: c.notice.text().startswith("Reset:"), 60)
        await wait_until(lambda: view.lanes_model.rowCount() == 0, 10)
        await wait_until(lambda: all(m.rowCount() == 0 for m in view.queue_models.values()), 10)
        await wait_until(lambda: not view.timeline.rows, 10)     # (the refresh's last step)
        gc.collect()
        after = dict(
            live=s.live_jobs, records=len(s.store), finished_alive=finished() is not None,
            job=s.job(done_id), rows=view.lanes_model.rowCount(),
            bars=sum(view.timeline.counts.values()), timeline_rows=len(view.timeline.rows),
            counters=view.counters.text(), violations=list(view.checker.violations),
            burst_running=view._burst is not None and not view._burst.done(),
            said=c.notice.text(), submitted_then=s.jobs_submitted, texts_kept=len(laid_out))
        jid = await _add(view, "ws-09", "reservations", 0.0)   # it takes jobs again
        await wait_until(lambda: _label(view, "reservations", jid) == "succeeded", 10)
        return before, after, jid > done_id

    rc, (before, after, newer), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert before[0] > 0 and before[1] > 0 and before[2] > 0          # there was something to drop
    assert after["live"] == 0 and after["records"] == 0 and after["job"] is None
    assert not after["finished_alive"] and not after["burst_running"]
    assert after["rows"] == 0 and after["bars"] == 0 and after["timeline_rows"] == 0
    assert "jobs 0/0" in after["counters"] and "max runs at once per workspace 0" in after["counters"]
    assert after["violations"] == [] and after["submitted_then"] == 0
    assert after["said"].startswith("Reset:") and "ended" in after["said"]
    assert after["texts_kept"] == 0        # every laid-out text cache emptied (their arenas)
    assert newer
