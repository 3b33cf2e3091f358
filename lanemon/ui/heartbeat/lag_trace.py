"""The lag curve and the area under it, as one chart item with preallocated buffers.

``set_data(x, y)`` takes the curve in data coordinates (one point per pixel
column, see ``column_max``); the item is meant for a pyqtgraph ``ViewBox``
(``addItem(item, ignoreBounds=True)``). Per frame it writes the points into
buffers it keeps (a few numpy operations, no Python loop over points) and
paints with a handful of Qt calls:

- **the curve**: one ``drawPolyline`` of a polygon kept between frames and
  written in place through a numpy view (no QPainterPath is built); 1-pixel pen.
- **the fill**, down to the base (0 unless ``set_base`` moved it: a log
  scale's floor), as a row of small polygons of ``CHUNK`` points.
  Why not one polygon: Qt's raster engine fills a polygon scanline by
  scanline, keeping every edge that crosses the line in a sorted list. Under
  a flat lag curve nearly all ~1,200 edges cross each of the few scanlines
  it covers, and one fill costs 2–3 ms. Consecutive chunks share a point and
  give the same pixels as one polygon (non-antialiased fills of polygons that
  share an edge neither overlap nor leave a gap; ``tests/test_lag_trace.py``
  compares the two renderings) for a fraction of the cost. Every chunk has
  the same number of points (the last repeats its final point), so the
  polygons are allocated once and rewritten in place. A polygon's fill costs
  about its edges times the scanlines they cross: under a noisy idle curve
  (a few ms, 20-30 pixel rows) chunks of 32 points cost 0.9 ms per frame
  where chunks of 96 cost 1.2 ms (the frame as it runs, measured
  interleaved); 16 costs as much again in Python (twice the polygons to fill).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem

from lanemon.ui.kit.chart_items import BoundedItem

CHUNK = 32    # segments per polygon (see the module docstring)


def chunk_index(n: int, chunk: int = CHUNK) -> np.ndarray:
    """Point indices of each polygon, shape ``(chunks, chunk + 1)``: chunk ``i`` covers points
    ``i*chunk .. i*chunk + chunk`` (neighbours share one point); the last repeats point ``n-1``."""
    if n < 2:
        return np.empty((0, chunk + 1), dtype=np.int64)
    m = -(-(n - 1) // chunk)
    idx = np.arange(m)[:, None] * chunk + np.arange(chunk + 1)[None, :]
    return np.minimum(idx, n - 1)


class LagTrace(BoundedItem):
    """A 1-pixel polyline through ``(x, y)`` over the area between it and ``y = 0``."""

    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._brush = QBrush()
        self._pen = QPen()
        self._n = 0
        self._line = pg.functions.create_qpolygonf(0)     # the curve's points
        self._line_xy = pg.functions.ndarray_from_qpolygonf(self._line)
        self._index_n = -1
        self._index = chunk_index(0)
        self._pool: list = []      # (QPolygonF of CHUNK + 3 points, its points as a numpy view)
        self._polys = 0            # how many of the pool this frame fills
        self._base = 0.0           # the fill goes down to this y
        self.xData: np.ndarray | None = None   # what it was last given (pyqtgraph's names)
        self.yData: np.ndarray | None = None

    def setBrush(self, brush: QBrush) -> None:
        self._brush = QBrush(brush)
        self.update()

    def setPen(self, pen: QPen) -> None:
        self._pen = QPen(pen)
        self.update()

    def set_base(self, y: float) -> None:
        """Where the fill ends below the curve (data coordinates); takes effect on the next
        ``set_data``."""
        self._base = float(y)

    def polygons(self) -> list:
        """The fill's polygons of this frame (copies)."""
        return [type(p)(p) for p, _ in self._pool[:self._polys]]

    def set_data(self, x: np.ndarray, y: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = int(x.size)
        self._n = n
        self.xData, self.yData = x, y
        if n < 2:
            self._polys = 0
            self.set_bounds(QRectF())
            return
        # the curve (resized only when the number of points changes)
        if self._line_xy.shape[0] != n:
            self._line.resize(n)
            self._line_xy = pg.functions.ndarray_from_qpolygonf(self._line)
        self._line_xy[:, 0] = x
        self._line_xy[:, 1] = y
        # the fill: every chunk's points, then down to the base at its last x and back at its first
        if n != self._index_n:
            self._index_n, self._index = n, chunk_index(n)
        idx = self._index
        m = idx.shape[0]
        while len(self._pool) < m:
            poly = pg.functions.create_qpolygonf(CHUNK + 3)
            self._pool.append((poly, pg.functions.ndarray_from_qpolygonf(poly)))
        block = np.empty((m, CHUNK + 3, 2), dtype=np.float64)
        block[:, :CHUNK + 1, 0] = x[idx]
        block[:, :CHUNK + 1, 1] = y[idx]
        block[:, CHUNK + 1, 0] = x[idx[:, -1]]
        block[:, CHUNK + 2, 0] = x[idx[:, 0]]
        block[:, CHUNK + 1:, 1] = self._base
        for i in range(m):
            self._pool[i][1][:] = block[i]
        self._polys = m
        base = self._base
        lo, hi = min(base, float(y.min())), max(base, float(y.max()))
        self.set_bounds(QRectF(float(x[0]), lo, float(x[-1] - x[0]), hi - lo))

    def paint(self, painter: QPainter, _option, _widget=None) -> None:
        if self._n < 2:
            return
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self._brush)
        for poly, _ in self._pool[:self._polys]:
            painter.drawPolygon(poly)
        painter.setPen(self._pen)
        painter.drawPolyline(self._line)
