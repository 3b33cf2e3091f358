"""A refresh costs the same at run 300 as at run 3 (issue: freezes grew with the runs).

Counted, not timed: the Python calls a view makes (``sys.setprofile``) for one
more run's refresh and paint, and for a presenter-mode toggle, with 100 runs
in the history and with 300 (both fill the tables' visible rows, so any
difference is work that grows with the history). Before the fix the results
table re-read every row on each refresh and re-measured every row for its
column widths, and the placement table was rebuilt whole.
"""

from __future__ import annotations

import sys
import time

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from lanemon.ui.runs.model import RunRecord
from lanemon.ui.shell.main_window import MainWindow
from lanemon.work.lag import LagStats
from lanemon.work.placement import decide


def _done_run(n: int, kind: str) -> RunRecord:
    now = time.perf_counter()
    rec = RunRecord(n, kind, 1_000_000 + n, now, status="done", t_end=now, work_ms=10.0 + n, result=n,
                    slices=3 if kind == "sliced" else None, stats=LagStats(12, 0.4, 1.5, 2.5, 3.0))
    rec.placement_cold = decide({"cpu_ms": rec.work_ms, "shared_state": False}, 50)
    rec.placement_warm = decide({"cpu_ms": rec.work_ms, "shared_state": False}, 5)
    return rec


def _calls(fn) -> int:
    """Python function calls made by ``fn()`` and the paint it causes."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1
    sys.setprofile(profile)
    try:
        fn()
        QApplication.sendPostedEvents(None, QEvent.Type.UpdateRequest)
    finally:
        sys.setprofile(None)
    return count


@pytest.fixture
def window(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitExposed(win)
    return win


def _grow_to(win, n: int) -> None:
    records = win.controller.records
    kinds = ("whole", "sliced", "warm")
    while len(records) < n:
        records.append(_done_run(len(records) + 1, kinds[len(records) % 3]))
    win.runs_panel.refresh()
    win.placement_panel.refresh()
    QApplication.processEvents()      # lay out and paint the new rows before anything is counted


def _one_more_run_refresh(win) -> int:
    _grow_to(win, len(win.controller.records) + 1)   # settle, then time the next one alone
    records = win.controller.records
    records.append(_done_run(len(records) + 1, "cold"))

    def refresh():
        win.runs_panel.refresh()
        win.placement_panel.refresh()
    return _calls(refresh)


@pytest.mark.parametrize("tab", ["runs", "placement"])
def test_a_run_ends_refresh_does_not_grow_with_the_history(window, tab):
    window.show_view(tab)
    _grow_to(window, 100)
    at_100 = _one_more_run_refresh(window)
    _grow_to(window, 300)
    at_300 = _one_more_run_refresh(window)
    assert window.placement_panel.placed.rowCount() == 302
    assert window.runs_panel.model.rowCount() == 302
    assert at_300 <= at_100 * 1.1 + 20, (at_100, at_300)


def test_the_presenter_toggle_does_not_grow_with_the_history(window):
    window.show_view("placement")
    _grow_to(window, 100)
    _calls(window.talk.toggle_presenter), _calls(window.talk.toggle_presenter)  # the first toggle polishes more
    at_100 = _calls(window.talk.toggle_presenter) + _calls(window.talk.toggle_presenter)
    _grow_to(window, 300)
    at_300 = _calls(window.talk.toggle_presenter) + _calls(window.talk.toggle_presenter)
    assert window.talk.presenter is False
    assert at_300 <= at_100 * 1.1 + 20, (at_100, at_300)


def test_the_placement_table_shows_each_placed_run_once_newest_first(window):
    records = window.controller.records
    running = RunRecord(1, "sliced", 1000, time.perf_counter())          # still running: not shown yet
    records.append(running)
    records.extend(_done_run(n, "warm") for n in (2, 3))
    window.placement_panel.refresh()
    model = window.placement_panel.placed
    assert [model.record(r).id for r in range(model.rowCount())] == [3, 2]
    # the earlier run finishes after the later ones: it takes its place by id, once
    done = _done_run(1, "sliced")
    running.status, running.work_ms, running.stats = "done", done.work_ms, done.stats
    running.placement_cold = done.placement_cold
    window.placement_panel.refresh()
    window.placement_panel.refresh()
    assert [model.record(r).id for r in range(model.rowCount())] == [3, 2, 1]
    assert model.data(model.index(2, 2)) == done.placement_cold.where
