"""The lag trace, column by column: the fill covers exactly the pixels whose centre lies under the
curve (what one polygon through the points fills), the curve is a line without gaps through every
point, and a column painted alone comes out as it does in the whole picture."""

import numpy as np
import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QColor, QImage, QPainter, QPen

from lanemon.ui.heartbeat.lag_trace import LagTrace, column_spans

W, H = 320, 120
BG, FILL, PEN = QColor(255, 255, 255), QColor(255, 0, 0, 40), QColor(0, 0, 200)


def _curve(seed: int, n: int, gaps: bool):
    rs = np.random.RandomState(seed)
    xs = np.sort(rs.choice(np.arange(5, W - 5), n, replace=False)) if gaps else np.arange(5, 5 + n)
    ys = H - 1 - rs.exponential(8.0, n)
    ys[rs.randint(0, n)] = 3.3                         # a stall, near the top
    return xs.astype(np.int64), ys


def _render(pieces, xs, ys) -> np.ndarray:
    img = QImage(W, H, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(BG)
    trace = LagTrace()
    trace.setBrush(FILL)
    trace.setPen(QPen(PEN, 0))
    p = QPainter(img)
    for lo, hi in pieces:
        p.save()
        p.setClipRect(QRect(lo, 0, hi - lo + 1, H))
        p.fillRect(QRect(lo, 0, hi - lo + 1, H), BG)
        trace.paint(p, xs, ys, lo, hi, H)
        p.restore()
    p.end()
    return np.frombuffer(img.constBits(), np.uint8).reshape(H, W, 4).copy()


@pytest.mark.parametrize("seed,n,gaps", [(1, 300, False), (2, 60, True), (3, 2, False), (4, 1, False)])
def test_columns_painted_piece_by_piece_equal_the_whole(qapp, seed, n, gaps):
    xs, ys = _curve(seed, n, gaps)
    whole = _render([(0, W - 1)], xs, ys)
    cuts = sorted(np.random.RandomState(seed).choice(np.arange(1, W - 1), 12, replace=False).tolist())
    pieces = list(zip([0, *[c + 1 for c in cuts]], [*cuts, W - 1]))
    assert np.array_equal(whole, _render(pieces[::-1], xs, ys))        # any order, any cut


def test_the_fill_is_what_a_polygon_through_the_points_fills(qapp):
    xs, ys = _curve(5, 40, True)
    c, _top, _bottom, fill = column_spans(xs, ys, 0, W - 1)
    rows = np.arange(H)[:, None]
    under = rows + 0.5 > np.interp(c.astype(float), xs.astype(float), ys)[None, :]   # pixel centre below the curve
    assert np.array_equal(under, rows >= fill[None, :])
    assert c[0] == xs[0] and c[-1] == xs[-1]                       # nothing before or after the points


def test_the_curve_has_no_gap_and_passes_through_every_point(qapp):
    xs, ys = _curve(6, 50, True)
    c, top, bottom, _fill = column_spans(xs, ys, 0, W - 1)
    assert np.array_equal(c, np.arange(xs[0], xs[-1] + 1))         # every column between the points
    assert (top[1:] <= bottom[:-1] + 1).all() and (top[:-1] <= bottom[1:] + 1).all()   # neighbours meet
    at = np.searchsorted(c, xs)
    assert ((top[at] <= np.floor(ys)) & (np.floor(ys) <= bottom[at])).all()


def test_no_points_paint_nothing(qapp):
    img = _render([(0, W - 1)], np.empty(0, dtype=np.int64), np.empty(0))
    assert (img == 255).all()


def test_a_few_columns_in_python_give_the_numbers_numpy_gives(qapp):
    from lanemon.ui.heartbeat import lag_trace

    for seed in range(20):
        xs, ys = _curve(seed, 12, gaps=seed % 2 == 0)
        lo = int(xs[0]) + seed % 5
        hi = min(int(xs[-1]), lo + lag_trace.SMALL - 1)
        small = lag_trace.column_spans_list(xs.tolist(), ys.tolist(), lo, hi)
        big = lag_trace._column_spans_numpy(xs, ys, lo, hi)
        assert [list(a) for a in small] == [a.tolist() for a in big]
