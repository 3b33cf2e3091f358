"""The chart's y scale after a whole run: on the log scale a sliced run of a few ms keeps a
readable height and the 16.7 / 50 ms lines stay apart; on the linear one they flatten. The
scale is switchable (the header's box, ``set_log_scale``) and says when it changes."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from chart_fakes import FakeClock, FakeHeartbeat
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from lanemon.ui.heartbeat import chart as heartbeat_chart
from lanemon.ui.heartbeat.chart import HeartbeatChart
from lanemon.ui.heartbeat.y_scale import LOG_FLOOR_MS, YScale


@pytest.fixture
def chart(qtbot, monkeypatch):
    """20 s up to t = 1000: idle ticks (0.3 ms late), a whole run's 3,000 ms stall at 985 s,
    then a sliced run at 990-995 s whose ticks are 5 ms late."""
    monkeypatch.setattr(heartbeat_chart, "time", FakeClock(1000.0))
    t = 980.0 + np.arange(2000) * 0.01
    lag = np.full(t.size, 0.3)
    lag[np.searchsorted(t, 985.0)] = 3000.0
    sliced = (t >= 990.0) & (t < 995.0)
    lag[sliced] = 5.0
    controller = SimpleNamespace(records=[], phases=[], machine=SimpleNamespace(floor=None))
    c = HeartbeatChart(FakeHeartbeat(t, lag), controller, window_s=20)
    c.resize(900, 320)
    c.show()
    qtbot.waitExposed(c)
    c.redraw()
    return c


def _height(c, x0: float, x1: float) -> float:
    """The curve's highest point between x0 and x1 (s ago, negative), as a share of the plot's height."""
    lo, hi = c.plot.getViewBox().viewRange()[1]
    x, y = c.trace.xData, c.trace.yData
    inside = (x >= x0) & (x <= x1)
    return (float(y[inside].max()) - lo) / (hi - lo)


def _line_share(c, ms: float) -> float:
    lo, hi = c.plot.getViewBox().viewRange()[1]
    return (YScale(c.log_scale).to_view(ms) - lo) / (hi - lo)


def _axis_labels(c) -> set[str]:
    """The texts the left axis draws."""
    image = QImage(200, 400, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _axis, _ticks, texts = c.plot.getPlotItem().getAxis("left").generateDrawSpecs(painter)
    finally:
        painter.end()
    return {text for _rect, _flags, text in texts}


def test_linear_flattens_a_sliced_run_next_to_a_whole_run(chart):
    c = chart
    assert not c.log_scale                               # the default outside presenter mode
    assert _height(c, -9.0, -6.0) < 0.01                 # the finding: 5 ms is a flat line
    assert _line_share(c, 50.0) - _line_share(c, 1000 / 60) < 0.02


def test_the_log_scale_keeps_a_sliced_run_visible_next_to_a_whole_run(chart, qtbot):
    c = chart
    seen = []
    c.log_scale_changed.connect(seen.append)
    c.log_box.setChecked(True)                           # the header's control
    c.redraw()                                           # the next frame
    assert c.log_scale and seen == [True]
    sliced, whole = _height(c, -9.0, -6.0), _height(c, -15.5, -14.5)
    assert sliced > 0.3                                  # 5 ms: a third of the way up, or more
    assert whole > 0.9                                   # the whole run still reaches the top
    assert _line_share(c, 50.0) - _line_share(c, 1000 / 60) > 0.1   # the two lines stay apart
    # the fill reaches down to the axis's bottom (the floor), not to 1 ms
    lo = c.plot.getViewBox().viewRange()[1][0]
    assert lo == pytest.approx(math.log10(LOG_FLOOR_MS))
    QApplication.processEvents()                          # the plot area takes its place and size
    c.redraw()
    ring = c.area.ring()
    column = round(c.area.width() - 1 - 7.5 / c.area.dt)  # 7.5 s ago: the sliced run, 5 ms late
    bottom, background = ring.pixelColor(column, ring.height() - 1), ring.pixelColor(5, 0)
    assert bottom != background, (bottom.name(), background.name())   # the fill is there
    # the axis reads in ms: 1, 10, 100, 1,000 among the ticks
    assert {"1", "10", "100", "1,000"} <= _axis_labels(c)
    c.set_log_scale(False)                               # and back
    c.redraw()
    assert not c.log_scale and not c.log_box.isChecked() and seen == [True, False]
    assert _height(c, -9.0, -6.0) < 0.01


def test_the_header_still_says_the_true_max_on_the_log_scale(chart, qtbot):
    c = chart
    c.set_log_scale(True)
    for _ in range(heartbeat_chart.STATS_EVERY):      # the header is rewritten at least once
        c.redraw()
    assert "max 3,000.0" in c.live.text()


def test_y_scale_maps_and_ticks():
    lin, log = YScale(False), YScale(True)
    assert lin.to_view(5.0) == 5.0 and lin.bottom == 0.0 and lin.ticks(100.0) is None
    assert log.to_view(100.0) == pytest.approx(2.0) and log.to_view(0.0) == log.bottom
    assert np.allclose(log.to_view(np.array([0.01, 1.0, 1000.0])), [-1.0, 0.0, 3.0])
    assert [v for v in log.lines(60.0)] == pytest.approx([0.2, 0.5, 1, 2, 5, 10, 20, 50])
    assert lin.lines(60.0) == pytest.approx([20, 40])          # as the linear grid always was


def test_log_ticks_thin_out_on_a_short_plot():
    log = YScale(True)
    assert [v for v in log.lines(4000.0, px_per_decade=30)] == pytest.approx([1, 10, 100, 1000])
    labels = [text for _v, text in log.ticks(4000.0, px_per_decade=30)]
    assert labels == ["0.1", "1", "10", "100", "1,000"]


def test_the_log_axis_leaves_room_above_the_50_ms_line_for_its_label(qtbot, monkeypatch):
    """Regression: with only small lags (top 60 ms) the log axis put the 50 ms line a hair under
    its top, and the line's label ("50 ms · a long task") was cut off above the plot."""
    monkeypatch.setattr(heartbeat_chart, "time", FakeClock(1000.0))
    t = 980.0 + np.arange(2000) * 0.01
    controller = SimpleNamespace(records=[], phases=[], machine=SimpleNamespace(floor=None))
    c = HeartbeatChart(FakeHeartbeat(t, np.full(t.size, 3.0)), controller, window_s=20)
    c.resize(900, 240)
    c.show()
    qtbot.waitExposed(c)
    c.set_log_scale(True)
    c.redraw()
    QApplication.processEvents()                         # the view box lays its items out
    label = next(i for i in c.area.labels() if i.text().startswith("50 ms"))
    room = c.area.y_of(YScale(True).to_view(50.0))      # px between the line and the plot's top
    assert room >= label.size()[1], (room, label.size())
    assert label.rect().top() >= 0 and label.rect().bottom() <= room + 1   # on its line, all of it shown
    c.set_log_scale(False)                               # the linear axis keeps its own top
    assert c.plot.getViewBox().viewRange()[1][1] == pytest.approx(heartbeat_chart.MIN_TOP_MS)
