"""``LiveLabel``: one line of coloured text parts that changes often, cheaply.

Two costs of a ``QLabel`` that changes several times a second are avoided:

- **layout**: a ``QLabel`` asks its parent for a new layout on every
  ``setText`` (``lanemon bench ui`` saw ``LayoutRequest`` events of the
  Lanes tab cost ~0.7 ms each, dozens a second). A ``LiveLabel`` is one line
  tall, takes the width its layout gives it and on a change only repaints
  itself. A text longer than that width is **elided**: it is cut at the
  right and ends with "…" (never clipped mid-glyph), and the whole text is
  the tooltip; ``shown_text()`` is what is painted. The cut is worked out
  again only when the parts, the width or the font change, never by a
  re-layout;
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
that background, or pass the name of the theme colour it sits on (the
status bar: ``fill="PANEL_BG"``, read from :mod:`theme` at each paint, so
it follows the theme), or ``fill=False`` (transparent: each change repaints
what is under it too).
``reserve(text)`` keeps room for at least that text (for a label in a
layout with no stretch to give it).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from lanemon.ui.kit import theme
from lanemon.ui.kit.static_texts import StaticTexts

Part = tuple[str, "str | None", bool]

ELLIPSIS = "\u2026"


def figure_parts(figures, name_color: str, sep: str) -> list[Part]:
    """Parts for a line of named figures: ``name`` in ``name_color``, then the value in bold
    and its own colour (``None``: the text colour), figures separated by ``sep``.
    ``figures``: ``(name, value, colour)`` triples."""
    parts: list[Part] = []
    for i, (name, value, color) in enumerate(figures):
        parts += [((sep if i else "") + f"{name} ", name_color, False), (str(value), color, True)]
    return parts


class LiveLabel(QWidget):
    def __init__(self, text: str = "", parent: QWidget | None = None, *,
                 fill: bool | str = True) -> None:
        super().__init__(parent)
        if isinstance(fill, str) and not isinstance(getattr(theme, fill, None), str):
            raise ValueError(f"fill must be True, False or a theme colour's name, got {fill!r}")
        self._fill = fill             # True: the palette's Base; a name: that theme colour; False: none
        self._reserved = ""
        self._parts: tuple[Part, ...] = ()
        self._shown: tuple[Part, ...] | None = None      # the parts as painted; None: work out again
        self._shown_width = -1                           # the width they were worked out for
        self._colors: dict[str, QColor] = {}
        self._texts = StaticTexts(limit=60)
        self._take_font()
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, fill is not False)
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
            self._shown = None
            self.update()

    def setText(self, text: str) -> None:
        self.set_parts(((text, None, False),) if text else ())

    def shown_text(self) -> str:
        """The text as painted at the current width: the whole text when it fits, else its
        start cut at the right and ending with "…" (the tooltip is then the whole text)."""
        return "".join(t for t, _, _ in self._shown_parts())

    def _shown_parts(self) -> tuple[Part, ...]:
        if self._shown is None or self._shown_width != self.width():
            self._shown_width = self.width()
            self._shown = self._fit(self.width() - 2)        # painting starts at x = 1
            tip = "" if self._shown is self._parts else self.text()
            if self.toolTip() != tip:
                self.setToolTip(tip)
        return self._shown

    def _fit(self, room: float) -> tuple[Part, ...]:
        """The parts that fit in ``room`` pixels: all of them (the same tuple) when they do;
        else the parts that fit with room for "…" after them, then the next part cut to fit
        and ending with "…"."""
        widths = [self._texts.get(int(bold), text)[1] for text, _, bold in self._parts]
        if sum(widths) <= room:
            return self._parts
        fonts = self._texts.fonts
        dots = max(QFontMetricsF(f).horizontalAdvance(ELLIPSIS) for f in fonts)
        shown: list[Part] = []
        x = 0.0
        for (text, color, bold), w in zip(self._parts, widths):
            if x + w + dots <= room:
                shown.append((text, color, bold))
                x += w
                continue
            fm = QFontMetricsF(fonts[int(bold)])
            lo, hi = 0, len(text)           # the longest start of the text that fits with "…"
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if fm.horizontalAdvance(text[:mid].rstrip() + ELLIPSIS) <= room - x:
                    lo = mid
                else:
                    hi = mid - 1
            shown.append((text[:lo].rstrip() + ELLIPSIS, color, bold))
            break
        return tuple(shown)

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
            self._shown = None
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
        fill = self._fill
        if fill is True:
            p.fillRect(self.rect(), self.palette().base())
        elif fill:
            p.fillRect(self.rect(), self._color(getattr(theme, fill)))
        fonts = self._texts.fonts
        x, right, h = 1.0, self.width(), self.height()
        for text, color, bold in self._shown_parts():
            st, w, th = self._texts.get(int(bold), text)
            p.setFont(fonts[int(bold)])
            p.setPen(self._color(color))
            p.drawStaticText(QPointF(x, max(0.0, (h - th) / 2)), st)
            x += w
            if x >= right:
                break
        p.end()
