"""The store seam for the counter board's claims: the records and the interface (Qt-free).

A **claim store** keeps, per counter, the customers seated on it and at most
one claim (owner, customer, fencing token, expiry). The strategies
(``lanemon.counters.strategies``), the simulation and the window use a board
only through :class:`ClaimStore`, so a second engine (SQLite, PostgreSQL)
plugs in without touching them. ``lanemon.store.memory_claims.MemoryClaims``
is the first engine (today's in-memory ``Board``).

The contract every engine keeps (``tests/test_store_claims.py`` checks it for
each engine factory):

- **One clock.** Every TTL is judged by the store's clock, ``now()`` (the
  memory engine takes the simulation's clock; a database engine its server's
  time). A claim is live while ``now() < expires_at``. Callers compute
  delays from ``now()``, never from a clock of their own.
- **Exclusive until its TTL.** ``claim`` succeeds only on an assignable
  counter (no customer, no live claim) and then returns a ``Claim`` whose
  token's epoch is strictly greater than every epoch the store handed out
  before; otherwise it returns ``None`` and changes nothing. An expired
  claim can be taken over (its token goes stale).
- **Fenced writes.** The fencing check is inside the engine's write, in the
  same atomic step as the change (one statement / transaction for a
  database): ``finalize(token)`` seats the claim's customer only if
  ``token`` is still the counter's current claim and it is live
  (``Outcome.OK``); an expired claim gives ``Outcome.EXPIRED``, a released,
  replaced or finalized one ``Outcome.STALE``; a refused finalize changes
  nothing and is counted (``counts().finalize_refused``).
- ``release(token)`` removes the claim only while ``token`` is the current
  one (live or expired) and returns True; a late or repeated release returns
  False, changes nothing but the ``release_refused`` count, and never raises
  (it runs in ``except`` / ``finally`` blocks). A database engine whose store
  fails meanwhile (connection lost, busy too long) raises that ``StoreError``
  like any operation; a caller releasing on the way out of an error suppresses
  it so as not to hide that error (``claim_finalize``), and the claim ends at
  its TTL.
- ``expire(counter)`` ends the counter's live claim now (False without one).
  ``assign`` is the blind, unguarded write of the lock strategies: it always
  seats the customer and returns False (counted as a double assignment) when
  the counter already had a customer or someone else's live claim.
  ``vacate`` frees a customer's seat (False if not seated there).
- **Awaitable operations.** Everything a database would do -- the writes
  and the strategies' reads (``assignable``, ``next_expiry``) -- is a
  coroutine. The memory engine completes them without suspending, so
  awaiting it interleaves nothing (the simulation's seeded results are the
  same as with direct calls).
- **Drawing reads are synchronous** and never wait for the store:
  ``views()``, ``free_count()`` and ``counts()`` answer from the state the
  engine knows (the memory engine: exact; a networked engine: as of its last
  operation or change notification). The window reads them ~30 times a
  second.
- **Events.** The engine announces every change on ``events`` (the one hub,
  :mod:`lanemon.events`) as ``lanemon.counters.events.Event`` records, after
  the change is complete; expiry is noticed lazily (at the next operation or
  view) and announced once per claim, stamped with the moment it ran out.

Refused: an unknown counter (``IndexError``), a non-positive TTL
(``ValueError``), both before anything changes.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from lanemon.events import EventHub

__all__ = [
    "Claim", "ClaimCounts", "ClaimStore", "ClaimStoreFactory", "ClaimToken", "CounterState",
    "CounterView", "Outcome", "completed_now",
]


class CounterState(str, enum.Enum):
    FREE = "free"
    CLAIMED = "claimed"
    ASSIGNED = "assigned"


class Outcome(str, enum.Enum):
    """Result of ``finalize``. Truthy only for ``OK``."""

    OK = "ok"
    EXPIRED = "expired"  # still the current claim, but its TTL ran out
    STALE = "stale"  # not the current claim: released, replaced or finalized

    def __bool__(self) -> bool:
        return self is Outcome.OK


@dataclass(frozen=True, slots=True, order=True)
class ClaimToken:
    """A fencing token: the counter and the epoch the store handed out with the claim."""

    epoch: int
    counter: int


@dataclass(frozen=True, slots=True)
class Claim:
    token: ClaimToken
    owner: str
    customer: str
    claimed_at: float  # store clock
    expires_at: float  # store clock: live while now() < expires_at

    @property
    def counter(self) -> int:
        return self.token.counter

    @property
    def epoch(self) -> int:
        return self.token.epoch


@dataclass(frozen=True, slots=True)
class CounterView:
    """One counter at one instant, for drawing.

    ``state``: assigned if it has a customer, else claimed if it has a live
    claim, else free. ``owner``: the live claim's owner (claimed) or the staff
    member who seated the last customer (assigned). ``ttl_left``: seconds
    until the live claim expires (None without one). ``expired_owner``: owner
    of a dead claim still on record (the counter is free for others).
    """

    id: int
    state: CounterState
    owner: str | None
    customer: str | None
    customers: tuple[str, ...]
    ttl_left: float | None
    epoch: int | None
    conflict: bool
    expired_owner: str | None


@dataclass(frozen=True, slots=True)
class ClaimCounts:
    """What a store counted since it was made (each a running total)."""

    claims: int  # claims granted
    claim_refused: int  # claims that found the counter taken
    finalized: int
    finalize_refused: int  # stale or expired tokens refused by the fenced write
    released: int
    release_refused: int  # late or repeated releases
    assigned: int  # blind assigns (double ones included)
    expired: int  # claims whose TTL ran out (announced once each)
    double_assignments: int  # a customer seated on an occupied or foreign-claimed counter


@runtime_checkable
class ClaimStore(Protocol):
    """The counter board's claims, whatever keeps them. See the module docstring."""

    events: EventHub
    default_ttl: float  # seconds, > 0: the TTL of a claim that names none

    def __len__(self) -> int:
        """The number of counters (ids ``0 .. len - 1``)."""

    def now(self) -> float:
        """The store's clock: the one every TTL is judged by."""

    async def claim(self, counter: int, owner: str, customer: str | None = None,
                    ttl: float | None = None) -> Claim | None:
        """A new claim (fresh, strictly larger epoch) on an assignable counter, else None."""

    async def finalize(self, token: ClaimToken | Claim) -> Outcome:
        """Seat the claim's customer if ``token`` is current and live (the fenced write)."""

    async def release(self, token: ClaimToken | Claim) -> bool:
        """Drop the claim if ``token`` is current; False (and nothing else) otherwise."""

    async def expire(self, counter: int) -> bool:
        """End the counter's live claim now; False if it has none."""

    async def assign(self, counter: int, customer: str, owner: str) -> bool:
        """Blind seat; False means it was a double assignment (counted)."""

    async def vacate(self, counter: int, customer: str) -> bool:
        """Free ``customer``'s seat on ``counter``; False if not seated there."""

    async def assignable(self) -> list[int]:
        """Counters with no customer and no live claim, in counter order."""

    async def next_expiry(self) -> float | None:
        """When the earliest live claim runs out (store clock), or None."""

    def views(self) -> tuple[CounterView, ...]:
        """Every counter as last known, in counter order (synchronous: for drawing)."""

    def free_count(self) -> int:
        """How many counters are assignable, as last known (synchronous)."""

    def counts(self) -> ClaimCounts:
        """The running totals, as last known (synchronous)."""


ClaimStoreFactory = Callable[..., ClaimStore]
"""Makes a store: ``factory(counters=, clock=, default_ttl=, events=)``; ``clock`` is
the simulation's clock, which an engine may take as its own (the memory engine does)
or ignore for its server's."""

T = TypeVar("T")


def completed_now(operation: Awaitable[T]) -> T:
    """The result of a store operation that completes without suspending.

    For the few synchronous callers (the window's "expire a claim" button,
    through ``Simulation.expire_claim``). The memory engine always completes
    at once. An operation that would suspend (a networked engine) is closed
    unfinished and ``RuntimeError`` is raised: such a caller must await it.
    """
    coro: Coroutine[Any, Any, T] = operation  # type: ignore[assignment]
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("this claim store suspends: await the operation instead")
