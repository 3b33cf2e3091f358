"""A seeded simulation: S staff members give counters to a stream of customers.

One run = one strategy on one seeded workload (``SimConfig``). Customers
arrive (``workload``), wait in one queue, are taken by the next free staff
member, who runs the strategy: choose a counter, guide the customer there
(``guide`` time), seat them. A seated customer occupies the counter for its
``service`` time, then the counter is free again. When no counter is
assignable, the staff member gives the customer back to the head of the
queue and waits until a counter is freed (or a claim runs out).

Faults: a customer marked ``abandons`` (``abandon_rate``) makes the staff
member walk away halfway through the guide for ``abandon_time`` seconds
(``Simulation.abandon(staff)`` does the same on demand). With a claim, the
claim runs out after its TTL, the counter goes back to the candidates, and
the late finalize is refused: the customer is served again. Under the long
lock, the lock is held all that time; under the short lock, the counter
looks free and is given away twice.

Guaranteed:

- Deterministic: the same config gives the same tallies, on virtual time
  (``run_virtual``, ``compare``: no wall time, no sleeps) and -- up to timer
  jitter -- in real time (``Simulation(config, speed=...)`` on the running
  loop; ``set_speed`` changes speed or pauses with 0). The strategy code is
  the same in both.
- Double assignments are the board's count (the claim store's
  ``counts().double_assignments``), never adjusted here. ``served`` counts
  every customer seated, including those seated on an occupied counter.
- Bounded memory, however long the run: the queue holds at most
  ``queue_limit`` new arrivals -- an arrival that finds it that full is
  **turned away** (counted in ``turned_away``, announced as a
  ``turned_away`` event, never served); a customer a staff member gives
  back (no counter, claim lost) goes back to its head even when it is full,
  so ``queue_length <= queue_limit + staff``. Every arrival is accounted
  for at every event: ``arrived == served + queued + with_staff +
  turned_away``. Waits are kept as exact running figures (count =
  ``served``, sum -> ``wait_mean``, ``wait_max``) plus the most recent
  ``wait_window`` waits, over which ``wait_p99`` is taken
  (``Tallies.wait_p99_of`` says how many: equal to ``served``, the p99 is
  over every wait).
- A finite run ends when every customer has been served or turned away
  (state ``finished``, ``Tallies.completed``) or at ``time_limit`` (state
  ``stopped``); ``run()`` returns the final ``Tallies`` and time then
  stands still. A claim TTL shorter than the guide time serves nobody (every
  claim expires first): that live-lock is shown, not prevented, so virtual
  runs always carry a time limit. Cancelling ``run()``
  (``stop()``) cancels every staff member; the claim strategy releases its
  claims on the way out; nothing of the run is left behind (no task, no
  unretrieved exception). A ``Simulation`` runs once: reset = a new one.
- Cancellable from any thread on virtual time: ``run_virtual``,
  ``compare`` take a ``threading.Event`` ``cancel``; once it is set the run
  stops at its loop's next iteration (at most one more customer seated per
  staff member) and ``asyncio.CancelledError`` is raised. Cancelling
  ``compare_async`` stops its worker thread that way and returns only once
  the thread has ended.
- ``snapshot()`` is plain immutable data taken at one instant (one
  synchronous call), cheap enough for 30 fps with 64 counters.

Tallies (simulation seconds): ``wait`` is arrival -> seated; ``throughput``
is served per second of run time; ``lock_wait`` is staff-seconds spent
waiting to acquire the lock; ``idle_counter_seconds`` integrates
``min(free counters, staff waiting for the lock)`` over time -- counters
that sat free while someone who could have used them waited for the lock;
``retries`` counts customers given back to the queue (no counter
assignable, or the claim died before finalize); ``claims_refused`` counts
claims that found the counter already taken (the claim doing its job).

Refused: an unknown strategy, fewer than one staff member or counter,
negative times, a non-positive TTL or choose time < 0, a ``queue_limit`` or
``wait_window`` below 1 (``ValueError``);
calling ``run`` twice (``RuntimeError``).
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import dataclasses
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lanemon.counters import events as ev
from lanemon.counters.board import Claim, CounterView, Outcome
from lanemon.counters.clock import ScaledClock, run_in_virtual_time
from lanemon.counters.events import Event, EventHub
from lanemon.counters.strategies import LABELS, STRATEGIES, Attempt, Desk
from lanemon.counters.workload import Customer, workload
from lanemon.stats import percentile
from lanemon.store.claims import ClaimStore, ClaimStoreFactory, completed_now
from lanemon.tasks import cancel_and_wait
from lanemon.work.slicing import yield_to_timers

# Staff states
IDLE = "idle"  # no customer waiting
WAITING_LOCK = "waiting_lock"
CHOOSING = "choosing"
GUIDING = "guiding"
AWAY = "away"  # abandoned mid-guide (fault)
WAITING_COUNTER = "waiting_counter"  # no counter assignable
DONE = "done"

# Memory bounds (SimConfig defaults)
DEFAULT_QUEUE_LIMIT = 1_000  # the default workload (50/s arriving, ~39/s assigned) queues ~11
                             # more customers a simulated second: full after ~90 s, then arrivals
                             # are turned away; a 300-customer compare never comes near it
WAIT_WINDOW = 10_000  # recent waits kept for the p99 (80 kB); count, sum and max are exact



@dataclass(frozen=True, slots=True)
class Floor:
    """The lowest value a ``SimConfig`` field accepts: ``value`` itself when ``inclusive``,
    otherwise only what lies above it. Named once here; the window's inputs start at
    ``lowest(step)``, so a spin box never holds a value the model refuses."""

    value: float
    inclusive: bool

    def admits(self, x: float) -> bool:
        return x >= self.value if self.inclusive else x > self.value

    def lowest(self, step: float) -> float:
        """The smallest accepted value on a grid of ``step`` (an input's precision)."""
        return self.value if self.inclusive else self.value + step


# What SimConfig (and ``workload``) refuse below: the one statement of those limits
FLOORS: dict[str, Floor] = {
    "staff": Floor(1, True),
    "counters": Floor(1, True),
    "queue_limit": Floor(1, True),
    "wait_window": Floor(1, True),
    "guide_time": Floor(0.0, True),
    "service_time": Floor(0.0, True),
    "choose_time": Floor(0.0, True),
    "abandon_time": Floor(0.0, True),
    "ttl": Floor(0.0, False),
    "arrival_rate": Floor(0.0, False),  # None (everyone at t=0) is accepted too
    "time_limit": Floor(0.0, False),  # or None
}

# Run states
READY = "ready"
RUNNING = "running"
FINISHED = "finished"
STOPPED = "stopped"


@dataclass(frozen=True)
class SimConfig:
    strategy: str = "claim"
    staff: int = 8
    counters: int = 24
    customers: int | None = 300  # None: an endless stream (live runs)
    arrival_rate: float | None = 50.0  # customers per second; None: all at t=0
    guide_time: float = 0.2  # mean seconds to guide a customer to a counter
    service_time: float = 1.0  # mean seconds a customer occupies a counter
    choose_time: float = 0.005  # seconds a look-up of free counters takes
    ttl: float = 1.0  # claim TTL, seconds
    abandon_rate: float = 0.0  # share of customers whose guide is abandoned
    abandon_time: float = 2.0  # seconds the staff member stays away
    seed: int = 1
    time_limit: float | None = None  # stop the run at this simulation time
    queue_limit: int = DEFAULT_QUEUE_LIMIT  # arrivals finding this many queued are turned away
    wait_window: int = WAIT_WINDOW  # the p99 wait is over this many most recent waits

    # A claim whose TTL is shorter than the guide always expires before its
    # finalize: no customer is ever served (a live-lock worth watching live).
    # ``run_virtual`` therefore always runs with a time limit.

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; choose from {', '.join(STRATEGIES)}")
        for name in ("staff", "counters", "queue_limit", "wait_window"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not FLOORS[name].admits(value):
                raise ValueError(f"{name} must be an integer >= {FLOORS[name].value}, not {value!r}")
        for name in ("guide_time", "service_time", "choose_time", "abandon_time"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and FLOORS[name].admits(value) and value < math.inf):
                raise ValueError(f"{name} must be a finite number >= {FLOORS[name].value:g}, not {value!r}")
        if not (isinstance(self.ttl, (int, float)) and FLOORS["ttl"].admits(self.ttl) and self.ttl < math.inf):
            raise ValueError(f"ttl must be a positive finite number, not {self.ttl!r}")
        if self.time_limit is not None and not (
                isinstance(self.time_limit, (int, float)) and FLOORS["time_limit"].admits(self.time_limit)
                and self.time_limit < math.inf):
            raise ValueError(f"time_limit must be a positive finite number or None, not {self.time_limit!r}")
        if self.arrival_rate is not None and not (
                isinstance(self.arrival_rate, (int, float)) and FLOORS["arrival_rate"].admits(self.arrival_rate)):
            raise ValueError(f"arrival_rate must be > 0 (or None), not {self.arrival_rate!r}")
        self.workload()   # workload() validates the rest (it raises from the call)

    @property
    def label(self) -> str:
        return LABELS[self.strategy]

    def replace(self, **changes) -> SimConfig:
        return dataclasses.replace(self, **changes)

    def workload(self) -> Iterator[Customer]:
        return workload(
            self.seed,
            self.customers,
            arrival_rate=self.arrival_rate,
            guide_time=self.guide_time,
            service_time=self.service_time,
            abandon_rate=self.abandon_rate,
        )

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class StaffView:
    name: str
    state: str
    customer: str | None = None
    counter: int | None = None
    since: float = 0.0


@dataclass(frozen=True, slots=True)
class Tallies:
    strategy: str
    served: int
    double_assignments: int
    arrived: int
    queued: int  # customers waiting for a staff member right now
    wait_mean: float  # exact: over every wait
    wait_p99: float  # over the ``wait_p99_of`` most recent waits
    wait_max: float  # exact: over every wait
    throughput: float  # served per simulation second
    elapsed: float  # simulation seconds
    lock_wait: float  # staff-seconds spent waiting to acquire the lock
    lock_wait_max: float
    idle_counter_seconds: float
    claims: int
    claims_refused: int
    claims_expired: int
    finalize_refused: int
    release_refused: int
    abandoned: int
    retries: int
    completed: bool  # a finite run that served (or turned away) every customer
    turned_away: int  # arrivals that found the queue full (never served)
    with_staff: int  # customers a staff member is assigning right now
    wait_p99_of: int  # how many recent waits ``wait_p99`` is over (== served: all)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class Snapshot:
    time: float
    strategy: str
    label: str
    state: str  # ready / running / finished / stopped
    speed: float
    counters: tuple[CounterView, ...]
    staff: tuple[StaffView, ...]
    lock_holder: str | None
    tallies: Tallies
    config: SimConfig


class _Waits:
    """Customer waits in bounded memory: exact count, sum and max over every wait;
    the most recent ``window`` waits (arrival order, and sorted) for the p99."""

    def __init__(self, window: int) -> None:
        self.count = 0
        self.total = 0.0
        self.max = 0.0
        self._recent: collections.deque[float] = collections.deque(maxlen=window)
        self._sorted: list[float] = []
        self._p99: tuple[int, float] = (0, 0.0)  # (count, p99) last computed

    def __len__(self) -> int:
        return len(self._recent)

    def add(self, wait: float) -> None:
        self.count += 1
        self.total += wait
        if wait > self.max:
            self.max = wait
        recent = self._recent
        if len(recent) == recent.maxlen:
            oldest = recent[0]
            del self._sorted[bisect.bisect_left(self._sorted, oldest)]
        recent.append(wait)
        bisect.insort(self._sorted, wait)

    def p99(self) -> float:
        """Nearest-rank p99 of the recent waits."""
        if self._p99[0] != self.count:
            self._p99 = (self.count, percentile(self._sorted, 99))
        return self._p99[1]


class _CustomerQueue:
    def __init__(self) -> None:
        self._items: collections.deque[Customer] = collections.deque()
        self._getters: collections.deque[asyncio.Future] = collections.deque()
        self._closed = False

    def __len__(self) -> int:
        return len(self._items)

    def put(self, customer: Customer, *, front: bool = False) -> None:
        (self._items.appendleft if front else self._items.append)(customer)
        self._wake(1)

    def close(self) -> None:
        self._closed = True
        self._wake(len(self._getters))

    def _wake(self, n: int) -> None:
        while n and self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                n -= 1

    async def get(self) -> Customer | None:
        while not self._items:
            if self._closed:
                return None
            fut = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake(1)  # pass the wake-up on
                raise
        return self._items.popleft()


class _SimDesk(Desk):
    """The desk with the simulation's accounting around each operation."""

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim.claims, sleep=sim.clock.sleep, ttl=sim.config.ttl,
                         choose_time=sim.config.choose_time)
        self._sim = sim

    def lock(self, staff: str):
        return self._sim._timed_lock(self._lock, staff)

    async def find_assignable_counters(self, staff):
        self._sim._set_staff(staff, CHOOSING)
        return await super().find_assignable_counters(staff)

    async def guide_customer_to_counter(self, staff, customer, counter):
        sim = self._sim
        sim._set_staff(staff, GUIDING, customer.name, counter)
        abandon = staff in sim._abandon_requests or (
            customer.abandons and customer.name not in sim._abandoned_customers)
        if not abandon:
            await self.sleep(customer.guide)
            return
        sim._abandon_requests.discard(staff)
        sim._abandoned_customers.add(customer.name)
        half = customer.guide / 2
        await self.sleep(half)
        sim.abandoned += 1
        sim._set_staff(staff, AWAY, customer.name, counter)
        sim._emit(ev.ABANDONED, counter, staff, customer.name, f"away {sim.config.abandon_time:g}s")
        await self.sleep(sim.config.abandon_time)
        sim._emit(ev.RETURNED, counter, staff, customer.name)
        sim._set_staff(staff, GUIDING, customer.name, counter)
        await self.sleep(customer.guide - half)

    async def assign_customer_to_counter(self, staff, customer, counter):
        clean = await self.claims.assign(counter, customer.name, staff)
        self._sim._board_changed()
        self._sim._seated(staff, customer, counter)
        return clean

    async def claim_counter(self, staff, customer, counter):
        claim = await self.claims.claim(counter, staff, customer.name, self.ttl)
        self._sim._board_changed()
        return claim

    async def finalize_counter_assignment(self, staff, customer, claim: Claim) -> Outcome:
        outcome = await self.claims.finalize(claim.token)
        self._sim._board_changed()
        if outcome:
            self._sim._seated(staff, customer, claim.counter)
        return outcome

    async def release_counter_claim(self, staff, claim: Claim) -> bool:
        released = await self.claims.release(claim.token)
        self._sim._board_changed()
        if released:
            self._sim._notify_freed()
        return released


class Simulation:
    """One run of one strategy. See the module docstring for the contract.

    ``speed`` only matters in real time: simulation seconds per loop second
    (on a ``VirtualTimeLoop`` keep 1). Pass ``clock`` to share one.

    ``claims``: the engine that keeps the counter board's claims, a
    ``lanemon.store.claims.ClaimStoreFactory`` called once with
    ``counters=``, ``clock=`` (the simulation clock), ``default_ttl=`` and
    ``events=`` (the simulation's hub); default: the in-memory engine. The
    simulation reaches the board only through the resulting
    ``ClaimStore`` (``self.claims``).

    ``arrival_chunk`` / ``arrival_budget`` (real-time runs on a window's loop): when the
    run is behind real time (arrivals already due, e.g. 9,999/s at 9x), the arrival loop
    admits or turns away at most ``arrival_chunk`` customers, and stops sooner once it
    has run ``arrival_budget`` wall seconds, before it lets every loop timer already due
    run (``arrival_yields`` counts those turns). Every customer is still accounted for
    in order; only the interleaving with the staff changes, as timer jitter does.
    Default ``None``: overdue arrivals are handled in one go -- the deterministic
    behaviour of virtual-time runs (``run_virtual``, ``compare``), which keep it.
    """

    def __init__(self, config: SimConfig | None = None, *, speed: float = 1.0,
                 clock: ScaledClock | None = None,
                 claims: ClaimStoreFactory | None = None,
                 arrival_chunk: int | None = None,
                 arrival_budget: float | None = None) -> None:
        if arrival_chunk is not None and not (isinstance(arrival_chunk, int) and arrival_chunk >= 1):
            raise ValueError(f"arrival_chunk must be an integer >= 1 or None, not {arrival_chunk!r}")
        if arrival_budget is not None and not arrival_budget > 0:
            raise ValueError(f"arrival_budget must be > 0 or None, not {arrival_budget!r}")
        self._arrival_chunk = arrival_chunk
        self._arrival_budget = arrival_budget if arrival_chunk is not None else None
        self.arrival_yields = 0  # turns the arrival loop gave back to the loop (see above)
        if claims is None:
            from lanemon.store.memory_claims import MemoryClaims  # it imports this package
            claims = MemoryClaims.create
        self.config = config if config is not None else SimConfig()
        self.clock = clock if clock is not None else ScaledClock(speed)
        self.events = EventHub()
        self.claims: ClaimStore = claims(counters=self.config.counters, clock=self.clock.now,
                                         default_ttl=self.config.ttl, events=self.events)
        self._strategy = STRATEGIES[self.config.strategy]
        self._desk = _SimDesk(self)
        self._queue = _CustomerQueue()
        self._state = READY
        self._task: asyncio.Task | None = None
        self._tasks: list[asyncio.Task] = []
        self._service_tasks: set[asyncio.Task] = set()
        self._freed_waiters: list[asyncio.Future] = []
        self._staff: dict[str, StaffView] = {
            f"S{i}": StaffView(f"S{i}", IDLE) for i in range(1, self.config.staff + 1)
        }
        self._lock_holder: str | None = None
        self._abandon_requests: set[str] = set()
        self._abandoned_customers: set[str] = set()
        self._arrivals_done = False
        self._outstanding = 0  # admitted and not yet seated
        self._time_limited = False
        # tallies
        self.arrived = 0
        self.served = 0
        self.turned_away = 0
        self._with_staff = 0
        self.retries = 0
        self.abandoned = 0
        self.lock_wait = 0.0
        self.lock_wait_max = 0.0
        self.lock_acquisitions = 0
        self.idle_counter_seconds = 0.0
        self._waits = _Waits(self.config.wait_window)
        self._lock_waiting = 0
        self._free_cache = self.config.counters
        self._acc_t = 0.0

    # -- public control --------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def queue_length(self) -> int:
        """Customers waiting for a staff member now (at most ``queue_limit + staff``)."""
        return len(self._queue)

    @property
    def with_staff(self) -> int:
        """Customers a staff member has taken from the queue and not yet seated."""
        return self._with_staff

    @property
    def waits_stored(self) -> int:
        """Waits kept for the p99 (at most ``wait_window``)."""
        return len(self._waits)

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Board and simulation events; returns ``unsubscribe``."""
        return self.events.subscribe(callback)

    def start(self) -> asyncio.Task:
        """Run in the background on the running loop; returns the task."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    def stop(self) -> None:
        """Cancel the background run (``start``). Harmless when not running."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def set_speed(self, speed: float) -> None:
        self.clock.set_speed(speed)

    def abandon(self, staff: str) -> None:
        """Make that staff member walk away halfway through their next guide
        (a guide already under way is not interrupted)."""
        if staff not in self._staff:
            raise KeyError(staff)
        self._abandon_requests.add(staff)

    def expire_claim(self, counter: int) -> bool:
        """End the counter's live claim now (its owner's finalize will fail).

        Synchronous (the window's button; an event callback): it needs an
        engine that completes without suspending, as the memory one does
        (``completed_now``; ``RuntimeError`` otherwise)."""
        expired = completed_now(self.claims.expire(counter))
        if expired:
            self._board_changed()
            self._notify_freed()
        return expired

    async def run(self) -> Tallies:
        if self._state != READY:
            raise RuntimeError("a Simulation runs once; make a new one to reset")
        self._state = RUNNING
        self.clock.start()
        self._acc_t = self.clock.now()
        self._free_cache = self.claims.free_count()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._arrivals())]
        self._tasks += [loop.create_task(self._staff_loop(name)) for name in self._staff]
        limiter = None
        if self.config.time_limit is not None:
            limiter = loop.create_task(self.clock.sleep(self.config.time_limit))
            self._tasks.append(limiter)
        work = asyncio.gather(*(t for t in self._tasks if t is not limiter))
        # Cancelled (by the time limit, or with the run), a gather ends holding a
        # CancelledError as its *exception*: read it, or asyncio logs it as never retrieved.
        work.add_done_callback(_retrieve)
        try:
            if limiter is None:
                await work
            else:
                await asyncio.wait((work, limiter), return_when=asyncio.FIRST_COMPLETED)
                if work.done():
                    work.result()
                else:
                    work.cancel()
                    self._time_limited = True
            self._state = STOPPED if self._time_limited else FINISHED
        finally:
            if self._state == RUNNING:
                self._state = STOPPED
            await cancel_and_wait(t for t in self._tasks + list(self._service_tasks) if not t.done())
            self._account()
            self.clock.freeze()
            self._emit(ev.FINISHED, detail="time limit" if self._time_limited else self._state)
        return self.tallies()

    # -- reading ---------------------------------------------------------
    def tallies(self) -> Tallies:
        now = self.clock.now()
        waits = self._waits
        n = waits.count
        b = self.claims.counts()
        return Tallies(
            strategy=self.config.strategy,
            served=self.served,
            double_assignments=b.double_assignments,
            arrived=self.arrived,
            queued=len(self._queue),
            wait_mean=waits.total / n if n else 0.0,
            wait_p99=waits.p99(),
            wait_max=waits.max,
            throughput=self.served / now if now > 0 else 0.0,
            elapsed=now,
            lock_wait=self.lock_wait,
            lock_wait_max=self.lock_wait_max,
            idle_counter_seconds=self.idle_counter_seconds,
            claims=b.claims,
            claims_refused=b.claim_refused,
            claims_expired=b.expired,
            finalize_refused=b.finalize_refused,
            release_refused=b.release_refused,
            abandoned=self.abandoned,
            retries=self.retries,
            completed=(self.config.customers is not None and self._arrivals_done
                       and self._outstanding == 0),
            turned_away=self.turned_away,
            with_staff=self._with_staff,
            wait_p99_of=len(waits),
        )

    def snapshot(self) -> Snapshot:
        counters = self.claims.views()
        return Snapshot(
            time=self.clock.now(),
            strategy=self.config.strategy,
            label=self.config.label,
            state=self._state,
            speed=self.clock.speed,
            counters=counters,
            staff=tuple(self._staff.values()),
            lock_holder=self._lock_holder,
            tallies=self.tallies(),
            config=self.config,
        )

    # -- the run ---------------------------------------------------------
    async def _arrivals(self) -> None:
        chunk, budget = self._arrival_chunk, self._arrival_budget
        wall = time.perf_counter
        run, t0 = 0, wall()  # arrivals admitted since the loop last ran other work
        for customer in self.config.workload():
            delay = customer.arrival - self.clock.now()
            if delay > 0:
                await self.clock.sleep(delay)
                run, t0 = 0, wall()
            elif chunk is not None and (run >= chunk or (budget is not None and wall() - t0 > budget)):
                # overdue arrivals (the run is behind real time): the loop's due timers first
                await yield_to_timers()   # due timers (frame, heartbeat) first
                self.arrival_yields += 1
                run, t0 = 0, wall()
            run += 1
            self.arrived += 1
            if len(self._queue) >= self.config.queue_limit:
                self.turned_away += 1
                self._emit(ev.TURNED_AWAY, customer=customer.name, detail=f"{len(self._queue)} queued")
                continue
            self._outstanding += 1
            self._queue.put(customer)
            self._emit(ev.ARRIVED, customer=customer.name)
        self._arrivals_done = True
        self._maybe_close()

    async def _staff_loop(self, name: str) -> None:
        while True:
            self._set_staff(name, IDLE)
            customer = await self._queue.get()
            if customer is None:
                break
            self._with_staff += 1
            self._set_staff(name, CHOOSING, customer.name)
            attempt = await self._strategy(self._desk, name, customer)
            if attempt is Attempt.SERVED:
                continue  # _seated counted it
            self._with_staff -= 1
            self.retries += 1
            self._queue.put(customer, front=True)
            self._emit(ev.RETRY, None, name, customer.name, attempt.value)
            if attempt is Attempt.NO_COUNTER:
                await self._wait_for_counter(name)
        self._set_staff(name, DONE)

    async def _wait_for_counter(self, name: str) -> None:
        if await self.claims.assignable():
            return  # freed while we were giving up: try again at once
        self._set_staff(name, WAITING_COUNTER)
        fut = asyncio.get_running_loop().create_future()
        self._freed_waiters.append(fut)
        expiry = await self.claims.next_expiry()
        timer = None
        try:
            if expiry is None:
                await fut
            else:
                timer = asyncio.ensure_future(self.clock.sleep(max(0.0, expiry - self.claims.now())))
                await asyncio.wait((fut, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if timer is not None and not timer.done():
                timer.cancel()
            if not fut.done():
                fut.cancel()
            with contextlib.suppress(ValueError):
                self._freed_waiters.remove(fut)

    def _notify_freed(self) -> None:
        waiters, self._freed_waiters = self._freed_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _seated(self, staff: str, customer: Customer, counter: int) -> None:
        now = self.clock.now()
        wait = now - customer.arrival
        self._waits.add(wait)
        self.served += 1
        self._with_staff -= 1
        self._outstanding -= 1
        self._abandoned_customers.discard(customer.name)  # seated: never guided again
        self._emit(ev.SERVED, counter, staff, customer.name, f"waited {wait:.3f}s")
        task = asyncio.get_running_loop().create_task(self._service(counter, customer))
        self._service_tasks.add(task)
        task.add_done_callback(self._service_tasks.discard)
        self._maybe_close()

    async def _service(self, counter: int, customer: Customer) -> None:
        await self.clock.sleep(customer.service)
        await self.claims.vacate(counter, customer.name)
        self._board_changed()
        self._notify_freed()

    def _maybe_close(self) -> None:
        if self._arrivals_done and self._outstanding == 0:
            self._queue.close()

    @contextlib.asynccontextmanager
    async def _timed_lock(self, lock: asyncio.Lock, staff: str):
        started = self.clock.now()
        self._account()
        self._lock_waiting += 1
        self._set_staff(staff, WAITING_LOCK)
        try:
            await lock.acquire()
        finally:
            self._account()
            self._lock_waiting -= 1
            waited = self.clock.now() - started
            self.lock_wait += waited
            self.lock_wait_max = max(self.lock_wait_max, waited)
        self._lock_holder = staff
        self.lock_acquisitions += 1
        try:
            yield
        finally:
            self._lock_holder = None
            lock.release()

    # -- accounting ------------------------------------------------------
    def _account(self) -> None:
        now = self.clock.now()
        dt = now - self._acc_t
        if dt > 0 and self._lock_waiting and self._free_cache:
            self.idle_counter_seconds += min(self._free_cache, self._lock_waiting) * dt
        self._acc_t = now

    def _board_changed(self) -> None:
        self._account()
        self._free_cache = self.claims.free_count()

    def _set_staff(self, name: str, state: str, customer: str | None = None,
                   counter: int | None = None) -> None:
        if customer is None and state not in (IDLE, DONE, WAITING_COUNTER):
            customer = self._staff[name].customer  # still serving the same one
        self._staff[name] = StaffView(name, state, customer, counter, self.clock.now())

    def _emit(self, kind: str, counter: int | None = None, owner: str | None = None,
              customer: str | None = None, detail: str = "") -> None:
        if self.events.active:
            self.events.publish(Event(time=self.clock.now(), kind=kind, counter=counter, owner=owner,
                                      customer=customer, detail=detail))


VIRTUAL_TIME_LIMIT = 3600.0


def run_virtual(config: SimConfig, *, cancel: threading.Event | None = None) -> Tallies:
    """Run one config to the end on virtual time (instant, deterministic).

    Without a ``time_limit`` the run stops at ``VIRTUAL_TIME_LIMIT``
    simulation seconds (``Tallies.completed`` is then False). ``cancel``: see
    ``compare``.
    """
    if config.customers is None:
        raise ValueError("an endless workload (customers=None) never ends in virtual time")
    if config.time_limit is None:
        config = config.replace(time_limit=VIRTUAL_TIME_LIMIT)
    return run_in_virtual_time(Simulation(config).run(), cancel=cancel)


def compare(config: SimConfig, strategies: tuple[str, ...] | None = None, *,
            cancel: threading.Event | None = None) -> dict[str, Tallies]:
    """The same seeded workload under each strategy, on virtual time.

    ``cancel`` (set from any thread): the run under way stops at its loop's
    next iteration, no further strategy starts, and ``asyncio.CancelledError``
    is raised.
    """
    names = tuple(STRATEGIES) if strategies is None else strategies
    results = {}
    for name in names:
        if cancel is not None and cancel.is_set():
            raise asyncio.CancelledError("compare cancelled")
        results[name] = run_virtual(config.replace(strategy=name), cancel=cancel)
    return results


async def compare_async(config: SimConfig, strategies: tuple[str, ...] | None = None) -> dict[str, Tallies]:
    """``compare`` from inside a running loop (the window), in a worker thread.

    Cancelling it signals the compare's ``cancel``, waits -- further
    cancellations included -- until the thread has ended (one loop iteration
    of the virtual run), then raises ``asyncio.CancelledError``: nothing is
    left computing. A compare that fails raises its error here.
    """
    loop = asyncio.get_running_loop()
    cancel = threading.Event()
    ended: asyncio.Future = loop.create_future()  # result: (results, None) or (None, error)

    def settle(outcome: tuple) -> None:
        if not ended.done():
            ended.set_result(outcome)

    def work() -> None:
        try:
            outcome = (compare(config, strategies, cancel=cancel), None)
        except BaseException as exc:
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for it any more

    thread = threading.Thread(target=work, name="lanemon-compare", daemon=True)
    thread.start()
    try:
        results, error = await asyncio.shield(ended)
    except asyncio.CancelledError:
        cancel.set()
        while not ended.done():
            try:
                await asyncio.shield(ended)
            except asyncio.CancelledError:
                pass  # cancelled again: still let the thread end first
        thread.join()  # it has settled ``ended``: only its return is left
        raise
    thread.join()
    if error is not None:
        raise error
    return results



def _retrieve(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()
