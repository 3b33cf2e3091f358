"""Writing files: the report (JSON), the heartbeat (CSV), a widget (PNG).

Each write is atomic (a temporary file in the same folder, then a rename), so
a failed export never leaves a half-written file behind; ``OSError`` says why
(``lanemon.files.cannot_write`` makes the sentence the window shows).
"""

from __future__ import annotations

import csv

from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QWidget

from lanemon.files import atomic_replace, atomic_write, write_json
from lanemon.ui.heartbeat.timer import Heartbeat


def write_report(path: str, report: dict) -> None:
    write_json(path, report)


def write_heartbeat_csv(path: str, heartbeat: Heartbeat) -> int:
    """``t_s,lag_ms`` rows (t from the heartbeat's start), oldest first; returns the row count."""
    rows = list(heartbeat.to_csv_rows())

    def write(fh):
        out = csv.writer(fh)
        out.writerow(["t_s", "lag_ms"])
        out.writerows((f"{t:.6f}", f"{lag:.4f}") for t, lag in rows)
    atomic_write(path, ".csv", write)
    return len(rows)


def save_png(widget: QWidget, path: str) -> QPixmap:
    """A picture of ``widget`` as it is on screen, written atomically; returns the picture."""
    image = widget.grab()

    def write_file(tmp: str) -> None:
        if not image.save(tmp, "PNG"):
            raise OSError("Qt could not write the picture as PNG")
    atomic_replace(path, ".png", write_file)
    return image
