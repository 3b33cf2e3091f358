"""``FastDelegate``: table cells painted from cached, pre-laid-out text.

Qt's default delegate lays out each cell's text again on every repaint
(``QTextLayout`` per cell, via the style). The live tables of the Lanes tab
repaint dozens of cells several times a second, and that layout was most of
their ~2–5 ms per repaint (``perf``: ``QTextEngine::itemize`` / ``shapeText``).
This delegate reads the same roles from the model (display text, foreground,
background, bold or not, alignment) and draws the text from a ``QStaticText``
kept per (text, bold or not, width) (``StaticTexts``): laid out and elided
once, then only drawn. The view's font is taken on the first paint; a model
font counts only for its boldness. ``clear()`` forgets texts and font (the
view calls it when its font changes).

Looks: the row background (alternate rows, selection, the model's
background), the text with a 4-pixel margin, elided on the right when it
does not fit. Cells with a check state are painted by Qt's own delegate, so
their check box looks and behaves as before (clicks, Space).
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from lanemon.ui.kit.static_texts import StaticTexts

_DISPLAY = Qt.ItemDataRole.DisplayRole
_FG = Qt.ItemDataRole.ForegroundRole
_BG = Qt.ItemDataRole.BackgroundRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_CHECK = Qt.ItemDataRole.CheckStateRole
_FONT = Qt.ItemDataRole.FontRole
_SELECTED = QStyle.StateFlag.State_Selected
_ALTERNATE = QStyleOptionViewItem.ViewItemFeature.Alternate
_RIGHT = int(Qt.AlignmentFlag.AlignRight.value)     # the models give alignments as ints
_HCENTER = int(Qt.AlignmentFlag.AlignHCenter.value)
MARGIN = 4
CACHE_MAX = 600      # texts per generation (static_texts): ~2x the cells a table shows


class FastDelegate(QStyledItemDelegate):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._texts = StaticTexts(limit=CACHE_MAX)

    def paint(self, painter, option, index) -> None:
        model = index.model()
        if model.data(index, _CHECK) is not None:
            super().paint(painter, option, index)
            return
        rect = option.rect
        pal = option.palette
        selected = bool(option.state & _SELECTED)
        if selected:
            painter.fillRect(rect, pal.brush(QPalette.ColorRole.Highlight))
        else:
            bg = model.data(index, _BG)
            if bg is not None:
                painter.fillRect(rect, bg)
            elif option.features & _ALTERNATE:
                painter.fillRect(rect, pal.brush(QPalette.ColorRole.AlternateBase))
        text = model.data(index, _DISPLAY)
        if not text:
            return
        text = str(text)
        texts = self._texts
        if not texts.fonts:          # the first paint since clear(): the view's font, and bold
            base = QFont(option.font)
            bold = QFont(base)
            bold.setBold(True)
            texts.set_fonts((base, bold))
        mf = model.data(index, _FONT)
        font_index = int(mf is not None and mf.bold())
        st, w, h = texts.get(font_index, text, max(0, rect.width() - 2 * MARGIN))
        font = texts.fonts[font_index]
        if selected:
            painter.setPen(pal.color(QPalette.ColorRole.HighlightedText))
        else:
            fg = model.data(index, _FG)
            painter.setPen(fg.color() if fg is not None else pal.color(QPalette.ColorRole.Text))
        painter.setFont(font)
        align = model.data(index, _ALIGN) or 0
        if align & _RIGHT:
            x = rect.right() - MARGIN - w + 1
        elif align & _HCENTER:
            x = rect.left() + (rect.width() - w) / 2
        else:
            x = rect.left() + MARGIN
        painter.drawStaticText(QPointF(x, rect.top() + (rect.height() - h) / 2), st)

    @property
    def texts(self) -> StaticTexts:
        """The laid-out texts the cells are drawn from (fonts: the view's, then bold)."""
        return self._texts

    def clear(self) -> None:
        """Forget the laid-out texts and fonts (call when the view's font changes)."""
        self._texts.set_fonts(())
