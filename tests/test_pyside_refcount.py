"""Regression guard: PySide6 6.12.0 on Python 3.11 drops a reference to None
on every call into a Python override or a ``QTimer.singleShot`` callback, and
the process eventually aborts with ``none_dealloc`` (see DEVELOPERS.md). Here
thousands of both kinds of calls must leave ``sys.getrefcount(None)`` where
it was, give or take a little.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer

N = 5000
MARGIN = 200


class _Overrides(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.events = 0
        self.timer_events = 0

    def event(self, ev):  # a Python override Qt calls into
        if ev.type() == QEvent.Type.User:
            self.events += 1
            return True
        return super().event(ev)

    def timerEvent(self, ev):
        self.timer_events += 1
        self.killTimer(ev.timerId())


def test_none_refcount_survives_timer_callbacks_and_overrides(qapp):
    fired = [0]

    def cb():
        fired[0] += 1
        return None

    obj = _Overrides()
    before = sys.getrefcount(None)
    for _ in range(N):
        QTimer.singleShot(0, cb)
    for _ in range(N):
        QCoreApplication.sendEvent(obj, QEvent(QEvent.Type.User))
    for _ in range(200):
        obj.startTimer(0)
    while fired[0] < N or obj.timer_events < 200:
        qapp.processEvents()
    after = sys.getrefcount(None)
    assert fired[0] == N and obj.events == N
    assert after >= before - MARGIN, f"refcount of None fell from {before} to {after}"
