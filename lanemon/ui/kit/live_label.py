"""``LiveLabel``: one line of coloured text parts that changes often, cheaply.

Two costs of a ``QLabel`` that changes several times a second are avoided:

- **layout**: a ``QLabel`` asks its parent for a new layout on every
  ``setText`` (``lanemon bench ui`` saw ``LayoutRequest`` events of the
  Lanes tab cost ~0.7 ms each, dozens a second). A ``LiveLabel`` is one line
  tall, takes the width its layout gives it (longer text is clipped, as a
  ``QLabel`` with an ignored horizontal size policy is) and on a change only
  repaints itself;
- **text layout**: rich text is laid out again as a whole document on every
  change (~0.5 ms for a line of figures). A ``LiveLabel`` is given **parts**,
  ``(text, colour, bold)``, each drawn from a cache of laid-out strings
  (``StaticTexts``): when one figure changes, only that figure's few
  characters are laid out, once.

``set_parts([(text, colour or None, bold), ...])``: ``None`` is the palette's
text colour. ``setText(text)`` is one plain part. ``text()`` is the plain text.
``figure_parts`` makes the parts of a line of named figures.

By default it paints its own background, the palette's ``Base`` (the
window's background, ``theme.BG``, in both palettes), so a change does not
repaint the widgets under it (the tab pane and its parents): place it on
that background, or pass ``fill=False`` (elsewhere, e.g. in the status bar).
``reserve(text)`` keeps room for at least that text (for a label in a
layout with no stretch to give it).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from lanemon.ui.kit.static_texts import StaticTexts

Part = tuple[str, "str | None", bool]


def figure_parts(figures, name_color: str, sep: str) -> list[Part]:
    """Parts for a line of named figures: ``name`` in ``name_color``, then the value in bold
    and its own colour (``None``: the text colour), figures separated by ``sep``.
    ``figures``: ``(name, value, colour)`` triples."""
    parts: list[Part] = []
    for i, (name, value, color) in enumerate(figures):
        parts += [((sep if i else "") + f"{name} ", name_color, False), (str(value), color, True)]
    return parts


class LiveLabel(QWidget):
    def __init__(self, text: str = "", parent: QWidget | None = None, *, fill: bool = True) -> None:
        super().__init__(parent)
        self._fill = fill
        self._reserved = ""
        self._parts: tuple[Part, ...] = ()
        self._colors: dict[str, QColor] = {}
        self._texts = StaticTexts(limit=60)
        self._take_font()
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, fill)
        self.setText(text)

    # --- content -------------------------------------------------------------------------
    @property
    def parts(self) -> tuple[Part, ...]:
        return self._parts

    def text(self) -> str:
        return "".join(t for t, _, _ in self._parts)

    def set_parts(self, parts) -> None:
        parts = tuple(parts)
        if parts != self._parts:
            self._parts = parts
            self.update()

    def setText(self, text: str) -> None:
        self.set_parts(((text, None, False),) if text else ())

    # --- size and font -----------------------------------------------------------------------
    def reserve(self, text: str) -> None:
        """Keep room for at least ``text`` in this font (followed on font changes)."""
        self._reserved = text
        self.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        self._apply_reserve()

    def _apply_reserve(self) -> None:
        if self._reserved:
            self.setMinimumWidth(self.fontMetrics().horizontalAdvance(self._reserved) + 4)

    def sizeHint(self) -> QSize:
        return QSize(max(100, self.minimumWidth()), self._line_height())   # else the layout's width

    def minimumSizeHint(self) -> QSize:
        return QSize(self.minimumWidth(), self._line_height())

    def _line_height(self) -> int:
        return self.fontMetrics().height() + 2

    def _take_font(self) -> None:
        bold = QFont(self.font())
        bold.setBold(True)
        self._texts.set_fonts((QFont(self.font()), bold))

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.FontChange:
            self._take_font()
            self._apply_reserve()
            self.updateGeometry()                # a font change may change the height
        super().changeEvent(event)

    # --- painting -----------------------------------------------------------------------------
    def _color(self, name: str | None) -> QColor:
        if name is None:
            return self.palette().windowText().color()
        c = self._colors.get(name)
        if c is None:
            c = self._colors[name] = QColor(name)
        return c

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        if self._fill:
            p.fillRect(self.rect(), self.palette().base())
        fonts = self._texts.fonts
        x, right, h = 1.0, self.width(), self.height()
        for text, color, bold in self._parts:
            st, w, th = self._texts.get(int(bold), text)
            p.setFont(fonts[int(bold)])
            p.setPen(self._color(color))
            p.drawStaticText(QPointF(x, max(0.0, (h - th) / 2)), st)
            x += w
            if x >= right:
                break
        p.end()
