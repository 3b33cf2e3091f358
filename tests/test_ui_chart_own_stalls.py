"""The window's own stalls on the chart: a presenter toggle's stall is shaded and labelled,
and left out of the header's p99 / max (which say so); a run's stall is not."""

from types import SimpleNamespace

import numpy as np
import pytest
from chart_fakes import FakeClock, FakeHeartbeat, shown_chart

from lanemon.ui.heartbeat import chart as heartbeat_chart
from lanemon.ui.heartbeat.scroll_plot import PlateLabel


@pytest.fixture
def chart(qtbot, monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(heartbeat_chart, "time", clock)
    hb = FakeHeartbeat()
    t = 990.0 + np.arange(1000) * 0.01          # 10 s of idle ticks up to t = 1000
    lag = np.full(t.size, 0.5)
    lag[np.searchsorted(t, 995.0)] = 30.0       # a run's stall: stays in the figures
    hb.add(t, lag)
    phases = []
    c, _controller = shown_chart(qtbot, hb, phases=phases, redraw=False)
    return c, hb, clock, phases


def _labels(c) -> list[PlateLabel]:
    """The labels the plot area draws now (a frame first: at the same moment, it changes nothing)."""
    c.redraw()
    return c.area.labels()


def _header(c) -> str:
    for _ in range(heartbeat_chart.STATS_EVERY):   # the header is rewritten at least once
        c.redraw()
    return c.live.text()


def test_an_own_stall_is_labelled_and_left_out_of_the_max(chart):
    c, hb, clock, _phases = chart
    assert "max 30.0" in _header(c) and not c.own_left_out
    with c.own_stall("presenter mode"):          # the toggle holds the loop 400 ms
        clock.t = 1000.4
    later = 1000.41 + np.arange(100) * 0.01
    lag = np.full(later.size, 0.5)
    lag[0] = 400.0                               # the tick that carries it
    hb.add(later, lag)
    clock.t = 1001.5
    text = _header(c)
    assert "max 30.0" in text and c.own_left_out
    assert "400" not in text
    assert c.trace.yData.max() == 400.0          # the curve still shows it, as it was
    assert "presenter mode" in [label.text() for label in _labels(c)]


def test_the_window_start_up_phase_is_an_own_stall_and_other_phases_are_not(chart):
    c, hb, clock, phases = chart
    phases.append(SimpleNamespace(label="measuring worker start-up", t_start=999.0, t_end=999.5))
    hb.add(np.array([1000.01]), np.array([200.0]))
    clock.t = 1000.5
    assert "max 200.0" in _header(c) and not c.own_left_out   # a self-measurement's stall counts
    phases.append(SimpleNamespace(label="window start-up", t_start=1000.6, t_end=1000.8))
    hb.add(np.array([1000.81, 1000.82]), np.array([250.0, 0.5]))
    clock.t = 1001.0
    text = _header(c)
    assert "max 200.0" in text and c.own_left_out


def test_a_pending_own_stall_leaves_out_what_came_since_it_began(chart):
    c, hb, clock, _phases = chart
    with c.own_stall("theme change") as stall:
        hb.add(np.array([1000.05]), np.array([90.0]))   # no tick can come in a real stall; here:
        clock.t = 1000.1
        spans = c.own_spans(hb.t)
        assert spans[0][0] == "theme change" and spans[0][2] == float("inf")
    assert stall.t_done == 1000.1


def test_the_left_out_note_is_in_the_header_not_over_the_reference_lines(chart):
    """The note that own stalls are left out is said in the header, beside the figures it is
    about; drawn in the plot's lower left corner, it covered the 16.7 ms line's label whenever
    the axis was tall (the line then sits near the bottom)."""
    c, hb, clock, _phases = chart
    assert heartbeat_chart.OWN_NOTE not in _header(c)
    with c.own_stall("presenter mode"):
        clock.t = 1000.4
    later = 1000.41 + np.arange(100) * 0.01
    lag = np.full(later.size, 0.5)
    lag[0] = 400.0
    hb.add(later, lag)
    clock.t = 1001.5
    assert _header(c).endswith(heartbeat_chart.OWN_NOTE) and c.own_left_out
    plot_texts = [label.text() for label in _labels(c)]
    assert not any("left out" in text for text in plot_texts)
    assert "16.7 ms · one frame" in plot_texts and "50 ms · a long task" in plot_texts


def test_a_watchdog_block_inside_an_own_stall_gets_no_second_label(chart):
    """The window's watchdog also sees its own stalls (a presenter toggle); those are labelled
    already, so only a block outside them ("blocked … ms / in hash_range") gets a label."""
    from lanemon.ui.heartbeat.own_watchdog import OwnBlock

    c, hb, clock, _phases = chart
    with c.own_stall("presenter mode"):
        clock.t = 1000.4
    later = 1000.41 + np.arange(100) * 0.01
    lag = np.full(later.size, 0.5)
    lag[0], lag[50] = 400.0, 300.0
    hb.add(later, lag)
    clock.t = 1001.5
    c.add_own_block(OwnBlock(t_start=1000.05, duration_ms=350.0, culprit="_QEventLoop.run_forever",
                             task=None, folded=(), samples=10))
    c.add_own_block(OwnBlock(t_start=1000.62, duration_ms=300.0, culprit="hash_range",
                             task=None, folded=(), samples=10))
    c.redraw()
    assert c.own_block_labels() == ["blocked 300 ms\nin hash_range"]
    assert "presenter mode" in [label.text() for label in _labels(c)]


def _px_rect(label):
    """The label's (x0, x1, y0, y1) in the plot area's pixels."""
    r = label.rect()
    return r.left(), r.left() + r.width(), r.top(), r.top() + r.height()


def test_a_phase_label_takes_another_row_rather_than_cover_a_reference_line_s_label(chart):
    """"window start-up" at the 50 ms line's label's x, with the axis low enough that the line
    runs through the top rows: the phase label moves down a row (it used to sit on it)."""
    c, hb, clock, phases = chart
    long_label = next(label for label in _labels(c) if label.text() == "50 ms · a long task")
    x = (long_label.pos()[0] - c.area.width() + 1) * c.area.dt     # seconds ago
    phases.append(SimpleNamespace(label="window start-up", t_start=1000.0 + x, t_end=1000.0 + x + 0.3))
    c.redraw()
    phase = next(label for label in _labels(c) if label.text() == "window start-up")
    assert phase.isVisible()
    ax0, ax1, ay0, ay1 = _px_rect(phase)
    bx0, bx1, by0, by1 = _px_rect(long_label)
    assert ax0 < bx1 and bx0 < ax1                       # they share x ...
    assert not (ay0 < by1 and by0 < ay1), ((ay0, ay1), (by0, by1))   # ... not y


def test_an_own_stall_scrolled_out_of_view_is_no_longer_drawn_but_still_known(chart):
    c, hb, clock, _phases = chart
    with c.own_stall("presenter mode"):
        clock.t = 1000.4
    later = 1000.41 + np.arange(100) * 0.01
    hb.add(later, np.full(later.size, 0.5))
    clock.t = 1001.5
    c.redraw()
    assert "presenter mode" in [label.text() for label in _labels(c)]
    # 25 s later (window 20 s), with ticks all along: the stall is out of view
    ticks = 1001.42 + np.arange(2500) * 0.01
    hb.add(ticks, np.full(ticks.size, 0.5))
    clock.t = 1026.5
    c.redraw()
    assert "presenter mode" not in [label.text() for label in _labels(c)]
    assert [s[0] for s in c.own_spans(hb.t)] == ["presenter mode"]   # remembered all the same
    assert "max 0.5" in _header(c) and not c.own_left_out


def test_a_runs_label_is_never_hidden_to_make_room_for_the_windows_own(chart):
    """At 1024x768 in presenter mode the chart has two label rows: "window start-up" and
    "presenter mode" took both, and the whole run right after them lost its label, the one
    the talk is about (fails with the labels laid out left to right whatever their kind)."""
    c, hb, clock, phases = chart
    c.resize(900, 150)                           # a short chart: few label rows
    phases.append(SimpleNamespace(label="window start-up", t_start=990.5, t_end=990.9))
    with c.own_stall("presenter mode"):
        clock.t = 990.6
    run = SimpleNamespace(id=1, kind="whole", label="whole", status="done", t_start=991.0,
                          t_end=991.4, stats=SimpleNamespace(max=400.0))
    c.controller.records.append(run)
    clock.t = 1000.0
    c.redraw()
    shown = [label.text() for label in _labels(c)]
    assert any(text.startswith("#1 whole") for text in shown), shown


def test_runs_close_together_keep_a_name_each_in_a_short_chart(chart):
    """At 1024x768 in presenter mode, a whole, a sliced and a worker run a second apart: the
    third run's label found no free row and hid (its shading unnamed on the Runs tab). A run
    whose whole label finds no room shows its short form ("#2"), beside the label in its way;
    none of the run labels overlaps another."""
    c, hb, clock, phases = chart
    c.resize(900, 150)                           # a short chart: one label row
    kinds = ("whole", "sliced", "worker")
    for i, kind in enumerate(kinds, 1):
        c.controller.records.append(SimpleNamespace(
            id=i, kind=kind, label=kind, status="done", t_start=996.0 + 0.5 * i,
            t_end=996.2 + 0.5 * i, stats=SimpleNamespace(max=100.0 * i)))
    clock.t = 1000.0
    labels = [label for label in _labels(c) if label.text().startswith("#")]
    shown = [label.text() for label in labels]
    for i, kind in enumerate(kinds, 1):
        assert any(t.startswith(f"#{i} {kind}") or t == f"#{i}" for t in shown), (i, shown)
    assert any(t.startswith("#1 whole") for t in shown)         # the first: whole
    assert any(t in ("#2", "#3") for t in shown), shown         # a later one: short
    rects = [label.rect() for label in labels]
    assert not any(a.intersects(b) for k, a in enumerate(rects) for b in rects[k + 1:]), shown
