"""Test set-up: Qt runs headless (offscreen) in every test.

The platform must be chosen before any QApplication exists, so it is set here,
at import time, before pytest-qt creates one.
"""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LANEMON_NO_SETTINGS", "1")
# windows listen for probes on any free port: not the machine's 47200, which another program may hold
os.environ.setdefault("LANEMON_PROBE_ADDRESS", "127.0.0.1:0")

from lanemon.ui import steady_process_settings

steady_process_settings()  # as the window and the benchmarks run


import pytest  # noqa: E402
from postgres import postgres_cluster, postgres_url  # noqa: E402, F401  (PostgreSQL fixtures)


@pytest.fixture
def window_app(qapp):
    """The application for tests that open main windows. Afterwards, the closed windows go
    (restyling the app restyles every widget still alive) and presenter mode's look goes back
    to the default (light palette, font scale 1; style sheets belong to windows)."""
    from PySide6.QtCore import QEvent

    from lanemon.ui.kit import theme
    from lanemon.ui.shell.app import application
    from lanemon.ui.shell.main_window import MainWindow

    app = application()
    yield app
    for w in app.topLevelWidgets():
        if isinstance(w, MainWindow) and not w.isVisible():
            w.deleteLater()
    app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    theme.set_palette("light")
    theme.apply_font_and_palette(app, 1.0)
