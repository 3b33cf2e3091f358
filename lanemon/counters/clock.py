"""Clocks for the counter simulation: manual, scaled real time, virtual time.

Time here is always **simulation seconds** (a float that starts at 0).

- ``ManualClock``: a number that moves only when ``advance`` / ``set`` is
  called. For board tests: TTLs are measured on it, nothing ever sleeps.
- ``ScaledClock``: simulation time on the running asyncio loop,
  ``now = elapsed loop time * speed``. ``sleep(dt)`` sleeps ``dt`` simulation
  seconds. ``set_speed`` re-anchors the clock and re-arms its timer, so a
  speed change (or a pause, ``speed == 0``) takes effect at once, not after
  the current sleeps end. ``freeze()`` stops it for good (``now()`` then
  returns the time it was frozen at). Guaranteed: ``now()`` never goes
  backwards; a sleep never returns before its simulation deadline as
  measured by the loop's timer; sleepers wake in (deadline, call order):
  ties are first come, first served, whatever other timers the loop holds,
  so a run's outcome does not depend on unrelated timers (a UI refresh, a
  time limit).
- ``VirtualTimeLoop``: an ordinary asyncio selector loop whose ``time()`` is
  virtual. Whenever the loop would block waiting for its next timer, it
  jumps the clock to that timer instead. Everything scheduled on timers
  (``asyncio.sleep``, ``call_later``, timeouts) therefore runs in the same
  order as in real time, instantly and deterministically. A ``ScaledClock``
  (speed 1) on this loop is the simulation's virtual clock; the same
  strategy code runs on either.

  ``run_in_virtual_time(coro, cancel=event)`` runs one on a fresh loop;
  setting the ``threading.Event`` -- from any thread -- cancels the run at
  the loop's next iteration (``VirtualTimeLoop.cancel_when``), so a run
  never does more than one iteration's work after the cancel: a compare in
  a worker thread stops when the window closes.

Refused / not supported: a negative speed or sleep; ``ScaledClock.sleep``
after ``freeze()`` (raises ``RuntimeError``, nothing would ever wake it).
On a ``VirtualTimeLoop`` a timer always wins over a real-world event (a
thread finishing, a socket): only when no timer is pending does the loop
block for real I/O. Use it for pure simulations.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import selectors
import threading


class ManualClock:
    """A clock that moves only when told to. Call it (or ``now()``) to read."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    __call__ = now

    def advance(self, dt: float) -> float:
        if dt < 0:
            raise ValueError("a clock does not go backwards")
        self._now += dt
        return self._now

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError("a clock does not go backwards")
        self._now = float(t)


class ScaledClock:
    """Simulation time on the running loop, at an adjustable speed.

    The clock starts (time 0) at ``start()`` or at the first ``sleep``; before
    that ``now()`` is 0. It binds to the loop it was started on.

    Sleepers wake in order of (deadline, call order): ties are first come,
    first served, whatever other timers the loop holds. The clock keeps its
    own queue and arms a single loop timer for the earliest deadline.
    """

    def __init__(self, speed: float = 1.0) -> None:
        _check_speed(speed)
        self._speed = float(speed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._r0 = 0.0  # loop time of the anchor
        self._v0 = 0.0  # simulation time at the anchor
        self._frozen = False
        self._queue: list[tuple[float, int, asyncio.Future]] = []  # (deadline, seq, future)
        self._seq = 0
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = math.inf  # deadline the timer was armed for

    # -- reading ---------------------------------------------------------
    def now(self) -> float:
        loop = self._loop
        if loop is None or self._speed == 0.0 or self._frozen:
            return self._v0
        return self._v0 + (loop.time() - self._r0) * self._speed

    __call__ = now

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def started(self) -> bool:
        return self._loop is not None

    @property
    def frozen(self) -> bool:
        return self._frozen

    # -- control ---------------------------------------------------------
    def start(self) -> None:
        """Bind to the running loop; simulation time 0 is now."""
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._r0 = self._loop.time()
        self._v0 = 0.0

    def set_speed(self, speed: float) -> None:
        """Change speed (0 pauses). Sleeps in progress follow at once."""
        _check_speed(speed)
        if self._frozen:
            return
        self._v0 = self.now()
        if self._loop is not None:
            self._r0 = self._loop.time()
        self._speed = float(speed)
        self._arm(force=True)

    def freeze(self) -> None:
        """Stop time for good (at the end of a run). Pending sleeps never end."""
        if self._frozen:
            return
        self._v0 = self.now()
        self._frozen = True
        self._disarm()

    # -- sleeping --------------------------------------------------------
    async def sleep(self, dt: float) -> None:
        """Sleep ``dt`` simulation seconds (``dt == 0`` just yields). Refused: ``dt < 0``
        (``ValueError``), a frozen clock (``RuntimeError``: the run is over)."""
        if dt < 0:
            raise ValueError("cannot sleep a negative time")
        if self._frozen:
            raise RuntimeError("the clock is frozen; the run is over")
        if self._loop is None:
            self.start()
        if dt == 0:
            await asyncio.sleep(0)
            return
        fut = self._loop.create_future()
        deadline = self.now() + dt
        self._seq += 1
        heapq.heappush(self._queue, (deadline, self._seq, fut))
        if deadline < self._armed_for:
            self._arm(force=True)
        try:
            await fut
        finally:
            if not fut.done():
                fut.cancel()  # its queue entry is dropped when it comes up

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._armed_for = math.inf

    def _arm(self, force: bool = False) -> None:
        queue = self._queue
        while queue and queue[0][2].done():
            heapq.heappop(queue)
        if not force and self._timer is not None:
            return
        self._disarm()
        if queue and self._speed > 0.0 and not self._frozen and self._loop is not None:
            deadline = queue[0][0]
            self._armed_for = deadline
            when = self._r0 + (deadline - self._v0) / self._speed
            self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        limit = max(self._armed_for, self.now())
        self._timer = None
        self._armed_for = math.inf
        queue = self._queue
        while queue and queue[0][0] <= limit:
            _, _, fut = heapq.heappop(queue)
            if not fut.done():
                fut.set_result(None)
        self._arm()


def _check_speed(speed: float) -> None:
    if not isinstance(speed, (int, float)) or isinstance(speed, bool) or not (speed >= 0.0) or speed == float("inf"):
        raise ValueError(f"speed must be a finite number >= 0, not {speed!r}")


class _VirtualNow:
    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0


class _CancelWatches:
    """(event, future) pairs: cancel the future once the event is set."""

    def __init__(self) -> None:
        self._pairs: list[tuple[threading.Event, asyncio.Future]] = []

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def add(self, event: threading.Event, future: asyncio.Future) -> None:
        self._pairs.append((event, future))

    def fire(self) -> bool:
        """Cancel the futures whose event is set and forget them (and the done ones);
        True if something was cancelled."""
        if not self._pairs:
            return False
        fired = False
        kept = []
        for event, future in self._pairs:
            if future.done():
                continue
            if event.is_set():
                fired = future.cancel() or fired
            else:
                kept.append((event, future))
        self._pairs = kept
        return fired


class _VirtualSelector(selectors.BaseSelector):
    """A real selector whose waits are replaced by jumps of virtual time.

    Each call (once per loop iteration) first fires the cancel watches; if one
    cancelled something, the loop neither jumps nor blocks."""

    IDLE_POLL_S = 0.05  # real seconds between looks at the watches while nothing is scheduled

    def __init__(self, vnow: _VirtualNow, watches: _CancelWatches) -> None:
        self._real = selectors.DefaultSelector()
        self._vnow = vnow
        self._watches = watches

    def register(self, fileobj, events, data=None):
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj):
        return self._real.unregister(fileobj)

    def modify(self, fileobj, events, data=None):
        return self._real.modify(fileobj, events, data)

    def get_map(self):
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout=None):
        if self._watches.fire():
            return self._real.select(0)
        if timeout is None:
            # No timer pending and nothing ready: only a real event can
            # wake the loop (e.g. an executor thread finishing at shutdown).
            # While a cancel is watched, look at it again now and then.
            return self._real.select(self.IDLE_POLL_S if self._watches else None)
        if timeout > 0:
            self._vnow.now += timeout
        return self._real.select(0)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on virtual time: timers fire instantly, in order.

    Use with ``asyncio.Runner(loop_factory=VirtualTimeLoop)``. ``time()``
    starts at 0.
    """

    def __init__(self) -> None:
        self._vnow = _VirtualNow()
        self._watches = _CancelWatches()
        super().__init__(_VirtualSelector(self._vnow, self._watches))

    def time(self) -> float:
        return self._vnow.now

    def cancel_when(self, event: threading.Event, future: asyncio.Future) -> None:
        """Cancel ``future`` (a task, say) once ``event`` is set, from any thread.

        The loop looks at every iteration, before it jumps time or waits (and
        every 50 ms of real time while nothing is scheduled at all),
        so ``future`` is cancelled at the first iteration after the set. A
        watch ends when it fired or ``future`` is done."""
        self._watches.add(event, future)


def run_in_virtual_time(coro, *, cancel: threading.Event | None = None):
    """Run a coroutine to completion on a fresh ``VirtualTimeLoop``.

    ``cancel``: once it is set (from any thread), the run is cancelled at the
    loop's next iteration and ``asyncio.CancelledError`` is raised here; set
    before the start, the coroutine never runs.

    Must not be called from a thread whose loop is running (asyncio refuses
    nested loops); from the UI run it in a thread (``counters.compare_async``).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise RuntimeError("a virtual-time run needs its own thread: this thread's loop is "
                           "running (run it in a thread, e.g. counters.compare_async)")
    if cancel is not None and cancel.is_set():
        coro.close()
        raise asyncio.CancelledError("cancelled before the start")
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        if cancel is None:
            return runner.run(coro)
        return runner.run(_cancelled_when(cancel, coro))


async def _cancelled_when(cancel: threading.Event, coro):
    asyncio.get_running_loop().cancel_when(cancel, asyncio.current_task())
    return await coro
