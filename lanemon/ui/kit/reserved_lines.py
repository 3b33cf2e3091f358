"""``ReservedLines``: a word-wrapped label that keeps room for ``lines`` lines.

A ``QLabel`` whose text comes and goes (empty, then a line or two, then
empty) changes its height each time, and its layout moves everything after
it: in a tall panel, a relayout and a repaint of every widget in it. A
``ReservedLines`` is never shorter than ``lines`` lines of its font (empty
included), so a text that fits them changes no geometry; a longer text
still wraps and is shown whole (it grows then, as a ``QLabel`` does). Its
width is what its layout gives it: the text's width is never asked for
(horizontal size policy ``Ignored``). The room follows font changes (it is
worked out from the font at each ask).
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class ReservedLines(QLabel):
    def __init__(self, lines: int, text: str = "", parent: QWidget | None = None) -> None:
        if isinstance(lines, bool) or not isinstance(lines, int) or lines < 1:
            raise ValueError(f"lines must be an integer >= 1, got {lines!r}")
        super().__init__(text, parent)
        self._lines = lines
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    @property
    def lines(self) -> int:
        return self._lines

    def _least_height(self) -> int:
        m = self.contentsMargins()
        return self._lines * self.fontMetrics().lineSpacing() + m.top() + m.bottom() + 2 * self.margin()

    def heightForWidth(self, width: int) -> int:
        return max(self._least_height(), super().heightForWidth(width))

    def _at_least(self, size: QSize) -> QSize:
        return QSize(size.width(), max(size.height(), self._least_height()))

    def sizeHint(self) -> QSize:
        return self._at_least(super().sizeHint())

    def minimumSizeHint(self) -> QSize:
        return self._at_least(super().minimumSizeHint())


__all__ = ["ReservedLines"]
