"""``StaticTexts``: laid-out plain texts, kept so a repaint does not shape the same strings again.

``QPainter.drawText`` lays its text out on every call; the window's live
panels (counters grid, staff strip, tallies, table cells) draw the same
strings frame after frame. ``get(font_index, text)`` returns a prepared
``QStaticText`` with its width and height, laid out once in
``fonts[font_index]``; with ``elide_px`` the text is first elided on the
right to that many pixels (and kept per width). Past ``limit`` entries the
cache starts again. ``set_fonts`` changes the fonts and forgets every text.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics, QStaticText, QTransform


class StaticTexts:
    def __init__(self, fonts: tuple[QFont, ...] = (), limit: int = 1000) -> None:
        self.fonts = tuple(fonts)
        self._limit = limit
        self._cache: dict[tuple, tuple[QStaticText, float, float]] = {}

    def __len__(self) -> int:
        return len(self._cache)

    def set_fonts(self, fonts: tuple[QFont, ...]) -> None:
        self.fonts = tuple(fonts)
        self._cache.clear()

    def get(self, font_index: int, text: str, elide_px: int | None = None) -> tuple[QStaticText, float, float]:
        key = (font_index, text, elide_px)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) > self._limit:
                self._cache.clear()
            font = self.fonts[font_index]
            if elide_px is not None:
                text = QFontMetrics(font).elidedText(text, Qt.TextElideMode.ElideRight, elide_px)
            st = QStaticText(text)
            st.setTextFormat(Qt.TextFormat.PlainText)
            st.prepare(QTransform(), font)
            size = st.size()
            hit = self._cache[key] = (st, size.width(), size.height())
        return hit
