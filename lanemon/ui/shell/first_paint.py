"""After the window's first paint: the rest of the window, and the first-paint probe.

``install(window, then)`` calls ``then()`` once, from the event loop, right
after the window's first paint event, or ``FALLBACK_MS`` after ``install``
if no paint came by then (a window shown minimised): ``app.main`` installs
the other tabs and starts the background work there, so the window shows
without waiting for them.

When the environment variable ``LANEMON_FIRST_PAINT_EXIT`` is set, it also
reports on stdout the wall-clock time of the first paint event (``lanemon:
first paint T``) and of the end of ``then()`` (``lanemon: complete T``: every
tab there), then closes the window, so ``lanemon bench startup`` can time the
real ``lanemon`` command.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer

ENV = "LANEMON_FIRST_PAINT_EXIT"
FALLBACK_MS = 2000   # then() runs by then even if no paint came


class _AfterFirstPaint(QObject):
    def __init__(self, window, then: Callable[[], object] | None, report: bool) -> None:
        super().__init__(window)
        self._window = window
        self._then = then
        self._report = report
        self._painted = False
        self._called = False
        # a window that is never painted (shown minimised, on another desktop) still gets the rest
        self._fallback = QTimer(self)
        self._fallback.setSingleShot(True)
        self._fallback.timeout.connect(self._after)
        self._fallback.start(FALLBACK_MS)

    def eventFilter(self, obj, event) -> bool:
        if not self._painted and event.type() == QEvent.Type.Paint:
            self._painted = True
            if self._report:
                # time.time(): comparable with the parent's clock across processes
                print(f"lanemon: first paint {time.time():.6f}", flush=True)
            QTimer.singleShot(0, self._after)     # after this paint has reached the screen
        return False

    def _after(self) -> None:
        if self._called:
            return
        self._called = True
        self._fallback.stop()
        self._window.removeEventFilter(self)
        if self._then is not None:
            self._then()
        if self._report:
            print(f"lanemon: complete {time.time():.6f}", flush=True)
            self._window.close()
        self.deleteLater()


def install(window, then: Callable[[], object] | None = None) -> None:
    """Call ``then()`` once, from the loop, after ``window``'s first paint event (at the
    latest ``FALLBACK_MS`` from now); with ``LANEMON_FIRST_PAINT_EXIT`` set, also print
    the two times and close the window."""
    report = bool(os.environ.get(ENV))
    if then is None and not report:
        return
    window.installEventFilter(_AfterFirstPaint(window, then, report))
