"""Presenter mode and the chart's y scale on the real window (offscreen, qasync): F5 turns
the log lag axis on, L switches it, leaving presenter mode brings back the axis chosen
outside it; the results table keeps its size column in presenter mode."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from lanemon.ui.runs.model import COLUMNS
from lanemon.ui.tools.testing import activated, run_window, wait_until


@pytest.fixture(autouse=True)
def _app(window_app):
    """The application; windows this file closed go, the look goes back to the default."""
    return window_app


def _key(win, k):
    QTest.keyClick(QApplication.focusWidget() or win, k)


def _state(win):
    return (win.talk.presenter, win.chart.log_scale, win.chart.log_box.isChecked(),
            win.talk.actions["log"].isChecked())


def test_f5_turns_the_log_axis_on_l_switches_it_and_leaving_restores_the_choice(qtbot):
    async def scenario(win):
        await activated(win)
        win.chart.setFocus()
        await wait_until(lambda: QApplication.focusWidget() is win.chart, 10)
        seen = [_state(win)]
        for k in (Qt.Key.Key_F5, Qt.Key.Key_F5, Qt.Key.Key_L, Qt.Key.Key_F5, Qt.Key.Key_L, Qt.Key.Key_F5):
            _key(win, k)
            seen.append(_state(win))
        return seen

    rc, seen, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert seen == [
        (False, False, False, False),   # linear outside presenter mode by default
        (True, True, True, True),       # F5: presenter mode, log axis
        (False, False, False, False),   # F5: back, linear again
        (False, True, True, True),      # L outside presenter mode: log, kept as the choice
        (True, True, True, True),       # F5: log (already)
        (True, False, False, False),    # L in presenter mode: linear there
        (False, True, True, True),      # F5: out, the choice made outside comes back
    ]


@pytest.mark.parametrize("size", [(1280, 800), (1024, 768)])
def test_presenter_mode_keeps_the_size_column(qtbot, size):
    """Also on a 1024-px projector, where the narrow results table drops other columns first."""
    async def scenario(win):
        table = win.runs_panel.table
        total = COLUMNS.index("total")
        rec = win.controller.start_sliced(3_000_000, slice_size=100_000)   # rows with wide figures
        await wait_until(lambda: not rec.running, 60)
        hidden = {}
        for on in (False, True, False):
            win.talk.set_presenter(on)
            for _ in range(3):                 # layout switches happen on the next loop turns
                await asyncio.sleep(0)
            hidden[on] = (table.isColumnHidden(total), table.isColumnHidden(COLUMNS.index("max")))
        return hidden

    rc, hidden, errors = run_window(scenario, size=size)
    assert rc == 0 and errors == []
    assert hidden == {False: (False, False), True: (False, False)}


def test_the_presenter_toggle_is_an_own_stall_on_the_chart(qtbot):
    async def scenario(win):
        await wait_until(lambda: win.heartbeat.count > 5, 10)
        win.talk.set_presenter(True)
        t0 = win.heartbeat.recent(30)[0]
        await wait_until(lambda: win.heartbeat.count > t0.size + 3, 10)
        t, _lag = win.heartbeat.recent(30)
        return win.chart.own_spans(t), float(t[-1])

    rc, (spans, last), errors = run_window(scenario)
    assert rc == 0 and errors == []
    mine = [s for s in spans if s[0] == "presenter mode"]
    assert len(mine) == 1 and mine[0][1] < mine[0][2] <= last   # ended at a tick that came


def test_presenter_mode_on_a_1024_projector_keeps_the_results_beside_the_job(qtbot):
    """On a real 1024x768 X screen the window gets 1008x728 (the frame takes the rest); the
    results table went below the job form there, off the first screen a speaker shows."""
    async def scenario(win):
        win.talk.set_presenter(True)
        for _ in range(5):                     # layout switches happen on the next loop turns
            await asyncio.sleep(0)
        return win.runs_panel.reflow.wide

    rc, wide, errors = run_window(scenario, size=(1008, 728))
    assert rc == 0 and errors == []
    assert wide is True


def test_a_presenter_toggle_restyles_the_runs_shading_in_place(qtbot):
    """The runs in view keep their shading and labels through F5, restyled where they are:
    they were all removed and made again on the next frame (the toggle's paint showed the
    chart without them, and 130 runs in view cost ~10 ms of removal in the toggle and as
    much again after it). Fails on the code that removed them."""
    from PySide6.QtGui import QColor

    from lanemon.ui.kit import theme

    def shading(win):
        return [span for span in win.chart.shaded() if not span.style.under_grid]   # runs (not phases)

    async def scenario(win):
        c = win.controller
        for _ in range(3):
            rec = c.start_whole(20_000)
            await wait_until(lambda rec=rec: not rec.running, 30)
        await wait_until(lambda: len(shading(win)) == 3, 10)
        before = shading(win)
        from lanemon.ui.kit.paint_hold import held

        win.talk.set_presenter(True)
        await wait_until(lambda: not held(win), 5)  # the chart's new look comes with the paint
        after = shading(win)
        labels = [it for it in win.chart.area.labels() if it.text().startswith("#")]
        colours = {lab.plate().name() for lab in labels}
        background = QColor(theme.BG).name()        # presenter mode's, while in it
        win.talk.set_presenter(False)
        return before, after, colours, background

    rc, (before, after, colours, background), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert len(before) == 3
    assert after == before                  # the same spans, still shaded
    assert len(colours) == 1
    assert colours == {background}          # every label's plate in the new background
