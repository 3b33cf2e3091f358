"""``titled(title, body)``: a title widget over a body that takes the room left (no margins)."""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget


def titled(title: QWidget, body: QWidget, spacing: int = 2) -> QWidget:
    """A box holding ``title`` over ``body``; the body stretches, the title keeps its height."""
    box = QWidget()
    v = QVBoxLayout(box)
    v.setContentsMargins(0, 0, 0, 0)
    v.setSpacing(spacing)
    v.addWidget(title)
    v.addWidget(body, 1)
    return box
