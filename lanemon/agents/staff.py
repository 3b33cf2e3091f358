"""The staff agent: one process works the bank counters of seed 001 on a shared store (Qt-free).

``await run_staff(store_url, name=, strategy=, staff=, counters=, seed=, stop=)``
(``lanemon agent --role staff ...`` calls it; ``python -m lanemon.agents.staff``
runs it on its own) opens a session named ``name`` on the SQLite or PostgreSQL
store, gives its board ``counters`` counters (``SqlStore.claims``: refused with
:class:`~lanemon.store.url.StoreError` while other agents use a board of another
size) and runs ``staff`` staff members (``<name>/S1`` ...) in real time until
``stop`` is set. Each one runs the seed's strategy code unchanged
(:mod:`lanemon.counters.strategies`) over a :class:`~lanemon.counters.Desk`
whose claims are the store's, so agents in other processes -- on other hosts,
with PostgreSQL -- work the same counters.

Customers: every agent has its own endless queue, generated from ``seed`` and
its ``name`` (``lanemon.counters.workload``: the seed's guide and service
times; everyone is there from the start, so a staff member is never idle), and
named ``<name>/C<i>`` so that every customer is unique store-wide. A seated
customer leaves its counter after its service time (``vacate``). Customers are
not taken from the store: the contention under study is over the counters.

The lock of ``short`` and ``long`` is **store-wide**: the lane
(:data:`LOCK_LANE`, :data:`LOCK_WORKSPACE`) of the store, claimed with the
staff member's name as owner, retried with a short jittered back-off while
someone else holds it (:data:`BACKOFF_S`), released in ``finally``; a
process that released it waits :data:`COURTESY_S` before it tries again, so
the lock goes round the processes instead of staying with one. Its epoch
fences it: under ``long``, before the assign, the holder reads the lane and
seats nobody when its epoch is no longer current (its lease ran out while it
was paused, and another holder may be working); the customer goes back to its
queue (``fenced``). That check and the assign are two store operations, not
one: a pause that falls exactly between them is not fenced (the board's blind
``assign`` takes no fence; that is the seed's write). Like every lane, the lock
dies with its holder's lease (the session's keeper renews it while the process
runs), so a SIGSTOPped or killed holder stops no one for longer than the
lease. Inside one process the staff first queue on a local lock, then on the
store's.

What the store then shows (``board_*`` counts, store-wide, and the board's
rows):

* ``short``: the lock covers only the choice: two agents choose the same free
  counter while the first one guides, both seat: **double assignments**,
  counted by the store (``board_double_assignments``; a board row with two
  customers);
* ``long``: the lock covers choose + guide + assign: zero doubles, one
  assignment at a time store-wide while other counters sit idle;
* ``claim``: claim / guide / finalize (fenced by the claim's epoch): zero
  doubles, and the agents work in parallel: more seated per second than
  ``long``.

Stopping: once ``stop`` is set no staff member takes a new customer; one in
the middle of an attempt finishes it (a guide lasts at most 1.5x the guide
time) within :data:`STOP_GRACE_S`, else it is cancelled (a claim is then
released; a lock is released); then the customers this agent seated leave
their counters, a lock lane of this session left by a cancelled claim is
released, and the session is closed. A killed agent leaves its seated
customers on the board (the board has no owner lease for seats): they show as
occupied until an agent with the same name is gone for good -- documented,
not repaired.

Returned (and written as JSON to ``stats_path``): :class:`StaffStats`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import inspect
import os
import random
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from lanemon.counters.strategies import STRATEGIES, Attempt, Desk
from lanemon.counters.workload import Customer, workload
from lanemon.store.claims import Outcome
from lanemon.store.sql import open_sql_store
from lanemon.store.url import StoreError, parse
from lanemon.tasks import run_until_signalled

__all__ = [
    "BACKOFF_S", "COURTESY_S", "GUIDE_TIME", "LOCK_LANE", "LOCK_WORKSPACE", "SERVICE_TIME", "START_POLL_S",
    "STOP_GRACE_S", "STRATEGY_KEYS", "LockLost", "StaffStats", "StoreLock", "main", "run_staff", "set_info",
]

#: the store-wide lock of the lock strategies: this lane of the store
LOCK_LANE = "counter-desk"
LOCK_WORKSPACE = "lock"
#: the command line's strategy names -> the seed's (lanemon.counters.strategies)
STRATEGY_KEYS = {"short": "short_lock", "long": "long_lock", "claim": "claim"}
#: the seed's mean guide and service times (SimConfig's defaults), seconds
GUIDE_TIME = 0.2
SERVICE_TIME = 1.0
#: claim TTL (SimConfig's default), seconds; never less than twice the mean guide time
#: (the longest guide is 1.5x the mean: a TTL shorter than a guide serves nobody)
TTL = 1.0
#: first and longest wait between two tries of a held lock (jittered 0.5-1.5x, doubling)
BACKOFF_S = (0.001, 0.008)
#: after a release, this process waits this long before it tries the lock again, so that
#: the others, retrying every BACKOFF_S[1] x 1.5 at most, get their turn (without it one
#: process took the lock again and again and the others starved)
COURTESY_S = 1.5 * BACKOFF_S[1]
#: between two looks for a free counter when none was assignable (jittered 0.5-1.5x)
NO_COUNTER_WAIT_S = 0.04
#: how often an agent told to wait for a start file looks for it
START_POLL_S = 0.01
#: how long a stop waits for the staff's attempts in flight before cancelling them
STOP_GRACE_S = 5.0


class LockLost(Exception):
    """The store-wide lock's epoch is no longer current: its holder must not write."""


class _Stopping(Exception):
    """The agent is stopping: a staff member waiting for the lock gives up."""


@dataclass
class StaffStats:
    """What one staff agent did (its own counts) and the store's board counts at its end."""

    name: str
    strategy: str = ""
    session: str = ""
    pid: int = 0
    staff: int = 0
    counters: int = 0
    served: int = 0                 # customers this agent seated (doubles included)
    doubles: int = 0                # its assigns that landed on an occupied counter (the store said so)
    no_counter: int = 0             # attempts that found no assignable counter
    lost: int = 0                   # claims that died before their finalize (customer served again)
    fenced: int = 0                 # long lock: assigns not made, the lock's epoch was no longer current
    lock_acquisitions: int = 0
    lock_retries: int = 0           # tries of the store lock that found it held
    lock_wait_s: float = 0.0        # staff-seconds spent waiting for the store lock
    lock_lost: int = 0              # lock releases the store refused (the lease ran out meanwhile)
    errors: int = 0                 # store operations that failed (StoreError)
    last_error: str | None = None
    vacated: int = 0                # own customers that left their counter
    elapsed_s: float = 0.0
    throughput: float = 0.0         # served per second of elapsed_s
    ended_by: str = ""              # stop | seconds | served
    store: dict[str, int] = field(default_factory=dict)   # the store's board_* counts at the end

    def to_json(self) -> dict:
        return asdict(self)


class StoreLock:
    """A lock shared by every process of one store: the lane (``LOCK_LANE``, ``LOCK_WORKSPACE``).

    ``async with lock.hold(staff):`` -- a local ``asyncio.Lock`` first (the staff
    of this process queue there, so a process asks the store for one holder at a
    time), then the store's lane, claimed with owner ``staff`` and retried after a
    jittered, doubling back-off (``BACKOFF_S``) while another process holds it; after a
    release this process lets ``COURTESY_S`` pass before its next try.
    Released in ``finally`` (a release the store refuses -- the lease ran out
    while the holder was paused -- is counted in ``stats.lock_lost``).
    ``await lock.check(staff)`` raises :class:`LockLost` when ``staff`` holds it
    but its epoch is no longer the lane's current one (a store read).
    A set ``stop`` makes a waiter give up (:class:`_Stopping`).
    """

    def __init__(self, lanes, backend, stats: StaffStats, *, stop: asyncio.Event, rng: random.Random) -> None:
        self._lanes = lanes
        self._backend = backend
        self._stats = stats
        self._stop = stop
        self._rng = rng
        self._local = asyncio.Lock()
        self._token = None
        self._holder: str | None = None
        self._next_try = 0.0   # (time.monotonic) not before: the courtesy after a release

    @property
    def holder(self) -> str | None:
        """The staff member of this process holding the store lock, or None."""
        return self._holder

    @contextlib.asynccontextmanager
    async def hold(self, staff: str):
        stats = self._stats
        t0 = time.monotonic()
        async with self._local:
            delay = BACKOFF_S[0]
            courtesy = self._next_try - time.monotonic()
            if courtesy > 0:
                await asyncio.sleep(courtesy)
            while True:
                if self._stop.is_set():
                    stats.lock_wait_s += time.monotonic() - t0
                    raise _Stopping
                token = await self._lanes.aclaim(LOCK_WORKSPACE, staff)
                if token is not None:
                    break
                stats.lock_retries += 1
                await asyncio.sleep(delay * self._rng.uniform(0.5, 1.5))
                delay = min(2 * delay, BACKOFF_S[1])
            stats.lock_wait_s += time.monotonic() - t0
            stats.lock_acquisitions += 1
            self._token, self._holder = token, staff
            try:
                yield token
            finally:
                self._token = self._holder = None
                if not await self._lanes.arelease(token):
                    stats.lock_lost += 1
                self._next_try = time.monotonic() + COURTESY_S

    async def check(self, staff: str) -> None:
        """Raise :class:`LockLost` if ``staff`` holds the lock under an epoch the store
        no longer has (nothing is read when ``staff`` does not hold it)."""
        token = self._token
        if token is None or self._holder != staff:
            return
        rows = await self._backend.lane_rows()
        if not any(r.name == LOCK_LANE and r.workspace == LOCK_WORKSPACE and r.epoch == token.epoch
                   for r in rows):
            raise LockLost(f"{staff}: the store lock's epoch {token.epoch} is no longer current")

    async def release_leftover(self) -> None:
        """Release a lock lane this session still holds (a claim cancelled in flight)."""
        for row in await self._backend.lane_rows():
            if row.name == LOCK_LANE and row.workspace == LOCK_WORKSPACE and row.session == self._backend.session:
                await self._backend.release_lane(row.name, row.workspace, row.epoch)


class _AgentDesk(Desk):
    """The seed's desk over the store's claims, with the store lock and this agent's counts."""

    def __init__(self, claims, lock: StoreLock, stats: StaffStats, *, fence: bool, ttl: float) -> None:
        super().__init__(claims, ttl=ttl, choose_time=0.0, lock=None)
        self._store_lock = lock
        self._stats = stats
        self._fence = fence
        self._seated: dict[str, int] = {}   # staff -> counter of its last seat

    def lock(self, staff: str):
        return self._store_lock.hold(staff)

    def seated_at(self, staff: str) -> int | None:
        """The counter ``staff`` seated its last customer on (taken: read once)."""
        return self._seated.pop(staff, None)

    async def assign_customer_to_counter(self, staff: str, customer: Customer, counter: int) -> bool:
        if self._fence:
            await self._store_lock.check(staff)
        ok = await super().assign_customer_to_counter(staff, customer, counter)
        if not ok:
            self._stats.doubles += 1
        self._seated[staff] = counter
        return ok

    async def finalize_counter_assignment(self, staff: str, customer: Customer, claim) -> Outcome:
        outcome = await super().finalize_counter_assignment(staff, customer, claim)
        if outcome:
            self._seated[staff] = claim.counter
        return outcome


def customers_of(name: str, seed: int, *, guide_time: float = GUIDE_TIME,
                 service_time: float = SERVICE_TIME) -> Iterator[Customer]:
    """The agent's endless queue: the seed's workload for (``seed``, ``name``), every
    customer there from the start, named ``<name>/C<i>`` (unique store-wide)."""
    mixed = (seed * 1_000_003) ^ zlib.crc32(name.encode())
    for c in workload(mixed, None, arrival_rate=None, guide_time=guide_time, service_time=service_time):
        yield dataclasses.replace(c, name=f"{name}/{c.name}")


async def run_staff(store_url: str, *, name: str, strategy: str, staff: int = 1, counters: int = 8,
                    seed: int = 0, stop: asyncio.Event, guide_time: float = GUIDE_TIME,
                    service_time: float = SERVICE_TIME, start_file: str | None = None,
                    served: int | None = None, seconds: float | None = None,
                    stats_path: str | None = None) -> StaffStats:
    """Work the store's counters until ``stop`` is set (see the module docstring).

    ``strategy``: ``short``, ``long`` or ``claim`` (the seed's names
    ``short_lock`` / ``long_lock`` are accepted too). ``start_file``: the
    staff begin once that file exists (looked for every :data:`START_POLL_S`;
    the session is open and the board ensured before), so that agents started
    one by one begin together.
    ``served`` / ``seconds`` end the run earlier (tests). A claim's TTL is
    ``TTL`` or twice ``guide_time``, whichever is longer. Refused:
    ``ValueError`` for an unknown strategy or fewer than one staff member or
    counter; :class:`StoreError` when the store cannot be opened or its board
    has another size in use.
    """
    key = STRATEGY_KEYS.get(strategy, strategy)
    if key not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGY_KEYS)}")
    for what, value in (("staff", staff), ("counters", counters)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{what} must be an integer >= 1, not {value!r}")
    url = parse(store_url)
    label = next((k for k, v in STRATEGY_KEYS.items() if v == key), key)
    stats = StaffStats(name=name, strategy=label, pid=os.getpid(), staff=staff, counters=counters)
    store = await open_sql_store(url, create=True, name=name)
    stats.session = store.session
    t0 = time.monotonic()
    try:
        claims = store.claims(counters=counters, default_ttl=TTL)
        await claims.refresh()   # the board is ensured (and its size checked) before anything else
        await set_info(store, {"role": "staff", "strategy": label, "staff": staff, "counters": counters,
                                "lanes": "store", "queues": [], "jobs_running": 0, "lanes_held": 0})
        store.start_keeper()
        if start_file is not None:
            while not _exists(start_file) and not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), START_POLL_S)
        t0 = time.monotonic()
        rng = random.Random((seed * 7919) ^ zlib.crc32(name.encode()))
        lock = StoreLock(store.lanes(LOCK_LANE, clock=time.time, emit=None), store.backend, stats,
                         stop=stop, rng=rng)
        desk = _AgentDesk(claims, lock, stats, fence=key == "long_lock", ttl=max(TTL, 2 * guide_time))
        crew = _Crew(desk, STRATEGIES[key], stats, customers_of(name, seed, guide_time=guide_time,
                                                                  service_time=service_time),
                     stop=stop, rng=rng, served=served)
        stats.ended_by = await crew.run([f"{name}/S{k}" for k in range(1, staff + 1)], seconds)
        await crew.leave()
        with contextlib.suppress(StoreError):
            await lock.release_leftover()
        with contextlib.suppress(StoreError):
            await claims.refresh()
        stats.store = dict(asdict(claims.counts()))
    finally:
        stats.elapsed_s = time.monotonic() - t0
        stats.throughput = stats.served / stats.elapsed_s if stats.elapsed_s > 0 else 0.0
        await store.close()
        if stats_path is not None:
            from lanemon.files import write_json
            write_json(stats_path, stats.to_json())
    return stats


def _exists(path: str) -> bool:
    """(A stat of a local file: microseconds, like the SQLite store's own calls.)"""
    return os.path.exists(path)


async def set_info(store, info: dict) -> None:
    """Set the session's ``info`` (who is running: ``SqlStore.set_info``), where the store
    has it (a store without it: nothing is done)."""
    setter = getattr(store, "set_info", None)
    if setter is None:
        return
    try:
        result = setter(info)
    except TypeError:     # (a setter that takes the fields by name)
        result = setter(**info)
    if inspect.isawaitable(result):
        await result


class _Crew:
    """The agent's staff members: one task each, sharing one queue of customers."""

    def __init__(self, desk: _AgentDesk, strategy, stats: StaffStats, customers: Iterator[Customer], *,
                 stop: asyncio.Event, rng: random.Random, served: int | None) -> None:
        self._desk = desk
        self._strategy = strategy
        self._stats = stats
        self._customers = customers
        self._back: list[Customer] = []       # customers given back (no counter, claim lost, fenced)
        self._stop = stop
        self._rng = rng
        self._served_limit = served
        self._services: dict[asyncio.Task, tuple[int, str]] = {}   # seated customers: (counter, name)

    async def run(self, names: list[str], seconds: float | None) -> str:
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._member(n), name=f"staff-{n}") for n in names]
        stopper = loop.create_task(self._stop.wait())
        try:
            done, _ = await asyncio.wait([stopper, *tasks], timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
            ended = "stop" if stopper in done else "served" if done else "seconds"
            self._stop.set()   # (no new customer is taken from now on)
            _, late = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            for t in late:
                t.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            stopper.cancel()
            for t in tasks:
                t.cancel()
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                raise r
        return ended

    async def _member(self, staff: str) -> None:
        stats, desk = self._stats, self._desk
        while not self._stop.is_set():
            if self._served_limit is not None and stats.served >= self._served_limit:
                return
            customer = self._back.pop(0) if self._back else next(self._customers)
            try:
                attempt = await self._strategy(desk, staff, customer)
            except _Stopping:
                self._back.append(customer)
                return
            except LockLost:
                stats.fenced += 1
                self._back.append(customer)
                continue
            except StoreError as exc:
                stats.errors += 1
                stats.last_error = str(exc)
                self._back.append(customer)
                await self._pause(20 * NO_COUNTER_WAIT_S)
                continue
            if attempt is Attempt.SERVED:
                stats.served += 1
                counter = desk.seated_at(staff)
                if counter is not None:
                    self._serve(counter, customer)
                continue
            self._back.append(customer)
            if attempt is Attempt.LOST:
                stats.lost += 1
            else:
                stats.no_counter += 1
                await self._pause(NO_COUNTER_WAIT_S)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds * self._rng.uniform(0.5, 1.5))

    def _serve(self, counter: int, customer: Customer) -> None:
        task = asyncio.get_running_loop().create_task(self._service(counter, customer))
        self._services[task] = (counter, customer.name)

    async def _service(self, counter: int, customer: Customer) -> None:
        await asyncio.sleep(customer.service)
        await self._vacate(counter, customer.name)
        self._services.pop(asyncio.current_task(), None)

    async def _vacate(self, counter: int, name: str) -> None:
        try:
            if await self._desk.claims.vacate(counter, name):
                self._stats.vacated += 1
        except StoreError as exc:
            self._stats.errors += 1
            self._stats.last_error = str(exc)

    async def leave(self) -> None:
        """Every customer still seated by this agent leaves its counter now."""
        seated = list(self._services.items())
        self._services.clear()
        for task, _ in seated:
            task.cancel()
        await asyncio.gather(*(t for t, _ in seated), return_exceptions=True)
        for _, (counter, name) in seated:
            await self._vacate(counter, name)


# -- the process entry (``lanemon agent --role staff`` calls run_staff the same way) ----------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lanemon.agents.staff",
                                description="work the store's bank counters until told to stop")
    p.add_argument("--store", required=True, help="the store URL (sqlite:///... or postgresql://...)")
    p.add_argument("--name", default=None, help="the session's name (default agent-<pid>)")
    p.add_argument("--strategy", choices=sorted(STRATEGY_KEYS), default="claim")
    p.add_argument("--staff", type=int, default=1)
    p.add_argument("--counters", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--guide", type=float, default=GUIDE_TIME, help="mean guide time, seconds")
    p.add_argument("--service", type=float, default=SERVICE_TIME, help="mean service time, seconds")
    p.add_argument("--start-file", help="begin once this file exists (after opening the store)")
    p.add_argument("--served", type=int, help="stop once this agent seated this many customers")
    p.add_argument("--stats", help="write the counts as JSON to this file on exit")
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit 0 after a clean stop (SIGTERM/SIGINT, ``--served``), 2 with one line for bad
    input or a store that cannot be opened."""
    args = _parser().parse_args(argv)
    name = args.name or f"agent-{os.getpid()}"
    async def go(stop: asyncio.Event) -> StaffStats:
        return await run_staff(args.store, name=name, strategy=args.strategy, staff=args.staff,
                               counters=args.counters, seed=args.seed, stop=stop, guide_time=args.guide,
                               service_time=args.service, start_file=args.start_file, served=args.served,
                               stats_path=args.stats)

    try:
        stats = run_until_signalled(go)
    except (StoreError, ValueError) as exc:
        print(f"lanemon agent: {exc}", file=sys.stderr)
        return 2
    print(f"{name}: {stats.strategy}, {stats.served} seated ({stats.throughput:.2f}/s), "
          f"{stats.doubles} double assignments by this agent, "
          f"{stats.store.get('double_assignments', 0)} in the store", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
