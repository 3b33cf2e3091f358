"""Parts of a view side by side when the view is wide enough, one above the other when not.

``Reflow(owner, target, wide_at)`` watches the width ``owner`` is given (its
parent's: the tab page's viewport, which does not shrink below the owner's
least width, so not the owner's own width): at or above
``wide_at()`` pixels (a callable, so it can follow the font scale) ``target``
(a ``QBoxLayout`` or a ``QSplitter``) lays its parts out left to right, below
it top to bottom; the tab page around the view then scrolls vertically, never
sideways. A resize, or a part whose least size changed (a longer text), decides on
the loop's next turn (never inside the resize or the layout pass).
``on_change(wide)`` (optional) is called after each switch, for what
a view changes with the direction (e.g. a table's least height). ``apply()``
re-decides now (call it after a font change).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QBoxLayout, QSplitter, QWidget


class Reflow(QObject):
    def __init__(self, owner: QWidget, target: QBoxLayout | QSplitter, wide_at: Callable[[], int],
                 on_change: Callable[[bool], None] | None = None) -> None:
        super().__init__(owner)
        self._owner = owner
        self._target = target
        self._wide_at = wide_at
        self._on_change = on_change
        self.wide: bool | None = None
        self._watched: QWidget | None = None
        # a switch never happens inside a resize (a layout being laid out, a style being applied):
        # it waits for the loop's next turn
        self._later = QTimer(self)
        self._later.setSingleShot(True)
        self._later.setInterval(0)
        self._later.timeout.connect(self.apply)
        owner.installEventFilter(self)
        self._watch_parent()

    def _watch_parent(self) -> None:
        parent = self._owner.parentWidget()
        if parent is self._watched:
            return
        if self._watched is not None:
            self._watched.removeEventFilter(self)
        self._watched = parent
        if parent is not None:
            parent.installEventFilter(self)

    def room(self) -> int:
        """The width the owner is given: its parent's, else its own."""
        parent = self._owner.parentWidget()
        return parent.width() if parent is not None else self._owner.width()

    def eventFilter(self, watched, event) -> bool:
        kind = event.type()
        if kind == QEvent.Type.ParentChange and watched is self._owner:
            self._watch_parent()
            self._later.start()
        elif kind == QEvent.Type.Resize or (kind == QEvent.Type.LayoutRequest and watched is self._owner):
            self._later.start()      # resized, or a part's least size changed (a longer text)
        return False

    def apply(self) -> None:
        """Lay the parts out for the owner's current width (nothing if unchanged)."""
        wide = self.room() >= self._wide_at()
        if wide == self.wide:
            return
        self.wide = wide
        t = self._target
        if isinstance(t, QSplitter):
            t.setOrientation(Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical)
        else:
            t.setDirection(QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom)
        if self._on_change is not None:
            self._on_change(wide)
