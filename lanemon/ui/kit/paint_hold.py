"""``paint_hold(widget)``: many widget changes, one paint of the window.

A change of look (presenter mode, the theme) touches fonts, palettes, style sheets,
splitter sizes and chart items one after the other. Each asks for a repaint, and the
requests interleave with the posted layout passes and with Qt's own queued calls
(scroll areas, buttons, the status bar's size grip): the window was painted twice per
toggle, the first time before its layout had caught up (a full paint of the window is
~7-10 ms of loop time, most of it the chart).

Guaranteed: from the ``with`` until its release the top-level window of ``widget``
takes no paint: the window's paint requests (``QEvent.UpdateRequest``) are held back,
while every ``update()`` still adds its area to what the window will paint. The release
is a zero-interval timer started when the block ends (a timer object: ``QTimer.singleShot(0)``
would be a posted call, run before any timer). So the change and its paint are two turns
of the loop: first the posted events the changes caused (their layout passes among them)
and every timer already due when the block ended (the heartbeat's tick: a stall of the
change alone, then one of the paint alone, never of both), then the release. It does the
layout passes still asked for (graphics layouts first, which may ask for widget ones),
then paints at once what was asked for: one paint, in the new look and layout. (A
held-back request is answered by that paint; until then Qt sends the window no other, so
the release always paints, synchronously.)

``after`` (optional) is called once that paint is done: e.g. the chart's own-stall
mark of the change, so it covers the paint too. Holds nest: a ``with`` on a window held
already (an outer hold, or a release still to come) adds only its ``after`` to that
hold's. An exception inside the ``with`` passes through; the release comes
all the same. A window deleted before its release is left alone (the hold and its timer
go with it, ``after`` is not called).

``before_release(widget, fn)``: ``fn()`` at the start of the release of ``widget``'s
window, before its layout passes (at once when the window is not held). For work whose
result is only seen in the paint (the chart's fonts and its axes' measuring): it moves
from the change's turn to the paint's, the longer of the two shorter, one paint all the
same.

``release_costs_ms`` keeps what the last releases took (their layout and paint, ms of
wall clock, newest last): the second of the two stalls, for ``lanemon bench stalls``.

Refused: nothing.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QWidget

LAYOUT_ROUNDS = 4
"""Layout passes done at most at a release: a pass (one ``sendPostedEvents``) does the
requests posted before it; those it makes (a status bar's new height, then its
window's) wait for the next."""

_HOLD_NAME = "lanemon_paint_hold"

release_costs_ms: deque[float] = deque(maxlen=64)
"""What each of the last releases took (layout and the paint), ms, newest last."""


class _Hold(QObject):
    """Holds back the paint requests of the window it filters, until ``release``."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setObjectName(_HOLD_NAME)
        self._window = window
        self._after: list[Callable[[], None]] = []
        self._first: list[Callable[[], None]] = []
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if obj is self._window and event.type() == QEvent.Type.UpdateRequest:
            return True
        return False

    def release(self) -> None:
        t0 = time.perf_counter()
        window = self._window
        for first in self._first:
            first()
        for _ in range(LAYOUT_ROUNDS):
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        window.removeEventFilter(self)
        self.setParent(None)
        # what was asked for, painted now (a request posted and not yet delivered then
        # finds nothing left to paint)
        QCoreApplication.sendEvent(window, QEvent(QEvent.Type.UpdateRequest))
        self.deleteLater()
        release_costs_ms.append((time.perf_counter() - t0) * 1000.0)
        for after in self._after:
            after()

    def first(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` at the start of the release, before its layout passes."""
        self._first.append(fn)

    def also_after(self, after: Callable[[], None] | None) -> None:
        """Call ``after`` too once the release's paint is done."""
        if after is not None:
            self._after.append(after)


def _hold_of(widget: QWidget) -> _Hold | None:
    """The hold on ``widget``'s window (inside a ``paint_hold`` or before its release)."""
    return widget.window().findChild(_Hold, _HOLD_NAME)


def held(widget: QWidget) -> bool:
    """Is ``widget``'s window held (inside a ``paint_hold`` or before its release)?"""
    return _hold_of(widget) is not None


def before_release(widget: QWidget, fn: Callable[[], None]) -> None:
    """``fn()`` at the start of the release of ``widget``'s window, before its layout and
    paint; now if the window is not held (see the module's docstring)."""
    hold = _hold_of(widget)
    if hold is None:
        fn()
    else:
        hold.first(fn)


@contextmanager
def paint_hold(widget: QWidget, after: Callable[[], None] | None = None) -> Iterator[None]:
    """No paint of ``widget``'s window inside the block nor in the queued calls it caused;
    then the layout, then one paint, then ``after()`` (see the module's docstring)."""
    outer = _hold_of(widget)
    if outer is not None:                           # an outer hold, or a release to come
        outer.also_after(after)
        yield
        return
    hold = _Hold(widget.window())
    hold.also_after(after)
    try:
        yield
    finally:
        timer = QTimer(hold)                        # a timer, not a posted call: the timers
        timer.setSingleShot(True)                   # due now run first (the module docstring)
        timer.setTimerType(Qt.TimerType.PreciseTimer)
        timer.timeout.connect(hold.release)
        timer.start(0)
