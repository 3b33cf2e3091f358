"""The chart's plot area scrolls a ring of pixel columns (``scroll_plot``): after any number of
frames it holds the same pixels as a full repaint of the same state; a frame paints only the
columns new in view (and what changed); a y-scale change, a resize or a new look repaints all."""

from types import SimpleNamespace

import numpy as np
import pytest
from chart_fakes import FakeClock, FakeHeartbeat, shown_chart

from lanemon.ui.heartbeat import chart as heartbeat_chart

FRAME_S = 1 / 30


@pytest.fixture
def chart(qtbot, monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(heartbeat_chart, "time", clock)
    t = 985.0 + np.arange(1500) * 0.01
    hb = FakeHeartbeat(t, np.full(t.size, 0.5))
    c, controller = shown_chart(qtbot, hb)
    return c, hb, clock, controller


def _pixels(c) -> np.ndarray:
    image = c.area.ring()
    assert image is not None
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4).copy()


def _frames(c, hb, clock, n: int, rs: np.random.RandomState, stall_at: int | None = None) -> None:
    """``n`` frames of ticks every 10 ms (a few ms late, now and then more); at frame
    ``stall_at`` the loop stalls 400 ms: no tick for that long, then one that late."""
    for i in range(n):
        t0 = clock.t
        if i == stall_at:
            clock.t = t0 + 0.4
            hb.add(np.array([clock.t]), np.array([400.0]))
        clock.t += FRAME_S
        t = np.arange(hb.t[-1] + 0.01, clock.t, 0.01)
        hb.add(t, rs.exponential(2.0, t.size) + (rs.rand(t.size) < 0.02) * 30.0)
        c.redraw()


def _full_repaint(c) -> np.ndarray:
    c.area.invalidate()
    c.redraw()                       # the same moment, nothing new: the whole ring painted
    return _pixels(c)


@pytest.mark.parametrize("log", [False, True])
def test_the_ring_after_many_frames_equals_a_full_repaint(chart, log):
    c, hb, clock, controller = chart
    c.set_log_scale(log)
    rs = np.random.RandomState(7)
    _frames(c, hb, clock, 20, rs)
    # a run that starts, runs across frames (its right edge follows now) and ends; a phase
    run = SimpleNamespace(id=1, kind="whole", label="whole", status="running", t_start=clock.t,
                          t_end=None, stats=SimpleNamespace(max=0.0))
    controller.records.append(run)
    controller.phases.append(SimpleNamespace(label="window start-up", t_start=clock.t - 3.0,
                                             t_end=clock.t - 2.5))
    _frames(c, hb, clock, 25, rs, stall_at=10)
    run.status, run.t_end, run.stats = "done", clock.t, SimpleNamespace(max=400.0)
    _frames(c, hb, clock, 20, rs)
    # a stretch shaded after the fact, seconds back (no scale change follows to repaint all)
    controller.phases.append(SimpleNamespace(label="measuring", t_start=clock.t - 5.0, t_end=clock.t - 4.0))
    _frames(c, hb, clock, 20, rs)
    repaints = c.area.full_repaints
    incremental = _pixels(c)
    assert c.area.full_repaints == repaints
    full = _full_repaint(c)
    differ = np.argwhere((incremental != full).any(axis=2))
    assert differ.size == 0, (differ[:10], incremental.shape)
    assert c.area.full_repaints == repaints + 1


def test_a_frame_paints_only_the_new_columns(chart):
    c, hb, clock, _controller = chart
    rs = np.random.RandomState(3)
    _frames(c, hb, clock, 5, rs)
    repaints = c.area.full_repaints
    dt = c.area.dt
    for _ in range(10):
        before, k = c.area.painted_columns, c.area.newest_column
        _frames(c, hb, clock, 1, rs)
        new = c.area.newest_column - k
        assert new >= 1
        # the new columns, the newest one before them (more ticks came into it) and the held
        # column before that (the curve's segment to it changed)
        assert new <= c.area.painted_columns - before <= new + 2 + int(0.01 / dt)
    assert c.area.full_repaints == repaints
    assert c.area.painted_columns < 10 * c.area.width() // 5       # far from the whole width


def test_a_paused_chart_paints_nothing(chart):
    c, hb, clock, _controller = chart
    rs = np.random.RandomState(4)
    _frames(c, hb, clock, 3, rs)
    c.set_paused(True)
    painted = c.area.painted_columns
    _frames(c, hb, clock, 5, rs)
    assert c.area.painted_columns == painted


def test_scale_size_and_look_changes_repaint_everything(chart, qtbot):
    from lanemon.ui.kit import theme

    c, hb, clock, _controller = chart
    rs = np.random.RandomState(5)
    _frames(c, hb, clock, 3, rs)

    def full_after(change) -> bool:
        repaints, painted = c.area.full_repaints, c.area.painted_columns
        change()
        _frames(c, hb, clock, 1, rs)
        return c.area.full_repaints == repaints + 1 and c.area.painted_columns - painted == c.area.width()

    assert full_after(lambda: c.set_log_scale(True))              # the y scale
    assert full_after(lambda: c._set_top(5000.0))                 # a new axis top (a big stall)
    assert full_after(lambda: (c.resize(800, 300), qtbot.waitUntil(lambda: c.area.width() < 800)))
    before = theme.palette_name()
    other = next(name for name in ("light", "dark") if name != before)
    try:
        assert full_after(lambda: (theme.set_palette(other), c.apply_fonts()))   # a new look
    finally:
        theme.set_palette(before)
        c.apply_fonts()
    assert full_after(lambda: c.set_window_s(10))                 # new columns
    # and a frame with nothing new in view paints nothing
    painted = c.area.painted_columns
    c.redraw()
    assert c.area.painted_columns == painted


def _screen(c) -> np.ndarray:
    """The plot area's pixels as the window shows them (its backing store)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QImage
    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()                       # the paints asked for
    at = c.area.mapTo(c, QPoint(0, 0))                 # (the chart is the window here)
    shot = QApplication.primaryScreen().grabWindow(c.winId()).toImage()
    shot = shot.copy(at.x(), at.y(), c.area.width(), c.area.height()).convertToFormat(QImage.Format.Format_RGB32)
    return np.frombuffer(shot.constBits(), np.uint8).reshape(shot.height(), shot.bytesPerLine() // 4, 4).copy()


def _rendered(c) -> np.ndarray:
    """The plot area painted whole, now."""
    from PySide6.QtGui import QImage

    image = c.area.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4).copy()


@pytest.mark.parametrize("between", [False, True], ids=["alone", "paints-between-turns"])
@pytest.mark.parametrize("mode", ["skyline", "scroll"])
def test_the_screen_after_many_frames_equals_the_area_painted_whole(chart, monkeypatch, mode, between):
    """Each frame repaints only part of the screen: the curve's skyline, the spans' edges and the
    moving labels; or the screen's pixels are moved and the new columns and what stays in place
    (grid lines, reference lines and their labels) repainted. What is shown must still be the
    whole picture, either way; also when, between a frame's turns (``HeartbeatChart.frame``),
    something else paints part of the area (``between``: a random rectangle after each step,
    so between the ring's new pixels and the scroll that follows them too)."""
    from lanemon.ui.heartbeat.own_watchdog import OwnBlock
    from lanemon.ui.heartbeat.scroll_plot import ScrollPlot

    monkeypatch.setattr(ScrollPlot, "_scroll_cheaper", lambda *_args: mode == "scroll")
    c, hb, clock, controller = chart
    rs = np.random.RandomState(11)
    seen = set()
    if between:
        def paint_after(step):
            step()
            c.area.repaint(rs.randint(0, c.area.width() - 40), rs.randint(0, c.area.height() - 30), 40, 30)

        monkeypatch.setattr(c.turns, "call", paint_after)   # (undone after: no cycle left behind)

    def frames(n, stall_at=None):
        for i in range(n):
            _frames(c, hb, clock, 1, rs, stall_at=0 if i == stall_at else None)
            seen.add(c.area.last_repaint)
            _screen(c)

    frames(10)
    run = SimpleNamespace(id=1, kind="sliced", label="sliced", status="running", t_start=clock.t,
                          t_end=None, stats=SimpleNamespace(max=0.0))
    controller.records.append(run)
    frames(20, stall_at=8)
    run.status, run.t_end, run.stats = "done", clock.t, SimpleNamespace(max=400.0)
    c.add_own_block(OwnBlock(t_start=clock.t - 1.0, duration_ms=120.0, culprit="hash_range",
                             task=None, folded=(), samples=3))
    frames(30)
    controller.phases.append(SimpleNamespace(label="measuring", t_start=clock.t - 6.0, t_end=clock.t - 5.0))
    # a run about to leave on the left: its label stops at the left edge while the picture moves
    controller.records.insert(0, SimpleNamespace(id=0, kind="whole", label="whole", status="done",
                                                 t_start=clock.t - 19.7, t_end=clock.t - 18.0,
                                                 stats=SimpleNamespace(max=12.0)))
    frames(30)
    shown = _screen(c)
    assert c.area.update_region is not None and sum(r.width() * r.height() for r in c.area.update_region) \
        < c.area.width() * c.area.height() // 2            # only part of it was asked for
    assert mode in seen
    differ = np.argwhere((shown != _rendered(c)).any(axis=2))
    assert differ.size == 0, differ[:10]


def test_a_label_that_stays_put_is_repainted_when_its_text_changes(chart):
    """A frame repaints no label that stays as it was (where it is and what it shows); one
    whose text changes in place (a run's label held at the left edge) is repainted."""
    c, hb, clock, controller = chart
    rs = np.random.RandomState(13)
    _frames(c, hb, clock, 5, rs)
    run = SimpleNamespace(id=0, kind="whole", label="whole", status="done", t_start=clock.t - 19.9,
                          t_end=clock.t - 17.0, stats=SimpleNamespace(max=12.0))
    controller.records.append(run)
    for _ in range(3):
        _frames(c, hb, clock, 1, rs)
        _screen(c)
    label = next(lb for lb in c.area.labels() if lb.text().startswith("#0"))
    assert label.box()[0] == 0                       # held at the left edge as the run leaves
    run.stats = SimpleNamespace(max=19.0)            # its text changes, not where it is (nor its size)
    _frames(c, hb, clock, 1, rs)
    assert "19 ms" in label.text() and label.box()[0] == 0
    shown = _screen(c)
    differ = np.argwhere((shown != _rendered(c)).any(axis=2))
    assert differ.size == 0, differ[:10]


def test_a_stall_in_view_repaints_about_its_own_width_as_the_picture_shifts(chart, monkeypatch):
    """The skyline repaint is worked out in narrow blocks merged while that adds few pixels:
    a tall stall's ramp makes a tall rectangle about as wide as the ramp (fails with 128-column
    blocks: 128 columns from the top down, per frame), the low rest a few wide ones."""
    from lanemon.ui.heartbeat.scroll_plot import ScrollPlot

    monkeypatch.setattr(ScrollPlot, "_scroll_cheaper", lambda *_args: False)
    c, hb, clock, _controller = chart
    rs = np.random.RandomState(17)
    _frames(c, hb, clock, 10, rs, stall_at=3)
    _frames(c, hb, clock, 5, rs)                      # after the y range grew: shifting frames
    h = c.area.height()
    assert c.area.last_repaint == "skyline"
    tall = [r for r in c.area.update_region if r.top() < h // 2]
    assert tall, c.area.update_region
    assert sum(r.width() for r in tall) <= 64, tall
    assert len(c.area.update_region) <= 8, c.area.update_region


class _CountedReads(list):
    """A list that counts the items its slices and indices read (writes are not counted)."""

    read = 0

    def __getitem__(self, i):
        out = super().__getitem__(i)
        _CountedReads.read += len(out) if isinstance(i, slice) else 1
        return out


def test_a_shifting_frame_reads_the_tops_of_the_blocks_it_painted_only(chart, monkeypatch):
    """The skyline is worked out from per-block tops kept as columns are painted: a frame
    reads the curve's top of the blocks its painted columns fall in (at most two 32-column
    blocks per piece), not of every column in view (fails on the code that took the minimum of
    each screen block's columns every frame: ~the whole width per frame)."""
    from lanemon.ui.heartbeat.scroll_plot import BLOCK, ScrollPlot

    monkeypatch.setattr(ScrollPlot, "_scroll_cheaper", lambda *_args: False)
    c, hb, clock, _controller = chart
    rs = np.random.RandomState(19)
    _frames(c, hb, clock, 5, rs)
    c.area._tops = _CountedReads(c.area._tops)
    for _ in range(20):
        _CountedReads.read = 0
        _frames(c, hb, clock, 1, rs)
        assert c.area.last_repaint == "skyline"
        assert _CountedReads.read <= 2 * BLOCK, _CountedReads.read


def test_a_frame_writes_its_few_new_columns_without_a_painter(chart, monkeypatch):
    """With no span in them, a frame's few new columns are written into the ring's pixels
    (background, fill and curve from columns Qt painted once), with no QPainter on the ring
    (fails on the code before: one painter per frame); the ring still equals a full repaint
    (the tests above)."""
    from lanemon.ui.heartbeat import scroll_plot

    c, hb, clock, _controller = chart
    rs = np.random.RandomState(23)
    _frames(c, hb, clock, 5, rs)
    opened = []

    class CountingPainter(scroll_plot.QPainter):
        def __init__(self, *args):
            opened.append(args[0] if args else None)
            super().__init__(*args)

    monkeypatch.setattr(scroll_plot, "QPainter", CountingPainter)
    before = c.area.painted_columns
    _frames(c, hb, clock, 10, rs)
    assert c.area.painted_columns - before >= 10
    assert not [d for d in opened if d is c.area._ring], len(opened)


def test_a_written_column_is_rewritten_from_its_old_curve_top_down(chart):
    """A ring column last written with no painter holds the background above its curve's
    top: writing it again writes only the rows from that top down (a marker put above it
    survives; fails on the code before, which wrote every row), and the column comes out as
    before; a column Qt painted last is written whole (its marker goes). The ring after many
    frames still equals a full repaint (``test_the_ring_after_many_frames_equals_a_full_repaint``)."""
    c, hb, clock, _controller = chart
    _frames(c, hb, clock, 6, np.random.RandomState(5))
    area = c.area
    w, k = area.px_w, area._k
    ra = k % w                                     # the newest column, written by the last frame
    px = area._ring_px
    assert area._plain[ra] and 0 < area._tops[ra] < area.px_h
    before = px[:, ra].copy()
    marker = np.uint32(0xFF123456)
    px[0, ra] = marker
    assert area._write_piece(ra, ra, ra - k)
    assert px[0, ra] == marker                      # not written: above the old top
    assert (px[1:, ra] == before[1:]).all()
    area._plain[ra] = 0                             # as if Qt had painted it last
    assert area._write_piece(ra, ra, ra - k)
    assert (px[:, ra] == before).all()              # written whole: the marker is gone


def test_the_grid_and_reference_lines_are_those_drawn_over_the_ring(chart):
    """The vertical grid and the dashed reference lines come from an image of them made once;
    the screen shows the same pixels as drawing them over the ring there (labels aside)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QImage, QPainter

    c, hb, clock, _controller = chart
    _frames(c, hb, clock, 5, np.random.RandomState(9))
    area = c.area
    w, h = area.px_w, area.px_h
    ring = area.ring()
    expected = QImage(w, h, QImage.Format.Format_RGB32)
    p = QPainter(expected)
    p.drawImage(QPoint(0, 0), ring)
    for rect in area._vline_rects:
        p.fillRect(rect, area._grid)
    for row_image, row in area._ref_lines:
        p.drawImage(0, row, row_image)
    p.end()
    want = np.frombuffer(expected.constBits(), np.uint8).reshape(h, expected.bytesPerLine() // 4, 4)[:, :w]
    shown = _rendered(c)[:h, :w]
    assert area._vline_rects and area._ref_lines
    mask = np.ones((h, w), bool)
    for label in area.labels():
        if label.isVisible():
            x, y, lw, lh = label.box()
            mask[max(0, y):y + lh, max(0, x):x + lw] = False
    differ = np.argwhere((shown != want).any(axis=2) & mask)
    assert differ.size == 0, differ[:10]
    # and the lines are there: a grid column differs from the ring's own pixels
    x = area._vline_rects[0].x()
    assert (want[:, x] != np.frombuffer(ring.constBits(), np.uint8).reshape(h, ring.bytesPerLine() // 4, 4)[:, x]).any()
