"""The lag curve and the area under it, drawn one pixel column at a time.

The chart's plot area (``scroll_plot``) paints only the pixel columns that are
new or changed, into a ring it keeps; so every column must come out the same
whether it is painted alone or with the whole picture. A polyline or a
polygon clipped to a few columns does not guarantee that (Qt clips a line
geometrically before it rasterizes it: a clipped steep segment can move by a
pixel). Here each column is computed from the curve alone:

- the curve is the piecewise-linear line through the held columns' points
  ``(column, y)`` (pixel coordinates, y downwards; a point per held column);
  column ``c`` draws it from ``c`` to ``c + 1`` (breakpoints lie only on
  whole columns, so from its value at ``c`` to its value at ``c + 1``): a
  vertical run of pixels that meets the next column's, so the line has no gap
  however steep, and a sudden drop (the tick after a stall) is one straight
  vertical line in the stall's column, as a step is drawn;
- the fill under it covers the rows whose centre lies below the curve's value
  at the column's centre, down to the base (what a polygon through the same
  points fills: Qt fills the pixels whose centre is inside);
- columns before the first point or after the last get nothing.

Both are one ``drawRects`` per piece (the fill's, then the curve's in the
pen's colour) of integer rectangles a column wide, which clip exactly.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QBrush, QPainter, QPen

_NO_PEN = Qt.PenStyle.NoPen   # (a PySide enum member read per frame is a Python-level lookup)
SMALL = 24    # at most this many columns: computed in plain Python (a frame's few new columns)


def _interp(x: float, xs: list, ys: list, j: int) -> tuple[float, int]:
    """``np.interp(x, xs, ys)`` for ``xs[0] <= x <= xs[-1]``, bit for bit (the same operations in
    the same order), searching from segment ``j`` on; also the segment found."""
    last = len(xs) - 1
    while j < last and xs[j + 1] <= x:
        j += 1
    if j == last or xs[j] == x:
        return ys[j], j
    slope = (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j])
    return slope * (x - xs[j]) + ys[j], j


def column_spans_list(xs: list, ys: list, lo: int, hi: int) -> tuple[list, list, list, list]:
    """``column_spans`` for a few columns, as Python lists (``xs``, ``ys``: lists)."""
    cs, tops, bottoms, fills = [], [], [], []
    x_first, x_last = xs[0], xs[-1]
    j = 0
    for c in range(max(lo, x_first), min(hi, x_last) + 1):
        here, j = _interp(float(c), xs, ys, j)
        there, _ = _interp(float(min(c + 1, x_last)), xs, ys, j)
        cs.append(c)
        tops.append(math.floor(min(here, there)))
        bottoms.append(math.floor(max(here, there)))
        fills.append(math.ceil(here - 0.5))
    return cs, tops, bottoms, fills


def column_spans(xs: np.ndarray, ys: np.ndarray, lo: int, hi: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For the columns ``lo..hi`` the curve through ``(xs, ys)`` spans (``xs``: integer columns,
    ascending; ``ys``: pixel rows, downwards): ``(column, first row of the curve, last row of the
    curve, first row of the fill)``, integer arrays. (A few columns are computed in plain Python,
    more with numpy: the same numbers.)"""
    if xs.size and min(hi, int(xs[-1])) - max(lo, int(xs[0])) < SMALL:
        return tuple(np.asarray(a, dtype=np.int64)
                     for a in column_spans_list(xs.tolist(), ys.tolist(), lo, hi))
    return _column_spans_numpy(xs, ys, lo, hi)


def _column_spans_numpy(xs: np.ndarray, ys: np.ndarray, lo: int, hi: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    empty = np.empty(0, dtype=np.int64)
    if xs.size == 0:
        return empty, empty, empty, empty
    x_last = float(xs[-1])
    c = np.arange(max(lo, int(xs[0])), min(hi, int(xs[-1])) + 1, dtype=np.int64)
    if c.size == 0:
        return empty, empty, empty, empty
    cf = c.astype(np.float64)
    xf = xs.astype(np.float64)
    here = np.interp(cf, xf, ys)
    there = np.interp(np.minimum(cf + 1.0, x_last), xf, ys)
    top = np.floor(np.minimum(here, there)).astype(np.int64)
    bottom = np.floor(np.maximum(here, there)).astype(np.int64)
    fill = np.ceil(here - 0.5).astype(np.int64)
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

    def pen(self) -> QPen:
        """The curve's pen (its colour is what the curve's rectangles are filled with)."""
        return QPen(self._pen)

    def fill_rect(self, painter: QPainter, rect: QRect) -> None:
        """Fill ``rect`` as the fill under the curve is filled (the same painter calls)."""
        painter.setPen(_NO_PEN)
        painter.setBrush(self._brush)
        painter.drawRects([rect])

    def paint(self, painter: QPainter, xs, ys, lo: int, hi: int, base: int
              ) -> tuple[list[int], list[int]]:
        """Columns ``lo..hi`` of the curve through ``(xs, ys)`` (numpy arrays, or Python lists
        for a few columns) and its fill down to row ``base`` (exclusive). Returns the columns
        that got something and the highest row painted in each (the curve's or the fill's)."""
        if len(xs) == 0:
            return [], []
        if isinstance(xs, list):
            cs, tops, bottoms, fills = column_spans_list(xs, ys, lo, hi)
        elif min(hi, int(xs[-1])) - max(lo, int(xs[0])) < SMALL:     # a frame's few columns
            cs, tops, bottoms, fills = column_spans_list(xs.tolist(), ys.tolist(), lo, hi)
        else:
            cs, tops, bottoms, fills = (a.tolist() for a in _column_spans_numpy(xs, ys, lo, hi))
        if not cs:
            return [], []
        painter.setPen(_NO_PEN)
        painter.setBrush(self._brush)
        painter.drawRects([QRect(x, max(f, -1), 1, base - max(f, -1)) for x, f in zip(cs, fills) if f < base])
        painter.setBrush(self._pen.color())
        painter.drawRects([QRect(x, min(max(t, -1), base), 1, min(max(b, -1), base) - min(max(t, -1), base) + 1)
                           for x, t, b in zip(cs, tops, bottoms)])
        return cs, [min(t, f) for t, f in zip(tops, fills)]


__all__ = ["LagTrace", "column_spans", "column_spans_list"]
