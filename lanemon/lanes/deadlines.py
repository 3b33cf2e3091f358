"""Many deadlines, one loop timer (Qt-free).

A 99,999-job burst over 9,999 workspaces has up to 9,999 simulated runs waiting at
once, each for its own duration. One ``loop.call_later`` per run is one loop timer
per run; on qasync each is a Qt timer of its own (``QObject.startTimer``), which
Qt keeps in one sorted list and scans on every loop turn.

``Deadlines`` keeps the deadlines of one loop in a heap and arms **one** loop timer
for the earliest. When it fires, every deadline due by then is resolved in one
callback; the next timer is armed no sooner than ``BATCH_S`` after this one, so
deadlines that fall close together are resolved together, in batches. A batch
resolves at most ``MAX_PER_FIRE``: each resolution wakes a task, and on qasync every
woken task runs in the loop's next pass of due timers, before a timer (the
heartbeat, a frame) that fell due meanwhile -- a thousand job ends in one pass held
the loop for ~50 ms. The rest of what is due goes to a timer due at once, behind
the timers already due.

Guaranteed: a deadline is never resolved before its time; it is resolved at most
about ``BATCH_S`` (plus the loop's own lateness, plus one loop pass per
``MAX_PER_FIRE`` deadlines due before it) after it; a cancelled deadline is
never resolved and its future is no longer referenced (cancelled entries are
dropped from the heap once they are half of it, or all of it). At most one loop timer is pending
per loop, none when no deadline is. Refused: nothing; ``for_loop`` keeps one
instance per loop (weakly: a closed and dropped loop takes it along).
"""

from __future__ import annotations

import asyncio
import heapq
import weakref
from collections.abc import Callable
from typing import Any

BATCH_S = 0.004   # deadlines closer than this share one timer callback ...
MAX_PER_FIRE = 48  # ... of at most this many: each wakes a task, all of which run in the loop's next pass
_COMPACT_MIN = 256  # cancelled entries tolerated in the heap before it is rebuilt


class Deadlines:
    """Deadlines of one loop: ``add(delay, callback, arg)`` -> an entry for ``cancel``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[list] = []     # [when, seq, callback, arg]; callback None: cancelled
        self._seq = 0
        self._dead = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._last_fire = float("-inf")
        self.timers_armed = 0           # loop timers armed so far (a test counts them)
        self.fired = 0                  # deadlines resolved so far

    def __len__(self) -> int:
        """Deadlines pending (cancelled ones not counted)."""
        return len(self._heap) - self._dead

    def add(self, delay: float, callback: Callable[[Any], None], arg: Any) -> list:
        """``callback(arg)`` once ``delay`` seconds have passed (see the module for the
        batching); returns the entry to give to ``cancel``."""
        when = self._loop.time() + max(0.0, delay)
        self._seq += 1
        entry = [when, self._seq, callback, arg]
        heapq.heappush(self._heap, entry)
        self._arm()
        return entry

    def cancel(self, entry: list) -> None:
        """The deadline will not fire; its callback and argument are let go at once."""
        if entry[2] is None:
            return
        entry[2] = entry[3] = None
        if entry[1] < 0:        # taken off the heap by the batch running now: not counted there
            return
        self._dead += 1
        heap = self._heap
        if self._dead > _COMPACT_MIN and self._dead * 2 > len(heap):
            self._heap = [e for e in heap if e[2] is not None]
            heapq.heapify(self._heap)
            self._dead = 0
        if len(self._heap) == self._dead:      # every deadline cancelled: none kept
            self._heap = []
            self._dead = 0
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _arm(self) -> None:
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
            self._dead -= 1
        if not heap:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        at = max(heap[0][0], self._last_fire + BATCH_S)
        if self._timer is not None:
            if self._timer_at <= at:
                return
            self._timer.cancel()
        self._timer_at = at
        self._timer = self._loop.call_at(at, self._fire)
        self.timers_armed += 1

    def _fire(self) -> None:
        self._timer = None
        now = self._last_fire = self._loop.time()
        heap = self._heap
        pop = heapq.heappop
        due = []
        while heap and heap[0][0] <= now and len(due) < MAX_PER_FIRE:
            e = pop(heap)
            if e[2] is None:
                self._dead -= 1
            else:
                e[1] = -1       # off the heap (a callback of this batch may still cancel it)
                due.append(e)
        if len(due) == MAX_PER_FIRE and heap and heap[0][0] <= now:
            self._last_fire = float("-inf")    # more is due already: next pass, not BATCH_S later
        self._arm()
        for e in due:
            cb, arg = e[2], e[3]
            if cb is None:      # cancelled by an earlier callback of this batch
                continue
            e[2] = e[3] = None
            self.fired += 1
            try:
                cb(arg)
            except Exception as exc:  # one bad callback does not stop the batch
                self._loop.call_exception_handler({"message": "deadline callback failed",
                                                   "exception": exc})


_by_loop: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def for_loop(loop: asyncio.AbstractEventLoop) -> Deadlines:
    """The one ``Deadlines`` of ``loop`` (made on first use)."""
    d = _by_loop.get(loop)
    if d is None:
        d = _by_loop[loop] = Deadlines(loop)
    return d


__all__ = ["BATCH_S", "Deadlines", "for_loop"]
