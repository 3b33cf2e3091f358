"""The chunked fill under the lag curve paints exactly what one polygon paints."""

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPolygonF, QTransform

from lanemon.ui.fill_under import CHUNK, FillUnder, chunk_bounds

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
    item = FillUnder()
    item.setBrush(brush)
    item.set_data(x, y)
    chunked = _render(lambda p: item.paint(p, None))
    whole = _render(_one_polygon(x, y, brush))
    assert (chunked != 255).any(), "nothing was filled"
    assert np.array_equal(chunked, whole)


def test_chunk_bounds_cover_every_segment_once():
    for n in (0, 1, 2, 3, CHUNK, CHUNK + 1, CHUNK + 2, 1000):
        b = chunk_bounds(n)
        segments = [i for s, e in b for i in range(s, e - 1)]
        assert segments == list(range(max(0, n - 1)))


def test_bounding_rect_follows_the_data(qapp):
    item = FillUnder()
    item.set_data(np.array([-10.0, -5.0, -1.0]), np.array([1.0, 7.0, 2.0]))
    r = item.boundingRect()
    assert (r.left(), r.right(), r.top(), r.bottom()) == (-10.0, -1.0, 0.0, 7.0)
    item.set_data(np.array([]), np.array([]))
    assert item.boundingRect().isEmpty() and item.polygons() == []
