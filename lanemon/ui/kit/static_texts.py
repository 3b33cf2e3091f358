"""``StaticTexts``: laid-out plain texts, kept so a repaint does not shape the same strings again.

``QPainter.drawText`` lays its text out on every call; the window's live
panels (counters grid, staff strip, tallies, table cells) draw the same
strings frame after frame. ``get(font_index, text)`` returns a prepared
``QStaticText`` with its width and height, laid out once in
``fonts[font_index]``; with ``elide_px`` the text is first elided on the
right to that many pixels (and kept per width). ``set_fonts`` changes the
fonts and forgets every text.

Bounded, and hot texts survive: the cache has two generations of at most
``limit`` texts each. When the new one is full, it becomes the old one and the
old one is dropped; a text found in the old generation moves to the new one.
So at most ``2 * limit`` texts are kept (each ~2 KB of Qt's memory, so a live
panel's ever-new strings, times and counts, reach the ceiling early and stay
there), and what is on screen frame after frame is never laid out again.

``forget_all()`` empties every ``StaticTexts`` there is (each text is laid out again when
next drawn): the Lanes tab's Reset calls it, because the texts laid out during a
99,999-job burst (counts, times) are kept in the pymalloc arenas the burst took, and an
arena goes back to the system only once every block in it is free.
"""

from __future__ import annotations

import weakref

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics, QStaticText, QTransform

_all: weakref.WeakSet[StaticTexts] = weakref.WeakSet()   # every cache alive, for forget_all


def forget_all() -> int:
    """Empty every ``StaticTexts`` alive; how many texts were dropped."""
    n = 0
    for texts in list(_all):
        n += len(texts)
        texts.forget()
    return n


class StaticTexts:
    def __init__(self, fonts: tuple[QFont, ...] = (), limit: int = 1000) -> None:
        _all.add(self)
        self.fonts = tuple(fonts)
        self._limit = limit
        self._cache: dict[tuple, tuple[QStaticText, float, float]] = {}   # the new generation
        self._old: dict[tuple, tuple[QStaticText, float, float]] = {}

    def __len__(self) -> int:
        return len(self._cache) + len(self._old)

    def kept(self) -> dict[tuple, tuple[QStaticText, float, float]]:
        """What is kept now, both generations: ``(font_index, text, elide_px)`` -> the
        laid-out text, its width and height (the objects ``get`` returns). A copy."""
        return {**self._old, **self._cache}

    def set_fonts(self, fonts: tuple[QFont, ...]) -> None:
        self.fonts = tuple(fonts)
        self.forget()

    def forget(self) -> None:
        """Drop every laid-out text (new tables: a dict keeps the room it once needed)."""
        self._cache = {}
        self._old = {}

    def get(self, font_index: int, text: str, elide_px: int | None = None) -> tuple[QStaticText, float, float]:
        key = (font_index, text, elide_px)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) >= self._limit:
                self._old, self._cache = self._cache, {}
            hit = self._old.pop(key, None)
            if hit is not None:
                self._cache[key] = hit
                return hit
            font = self.fonts[font_index]
            if elide_px is not None:
                text = QFontMetrics(font).elidedText(text, Qt.TextElideMode.ElideRight, elide_px)
            st = QStaticText(text)
            st.setTextFormat(Qt.TextFormat.PlainText)
            st.prepare(QTransform(), font)
            size = st.size()
            hit = self._cache[key] = (st, size.width(), size.height())
        return hit
