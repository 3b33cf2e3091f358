"""Three ways to give a counter to a customer, written as the seed writes them.

Each strategy is ``async def strategy(desk, staff, customer) -> Attempt``.
It may only use the ``Desk``: the seed's operations (``find_empty_counter``,
``guide_customer_to_counter``, ``assign_customer_to_counter``,
``claim_counter``, ``finalize_counter_assignment``, ``release_counter_claim``)
and one shared ``lock``. Time passes only inside the desk (``sleep`` is
injected), so the same code runs in virtual time (a simulation that costs no
wall time), in real time at any speed, or under a test that forces an
interleaving by overriding a desk method.

- ``short_lock``: the lock covers only choosing. Two staff members can
  choose the same counter while the first is still guiding: **double
  assignments** (the board counts them).
- ``long_lock``: the lock covers choose + guide + assign. Correct, but every
  assignment waits for the one before it, while other counters sit idle.
- ``claim_finalize``: choose, claim (a stored state with owner, token, TTL
  that takes the counter out of the candidates), guide, finalize. A claim
  refused because another staff member got there first moves on to the
  next candidate. A finalize refused (the claim expired or was replaced)
  gives the customer back (``Attempt.LOST``). On any error -- cancellation
  included -- the claim is released, as in the seed. Correct and parallel.

Results: ``SERVED`` (the customer was seated -- in ``short_lock`` possibly
on an occupied counter, which the board counts), ``NO_COUNTER`` (nothing
was assignable; nothing changed), ``LOST`` (the claim died before
finalize; the customer must be served again).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager as AsyncContextManager
from contextlib import suppress

from lanemon.counters.workload import Customer
from lanemon.store.claims import Claim, ClaimStore, Outcome


class Attempt(str, enum.Enum):
    SERVED = "served"
    NO_COUNTER = "no_counter"
    LOST = "lost"


class Desk:
    """What a strategy may do: the seed's operations over one claim store.

    ``claims`` is any ``lanemon.store.claims.ClaimStore`` (in memory:
    ``MemoryClaims(board)``). ``find_*`` reads the store, then takes
    ``choose_time`` (a query's round trip): the answer may be stale when it
    arrives. Guiding takes the customer's ``guide`` time. Claim, finalize,
    release and assign are single, atomic store operations (awaited; the
    memory engine completes them without suspending). Override any method to
    observe or to force an interleaving; subclasses add accounting (the
    simulation).
    """

    def __init__(
        self,
        claims: ClaimStore,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        ttl: float | None = None,
        choose_time: float = 0.0,
        lock: AsyncContextManager | None = None,
    ) -> None:
        self.claims = claims
        self.sleep = sleep
        self.ttl = claims.default_ttl if ttl is None else ttl
        self.choose_time = choose_time
        self._lock = lock if lock is not None else asyncio.Lock()

    def lock(self, staff: str) -> AsyncContextManager:
        """The one shared lock (``async with desk.lock(staff):``)."""
        return self._lock

    async def find_assignable_counters(self, staff: str) -> list[int]:
        counters = await self.claims.assignable()
        if self.choose_time > 0:
            await self.sleep(self.choose_time)
        return counters

    async def find_empty_counter(self, staff: str) -> int | None:
        counters = await self.find_assignable_counters(staff)
        return counters[0] if counters else None

    async def guide_customer_to_counter(self, staff: str, customer: Customer, counter: int) -> None:
        await self.sleep(customer.guide)

    async def assign_customer_to_counter(self, staff: str, customer: Customer, counter: int) -> bool:
        return await self.claims.assign(counter, customer.name, staff)

    async def claim_counter(self, staff: str, customer: Customer, counter: int) -> Claim | None:
        return await self.claims.claim(counter, staff, customer.name, self.ttl)

    async def finalize_counter_assignment(self, staff: str, customer: Customer, claim: Claim) -> Outcome:
        return await self.claims.finalize(claim.token)

    async def release_counter_claim(self, staff: str, claim: Claim) -> bool:
        return await self.claims.release(claim.token)


async def short_lock(desk: Desk, staff: str, customer: Customer) -> Attempt:
    """Lock only around choosing (the seed's dangerous flow)."""
    async with desk.lock(staff):
        counter = await desk.find_empty_counter(staff)
    if counter is None:
        return Attempt.NO_COUNTER
    await desk.guide_customer_to_counter(staff, customer, counter)
    await desk.assign_customer_to_counter(staff, customer, counter)
    return Attempt.SERVED


async def long_lock(desk: Desk, staff: str, customer: Customer) -> Attempt:
    """Lock around choose + guide + assign: correct, serial."""
    async with desk.lock(staff):
        counter = await desk.find_empty_counter(staff)
        if counter is None:
            return Attempt.NO_COUNTER
        await desk.guide_customer_to_counter(staff, customer, counter)
        await desk.assign_customer_to_counter(staff, customer, counter)
    return Attempt.SERVED


async def claim_finalize(desk: Desk, staff: str, customer: Customer) -> Attempt:
    """Claim, guide, finalize; release the claim on error."""
    for counter in await desk.find_assignable_counters(staff):
        held = await desk.claim_counter(staff, customer, counter)
        if held is not None:
            break
    else:
        return Attempt.NO_COUNTER
    try:
        await desk.guide_customer_to_counter(staff, customer, counter)
        outcome = await desk.finalize_counter_assignment(staff, customer, held)
    except BaseException:
        # the claim goes back; a store failing meanwhile must not hide why we are here
        # (the claim then ends at its TTL)
        with suppress(Exception):
            await desk.release_counter_claim(staff, held)
        raise
    if not outcome:
        # Expired: clear our dead record (a no-op if someone replaced it).
        await desk.release_counter_claim(staff, held)
        return Attempt.LOST
    return Attempt.SERVED


Strategy = Callable[[Desk, str, Customer], Awaitable[Attempt]]

STRATEGIES: dict[str, Strategy] = {
    "short_lock": short_lock,
    "long_lock": long_lock,
    "claim": claim_finalize,
}

LABELS: dict[str, str] = {
    "short_lock": "short lock",
    "long_lock": "long lock",
    "claim": "claim",
}
