"""The heartbeat chart while paused: the picture stays as it was, whatever arrives meanwhile,
even when the window or the plot's width changes; on resume what was recorded shows."""


import numpy as np
import pytest
from chart_fakes import FakeClock, FakeHeartbeat, shown_chart

from lanemon.ui.heartbeat import chart as heartbeat_chart


@pytest.fixture
def chart(qtbot, monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(heartbeat_chart, "time", clock)
    hb = FakeHeartbeat()
    ticks = 970.0 + np.arange(3000) * 0.01                  # 30 s of ticks up to t = 1000
    lag = np.full(ticks.size, 0.5)
    lag[np.searchsorted(ticks, 995.0)] = 40.0               # a stall 5 s before the pause
    hb.add(ticks, lag)
    c, _controller = shown_chart(qtbot, hb)
    return c, hb, clock


def test_a_paused_chart_keeps_its_picture_when_the_window_or_width_changes(chart, qtbot):
    c, hb, clock = chart
    c.set_paused(True)
    frozen = c.trace.xData.copy(), c.trace.yData.copy()
    # a minute of ticks arrives while paused (more columns than the chart keeps), one a stall
    later = 1000.005 + np.arange(6000) * 0.01
    lag = np.full(later.size, 0.5)
    lag[np.searchsorted(later, 1055.0)] = 99.0
    hb.add(later, lag)
    clock.t = 1060.0
    c.redraw()
    assert np.array_equal(c.trace.xData, frozen[0]) and np.array_equal(c.trace.yData, frozen[1])

    c.set_window_s(10)                          # new columns, built while paused
    c.redraw()
    x, y = c.trace.xData, c.trace.yData
    assert x.min() <= -9.9 and x.max() <= 0.0   # the whole window, up to the pause
    assert y.max() == 40.0                      # the stall before the pause; nothing after it

    vb = c.plot.getViewBox()                    # the plot area
    wide = vb.width()
    c.resize(max(600, c.minimumSizeHint().width()), 320)   # a new width, still paused (the
    qtbot.waitUntil(lambda: vb.width() < wide - 100)     # app's font sets how narrow it can be)
    c.redraw()
    x, y = c.trace.xData, c.trace.yData
    assert x.min() <= -9.9 and y.max() == 40.0 and x.size <= vb.width() + 2

    c.set_paused(False)                         # what was recorded meanwhile shows
    x, y = c.trace.xData, c.trace.yData
    assert y.max() == 99.0 and x.min() <= -9.9
