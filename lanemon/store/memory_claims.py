"""The in-memory claim store: today's ``Board`` behind the :class:`ClaimStore` seam.

``MemoryClaims`` implements ``lanemon.store.claims.ClaimStore`` over a
``lanemon.counters.board.Board`` (the single-threaded state machine with its
own synchronous API and tests). Every operation completes without
suspending: awaiting it runs the board's operation at once and interleaves
nothing, so the simulation's seeded results are exactly those of direct
calls. The board's clock (the simulation clock) is the store's one clock;
the fencing check is the board's, inside the same synchronous step as the
write.
"""

from __future__ import annotations

from collections.abc import Callable

from lanemon.counters.board import Board
from lanemon.events import EventHub
from lanemon.store.claims import Claim, ClaimCounts, ClaimToken, CounterView, Outcome

__all__ = ["MemoryClaims"]


class MemoryClaims:
    """A ``ClaimStore`` kept in this process's memory (one event loop only)."""

    __slots__ = ("_board",)

    def __init__(self, board: Board) -> None:
        self._board = board

    @classmethod
    def create(cls, *, counters: int, clock: Callable[[], float], default_ttl: float = 1.0,
               events: EventHub | None = None) -> MemoryClaims:
        """The ``ClaimStoreFactory`` of this engine: a fresh board on ``clock``."""
        return cls(Board(counters, clock=clock, default_ttl=default_ttl, events=events))

    @property
    def events(self) -> EventHub:
        return self._board.events

    @property
    def default_ttl(self) -> float:
        return self._board.default_ttl

    def __len__(self) -> int:
        return len(self._board)

    def now(self) -> float:
        return self._board.now()

    # -- operations (complete without suspending) ------------------------
    async def claim(self, counter: int, owner: str, customer: str | None = None,
                    ttl: float | None = None) -> Claim | None:
        return self._board.claim(counter, owner, customer, ttl)

    async def finalize(self, token: ClaimToken | Claim) -> Outcome:
        return self._board.finalize(token)

    async def release(self, token: ClaimToken | Claim) -> bool:
        return self._board.release(token)

    async def expire(self, counter: int) -> bool:
        return self._board.expire(counter)

    async def assign(self, counter: int, customer: str, owner: str) -> bool:
        return self._board.assign(counter, customer, owner)

    async def vacate(self, counter: int, customer: str) -> bool:
        return self._board.vacate(counter, customer)

    async def assignable(self) -> list[int]:
        return self._board.assignable()

    async def next_expiry(self) -> float | None:
        return self._board.next_expiry()

    # -- drawing reads (exact) -------------------------------------------
    def views(self) -> tuple[CounterView, ...]:
        return self._board.views()

    def free_count(self) -> int:
        return self._board.free_count()

    def counts(self) -> ClaimCounts:
        return self._board.counts()
