"""``LiveLabel``: one line of (rich) text that changes often, without re-laying out the window.

A ``QLabel`` asks its parent for a new layout on every ``setText``; with a
few labels changing ten times a second that is 1–2 ms of layout per change
on the event loop (``lanemon bench ui`` saw ``LayoutRequest`` events of the
Lanes tab cost ~0.7 ms each, dozens a second). A ``LiveLabel`` is one line
tall, takes the width its layout gives it (longer text is clipped, as a
``QLabel`` with an ignored horizontal size policy is), and on ``setText``
only repaints itself. The text is laid out once per change (``QStaticText``).

It accepts what the window's labels use: plain text or the rich-text subset
``QStaticText`` draws (``<b>``, ``<span style='color:…'>``, ``&nbsp;``).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, QSize, Qt
from PySide6.QtGui import QPainter, QStaticText
from PySide6.QtWidgets import QSizePolicy, QWidget


ONE_LINE_PX = 10000.0


class LiveLabel(QWidget):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = ""
        self._static = QStaticText()
        self._static.setTextFormat(Qt.TextFormat.RichText)
        self._static.setPerformanceHint(QStaticText.PerformanceHint.AggressiveCaching)
        # one line: rich text with no width set wraps at a narrow "ideal" width
        self._static.setTextWidth(ONE_LINE_PX)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setText(text)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 (QLabel's name)
        if text == self._text:
            return
        self._text = text
        self._static.setText(text)
        self.update()

    def setTextFormat(self, _fmt) -> None:  # noqa: N802 (QLabel's name; rich text always)
        pass

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(100, self._line_height())     # the width is the layout's (ignored policy)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(0, self._line_height())

    def _line_height(self) -> int:
        return self.fontMetrics().height() + 2

    def changeEvent(self, event) -> None:  # noqa: N802
        if event.type() == QEvent.Type.FontChange:
            # the static text is laid out again by itself when drawn with another font
            self.updateGeometry()                # a font change may change the height
        super().changeEvent(event)

    def paintEvent(self, _event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setFont(self.font())
        p.setPen(self.palette().windowText().color())
        y = (self.height() - self.fontMetrics().height()) / 2
        p.drawStaticText(QPointF(1.0, max(0.0, y)), self._static)
        p.end()
