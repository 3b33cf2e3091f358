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
is a queued call posted when the block ends, so it runs after the queued calls the
changes posted, on the loop's next pass over posted events (before any timer of that
pass). It does the layout passes asked for so far (graphics layouts first, which may
ask for widget ones), then paints at once what was asked for: one paint, in the new
look and layout. (A held-back request is answered by that paint; until then Qt sends
the window no other, so the release always paints, synchronously.)

Holds nest: a ``with`` on a window held already (an outer hold, or a release still to
come) adds nothing. An exception inside the ``with`` passes through; the release comes
all the same. A window deleted before its release is left alone (the queued call goes
with it).

Refused: nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

LAYOUT_ROUNDS = 4
"""Layout passes done at most at a release: a pass (one ``sendPostedEvents``) does the
requests posted before it; those it makes (a status bar's new height, then its
window's) wait for the next."""

_HOLD_NAME = "lanemon_paint_hold"


class _Hold(QObject):
    """Holds back the paint requests of the window it filters, until ``release``."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setObjectName(_HOLD_NAME)
        self._window = window
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if obj is self._window and event.type() == QEvent.Type.UpdateRequest:
            return True
        return False

    def release(self) -> None:
        window = self._window
        for _ in range(LAYOUT_ROUNDS):
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        window.removeEventFilter(self)
        self.setParent(None)
        # what was asked for, painted now (a request posted and not yet delivered then
        # finds nothing left to paint)
        QCoreApplication.sendEvent(window, QEvent(QEvent.Type.UpdateRequest))
        self.deleteLater()


def held(widget: QWidget) -> bool:
    """Is ``widget``'s window held (inside a ``paint_hold`` or before its release)?"""
    return widget.window().findChild(_Hold, _HOLD_NAME) is not None


@contextmanager
def paint_hold(widget: QWidget) -> Iterator[None]:
    """No paint of ``widget``'s window inside the block nor in the queued calls it caused;
    then the layout, then one paint (see the module's docstring)."""
    window = widget.window()
    if held(window):                                # an outer hold, or a release to come
        yield
        return
    hold = _Hold(window)
    try:
        yield
    finally:
        QTimer.singleShot(0, hold, hold.release)   # a queued call: after theirs
