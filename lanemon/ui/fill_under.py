"""The area under a curve, down to 0, filled as a row of small polygons.

Why not one polygon: Qt's raster engine fills a polygon scanline by scanline,
keeping every edge that crosses the line in a sorted list. Under a flat lag
curve, nearly all ~1,200 edges cross each of the few scanlines it covers,
and one fill costs 2–3 ms (``lanemon bench ui`` counted it as most of the
chart's frame). ``CHUNK`` consecutive points per polygon give the same
pixels (non-antialiased fills of polygons that share an edge neither overlap
nor leave a gap; ``tests/test_fill_under.py`` compares the two renderings)
for about a tenth of the cost.

``set_data(x, y)`` takes the curve in data coordinates; the item is meant for
a pyqtgraph ``ViewBox`` (``addItem(item, ignoreBounds=True)``).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QPainter
from PySide6.QtWidgets import QGraphicsItem

from lanemon.ui.chart_items import BoundedItem

CHUNK = 48    # points per polygon (polygons of 16 to 128 points cost about the same)


def chunk_bounds(n: int, chunk: int = CHUNK) -> list[tuple[int, int]]:
    """``[start, end)`` index ranges of consecutive chunks; neighbours share one point."""
    if n < 2:
        return []
    return [(s, min(n, s + chunk + 1)) for s in range(0, n - 1, chunk)]


class FillUnder(BoundedItem):
    """Fills between ``(x, y)`` and ``y = 0`` with one brush, no pen."""

    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._polys: list = []
        self._pool: list = []      # (QPolygonF, its points as a numpy view), reused
        self._brush = QBrush()

    def setBrush(self, brush: QBrush) -> None:  # noqa: N802 (Qt naming, like QAbstractGraphicsShapeItem)
        self._brush = QBrush(brush)
        self.update()

    def polygons(self) -> list:
        return list(self._polys)

    def set_data(self, x: np.ndarray, y: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        bounds = chunk_bounds(int(x.size))
        polys = []
        for i, (s, e) in enumerate(bounds):
            k = e - s
            arr = self._buffer(i, k + 2)
            arr[:k, 0] = x[s:e]
            arr[:k, 1] = y[s:e]
            arr[k] = (x[e - 1], 0.0)
            arr[k + 1] = (x[s], 0.0)
            polys.append(self._pool[i][0])
        if polys:
            lo, hi = float(min(0.0, y.min())), float(max(0.0, y.max()))
            rect = QRectF(float(x[0]), lo, float(x[-1] - x[0]), hi - lo)
        else:
            rect = QRectF()
        self._polys = polys
        self.set_bounds(rect)

    def _buffer(self, i: int, size: int) -> np.ndarray:
        """Polygon ``i`` of the pool with ``size`` points, as a writable (size, 2) array.

        The polygons are kept between frames (most chunks keep their size), so a
        frame writes coordinates in place instead of making ~25 polygons.
        """
        pool = self._pool
        if i == len(pool):
            pool.append((pg.functions.create_qpolygonf(size), None))
        poly, arr = pool[i]
        if arr is None or arr.shape[0] != size:
            poly.resize(size)
            arr = pg.functions.ndarray_from_qpolygonf(poly)
            pool[i] = (poly, arr)
        return arr

    def paint(self, painter: QPainter, _option, _widget=None) -> None:
        if not self._polys:
            return
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self._brush)
        for poly in self._polys:
            painter.drawPolygon(poly)
