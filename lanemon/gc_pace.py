"""Bulk work kept out of the garbage collector's full passes (Qt-free).

A burst of 99,999 jobs over 9,999 workspaces makes some 100,000-200,000
long-lived objects in a few seconds (records, lanes, history spans). Each full
pass of CPython's collector walks every tracked object with the loop stopped,
and the growth itself triggers several: 130-190 ms of CPU each were measured
inside such a burst (a 2-core machine), far over a frame.

``bulk()`` is the way out, for work done in chunks on the loop:

- on entry, one collection of what is not frozen (the window's own objects
  were frozen after start-up, so this is the recent ones only), then the
  collector's automatic passes are held;
- ``chunk_done()`` after each chunk: one young pass (it walks only what the
  chunk made, and collects the cycles among it), then ``gc.freeze()``: what
  survived moves out of every later pass;
- on exit, the last chunk is done the same way and the automatic passes come
  back (if they were on).

``paced(live)`` carries that on while the bulk's objects work themselves off: a
99,999-job burst's runs then make run history, finished records and events for
seconds, which are not frozen, and the collector's automatic passes over them
took an 87 ms full pass and ~40 ms middle passes. While ``live()`` (the live jobs)
is at least ``LIVE_MIN``, or a bulk is open, the automatic passes stay held and
the loop runs one young pass every ``STEP_S`` (it walks only the objects made
since the last step), then freezes its survivors; a pass walks what was made since
the last, so the step adapts to the time the passes take: it halves (down to
``MIN_STEP_S``) after a pass longer than ``PASS_S``, and grows by half (up to
``STEP_S``) after one shorter than a quarter of that; once ``live()`` is under
``LIVE_MIN`` with no bulk open, it ends itself and the automatic passes come back
(if they were on before the first hold). A full pass never runs meanwhile.

Guaranteed: an object that dies later is freed at once by its reference
count, frozen or not, and its memory returns; bulks nest (only the outermost
holds and restores the passes). Refused: collecting a reference cycle that
includes a frozen object. The lanes' job lifecycle makes no cycle at all
(``tests/test_lanes_gc.py`` checks it under seeded failures, holds, cancels
and stops), so what a burst freezes is freed by reference counts when its
jobs end; ``lanemon.ui.shell.app`` unfreezes everything when the window
closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Iterator

STEP_S = 0.030      # a paced young pass at most this long after the last ...
MIN_STEP_S = 0.005  # ... at least this long: the step halves after a pass over PASS_S,
PASS_S = 0.002      # and grows by half again after one under a quarter of it
LIVE_MIN = 1_000    # ... while at least this many jobs are live (or a bulk is open)

_depth = 0          # bulks open now (nested ones share the outermost's hold)
_holds = 0          # holds of the automatic passes: open bulks and running pacers
_was_enabled = True


def _hold() -> None:
    global _holds, _was_enabled
    if _holds == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _holds += 1


def _unhold() -> None:
    global _holds
    _holds -= 1
    if _holds == 0 and _was_enabled:
        gc.enable()


def holding() -> bool:
    """True while a bulk or a pacer holds the collector's automatic passes."""
    return _holds > 0


class Bulk:
    """One open bulk: ``chunk_done()`` after each chunk; ``frozen`` counts its freezes."""

    def __init__(self) -> None:
        self.frozen = 0

    def chunk_done(self) -> None:
        """The chunk's survivors out of every later pass (a young pass first: its cycles go)."""
        gc.collect(0)
        gc.freeze()
        self.frozen += 1


@contextlib.contextmanager
def bulk() -> Iterator[Bulk]:
    """Hold the collector's automatic passes for a bulk of long-lived objects made in
    chunks; see the module docstring."""
    global _depth
    if _holds == 0:
        gc.collect()             # the recent objects' garbage, before anything is frozen
    _hold()
    _depth += 1
    b = Bulk()
    try:
        yield b
    finally:
        b.chunk_done()
        _depth -= 1
        _unhold()


class Paced:
    """A running pacer (see the module): ``steps`` young passes run so far, ``active``
    until it ended itself or ``close()``."""

    def __init__(self, live: Callable[[], int], loop: asyncio.AbstractEventLoop,
                 step_s: float = STEP_S, live_min: int = LIVE_MIN) -> None:
        self._live = live
        self._loop = loop
        self.step_s = self.max_step_s = step_s
        self.live_min = live_min
        self.steps = 0
        self.active = True
        _hold()
        self._timer = loop.call_later(step_s, self._step)

    def _step(self) -> None:
        self._timer = None
        t0 = time.perf_counter()
        gc.collect(0)
        gc.freeze()
        took = time.perf_counter() - t0
        self.steps += 1
        if took > PASS_S:
            self.step_s = max(MIN_STEP_S, self.step_s / 2)
        elif took < PASS_S / 4:
            self.step_s = min(self.max_step_s, self.step_s * 1.5)
        if _depth > 0 or self._live() >= self.live_min:
            self._timer = self._loop.call_later(self.step_s, self._step)
        else:
            self.close()

    def close(self) -> None:
        """Stop pacing now (idempotent): the automatic passes come back unless another
        bulk or pacer still holds them."""
        if not self.active:
            return
        self.active = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        _unhold()


def paced(live: Callable[[], int], loop: asyncio.AbstractEventLoop | None = None) -> Paced:
    """Start pacing the collector on ``loop`` (the running one by default) while
    ``live()`` is at least ``LIVE_MIN`` or a bulk is open; see the module docstring."""
    return Paced(live, loop or asyncio.get_running_loop(), STEP_S, LIVE_MIN)


__all__ = ["LIVE_MIN", "STEP_S", "Bulk", "Paced", "bulk", "holding", "paced"]
