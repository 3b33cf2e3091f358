"""``KeyLayer``: a widget laid over the whole window that has the keyboard while shown.

The shortcut list (F1) and a talk's blank screen are such layers. Guaranteed while one is
shown and focused: every key without Ctrl or Alt is the layer's (``keyPressEvent``), none
is the window's shortcuts' beneath it (a digit starts no run unseen, Space pauses nothing;
Ctrl+Q still quits); Tab and Backtab leave the focus on it. ``take_keyboard()`` remembers
where the focus was and takes it; ``give_keyboard_back()`` hides the layer and puts the
focus back there (if that widget is still there).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication, QWidget

_MODIFIED = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier


class KeyLayer(QWidget):
    """See the module docstring."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._return_focus: QWidget | None = None

    def take_keyboard(self) -> None:
        """Over all of the parent, shown, raised, with the focus (where it was, remembered)."""
        self._return_focus = QApplication.focusWidget()
        self.setGeometry(self.parentWidget().rect())
        self.raise_()
        self.show()
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def give_keyboard_back(self) -> None:
        """Hidden; the focus back where it was before ``take_keyboard``."""
        self.hide()
        back, self._return_focus = self._return_focus, None
        if back is not None:
            try:
                back.setFocus(Qt.FocusReason.OtherFocusReason)
            except RuntimeError:   # the widget is gone
                pass

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and not (event.modifiers() & _MODIFIED):
            event.accept()
            return True
        return super().event(event)

    def focusNextPrevChild(self, _next: bool) -> bool:
        return True         # Tab stays on the layer
