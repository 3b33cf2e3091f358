"""Where a tab's data comes from: this window's own simulation, or a store it follows.

``SourcePicker`` is an editable combo box and a Go button (Alt+T: the field, Alt+G: Go), reusable by any
tab that can follow a store (the Lanes & queues tab; the Counters tab next).
Its first item is :data:`SIMULATED` ("this window (simulated)", the default);
the others are the store URLs followed last (kept in the settings, redacted:
``lanemon.ui.shell.settings.recent_sources``), newest first.

Guaranteed:

* ``chosen`` (a Qt signal) carries what the user asked for: ``""`` for this
  window's simulation, else the URL text as typed (stripped). It is emitted
  when the user picks an item of the list, presses Enter in the field, or
  clicks Follow; never by the code that shows the current source.
* The picker decides nothing: the tab tries the source, then calls
  ``set_source(url)`` (``None``: the simulation) once it is in use -- the
  field then shows it and a URL is remembered -- or ``say(why, error=True)``
  when it was refused (bad URL, unreachable store): the field goes back to the
  source in use.
* ``say(text, error)`` shows a one-line status beside it (the error colour is
  the theme's ``WARN``, re-read on a palette change).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from lanemon.ui.kit import theme

__all__ = ["SIMULATED", "SourcePicker"]

SIMULATED = "this window (simulated)"


class SourcePicker(QWidget):
    """See the module docstring. ``settings``: a ``QSettings`` for the recent URLs
    (``None``: ``lanemon.ui.shell.settings.open_store()``); ``label`` and ``go``: the field's label and
    the button's text, each with the Alt letter free in the tab's scope."""

    chosen = Signal(str)

    def __init__(self, settings=None, parent: QWidget | None = None, *,
                 label: str = "Da&ta source", go: str = "&Go") -> None:
        super().__init__(parent)
        from lanemon.ui.shell import settings as kept

        self._settings = settings if settings is not None else kept.open_store()
        self._current: str | None = None      # the source in use (None: the simulation)
        self._error = False
        self._quiet = False                    # the code changes the field: no ``chosen``
        self.box = QComboBox()
        self.box.setEditable(True)
        self.box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.box.setMinimumContentsLength(14)    # (a long URL scrolls in the field; the whole is its tooltip)
        self.box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.box.setToolTip("this window's own simulation, or a store to follow: sqlite:///path/file.db "
                            "or postgresql://user@host/db (Enter or Go)")
        self.follow_button = QPushButton(go)
        self.follow_button.setToolTip("follow the store typed (or go back to this window's simulation)")
        label = QLabel(label)
        label.setBuddy(self.box)
        self.status = QLabel("")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        row.addWidget(label)
        row.addWidget(self.box, 2)
        row.addWidget(self.follow_button)
        row.addWidget(self.status, 3)
        self._fill(kept.recent_sources(self._settings))
        self.box.activated.connect(lambda _i: self._ask())
        self.box.lineEdit().returnPressed.connect(self._ask)
        self.follow_button.clicked.connect(self._ask)

    # --- what the user asks for -------------------------------------------------------------
    def text(self) -> str:
        """What the field says: ``""`` for the simulation, else the URL typed."""
        t = self.box.currentText().strip()
        return "" if t in ("", SIMULATED) else t

    def _ask(self) -> None:
        if not self._quiet:
            self.chosen.emit(self.text())

    def choose(self, url: str) -> None:
        """Type ``url`` (``""``: the simulation) and ask for it, as a user would."""
        self._show(url or SIMULATED)
        self._ask()

    # --- what the tab tells it ---------------------------------------------------------------
    @property
    def source(self) -> str | None:
        """The source in use (``None``: this window's simulation)."""
        return self._current

    def recent(self) -> list[str]:
        return [self.box.itemText(i) for i in range(1, self.box.count())]

    def set_source(self, url: str | None) -> None:
        """The tab now shows ``url`` (``None``: its simulation); a URL is remembered."""
        from lanemon.ui.shell import settings as kept

        self._current = url or None
        if url:
            self._fill(kept.remember_source(self._settings, url))
        self._show(url or SIMULATED)

    def say(self, text: str, error: bool = False) -> None:
        """The status beside the picker; after a refusal the field shows the source in use."""
        self._error = bool(error)
        self._paint()
        self.status.setText(text)
        self.status.setToolTip(text)
        if error:
            self._show(self._current or SIMULATED)

    def _fill(self, urls: list[str]) -> None:
        self._quiet = True
        try:
            current = self.box.currentText()
            self.box.clear()
            self.box.addItems([SIMULATED, *urls])
            self.box.setCurrentText(current or SIMULATED)
        finally:
            self._quiet = False

    def _show(self, text: str) -> None:
        self._quiet = True
        try:
            self.box.setCurrentText(text)
        finally:
            self._quiet = False

    def _paint(self) -> None:
        sheet = f"color: {theme.WARN}; font-weight: bold;" if self._error else ""
        if self.status.styleSheet() != sheet:
            self.status.setStyleSheet(sheet)

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._paint()
        super().changeEvent(event)
