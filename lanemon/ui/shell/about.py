"""The About dialog: what is running, and what this machine measured.

Version, Python, Qt (the runtime's ``qVersion()`` and PySide6's version), the
Qt platform, the multiprocessing start method, and worker start-up as measured
at start (cold start-up, warm round trip; "measuring…" until known; the
dialog follows the controller while it is open). "Copy" puts the same lines
on the clipboard, for a bug report.
"""

from __future__ import annotations

import platform

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from lanemon import __version__
from lanemon.ui.kit import theme
from lanemon.work import start_method

MEASURING = "measuring…"


def facts(controller=None) -> list[tuple[str, str]]:
    """(name, value) rows, in the dialog's order."""
    m = controller.machine if controller is not None else None
    cold = warm = MEASURING
    if m is not None:
        if m.cold_startup_ms is not None:
            cold = f"{m.cold_startup_ms:,.1f} ms"
        if m.warm_roundtrip_ms is not None:
            warm = f"{m.warm_roundtrip_ms:,.2f} ms"
        if m.errors and (m.cold_startup_ms is None or m.warm_roundtrip_ms is None):
            cold = cold if m.cold_startup_ms is not None else "not measured"
            warm = warm if m.warm_roundtrip_ms is not None else "not measured"
    return [
        ("version", f"lanemon {__version__}"),
        ("Python", f"{platform.python_version()} ({platform.python_implementation()}, "
                   f"{platform.system()} {platform.machine()})"),
        ("Qt", f"{qVersion()} (PySide6 {PySide6.__version__})"),
        ("Qt platform", QGuiApplication.platformName() or "–"),
        ("start method", start_method()),
        ("worker cold start-up", cold),
        ("warm round trip", warm),
    ]


class AboutDialog(QDialog):
    def __init__(self, controller=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About lanemon")
        self.controller = controller
        self.title = title = QLabel("lanemon")
        blurb = QLabel("Event-loop responsiveness and scheduling contention, made visible.")
        blurb.setProperty("muted", True)
        blurb.setWordWrap(True)

        self.values: dict[str, QLabel] = {}
        self._grid = grid = QGridLayout()
        for row, (name, value) in enumerate(facts(controller)):
            key = QLabel(name)
            key.setProperty("muted", True)
            val = QLabel(value)
            val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(key, row, 0, Qt.AlignmentFlag.AlignRight)
            grid.addWidget(val, row, 1)
            self.values[name] = val

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        copy = buttons.addButton("Copy", QDialogButtonBox.ButtonRole.ActionRole)
        copy.clicked.connect(self.copy)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)

        self._layout = layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(blurb)
        layout.addLayout(grid)
        layout.addWidget(buttons)
        self.apply_fonts()
        if controller is not None:
            controller.changed.connect(self.refresh)

    def apply_fonts(self) -> None:
        """Follow the theme's font scale (presenter mode may have changed it since)."""
        s = theme.font_scale()
        font = QGuiApplication.font()
        font.setPointSizeF(theme.pt(20))
        font.setBold(True)
        self.title.setFont(font)
        for label in self.values.values():
            label.setFont(theme.mono_font())
        self._grid.setHorizontalSpacing(int(16 * s))
        self._grid.setVerticalSpacing(int(4 * s))
        self._layout.setSpacing(int(10 * s))
        self.adjustSize()

    def refresh(self) -> None:
        for name, value in facts(self.controller):
            if name in self.values:
                self.values[name].setText(value)

    def text(self) -> str:
        return "\n".join(f"{name}: {value}" for name, value in facts(self.controller))

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())
