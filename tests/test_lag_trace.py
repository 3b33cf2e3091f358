"""The lag trace paints exactly what one polygon (the fill) and one polyline (the curve) paint."""

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPen, QPolygonF, QTransform

from lanemon.ui.heartbeat.lag_trace import CHUNK, LagTrace, chunk_index
from lanemon.ui.kit.chart_items import cosmetic_pen

W, H = 640, 200


def _render(paint) -> np.ndarray:
    img = QImage(W, H, QImage.Format.Format_RGB32)
    img.fill(QColor(255, 255, 255))
    p = QPainter(img)
    # data -> pixels the way a ViewBox maps them: x in [-20, 0], y in [0, 60] upwards
    p.setTransform(QTransform(W / 20, 0, 0, -H / 60, W, H))
    paint(p)
    p.end()
    return np.frombuffer(img.constBits(), np.uint8).reshape(H, W, 4).copy()


def _one_polygon(x, y, brush):
    pts = [QPointF(a, b) for a, b in zip(x, y)] + [QPointF(x[-1], 0.0), QPointF(x[0], 0.0)]

    def paint(p):
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(brush)
        p.drawPolygon(QPolygonF(pts))
    return paint


@pytest.mark.parametrize("seed,n", [(1, 1200), (2, 700), (3, CHUNK + 2), (4, 3)])
def test_chunks_paint_the_same_pixels_as_one_polygon(qapp, seed, n):
    rs = np.random.RandomState(seed)
    x = np.sort(rs.uniform(-20.0, 0.0, n))
    y = rs.exponential(3.0, n)
    y[rs.randint(0, n)] = 45.0                      # a stall
    brush = QColor(255, 0, 0, 40)                   # translucent: a seam painted twice would show
    item = LagTrace()
    item.setBrush(brush)
    item.setPen(QPen(Qt.PenStyle.NoPen))
    item.set_data(x, y)
    chunked = _render(lambda p: item.paint(p, None))
    whole = _render(_one_polygon(x, y, brush))
    assert (chunked != 255).any(), "nothing was filled"
    assert np.array_equal(chunked, whole)


@pytest.mark.parametrize("seed,n", [(5, 1200), (6, 2), (7, CHUNK + 1)])
def test_curve_paints_the_same_pixels_as_one_polyline(qapp, seed, n):
    rs = np.random.RandomState(seed)
    x = np.sort(rs.uniform(-20.0, 0.0, n))
    y = rs.exponential(3.0, n)
    pen = cosmetic_pen(QColor(0, 0, 200))
    item = LagTrace()
    item.setPen(pen)
    item.setBrush(QColor(0, 0, 0, 0))
    item.set_data(x, y)
    ours = _render(lambda p: item.paint(p, None))

    def polyline(p):
        p.setPen(pen)
        p.drawPolyline(QPolygonF([QPointF(a, b) for a, b in zip(x, y)]))
    assert (ours != 255).any(), "nothing was drawn"
    assert np.array_equal(ours, _render(polyline))


def test_chunks_cover_every_segment_once():
    for n in (0, 1, 2, 3, CHUNK, CHUNK + 1, CHUNK + 2, 1000):
        idx = chunk_index(n)
        segments = [(int(a), int(b)) for row in idx for a, b in zip(row, row[1:]) if a != b]
        assert segments == [(i, i + 1) for i in range(max(0, n - 1))]
        assert idx.shape[1] == CHUNK + 1


def test_bounding_rect_follows_the_data(qapp):
    item = LagTrace()
    item.set_data(np.array([-10.0, -5.0, -1.0]), np.array([1.0, 7.0, 2.0]))
    r = item.boundingRect()
    assert (r.left(), r.right(), r.top(), r.bottom()) == (-10.0, -1.0, 0.0, 7.0)
    item.set_data(np.array([]), np.array([]))
    assert item.boundingRect().isEmpty() and item.polygons() == []
