"""``LiveView``: the one refresh mechanism of the window's live views.

A live view (the runs panel, the placement panel, the lanes view, the counters
view) subclasses ``LiveView`` and writes only what it shows; the base owns when:

- **dirty**: ``mark_dirty()`` (a domain event, a control) says the view is
  behind; ``mark_dirty(urgent=True)`` (a control was used) shows it on the next
  tick whatever the text rate. ``mark_stale()`` says the same without asking
  for a new frame (the view's own frame work found its text behind).
- **the frame tick**: one ``frame_timer`` (``FRAME_MS``, ~30 fps) runs while the
  view is visible and something is to be shown or moves; it stops itself when
  a tick finds nothing dirty, no step left and nothing moving, and
  ``mark_dirty`` (or showing the view) starts it again. Nothing is drawn while
  the view is hidden; showing it catches up at once. (A view whose state
  others read while it is hidden, such as the runs panel's buttons and
  tables, sets ``REFRESH_HIDDEN``: it ticks whether shown or not.)
- **steps spread over ticks**: a refresh is the list of steps the view's
  ``refresh_steps(urgent)`` returns; the first runs in the tick that starts the
  refresh, the others one per tick, so no tick holds the loop for all of it.
  A tick's step runs in the loop's turn after its per-frame work (``turns``:
  a heartbeat tick due meanwhile, and the paint the per-frame work asked for,
  run between the two).
  A new refresh starts once every step of the last one ran, or at once after
  an urgent ``mark_dirty``.
- **the text throttle**: a refresh starts at most ``TEXT_FPS`` times a second
  (``text_due``), at once after an urgent ``mark_dirty``.
- **per-frame work**: ``frame_motion`` runs on every tick (before any step):
  what moves at the frame rate (a timeline's clock, a board's countdowns); it
  returns whether something on screen still moves (the timer keeps ticking).
  A view whose per-frame work plans a repaint rather than asking Qt for it
  calls ``plan_present()``; its ``frame_present`` (asking Qt) then runs in the
  loop's next turn, before the tick's step: a heartbeat tick due during the
  work runs before the paint, which Qt runs ahead of due timers once asked.
- **the view's tasks**: ``spawn(coro)`` runs a coroutine as a task that the
  view tracks; ``shutdown()`` stops drawing, cancels the tracked tasks, waits
  for them, then awaits the view's ``close_domain()``. A view that is shut
  refuses new tasks (``spawn`` returns ``None``) and never ticks again.
- **presenter fonts**: ``apply_fonts()`` (the window calls it on every view
  after the font scale or palette changed) runs the view's ``fonts_changed()``
  and shows everything again at once.

``frame()`` is the tick (what ``frame_timer`` calls, and what ``lanemon bench
ui`` times for every view alike); ``refresh_now()`` shows everything at once
from fresh data, whatever the throttle (screenshots, tests, the bench's worst
case). ``frames`` counts refreshes started; ``frame_costs_ms`` keeps the cost
of the last ``COST_FRAMES`` ticks that did work (a ``CostRing``: C doubles, no Python
object per tick).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from lanemon.tasks import cancel_and_wait
from lanemon.ui.kit.turns import Step, Turns

FRAME_MS = 33          # ~30 fps
COST_FRAMES = 240      # tick costs kept in ``frame_costs_ms``


class CostRing:
    """The last ``size`` costs (ms) appended, oldest first when iterated (``len``, ``max``,
    ``sorted`` as on a list). Kept as C doubles in one ``array`` made at the start: appending
    makes no Python object that outlives the call. (A ``deque`` of floats kept each tick's
    float: those made during a 99,999-job burst sat in the pymalloc arenas the burst took,
    and such an arena goes back to the system only once every block in it is free.)"""

    __slots__ = ("_costs", "_size", "_next", "_len")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size!r}")
        self._costs = array("d", bytes(8 * size))
        self._size = size
        self._next = 0
        self._len = 0

    def append(self, ms: float) -> None:
        self._costs[self._next] = ms
        self._next = (self._next + 1) % self._size
        if self._len < self._size:
            self._len += 1

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        c = self._costs
        if self._len < self._size:
            return iter(c[:self._len].tolist())
        i = self._next
        return iter(c[i:].tolist() + c[:i].tolist())


class LiveView(QWidget):
    """A view refreshed by one frame timer, in steps, throttled; see the module docstring.

    Subclasses override ``refresh_steps`` (what to show, as steps), and may
    override ``frame_motion`` (per-frame work), ``fonts_changed`` (sizes after a
    font change) and ``close_domain`` (what ``shutdown`` closes after the tasks).
    """

    TEXT_FPS: float = 4.0       # refreshes a second at most (at once when urgent)
    REFRESH_HIDDEN: bool = False  # tick while hidden too (cheap views others read)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dirty = True           # a refresh is owed
        self._changed = True         # something changed since the last tick
        self._urgent = False         # a control was used: refresh on the next tick
        self._text_at = 0.0          # when the last refresh started (perf_counter)
        self._steps: deque[Step] = deque()
        self._tasks: set[asyncio.Task] = set()
        self._shut = False
        self._shown = False          # between a show and a hide event (no Qt call per tick)
        self.frames = 0
        self.frame_costs_ms = CostRing(COST_FRAMES)
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_MS)
        self.frame_timer.timeout.connect(self.frame)
        #: a tick's refresh step runs in the loop's turn after its per-frame work (``frame``)
        self.turns = Turns(self)
        self._step_now: Step | None = None   # the step the pending turn runs
        self._tick_ms = 0.0                  # ... and its tick's per-frame work, ms
        self._present_planned = False        # plan_present() was called by the per-frame work
        self._own_stall = None       # the chart's own_stall, once the window took the view

    def own_stall(self, label: str):
        """A context manager marking the work inside it as the window's own stall ``label``
        (shaded and named on the heartbeat chart, left out of its figures): the window's
        ``add_view`` gives it the chart's; before that, and outside a window, it marks nothing."""
        if self._own_stall is None:
            return contextlib.nullcontext()
        return self._own_stall(label)

    def set_own_stall(self, own_stall) -> None:
        """(The window) what :meth:`own_stall` marks with: ``HeartbeatChart.own_stall``."""
        self._own_stall = own_stall

    # --- what a view writes ------------------------------------------------------------------
    def refresh_steps(self, urgent: bool) -> Iterable[Step]:
        """The steps of one refresh, in order (the first runs at once). ``urgent``: a
        control was used. Called only when a refresh is owed and due."""
        return ()

    def frame_motion(self, changed: bool, refreshing: bool, text_due: bool) -> bool:
        """Per-frame work, on every tick before any step: ``changed`` (something was
        marked dirty since the last tick), ``refreshing`` (a step runs in this tick),
        ``text_due`` (the text throttle allows a refresh now). Returns whether
        something on screen still moves (the timer keeps ticking)."""
        return False

    def frame_present(self) -> None:
        """Ask Qt for the repaint the per-frame work planned (it called ``plan_present``): in
        the loop's turn after that work, before the tick's step."""

    def plan_present(self) -> None:
        """(From ``frame_motion``) this tick's ``frame_present`` is owed."""
        self._present_planned = True

    def fonts_changed(self) -> None:
        """Sizes and colours after the font scale or the palette changed."""

    async def close_domain(self) -> None:
        """What the view closes once its tasks have ended (``shutdown``)."""

    # --- state ---------------------------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        """A refresh is owed (it has not started yet)."""
        return self._dirty

    @property
    def refreshing(self) -> bool:
        """Steps of the current refresh are left (one runs per tick; a tick's own included
        until it has run)."""
        return bool(self._steps) or self._step_now is not None

    @property
    def is_shut(self) -> bool:
        """``shutdown`` was called: nothing is drawn and no task is started any more."""
        return self._shut

    @property
    def tasks(self) -> frozenset[asyncio.Task]:
        """The view's tasks still running (started with ``spawn``)."""
        return frozenset(self._tasks)

    # --- marking --------------------------------------------------------------------------------
    def mark_dirty(self, urgent: bool = False) -> None:
        """The view is behind: refresh when the text rate allows (``urgent``: on the next
        tick, starting over: the last tick's step, if still waiting for its turn, is dropped,
        as the steps queued after it are when the new refresh starts; it would show what
        the view has just let go, e.g. a snapshot of the source it switched from). Cheap: a
        domain event may call it thousands of times a second."""
        if urgent:
            self._urgent = True
            self._step_now = None
        elif self._dirty and self._changed:
            return                   # the timer runs already if the view is visible
        self._dirty = self._changed = True
        if not self._shut and not self.frame_timer.isActive() and self._may_tick():
            self.frame_timer.start()

    def mark_stale(self) -> None:
        """What the view's text shows is behind what its frame work showed: refresh it when
        the text rate allows (no new frame is asked for; call it from ``frame_motion``)."""
        self._dirty = True

    def text_due(self, now: float | None = None) -> bool:
        """May a refresh start now (urgent, or no step left and ``1 / TEXT_FPS`` passed)?"""
        if self._urgent:
            return True
        t = time.perf_counter() if now is None else now
        return not self._steps and t - self._text_at >= 1.0 / self.TEXT_FPS

    def text_shown(self, now: float | None = None) -> None:
        """Text was brought up to date outside a refresh: the next waits ``1 / TEXT_FPS``."""
        self._text_at = time.perf_counter() if now is None else now

    # --- the tick ---------------------------------------------------------------------------------
    def frame(self) -> None:
        """One tick: the per-frame work, then, in the loop's next turns (``turns``: a
        heartbeat tick due meanwhile runs between them, and so does the paint each asked
        for), the repaint it planned (``frame_present``, if ``plan_present`` was called) and
        a new refresh's first step (when one is owed and due) or the current refresh's next
        step; stops the timer when nothing is owed, no step is left and nothing moves. A
        tick's turns not yet run when the next tick (or ``refresh_now``) comes run first, at
        once. Does nothing while shut, or hidden (unless ``REFRESH_HIDDEN``)."""
        if self._shut or not self._may_tick():
            return
        turns = self.turns
        if turns.pending:
            turns.finish()           # the last tick's turns first (the loop was held up)
        t0 = time.perf_counter()
        due = self.text_due(t0)
        changed = self._changed
        self._changed = False
        self._present_planned = False
        moving = self.frame_motion(changed, (self._dirty and due) or bool(self._steps), due)
        step = None
        started = self._dirty and due
        if started:
            step = self._start(t0)
        elif self._steps:
            step = self._steps.popleft()
        later = ((self._present,) if self._present_planned else ()) + ((self._run_step,) if step is not None else ())
        if later:
            self._tick_ms = (time.perf_counter() - t0) * 1000.0
            self._step_now = step
            turns.start(later, now=False)
        elif moving or started:
            self.frame_costs_ms.append((time.perf_counter() - t0) * 1000.0)
        elif not self._dirty and not self._steps:
            self.frame_timer.stop()

    def _present(self) -> None:
        """A tick's planned repaint, asked of Qt in the turn after its per-frame work."""
        self._present_planned = False
        t0 = time.perf_counter()
        self.frame_present()
        self._tick_ms += (time.perf_counter() - t0) * 1000.0
        if self._step_now is None:
            self.frame_costs_ms.append(self._tick_ms)

    def _run_step(self) -> None:
        """A tick's step, in the turn after its per-frame work; the tick's cost is all of it.
        (None left: an urgent ``mark_dirty`` dropped it; no cost is recorded then.)"""
        step, self._step_now = self._step_now, None
        if step is None:
            return
        t0 = time.perf_counter()
        step()
        self.frame_costs_ms.append(self._tick_ms + (time.perf_counter() - t0) * 1000.0)

    def refresh_now(self) -> None:
        """Show everything at once from fresh data (a new refresh, every step now)."""
        if self._shut:
            return
        self.turns.finish()
        t0 = time.perf_counter()
        self._present_planned = False
        self.frame_motion(True, True, True)
        if self._present_planned:
            self._present_planned = False
            self.frame_present()
        self._urgent = True
        step = self._start(t0)
        if step is not None:
            step()
        while self._steps:
            self._steps.popleft()()

    def _may_tick(self) -> bool:
        return self.REFRESH_HIDDEN or self._shown

    def _start(self, t0: float) -> Step | None:
        """A new refresh: its steps, the first returned (not run: the caller runs it)."""
        urgent = self._urgent
        self._dirty = self._urgent = False
        self._text_at = t0
        self.frames += 1
        self._steps.clear()
        self._steps.extend(self.refresh_steps(urgent))
        return self._steps.popleft() if self._steps else None

    # --- Qt life cycle -------------------------------------------------------------------------
    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._shown = True
        self.mark_dirty(urgent=True)

    def hideEvent(self, event) -> None:
        self._shown = False
        if not self.REFRESH_HIDDEN:
            self.frame_timer.stop()
        super().hideEvent(event)

    # --- fonts ------------------------------------------------------------------------------------
    def apply_fonts(self) -> None:
        """Follow ``theme.font_scale`` and the palette (the window calls it on every view):
        the view's ``fonts_changed``, then everything shown again on the next tick."""
        self.fonts_changed()
        self.mark_dirty(urgent=True)

    # --- tasks and shutdown -----------------------------------------------------------------------
    def spawn(self, coro, done: Callable[[asyncio.Task], None] | None = None) -> asyncio.Task | None:
        """Run ``coro`` as a task the view tracks until it ends; ``done(task)`` runs when it
        has ended (cancelled, failed or returned), then the view refreshes at once.
        Refused once the view is shut: the coroutine is closed, ``None`` returned."""
        if self._shut:
            coro.close()
            return None
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def finished(t: asyncio.Task) -> None:
            self._tasks.discard(t)
            if done is not None:
                done(t)
            self.mark_dirty(urgent=True)

        task.add_done_callback(finished)
        return task

    async def shutdown(self) -> None:
        """Stop drawing for good, cancel the view's tasks and wait for them, then
        ``close_domain()``. A second call returns at once."""
        if self._shut:
            return
        self._shut = True
        self.frame_timer.stop()
        self.turns.cancel()
        self._step_now = None
        self._steps.clear()
        await cancel_and_wait(self._tasks)
        await self.close_domain()


__all__ = ["COST_FRAMES", "FRAME_MS", "LiveView"]
