"""Test set-up: Qt runs headless (offscreen) in every test.

The platform must be chosen before any QApplication exists, so it is set here,
at import time, before pytest-qt creates one.
"""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LANEMON_NO_SETTINGS", "1")

from lanemon.ui import steady_process_settings

steady_process_settings()  # as the window and the benchmarks run
