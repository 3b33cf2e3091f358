"""First-paint probe for ``lanemon bench startup``.

When the environment variable ``LANEMON_FIRST_PAINT_EXIT`` is set, the window
reports the first time it has been painted (``lanemon: first paint`` and the
wall-clock time on stdout) and then closes itself, so the benchmark can time
"process start to first painted window" with the real ``lanemon`` command.
Without the variable, nothing is installed.
"""

from __future__ import annotations

import os
import sys
import time

from PySide6.QtCore import QEvent, QObject, QTimer

ENV = "LANEMON_FIRST_PAINT_EXIT"


class _Probe(QObject):
    def __init__(self, window) -> None:
        super().__init__(window)
        self._window = window
        self._done = False

    def eventFilter(self, obj, event) -> bool:
        if not self._done and event.type() == QEvent.Type.Paint:
            self._done = True
            # time.time(): comparable with the parent's clock across processes
            print(f"lanemon: first paint {time.time():.6f}", flush=True)
            QTimer.singleShot(0, self._window.close)
        return False


def install(window) -> None:
    """Install the probe on ``window`` if ``LANEMON_FIRST_PAINT_EXIT`` is set."""
    if not os.environ.get(ENV):
        return
    probe = _Probe(window)
    window.installEventFilter(probe)
    sys.stdout.flush()
