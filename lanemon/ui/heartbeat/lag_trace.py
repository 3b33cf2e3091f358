"""The lag curve and the area under it, drawn one pixel column at a time.

The chart's plot area (``scroll_plot``) paints only the pixel columns that are
new or changed, into a ring it keeps; so every column must come out the same
whether it is painted alone or with the whole picture. A polyline or a
polygon clipped to a few columns does not guarantee that (Qt clips a line
geometrically before it rasterizes it: a clipped steep segment can move by a
pixel). Here each column is computed from the curve alone:

- the curve is the piecewise-linear line through the held columns' points
  ``(column, y)`` (pixel coordinates, y downwards; a point per held column,
  at the column's centre); in column ``c`` it covers the rows from the
  smallest to the largest y it takes between ``c - 0.5`` and ``c + 0.5``
  (breakpoints lie only on column centres, so those are its values at
  ``c - 0.5``, ``c`` and ``c + 0.5``): a vertical run of pixels that meets
  its neighbours', so the line has no gap however steep;
- the fill under it covers the rows whose centre lies below the curve's value
  at the column's centre, down to the base (what a polygon through the same
  points fills: Qt fills the pixels whose centre is inside);
- columns before the first point or after the last get nothing.

Both are one ``drawRects`` per piece (the fill's, then the curve's in the
pen's colour) of integer rectangles a column wide, which clip exactly.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QBrush, QPainter, QPen


def column_spans(xs: np.ndarray, ys: np.ndarray, lo: int, hi: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For the columns ``lo..hi`` the curve through ``(xs, ys)`` spans (``xs``: integer columns,
    ascending; ``ys``: pixel rows, downwards): ``(column, first row of the curve, last row of the
    curve, first row of the fill)``, integer arrays."""
    empty = np.empty(0, dtype=np.int64)
    if xs.size == 0:
        return empty, empty, empty, empty
    x_first, x_last = float(xs[0]), float(xs[-1])
    c = np.arange(max(lo, int(xs[0])), min(hi, int(xs[-1])) + 1, dtype=np.int64)
    if c.size == 0:
        return empty, empty, empty, empty
    cf = c.astype(np.float64)
    xf = xs.astype(np.float64)
    left = np.interp(np.maximum(cf - 0.5, x_first), xf, ys)
    mid = np.interp(cf, xf, ys)
    right = np.interp(np.minimum(cf + 0.5, x_last), xf, ys)
    top = np.floor(np.minimum(np.minimum(left, mid), right)).astype(np.int64)
    bottom = np.floor(np.maximum(np.maximum(left, mid), right)).astype(np.int64)
    fill = np.ceil(mid - 0.5).astype(np.int64)
    return c, top, bottom, fill


class LagTrace:
    """Paints the curve (a 1-pixel line) and the translucent fill under it down to ``base``
    for a range of pixel columns (a painter helper, not a scene item)."""

    def __init__(self) -> None:
        self._brush = QBrush()
        self._pen = QPen()

    def setBrush(self, brush) -> None:
        self._brush = QBrush(brush)

    def setPen(self, pen: QPen) -> None:
        self._pen = QPen(pen)

    def paint(self, painter: QPainter, xs: np.ndarray, ys: np.ndarray, lo: int, hi: int, base: int
              ) -> tuple[np.ndarray, np.ndarray]:
        """Columns ``lo..hi`` of the curve through ``(xs, ys)`` and its fill down to row ``base``
        (exclusive). Returns the columns that got something and the highest row painted in
        each (the curve's or the fill's)."""
        c, top, bottom, fill = column_spans(xs, ys, lo, hi)
        if c.size == 0:
            return c, top
        fill = np.clip(fill, -1, base)
        keep = fill < base
        if keep.any():
            rects = [QRect(x, f, 1, base - f) for x, f in zip(c[keep].tolist(), fill[keep].tolist())]
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self._brush)
            painter.drawRects(rects)
        top = np.clip(top, -1, base)
        bottom = np.clip(bottom, -1, base)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self._pen.color())
        painter.drawRects([QRect(x, t, 1, b - t + 1) for x, t, b in zip(c.tolist(), top.tolist(), bottom.tolist())])
        return c, np.minimum(top, fill)


__all__ = ["LagTrace", "column_spans"]
