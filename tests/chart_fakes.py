"""Fakes the heartbeat chart reads in tests: a clock set by hand and a heartbeat's ticks."""

from __future__ import annotations

import numpy as np


class FakeClock:
    """``perf_counter()`` returns ``t``, which the test moves."""

    def __init__(self, t: float) -> None:
        self.t = t

    def perf_counter(self) -> float:
        return self.t


class FakeHeartbeat:
    """What the chart reads of a ``Heartbeat``: ticks appended in time order."""

    period_ms = 10

    def __init__(self, t=None, lag=None) -> None:
        self.t = np.empty(0) if t is None else t
        self.lag = np.empty(0) if lag is None else lag

    @property
    def count(self) -> int:
        return self.t.size

    def set_period_ms(self, _ms) -> None:
        pass

    def add(self, t, lag) -> None:
        self.t = np.r_[self.t, t]
        self.lag = np.r_[self.lag, lag]

    def between(self, first: int, stop: int):
        return self.t[first:stop].copy(), self.lag[first:stop].copy()

    def between_lists(self, first: int, stop: int):
        return self.t[first:stop].tolist(), self.lag[first:stop].tolist()

    def recent(self, seconds: float, now: float):
        keep = self.t >= now - seconds          # like Heartbeat.recent: up to the newest tick
        return self.t[keep], self.lag[keep]


def shown_chart(qtbot, hb, *, phases=None, size=(900, 320), redraw=True):
    """A ``HeartbeatChart`` of ``hb`` shown at ``size`` (its controller has no run and the
    ``phases`` list given), after its first frame unless ``redraw`` is false; returns
    ``(chart, controller)``."""
    from types import SimpleNamespace

    from lanemon.ui.heartbeat.chart import HeartbeatChart

    controller = SimpleNamespace(records=[], phases=[] if phases is None else phases,
                                 machine=SimpleNamespace(floor=None))
    c = HeartbeatChart(hb, controller, window_s=20)
    c.resize(*size)
    c.show()
    qtbot.waitExposed(c)
    if redraw:
        c.redraw()
    return c, controller
