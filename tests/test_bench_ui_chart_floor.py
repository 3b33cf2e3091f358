"""``lanemon bench ui``'s floor for the chart's idle frame: the same rectangles repainted
bare. A bare paint shows the ring and nothing over it; the bench alternates the chart's
frames with bare ones and gives the chart's timer back as it found it."""

import asyncio

import numpy as np
from chart_fakes import FakeClock, FakeHeartbeat, shown_chart
from PySide6.QtCore import QSize

from lanemon.bench import ui as bench_ui
from lanemon.ui.heartbeat import chart as heartbeat_chart
from lanemon.ui.tools.testing import run_window, wait_until


def _screen(area):
    """What the plot area shows now, as an image the ring's size and format."""
    image = area.grab().toImage().convertToFormat(area.ring().format())
    assert image.size() == area.ring().size() == QSize(area.px_w, area.px_h)
    return image


def test_a_bare_paint_shows_the_ring_and_nothing_drawn_over_it(qtbot, monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(heartbeat_chart, "time", clock)
    hb = FakeHeartbeat()
    t = 990.0 + np.arange(1000) * 0.01
    hb.add(t, np.full(t.size, 0.5))
    c, _controller = shown_chart(qtbot, hb)
    area = c.area
    assert area.labels(), "the reference lines' labels are drawn over the ring"
    assert _screen(area) != area.ring()              # the vertical grid, reference lines, labels
    area.set_bare(True)
    assert _screen(area) == area.ring()
    area.set_bare(False)
    assert _screen(area) != area.ring()


def test_the_bench_alternates_chart_and_bare_frames_and_gives_the_timer_back():
    async def scenario(window):
        await asyncio.sleep(0.5)
        chart = window.chart
        frames, bare = await bench_ui._chart_idle_and_bare(window, 2, 0.4)
        k = chart.area.newest_column
        await wait_until(lambda: chart.area.newest_column > k, 10)   # its frames go on
        return frames, bare, k, chart.area.newest_column, chart.frame_timer.receivers("2timeout()")

    rc, (frames, bare, k_after, k_later, receivers), errors = run_window(scenario)
    assert rc == 0 and not errors
    assert len(frames) >= 10 and len(bare) >= 10       # ~12 a segment at 30 fps
    assert frames == sorted(frames) and bare == sorted(bare)
    assert receivers == 1                               # the chart's redraw alone, once
    assert k_later > k_after                            # and its frames go on
