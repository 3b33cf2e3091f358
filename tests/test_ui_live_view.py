"""``LiveView``: the one refresh mechanism the window's views share.

Ticks are driven by calling ``frame()`` (the frame timer stopped) and then running its
step, which ``frame`` leaves for the loop's next turn (``_tick``), so what a tick does is
decided by the mechanism, not by the machine's speed.
"""

from __future__ import annotations

import asyncio

import pytest

from lanemon.ui.kit.live_view import LiveView

NEVER = 1e-9           # TEXT_FPS: the throttle never allows a refresh (only urgent ones start)
ALWAYS = float("inf")  # TEXT_FPS: the throttle always allows one


@pytest.fixture(autouse=True)
def _app(qapp):
    from lanemon.ui.shell.app import application

    application()


class Probe(LiveView):
    """Logs what the mechanism asked for: refreshes (as steps), per-frame work, fonts."""

    TEXT_FPS = ALWAYS

    def __init__(self, steps: int = 3, moving: bool = False) -> None:
        self.log: list[str] = []
        self.n_steps = steps
        self.moving = moving
        super().__init__()

    def refresh_steps(self, urgent: bool):
        n = self.frames
        return [lambda i=i: self.log.append(f"r{n}.{i}{'!' if urgent else ''}") for i in range(self.n_steps)]

    def frame_motion(self, changed: bool, refreshing: bool, text_due: bool) -> bool:
        if self.moving:
            self.log.append("m")
        return self.moving

    def fonts_changed(self) -> None:
        self.log.append("fonts")


def _tick(view: LiveView) -> None:
    """One tick, its step included (``frame`` runs the step in the loop's next turn)."""
    view.frame()
    view.turns.finish()


def _shown(qtbot, view: LiveView) -> LiveView:
    qtbot.addWidget(view)
    view.show()
    view.frame_timer.stop()       # ticks are ours
    view.log.clear()
    return view


def test_a_refresh_is_spread_one_step_per_tick_and_the_next_waits_for_its_last_step(qtbot):
    v = _shown(qtbot, Probe(steps=3))
    for _ in range(7):
        v.mark_dirty()            # events before every tick, and the text rate allows a refresh
        _tick(v)
    # r1 is the refresh started by showing the view (urgent); each later one starts only
    # after every step of the one before was shown
    assert v.log == ["r1.0!", "r1.1!", "r1.2!", "r2.0", "r2.1", "r2.2", "r3.0"]


def test_an_urgent_mark_starts_over_at_once_and_the_throttle_holds_the_others(qtbot):
    v = _shown(qtbot, Probe(steps=3))
    v.TEXT_FPS = NEVER
    _tick(v)
    v.mark_dirty()                # not urgent: the throttle never allows it
    _tick(v)
    v.mark_dirty(urgent=True)     # a control was used: a fresh refresh on the next tick
    _tick(v)
    _tick(v)
    _tick(v)
    _tick(v)
    # r1's last step was dropped: r2 shows fresher data; the plain mark was folded into r2
    assert v.log == ["r1.0!", "r1.1!", "r2.0!", "r2.1!", "r2.2!"] and not v.dirty


def test_the_timer_stops_when_nothing_is_owed_or_moving_and_a_mark_starts_it(qtbot):
    v = _shown(qtbot, Probe(steps=1))
    v.frame_timer.start()
    _tick(v)                     # the show's refresh
    assert v.frame_timer.isActive()
    _tick(v)                     # nothing owed, no step left, nothing moves
    assert not v.frame_timer.isActive()
    v.mark_dirty()
    assert v.frame_timer.isActive()
    v.moving = True
    _tick(v)
    _tick(v)
    assert v.frame_timer.isActive() and v.log == ["r1.0!", "m", "r2.0", "m"]


def test_nothing_ticks_while_hidden_and_showing_catches_up_at_once(qtbot):
    v = _shown(qtbot, Probe(steps=2))
    v.hide()
    v.mark_dirty()
    _tick(v)
    assert v.log == [] and not v.frame_timer.isActive()
    v.show()
    assert v.frame_timer.isActive()
    v.frame_timer.stop()
    _tick(v)
    assert v.log == ["r1.0!"]


def test_refresh_now_shows_every_step_at_once(qtbot):
    v = _shown(qtbot, Probe(steps=4, moving=True))
    v.refresh_now()
    assert v.log == ["m", "r1.0!", "r1.1!", "r1.2!", "r1.3!"] and not v.refreshing


def test_apply_fonts_runs_the_views_fonts_changed_and_shows_everything_again(qtbot):
    v = _shown(qtbot, Probe(steps=1))
    v.TEXT_FPS = NEVER
    _tick(v)
    v.apply_fonts()
    _tick(v)
    assert v.log == ["r1.0!", "fonts", "r2.0!"]


def test_shutdown_cancels_and_awaits_the_views_tasks_then_closes_its_domain_and_refuses_more(qtbot):
    ended: list[str] = []

    class Owner(Probe):
        async def close_domain(self) -> None:
            ended.append(f"domain closed, tasks left {len(self.tasks)}")

    v = _shown(qtbot, Owner())

    async def forever(started: asyncio.Event):
        try:
            started.set()
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)            # clean-up that takes a turn of the loop
            ended.append("task cleaned up")

    async def scenario():
        done: list = []
        started = asyncio.Event()
        task = v.spawn(forever(started), done.append)
        await started.wait()                  # in its try: its clean-up will run
        assert v.tasks == {task}
        await v.shutdown()
        late = forever(asyncio.Event())
        refused = v.spawn(late)
        return task, done, refused

    task, done, refused = asyncio.run(scenario())
    assert task.cancelled() and done == [task] and refused is None
    assert ended == ["task cleaned up", "domain closed, tasks left 0"]
    assert v.is_shut
    shown = list(v.log)
    v.mark_dirty(urgent=True)
    _tick(v)
    assert not v.frame_timer.isActive() and v.log == shown


def test_every_view_of_the_window_is_a_live_view_and_others_are_refused(qtbot):
    from PySide6.QtWidgets import QLabel

    from lanemon.ui.shell.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    assert set(win.views) == {"runs", "placement", "lanes", "counters", "programs", "processes"}
    assert all(isinstance(v, LiveView) for v in win.views.values())
    with pytest.raises(TypeError):
        win.add_view("plain", "Plain", QLabel("not live"))
    assert "plain" not in win.views
    probe = Probe(steps=1)
    win.add_view("probe", "Probe", probe)
    probe.log.clear()
    win.show_view("probe")                 # the window calls the shown view's apply_fonts now ...
    win.set_font_scale(1.5)
    win.set_font_scale(1.0)
    assert probe.log == ["fonts", "fonts"]
    win.show_view("runs")                  # ... and a hidden one's when it is shown again
    probe.log.clear()
    win.set_font_scale(1.5)
    assert probe.log == []
    win.show_view("probe")
    assert probe.log == ["fonts"]
    win.set_font_scale(1.0)


def test_cost_ring_keeps_the_last_costs_oldest_first():
    from lanemon.ui.kit.live_view import CostRing

    r = CostRing(4)
    assert list(r) == [] and len(r) == 0 and max(r, default=0.0) == 0.0
    for ms in (1.0, 2.0, 3.0):
        r.append(ms)
    assert list(r) == [1.0, 2.0, 3.0] and len(r) == 3
    for ms in (4.0, 5.0, 6.0):
        r.append(ms)
    assert list(r) == [3.0, 4.0, 5.0, 6.0] and len(r) == 4 and sorted(r)[-1] == 6.0
    with pytest.raises(ValueError):
        CostRing(0)


def test_tick_costs_keep_no_object_per_tick(qtbot):
    """A tick's cost kept as a float object per tick sat, after a burst, in the arenas the
    burst took (issue 19, Deliver 6): the costs are C doubles now, and what a tick leaves
    in ``frame_costs_ms`` is no object made then (before: a deque of 240 floats)."""
    import gc

    view = _shown(qtbot, Probe(steps=1, moving=True))     # (every tick works)
    for _ in range(300):
        _tick(view)
    assert len(view.frame_costs_ms) == 240
    held = [o for o in gc.get_referents(view.frame_costs_ms) if isinstance(o, float)]
    assert held == []
    assert all(isinstance(x, float) and x >= 0 for x in view.frame_costs_ms)


def _busy_past_a_due_tick(view: Probe) -> None:
    """A 1 ms precise single-shot timer (a heartbeat's tick, logging "heartbeat") started,
    then 3 ms of busy work: the tick comes due meanwhile."""
    import time as _time

    from PySide6.QtCore import Qt, QTimer

    view.tick = QTimer(view)
    view.tick.setSingleShot(True)
    view.tick.setTimerType(Qt.TimerType.PreciseTimer)
    view.tick.timeout.connect(lambda: view.log.append("heartbeat"))
    view.tick.start(1)
    end = _time.perf_counter() + 0.003
    while _time.perf_counter() < end:
        pass


def test_a_ticks_step_runs_in_the_loops_next_turn_after_a_due_timer(qtbot):
    """The per-frame work now, the refresh's step in the next turn: a heartbeat tick that came
    due during the per-frame work fires between them (``kit.turns``)."""
    class Busy(Probe):
        def frame_motion(self, changed, refreshing, text_due):
            self.log.append("m")
            _busy_past_a_due_tick(self)
            return False

    v = _shown(qtbot, Busy(steps=2))
    v.mark_dirty(urgent=True)
    v.frame_timer.stop()                           # (the mark started it: ticks are ours)
    v.frame()
    assert v.log == ["m"] and v.refreshing         # the step is still to run
    qtbot.waitUntil(lambda: len(v.log) == 3, timeout=2000)
    assert v.log == ["m", "heartbeat", "r1.0!"]
    v.frame()                                      # the next tick: the next step, likewise
    qtbot.waitUntil(lambda: len(v.log) == 6, timeout=2000)
    assert v.log[3:] == ["m", "heartbeat", "r1.1!"]
    assert len(v.frame_costs_ms) == 2 and min(v.frame_costs_ms) >= 3.0   # a tick's cost: both turns


def test_a_ticks_step_left_waiting_runs_before_the_next_ticks_work_and_shutdown_drops_it(qtbot):
    v = _shown(qtbot, Probe(steps=3, moving=True))
    v.mark_dirty(urgent=True)
    v.frame_timer.stop()
    v.frame()
    v.frame()                     # the loop was held up: the first tick's step had not run
    assert v.log == ["m", "r1.0!", "m"]
    asyncio.run(v.shutdown())
    v.turns.finish()
    assert v.log == ["m", "r1.0!", "m"]            # the second tick's step was dropped


def test_a_planned_present_runs_after_a_due_timer_and_before_the_ticks_step(qtbot):
    """A view whose per-frame work plans its repaint (``plan_present``) has it asked of Qt in
    the loop's next turn: a heartbeat tick due during the work fires first (Qt runs posted
    paints ahead of due timers, so asking in the work would put the paint before the
    tick), then the present, then the refresh's step; the tick's cost is all three. With no
    step, the cost is recorded after the present."""
    class Planner(Probe):
        def frame_motion(self, changed, refreshing, text_due):
            self.log.append("m")
            _busy_past_a_due_tick(self)
            self.plan_present()
            return True

        def frame_present(self):
            self.log.append("present")

    v = _shown(qtbot, Planner(steps=1))
    v.mark_dirty(urgent=True)
    v.frame_timer.stop()
    v.frame()
    assert v.log == ["m"]
    qtbot.waitUntil(lambda: len(v.log) == 4, timeout=2000)
    assert v.log == ["m", "heartbeat", "present", "r1.0!"]
    assert len(v.frame_costs_ms) == 1 and v.frame_costs_ms._costs[0] >= 3.0
    v.frame()                                      # nothing owed: the present alone
    qtbot.waitUntil(lambda: len(v.log) == 7, timeout=2000)
    assert v.log[4:] == ["m", "heartbeat", "present"]
    assert len(v.frame_costs_ms) == 2
    v.log.clear()
    v.refresh_now()                                # at once: the present too
    assert v.log == ["m", "present", "r2.0!"]


def test_an_urgent_mark_drops_the_last_ticks_step_still_waiting_for_its_turn(qtbot):
    """A view that lets go of what its refresh shows (a new source) marks itself dirty,
    urgently: the refresh starts over on the next tick, and the step the last tick left for
    the loop's next turn never runs (it would read what was let go: the lanes tab's table
    step once read a snapshot reset to None). Fails on the code before: "r1.0!" ran first."""
    v = _shown(qtbot, Probe(steps=3))
    v.mark_dirty(urgent=True)
    v.frame_timer.stop()
    v.frame()                                      # r1's first step waits for its turn
    assert v.refreshing and v.log == []
    v.mark_dirty(urgent=True)
    v.frame_timer.stop()
    v.turns.finish()                               # its turn comes: nothing runs
    assert v.log == []
    _tick(v)
    assert v.log == ["r2.0!"]
