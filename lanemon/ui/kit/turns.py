"""``Turns``: one piece of work done in a row of steps, a turn of the loop each.

A frame of the heartbeat chart is ~0.3-0.8 ms of loop time: its data, its
pixels, then Qt's paint. A heartbeat tick that comes due while the frame runs
waits for all of it, and at 30 frames a second those waits are the window's
whole idle cost in the heartbeat's p99 (measured: chart frames stopped, the
idle p99 is the bare loop's). Done in turns, a tick waits for one step at most.
A live view's tick does the same with its per-frame work and its refresh step
(``live_view``).

Guaranteed:

- ``start(steps)`` runs ``steps[0]`` at once (``now=False``: from the timer,
  as the others: a step after the caller's own work); each next step runs from a
  zero-interval precise single-shot ``QTimer`` started when the step before it
  returned. A timer object, not ``QTimer.singleShot(0)`` (in Qt 6 a posted call,
  run before any timer): every timer already due when a step returns (the
  heartbeat's tick) fires before the next step, and so do the events the step
  posted (the paint it asked for).
- Every step of a run runs exactly once, in order (unless cancelled): a ``start`` while steps of
  the last run remain first runs those, at once (``finish``); a new start
  skips none, so a step may rely on the ones before it, and on its own effect in the
  last run (the screen it asked to repaint was repainted).
- ``finish()`` runs the steps that remain, at once, in order (none: nothing).
  ``cancel()`` drops them: the one way a step is not run (an owner shutting
  down).
- ``pending`` is true while steps of the last run remain. A run's steps are
  let go once it is done (a step is often a bound method of the owner, whose
  child the ``Turns`` is: no reference cycle between runs).
- Each step is called through ``call`` (``call(step)``; by default ``step()``):
  ``lanemon bench ui`` puts in a wrapper that times each step and sums a run's.

Refused: nothing. A step that raises ends its run (the steps after it are
dropped) and the exception propagates to whoever called it (the loop's
handler for a step run from the timer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Qt, QTimer

Step = Callable[[], None]


def call_step(step: Step) -> None:
    """``Turns.call``'s default: the step, nothing else."""
    step()


class Turns(QObject):
    """A run of steps, one turn of the loop each (see the module docstring)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._steps: Sequence[Step] = ()
        self._next = 0                            # the index of the next step to run
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._turn)
        #: what runs each step (``call(step)``; see the module docstring)
        self.call: Callable[[Step], None] = call_step

    @property
    def pending(self) -> bool:
        """Do steps of the last run remain?"""
        return self._next < len(self._steps)

    def start(self, steps: Sequence[Step], *, now: bool = True) -> None:
        """Run ``steps``: the first now (``now=False``: in the loop's next turn, as the
        others), the others one per turn of the loop; what remains of the last run is
        finished first, at once."""
        if self._next < len(self._steps):
            self.finish()
        self._steps = steps
        self._next = 0
        if steps:
            if now:
                self._turn()
            else:
                self._timer.start(0)

    def cancel(self) -> None:
        """Drop the steps that remain (the owner is shutting down): none of them runs."""
        self._timer.stop()
        self._steps, self._next = (), 0

    def finish(self) -> None:
        """Run what remains of the last run, at once."""
        self._timer.stop()
        while self._next < len(self._steps):
            self._run_next()

    def _turn(self) -> None:
        self._run_next()
        if self._next < len(self._steps):
            self._timer.start(0)

    def _run_next(self) -> None:
        steps = self._steps
        i = self._next
        self._next = i + 1
        try:
            self.call(steps[i])
        except BaseException:
            self._steps, self._next = (), 0       # the run ends here
            raise
        if self._next >= len(steps) and self._steps is steps:
            # the run is done: its steps (bound methods of the owner, often) are let go, so
            # the owner is not kept in a reference cycle through its child between runs
            self._steps, self._next = (), 0


__all__ = ["Step", "Turns", "call_step"]
