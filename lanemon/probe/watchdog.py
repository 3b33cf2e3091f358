"""A watchdog thread that says where a blocked loop's time went (standard library only).

The watched loop calls ``beat()`` at each heartbeat tick. A daemon thread sleeps until the next
beat is overdue by more than ``block_ms`` (due = last beat + ``period_ms``); if no beat came by
then, a **stall** began: it takes the loop thread's stack (``sys._current_frames()``) and the
current task's name (``task_of()``, when given), then samples that stack every
``sample_every_ms`` while no beat comes. At the first beat after it, the stall is over:
``on_block(Block)`` is called **from the watchdog thread** with

- ``duration_ms``: how late that beat was (its gap from the previous beat minus ``period_ms``);
- ``ago_ms``: how long before the call the stall began (when the beat was due);
- ``stack``: the frames at the first sample, innermost first (``"file:line function"``, the
  function's qualified name, at most ``wire.MAX_FRAMES``);
- ``folded``: every distinct sampled stack with its count, most samples first (at most
  ``wire.MAX_STACKS``; a stall with more distinct stacks counts the rest under one
  ``"(other stacks)"`` frame), ``samples`` their total.

A stall is not reported when the loop thread has gone or ``alive()`` says the loop stopped
(a loop closed without stopping its probe): the watchdog then waits quietly for a beat.
``name``, ``pid``, ``host`` and ``seq`` of the ``Block`` are left for the sender to fill in.

The sampling is only as fine as the GIL allows: a loop thread in pure Python hands the GIL over
every ``sys.getswitchinterval()`` (5 ms); a C call that holds the GIL delays the sample until it
returns (the sample then lands on the Python line that made the call, which is where the time
went anyway).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

from lanemon.probe.wire import MAX_FRAME, MAX_FRAMES, MAX_STACKS, Block

MAX_DISTINCT = 4096   # distinct stacks kept while one stall lasts
OTHER = ("(other stacks)",)


def frames_of(frame, limit: int = MAX_FRAMES) -> tuple[str, ...]:
    """``"file:line function"`` of ``frame`` and its callers, innermost first, at most ``limit``."""
    out = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        text = f"{code.co_filename}:{frame.f_lineno} {code.co_qualname}"
        if len(text) > MAX_FRAME:
            text = "…" + text[-(MAX_FRAME - 1):]
        out.append(text)
        frame = frame.f_back
    return tuple(out)


class Watchdog:
    """Notices the loop thread ``thread_id`` blocked for more than ``block_ms`` and samples where.

    ``beat()`` is cheap (two attribute stores) and safe from any thread. ``start()`` starts the
    daemon thread (once); ``stop()`` ends it and joins it: after ``stop()`` returns, ``on_block``
    is never called again. A stall still in progress at ``stop()`` is not reported."""

    def __init__(self, thread_id: int, block_ms: float, on_block: Callable[[Block], object], *,
                 sample_every_ms: float = 5.0, period_ms: float = 0.0,
                 task_of: Callable[[], str | None] | None = None,
                 alive: Callable[[], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not block_ms > 0 or not sample_every_ms > 0 or period_ms < 0:
            raise ValueError("block_ms and sample_every_ms must be positive, period_ms zero or more")
        self.thread_id = thread_id
        self.block_s = block_ms / 1000.0
        self.period_s = period_ms / 1000.0
        self.sample_s = sample_every_ms / 1000.0
        self.on_block = on_block
        self.task_of = task_of
        self.alive = alive
        self.clock = clock
        self.stalled = False       # a stall is being sampled now
        self.reported = 0          # stalls reported
        self.errors = 0            # on_block calls that raised (swallowed)
        self._beat_at = clock()
        self._beats = 0
        self._late_s = self.period_s + self.block_s
        self._end_gap: tuple[int, float] = (0, 0.0)   # (beat number, its gap) of the last late beat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self, now: float | None = None) -> None:
        """The loop is running: a heartbeat tick happened (at ``now``, the watchdog's clock)."""
        if now is None:
            now = self.clock()
        gap = now - self._beat_at
        if gap > self._late_s:
            self._end_gap = (self._beats + 1, gap)
        self._beat_at = now
        self._beats += 1

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("a Watchdog starts once")
        self._beat_at = self.clock()
        self._thread = threading.Thread(target=self._run, name="lanemon-watchdog", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- the watchdog thread -------------------------------------------------------------

    def _run(self) -> None:
        stop = self._stop
        while not stop.is_set():
            beats, beat_at = self._beats, self._beat_at
            due = beat_at + self.period_s
            wait = due + self.block_s - self.clock()
            if wait > 0:
                stop.wait(max(wait, self.sample_s))
                continue
            if self._beats != beats:
                continue
            if self.alive is not None and not self.alive():
                self._wait_for_beat(beats)
                continue
            self._stall(beats, beat_at, due)

    def _wait_for_beat(self, beats: int) -> None:
        while not self._stop.wait(max(self.block_s, 0.1)) and self._beats == beats:
            pass

    def _sample(self) -> tuple[str, ...] | None:
        frame = sys._current_frames().get(self.thread_id)
        if frame is None:
            return None
        try:
            return frames_of(frame)
        finally:
            del frame

    def _task(self) -> str | None:
        if self.task_of is None:
            return None
        try:
            return self.task_of()
        except Exception:
            return None

    def _stall(self, beats: int, beat_at: float, due: float) -> None:
        self.stalled = True
        try:
            self._sample_stall(beats, beat_at, due)
        finally:
            self.stalled = False

    def _sample_stall(self, beats: int, beat_at: float, due: float) -> None:
        first = self._sample()
        if first is None:            # the loop thread is gone
            self._wait_for_beat(beats)
            return
        task = self._task()
        counts: Counter = Counter({first: 1})
        stop = self._stop
        while not stop.wait(self.sample_s):
            if self._beats != beats:
                break
            if self.alive is not None and not self.alive():
                self._wait_for_beat(beats)
                return
            stack = self._sample()
            if stack is None:
                self._wait_for_beat(beats)
                return
            if stack in counts or len(counts) < MAX_DISTINCT:
                counts[stack] += 1
            else:
                counts[OTHER] += 1
        if stop.is_set():
            return
        number, gap = self._end_gap
        if number != beats + 1:      # that beat was not late by block_ms after all: its gap from here
            gap = self._beat_at - beat_at
        duration_ms = max(0.0, (gap - self.period_s) * 1000.0)
        folded = tuple(counts.most_common(MAX_STACKS))
        block = Block(duration_ms=duration_ms, ago_ms=max(0.0, (self.clock() - due) * 1000.0), task=task,
                      stack=first, folded=folded, samples=sum(counts.values()))
        self.reported += 1
        try:
            self.on_block(block)
        except Exception:            # a report must never kill the watchdog
            self.errors += 1
