"""What a talk shows: the step's caption above the chart, and the blank screen.

``TalkCaption`` is a band at the top of the heartbeat chart (inserted into the chart's
layout, so it takes room instead of hiding lag ticks): the step's title in large type,
its text under it, "step 3 / 12" on the right and, under the text, a note in small type
while the talk waits (for a run, a compare). Readable outside presenter mode, larger in
it (``apply_fonts`` follows ``theme.font_scale``). Hidden while no talk is loaded.

``BlankScreen`` covers the whole window in black (``theme.TALK_BLANK``) while shown.
Both draw only what they are given: the player (``player.TalkPlayer``) decides.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from lanemon.ui.kit import theme
from lanemon.ui.kit.key_layer import KeyLayer

TITLE_PT = 15.0
TEXT_PT = 11.5
COUNTER_PT = 11.0
NOTE_PT = 9.5


class TalkCaption(QFrame):
    """The caption band (see the module docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("talkCaption")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.title = QLabel("")
        self.title.setObjectName("talkTitle")
        self.title.setWordWrap(True)
        self.text = QLabel("")
        self.text.setObjectName("talkText")
        self.text.setWordWrap(True)
        self.counter = QLabel("")
        self.counter.setObjectName("talkCounter")
        self.counter.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        self.note = QLabel("")
        self.note.setObjectName("talkNote")
        self.note.setWordWrap(True)
        for label in (self.title, self.text, self.counter, self.note):
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title, 1)
        top.addWidget(self.counter, 0, Qt.AlignmentFlag.AlignTop)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addLayout(top)
        box.addWidget(self.text)
        box.addWidget(self.note)
        self.note.hide()
        self.hide()
        self._applying = False
        self.apply_fonts()

    def show_step(self, title: str, text: str, number: int, count: int) -> None:
        """Show step ``number`` of ``count``: its title and text (no note)."""
        self.title.setText(title)
        self.text.setText(text)
        self.text.setVisible(bool(text))
        self.counter.setText(f"step {number} / {count}")
        self.set_note("")

    def set_note(self, note: str) -> None:
        """A line in small type under the text (``""``: none)."""
        self.note.setText(note)
        self.note.setVisible(bool(note))

    def changeEvent(self, event) -> None:
        # presenter mode and the theme change the application's font and palette: follow them
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.PaletteChange) and not self._applying:
            self.apply_fonts()
        super().changeEvent(event)

    def apply_fonts(self) -> None:
        """Sizes and colours for the current font scale and palette."""
        self._applying = True
        try:
            self._apply_fonts()
        finally:
            self._applying = False

    def _apply_fonts(self) -> None:
        s = theme.font_scale()
        pad_v, pad_h = int(3 * s), int(10 * s)
        self.setStyleSheet(
            f"#talkCaption {{ background: {theme.PANEL_BG}; border-left: {max(4, int(6 * s))}px solid "
            f"{theme.TALK_ACCENT}; border-bottom: 1px solid {theme.BORDER}; padding: {pad_v}px {pad_h}px; }}"
            f"#talkCaption QLabel {{ background: transparent; color: {theme.FG}; }}"
            f"#talkCaption QLabel#talkCounter {{ color: {theme.TALK_ACCENT}; }}"
            f"#talkCaption QLabel#talkNote {{ color: {theme.MUTED}; }}")
        for label, size, bold in ((self.title, TITLE_PT, True), (self.text, TEXT_PT, False),
                                  (self.counter, COUNTER_PT, True), (self.note, NOTE_PT, False)):
            font = label.font()
            font.setPointSizeF(theme.pt(size))
            font.setBold(bold)
            label.setFont(font)


class BlankScreen(KeyLayer):
    """Black over the whole window (a speaker's "blank the screen"). While it covers the
    window it has the keyboard (``KeyLayer``): a key acts on nothing beneath (a digit starts
    no run unseen); it is said (``key_pressed``: the talk brings the window back)."""

    key_pressed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("talkBlank")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.hide()
        self.apply_fonts()

    def apply_fonts(self) -> None:
        self.setStyleSheet(f"#talkBlank {{ background: {theme.TALK_BLANK}; }}")

    def cover(self) -> None:
        self.apply_fonts()
        self.take_keyboard()

    def uncover(self) -> None:
        """Gone; the focus back where it was."""
        self.give_keyboard_back()

    def keyPressEvent(self, event) -> None:
        event.accept()
        if not event.isAutoRepeat():
            self.key_pressed.emit()
