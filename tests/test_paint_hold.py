"""``lanemon.ui.kit.paint_hold``: no paint inside the hold, one after it, holds nest."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from lanemon.ui.kit.paint_hold import held, paint_hold


class _Paints(QObject):
    """Counts the paints of a window (each ``Paint`` event it takes)."""

    def __init__(self, widget):
        super().__init__(widget)
        self.n = 0
        widget.installEventFilter(self)

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            self.n += 1
        return False


def _window(qtbot):
    top = QWidget()
    label = QLabel("x", top)
    QVBoxLayout(top).addWidget(label)
    qtbot.addWidget(top)
    top.resize(200, 100)
    top.show()
    qtbot.waitExposed(top)
    qtbot.wait(50)
    return top, label


def test_changes_inside_a_hold_paint_the_window_once_after_its_release(qtbot):
    top, label = _window(qtbot)
    paints = _Paints(top)
    with paint_hold(label):                 # any widget of the window holds the window
        for i in range(5):
            label.setText(f"text {i}")
            label.setStyleSheet(f"QLabel {{ padding: {i}px; }}")
            top.update()
            top.repaint()                   # even a synchronous repaint waits
        assert held(top)
    assert held(top) and paints.n == 0      # until the release, a queued call
    qtbot.waitUntil(lambda: not held(top), timeout=2000)
    assert paints.n == 1
    qtbot.wait(100)
    assert paints.n == 1
    top.update()                            # and the window paints on request as before
    qtbot.waitUntil(lambda: paints.n == 2, timeout=2000)


def test_holds_nest_and_an_exception_passes_through_with_the_release_still_coming(qtbot):
    top, label = _window(qtbot)
    paints = _Paints(top)
    with pytest.raises(RuntimeError):
        with paint_hold(top):
            with paint_hold(label):         # held already: adds nothing
                label.setText("inner")
                top.update()
            assert held(top)
            raise RuntimeError("boom")
    qtbot.waitUntil(lambda: not held(top), timeout=2000)
    qtbot.wait(100)
    assert paints.n == 1


def test_a_timer_due_when_the_hold_ends_runs_before_the_paint(qtbot):
    """The heartbeat's tick, due while the change ran, gets the loop between the change
    and its paint: two shorter stalls, not one long one (fails with the release as a
    posted call, which runs before any timer)."""
    import time

    from PySide6.QtCore import Qt, QTimer

    top, label = _window(qtbot)
    paints = _Paints(top)
    seen = []
    tick = QTimer(top)
    tick.setSingleShot(True)
    tick.setTimerType(Qt.TimerType.PreciseTimer)
    tick.timeout.connect(lambda: seen.append(paints.n))
    tick.start(1)
    with paint_hold(label):
        label.setText("changed")
        time.sleep(0.01)                    # the change outlasts the tick's due time
    qtbot.waitUntil(lambda: not held(top) and bool(seen), timeout=2000)
    assert seen == [0]                      # the tick ran, then the one paint
    assert paints.n == 1


def test_before_release_runs_in_the_release_before_its_paint_or_now_when_not_held(qtbot):
    from lanemon.ui.kit.paint_hold import before_release

    top, label = _window(qtbot)
    paints = _Paints(top)
    ran = []
    before_release(label, lambda: ran.append(("now", paints.n)))
    assert ran == [("now", 0)]                          # not held: at once
    with paint_hold(label):
        label.setText("changed")
        before_release(label, lambda: ran.append(("release", paints.n, held(top))))
        assert len(ran) == 1                            # not inside the change's turn
    assert len(ran) == 1                                # nor right after it
    qtbot.waitUntil(lambda: not held(top), timeout=2000)
    assert ran[1] == ("release", 0, True)               # in the release, before its one paint
    assert paints.n == 1
