"""Chart items that Qt paints on its own, without a Python call per frame.

pyqtgraph's ``TextItem``, ``InfiniteLine`` and ``PlotCurveItem`` paint in
Python and re-map themselves in Python whenever they move. In a chart that
scrolls, every item is repainted ~30 times a second, so each costs 0.1–0.3
ms per frame on the event loop. These are plain ``QGraphicsItem`` s (C++
``paint`` and ``boundingRect``) for what does not need pyqtgraph:

- ``cached`` / ``cache_axes``: paint an item (the axes) from a pixmap;
  ``live_plot``: a plot set up for a live picture.
- ``cosmetic_pen``: a 1-pixel pen whatever the view's scale (width 0).
- ``Label``: text on a translucent plate, a fixed size on screen
  (``ItemIgnoresTransformations``), drawn from a cached pixmap; its anchor
  is one of its corners.
- ``hline``: a horizontal line across any x range.
- ``BoundedItem``: an item with bounds computed when its data changes.
- ``Bars``: rectangles of one colour, one ``drawRects``.
- ``Curve``: a polyline set from numpy arrays (``setData`` builds the path
  with pyqtgraph's ``arrayToQPath``; Qt paints it).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsSimpleTextItem,
    QGraphicsView,
)

from lanemon.ui.kit import theme
from lanemon.ui.kit.qt_start import pg

PAD = 3          # pixels of plate around the text
FAR = 1e6        # "any x": a line from -FAR to FAR is clipped by the view


def cached(item: QGraphicsItem) -> QGraphicsItem:
    """Paint ``item`` from a pixmap kept in device coordinates (re-rendered only when it changes or
    is scaled; moving it keeps the pixmap): text is shaped once, not on every frame."""
    item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    return item


def cache_axes(plot) -> None:
    """A pyqtgraph plot's left and bottom axes (ticks and titles) painted from cached pixmaps."""
    item = plot.getPlotItem()
    for name in ("left", "bottom"):
        ax = item.getAxis(name)
        cached(ax)
        cached(ax.label)


def live_plot(x_label: str, y_label: str | None = None) -> pg.PlotWidget:
    """A plot for a live picture: no mouse, menu or buttons, no padding around the
    data range, axes painted from cached pixmaps (``cache_axes``), and each frame
    repaints the one rectangle around what changed: in a picture where most items
    move, Qt's default (the exact region of every changed item, many rectangles to
    clip to) costs more than the rectangle around them (~0.2-0.5 ms of a ~2 ms chart
    frame here, measured interleaved)."""
    plot = pg.PlotWidget()
    plot.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(x=False, y=False)
    plot.hideButtons()
    item = plot.getPlotItem()
    item.setLabel("bottom", x_label)
    if y_label is not None:
        item.setLabel("left", y_label)
    item.getViewBox().setDefaultPadding(0)
    cache_axes(plot)
    return plot


def cosmetic_pen(color, style: Qt.PenStyle = Qt.PenStyle.SolidLine) -> QPen:
    """One pixel wide at any scale. Width 0, not a cosmetic width 1: for a pen of width > 0
    a path item computes its bounds by stroking the whole path (``QPainterPathStroker``),
    ~0.5 ms for a 1,200-point curve each time it changes; for width 0 it takes the points'
    bounds."""
    return QPen(QColor(color), 0, style)


class Label(QGraphicsRectItem):
    """Text on a plate; ``anchor`` is the corner at ``setPos``: (0, 0) top left, (1, 1) bottom right.
    The text is in ``color`` (``None``: the theme's ``FG`` when the label is made)."""

    def __init__(self, text: str = "", color=None, fill: QColor | None = None,
                 anchor: tuple[float, float] = (0.0, 0.0), parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)
        cached(self)
        self.setPen(Qt.PenStyle.NoPen)
        self.setBrush(QBrush(fill) if fill is not None else QBrush(Qt.BrushStyle.NoBrush))
        self._anchor = anchor
        self._text = cached(QGraphicsSimpleTextItem(text, self))   # shaped once
        self._text.setBrush(QBrush(QColor(theme.FG if color is None else color)))
        self._relayout()

    def text(self) -> str:
        return self._text.text()

    def set_text(self, text: str) -> None:
        if text == self._text.text():
            return
        self._text.setText(text)
        self._relayout()

    def setFont(self, font: QFont) -> None:
        self._text.setFont(font)
        self._relayout()

    def set_colors(self, color, fill: QColor | None = None) -> None:
        """The text in ``color``, the plate in ``fill`` (``None``: no plate), in place."""
        self._text.setBrush(QBrush(QColor(color)))
        self.setBrush(QBrush(fill) if fill is not None else QBrush(Qt.BrushStyle.NoBrush))

    def size(self) -> tuple[float, float]:
        """Width and height on screen, in pixels (plate included)."""
        r = self.rect()
        return r.width(), r.height()

    def _relayout(self) -> None:
        tr = self._text.boundingRect()
        w, h = tr.width() + 2 * PAD, tr.height() + 2 * PAD
        ax, ay = self._anchor
        self.setRect(QRectF(-ax * w, -ay * h, w, h))
        self._text.setPos(-ax * w + PAD, -ay * h + PAD)


def hline(y: float, pen: QPen) -> QGraphicsLineItem:
    item = QGraphicsLineItem(QLineF(-FAR, y, FAR, y))
    item.setPen(pen)
    return item


class Curve(QGraphicsPathItem):
    """A polyline through ``(x, y)``."""

    def __init__(self, pen: QPen, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.setPen(pen)

    def setData(self, x: np.ndarray, y: np.ndarray) -> None:
        self.setPath(pg.arrayToQPath(x, y) if len(x) > 1 else QPainterPath())


class BoundedItem(QGraphicsItem):
    """An item whose bounds are set when its data changes (``set_bounds``), so that
    ``boundingRect``, which Qt asks for on every repaint and move, only returns them."""

    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._rect = QRectF()

    def set_bounds(self, rect: QRectF) -> None:
        """New bounds (an empty ``QRectF`` for none), then a repaint."""
        if rect != self._rect:
            self.prepareGeometryChange()
            self._rect = rect
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(self._rect)


class Bars(BoundedItem):
    """Rectangles of one colour: ``set_rects(x0, x1, y0, y1)`` (numpy arrays, data coordinates).

    Painted with one ``drawRects`` from a packed array (as pyqtgraph's
    ``BarGraphItem`` does), but its bounds are computed once per ``set_rects``,
    not in Python on every repaint and move.
    """

    def __init__(self, brush: QBrush, pen: QPen, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._brush = QBrush(brush)
        self._pen = QPen(pen)
        self._rects = pg.Qt.internals.PrimitiveArray(QRectF, 4)

    def set_style(self, brush: QBrush, pen: QPen) -> None:
        """Paint in ``brush`` and ``pen`` from now on (a palette change)."""
        self._brush = QBrush(brush)
        self._pen = QPen(pen)
        self.update()

    def set_rects(self, x0, x1, y0, y1) -> None:
        x0, x1, y0, y1 = (np.asarray(a, dtype=np.float64) for a in (x0, x1, y0, y1))
        n = int(x0.size)
        self._rects.resize(n)
        if n:
            arr = self._rects.ndarray()
            arr[:, 0] = x0
            arr[:, 1] = y0
            arr[:, 2] = x1 - x0
            arr[:, 3] = y1 - y0
            lo_x, lo_y = float(x0.min()), float(y0.min())
            rect = QRectF(lo_x, lo_y, float(x1.max()) - lo_x, float(y1.max()) - lo_y)
        else:
            rect = QRectF()
        self.set_bounds(rect)

    def paint(self, painter, _option, _widget=None) -> None:
        if not len(self._rects):
            return
        painter.setPen(self._pen)
        painter.setBrush(self._brush)
        painter.drawRects(*self._rects.drawargs())
