"""A status bar whose passing messages are elided, never cut.

Qt's ``QStatusBar`` draws a message (``showMessage``) in the room left of its
permanent widgets and cuts it there: "Chart written to /home/…/a-long-fol"
says neither where nor that it was cut. :class:`StatusBar` draws the same
message in the same room with an ellipsis ("Chart written to /home/…/cha…")
and keeps the whole text as the bar's tooltip while it is shown.

Guaranteed: ``currentMessage()``, ``messageChanged``, the timeout and
``clearMessage`` are Qt's own; only the drawing of the message changes.
While no message is shown the bar paints as ``QStatusBar`` does; with one, its
background too (the style sheet's).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QStatusBar, QStyle, QStyleOption, QWidget

__all__ = ["StatusBar"]

#: where Qt starts a message (QStatusBarPrivate::messageRect), and the gap it leaves
#: before the first permanent widget
_LEFT_PX = 6
_GAP_PX = 2


class StatusBar(QStatusBar):
    """A ``QStatusBar`` that elides its passing message (see the module docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tip_before: str | None = None   # the bar's own tooltip, while a message replaces it
        self.messageChanged.connect(self._message_changed)

    def _message_changed(self, text: str) -> None:
        if text:
            if self._tip_before is None:
                self._tip_before = self.toolTip()
            self.setToolTip(text)
        elif self._tip_before is not None:
            self.setToolTip(self._tip_before)
            self._tip_before = None

    def message_rect(self) -> QRect:
        """The room a message is drawn in: from Qt's left margin to just left of the
        first visible permanent widget (the whole bar less Qt's margins without one)."""
        right = self.width() - 12
        for child in self.children():
            if isinstance(child, QWidget) and child.isVisible() and child.x() > _LEFT_PX \
                    and not child.isWindow() and self._is_permanent(child):
                right = min(right, child.x() - _GAP_PX)
        return QRect(_LEFT_PX, 0, max(0, right - _LEFT_PX), self.height())

    def _is_permanent(self, widget: QWidget) -> bool:
        # a normal widget is hidden while a message shows; the permanent ones stay: those
        # still visible now, except the size grip (right of them all, drawn over nothing)
        return widget.metaObject().className() != "QSizeGrip"

    def shown_message(self) -> str:
        """The message as drawn: elided to :meth:`message_rect` (empty: none shown)."""
        text = self.currentMessage()
        if not text:
            return ""
        return self.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, self.message_rect().width())

    def paintEvent(self, event) -> None:
        text = self.currentMessage()
        if not text:
            super().paintEvent(event)
            return
        # (Qt's paint would draw the whole text, cut at the first permanent widget); first the
        # bar's own background, as Qt's paint does (the style sheet's: without it the window
        # under the bar showed through while a message was shown)
        painter = QPainter(self)
        option = QStyleOption()
        option.initFrom(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_Widget, option, painter, self)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(self.message_rect(),
                         Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter
                         | Qt.TextFlag.TextSingleLine, self.shown_message())
        painter.end()
