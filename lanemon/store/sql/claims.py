"""The counter claims (:class:`~lanemon.store.claims.ClaimStore`) on a SQL store.

:class:`SqlClaims` sends every operation to the store's ``board`` table
(:mod:`lanemon.store.sql.board`: one transaction each, SQLite or PostgreSQL),
where the fencing, the epochs and the TTLs are decided; it keeps the board
as the last reply showed it for the synchronous reads and emits the events.

Guaranteed, beyond the ``ClaimStore`` contract:

* **One board per store.** ``create(backend, counters=n, ...)`` gives the
  store's board ``n`` counters (``0 .. n-1``). A board that has another size
  is resized only while it is idle -- no customer seated, no live claim --
  else the store refuses with :class:`~lanemon.store.url.StoreError` (one
  line, both sizes), so a session never changes the counters others are
  using. A counter that another session removed meanwhile is refused as
  unknown by the store (``IndexError`` for claim / assign / vacate / expire;
  a stale finalize or release).
* **Counts are the store's**: ``counts()`` are store-wide running totals
  (every session, since the board was made; ``SqlStore.dump()`` shows them
  as ``stats`` ``board_*``).
* **Events** (``lanemon.counters.events.Event``) are emitted by the session
  whose operation made the change, after the store committed it; an expiry is
  announced once store-wide, by the session whose operation noticed it.
  Event times: with a ``clock`` (the simulation's, as a
  ``ClaimStoreFactory`` passes it) an operation's event is stamped
  ``clock()`` when it is emitted and an expiry ``clock()`` minus the store
  seconds between its ``expires_at`` and the operation that noticed it (the
  simulation's timeline); without one, store-clock seconds (``expires_at``
  itself for an expiry).
* **The clock.** ``now()`` is synchronous: the store clock as last known,
  kept as an offset between the store clock (without the skew) and this
  process's ``time.monotonic()`` taken from every reply (SQLite: read in the
  same transaction as the clock, exact to microseconds; PostgreSQL: the
  middle of the round trip, so within half a round trip), plus the backend's
  current ``clock_skew``. Before the first reply it is ``time.time()`` plus
  the skew.
* **Drawing reads** -- ``views()``, ``free_count()``, ``counts()`` -- answer
  from the board of the newest reply applied (on PostgreSQL, where a
  session's operations may overlap, in the store's order -- the clock each
  operation decided at, under the board's lock -- so a reply that arrives
  late never rolls the view back), judged
  at ``now()``. ``await refresh()`` re-reads it (one operation, which also
  notices expiries).
* On SQLite every operation completes without suspending (``completed_now``
  works: the window's "expire a claim" button); ``create`` ensures the board
  at once. On PostgreSQL the first operation (or ``await refresh()``) ensures
  it; until then the views show ``n`` free counters.
* ``advance(seconds)`` (tests) adds to the backend's ``clock_skew``: the
  store clock of the whole session -- its lanes' leases too -- moves.

Refused before anything changes: an unknown counter (``IndexError``), a
non-positive or infinite TTL (``ValueError``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lanemon.counters import events as ev
from lanemon.counters.events import Event
from lanemon.events import EventHub
from lanemon.store.claims import (
    Claim,
    ClaimCounts,
    ClaimToken,
    CounterState,
    CounterView,
    Outcome,
    completed_now,
)
from lanemon.store.sql.board import BoardReply, BoardRow, PgBoard, SqliteBoard
from lanemon.store.url import StoreError

__all__ = ["SqlClaims", "counter_view"]

_COUNT_FIELDS = ("claims", "claim_refused", "finalized", "finalize_refused", "released", "release_refused",
                 "assigned", "expired", "double_assignments")


class SqlClaims:
    """A ``ClaimStore`` kept in a SQL store (see the module docstring)."""

    def __init__(self, board: Any, backend: Any, *, counters: int, default_ttl: float,
                 events: EventHub | None, clock: Callable[[], float] | None = None) -> None:
        if not isinstance(counters, int) or isinstance(counters, bool) or counters < 1:
            raise ValueError(f"a board needs at least one counter, not {counters!r}")
        _check_ttl(default_ttl)
        self._board = board
        self._backend = backend
        self._n = counters
        self.default_ttl = float(default_ttl)
        self.events = events if events is not None else EventHub()
        self._clock = clock
        self._ensured = False
        self._serial = bool(backend.answers_now)  # no two operations of this session overlap
        self._rows: tuple[BoardRow, ...] = tuple(
            BoardRow(counter=i, customers=(), seated_by=(), owner=None, customer=None, epoch=None,
                     claimed_at=None, expires_at=None, expiry_reported=False) for i in range(counters))
        self._stats: dict[str, int] = {}
        self._order = float("-inf")   # the store order (clock without skew) of the reply applied
        self._base: float | None = None  # store clock without skew, minus time.monotonic()
        self._views: tuple[CounterView, ...] | None = None  # kept while no claim is live

    @classmethod
    def create(cls, backend: Any, *, counters: int, default_ttl: float = 1.0,
               events: EventHub | None = None, clock: Callable[[], float] | None = None) -> SqlClaims:
        """The claims of ``backend``'s store with a board of ``counters`` counters
        (SQLite: ensured now; PostgreSQL: at the first operation). ``clock``: the
        timeline events are stamped on (see the module docstring); TTLs are judged
        by the store's clock whatever it is."""
        from lanemon.store.sql.sqlite import SqliteBackend

        board: Any = SqliteBoard(backend) if isinstance(backend, SqliteBackend) else PgBoard(backend)
        store = cls(board, backend, counters=counters, default_ttl=default_ttl, events=events, clock=clock)
        if backend.answers_now:
            completed_now(store.refresh())
        return store

    # -- reading ---------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    def now(self) -> float:
        base = self._base
        if base is None:
            return time.time() + self._backend.clock_skew
        return base + time.monotonic() + self._backend.clock_skew

    def advance(self, seconds: float) -> None:
        """Move the store clock of this session by ``seconds`` (tests)."""
        self._backend.clock_skew += seconds

    def views(self) -> tuple[CounterView, ...]:
        kept = self._views
        if kept is not None:
            return kept
        now = self.now()
        views = tuple(counter_view(row, now) for row in self._rows)
        if not any(row.live(now) for row in self._rows):
            self._views = views
        return views

    def free_count(self) -> int:
        now = self.now()
        return sum(1 for row in self._rows if not row.customers and not row.live(now))

    def counts(self) -> ClaimCounts:
        stats = self._stats
        return ClaimCounts(**{f: stats.get("board_" + f, 0) for f in _COUNT_FIELDS})

    async def refresh(self) -> None:
        """Re-read the board (ensuring it the first time); announces the expiries it notices."""
        if self._ensured:
            self._apply(await self._board.snapshot())
            return
        reply = await self._board.ensure(self._n)
        if reply.outcome == "in_use":
            raise StoreError(f"the store's counter board has {len(reply.board)} counters in use, "
                             f"not {self._n}: it can be resized only when no counter is claimed or occupied")
        self._ensured = True
        self._apply(reply)

    async def assignable(self) -> list[int]:
        reply = await self._op(self._board.snapshot())
        return [r.counter for r in reply.board if not r.customers and not r.live(reply.now)]

    async def next_expiry(self) -> float | None:
        reply = await self._op(self._board.snapshot())
        times = [r.expires_at for r in reply.board if r.live(reply.now)]
        return min(times) if times else None

    # -- claims ------------------------------------------------------------------------
    async def claim(self, counter: int, owner: str, customer: str | None = None,
                    ttl: float | None = None) -> Claim | None:
        self._check(counter)
        ttl = self.default_ttl if ttl is None else ttl
        _check_ttl(ttl)
        customer = owner if customer is None else customer
        reply = await self._op(self._board.claim(counter, owner, customer, float(ttl)), counter)
        before, now = reply.before, reply.now
        if reply.outcome == "refused":
            self._emit(now, ev.CLAIM_REFUSED, counter, owner, customer, None,
                       "assigned" if before.customers else f"claimed by {before.owner}")
            return None
        row = next(r for r in reply.board if r.counter == counter)
        claim = Claim(ClaimToken(row.epoch, counter), owner, customer, row.claimed_at, row.expires_at)
        self._emit(now, ev.CLAIMED, counter, owner, customer, row.epoch, f"ttl {ttl:g}s")
        return claim

    async def finalize(self, token: ClaimToken | Claim) -> Outcome:
        token = _token(token)
        self._check(token.counter)
        reply = await self._op(self._board.finalize(token.counter, token.epoch))
        before, now, counter = reply.before, reply.now, token.counter
        if reply.outcome == "stale":
            self._emit(now, ev.FINALIZE_REFUSED, counter, None, None, token.epoch, "stale token")
            return Outcome.STALE
        if reply.outcome == "expired":
            self._emit(now, ev.FINALIZE_REFUSED, counter, before.owner, before.customer, token.epoch,
                       f"expired {now - before.expires_at:.3f}s ago")
            return Outcome.EXPIRED
        if before.customers:
            self._emit(now, ev.DOUBLE_ASSIGNMENT, counter, before.owner, before.customer, token.epoch,
                       "already seated: " + ", ".join(before.customers))
        else:
            self._emit(now, ev.FINALIZED, counter, before.owner, before.customer, token.epoch)
        return Outcome.OK

    async def release(self, token: ClaimToken | Claim) -> bool:
        token = _token(token)
        self._check(token.counter)
        reply = await self._op(self._board.release(token.counter, token.epoch))
        if reply.outcome != "ok":
            self._emit(reply.now, ev.RELEASE_REFUSED, token.counter, None, None, token.epoch, "stale token")
            return False
        before = reply.before
        self._emit(reply.now, ev.RELEASED, token.counter, before.owner, before.customer, token.epoch)
        return True

    async def expire(self, counter: int) -> bool:
        """End the counter's live claim now (announced as its expiry). False if it has none."""
        self._check(counter)
        reply = await self._op(self._board.expire(counter), counter)
        return reply.outcome == "ok"

    # -- seats ---------------------------------------------------------------------------
    async def assign(self, counter: int, customer: str, owner: str) -> bool:
        """Blind write (the lock strategies). False means: double assignment."""
        self._check(counter)
        reply = await self._op(self._board.assign(counter, customer, owner), counter)
        before, now = reply.before, reply.now
        if reply.outcome == "double":
            reasons = []
            if before.customers:
                reasons.append("already seated: " + ", ".join(before.customers))
            if before.live(now) and before.owner != owner:
                reasons.append(f"claimed by {before.owner}")
            self._emit(now, ev.DOUBLE_ASSIGNMENT, counter, owner, customer, None, "; ".join(reasons))
            return False
        self._emit(now, ev.ASSIGNED, counter, owner, customer, None)
        return True

    async def vacate(self, counter: int, customer: str) -> bool:
        self._check(counter)
        reply = await self._op(self._board.vacate(counter, customer), counter)
        if reply.outcome != "ok":
            return False
        self._emit(reply.now, ev.VACATED, counter, None, customer, None)
        return True

    # -- internals ---------------------------------------------------------------------------
    def _check(self, counter: int) -> None:
        if not isinstance(counter, int) or isinstance(counter, bool) or not 0 <= counter < self._n:
            raise IndexError(f"no counter {counter!r} (board has {self._n})")

    async def _op(self, operation, counter: int | None = None) -> BoardReply:
        """Run a board operation (ensuring the board first), take in its reply, announce
        its expiries; a counter the store no longer has is refused (``IndexError``)."""
        if not self._ensured:
            try:
                await self.refresh()
            except BaseException:
                operation.close()
                raise
        reply = await operation
        self._apply(reply)
        if reply.outcome == "missing":
            raise IndexError(f"no counter {counter!r} in the store's board (it has {len(reply.board)})")
        return reply

    def _apply(self, reply: BoardReply) -> None:
        """Take in the reply's board, counts and clock (unless a newer reply is already
        in: the store's order), then announce the expiries it noticed."""
        order = reply.now - reply.skew
        if self._serial or order >= self._order:
            self._order = order
            self._rows = reply.board
            self._stats = reply.stats
            self._base = order - reply.mono
            self._views = None
        for gone in reply.expired:
            self._emit(reply.now, ev.EXPIRED, gone.counter, gone.owner, gone.customer, gone.epoch,
                       at=gone.expires_at)

    def _emit(self, now: float, kind: str, counter: int, owner: str | None, customer: str | None,
              epoch: int | None, detail: str = "", *, at: float | None = None) -> None:
        """Announce a change the store made at ``now`` (store clock) that happened at ``at``
        (an expiry's ``expires_at``; default ``now``), on the events' timeline."""
        if self.events.active:
            at = now if at is None else at
            clock = self._clock
            t = at if clock is None else clock() - (now - at)
            self.events.publish(Event(time=t, kind=kind, counter=counter, owner=owner,
                                      customer=customer, epoch=epoch, detail=detail))


def counter_view(row: BoardRow, now: float) -> CounterView:
    """The counter's view at ``now`` (the rules of ``lanemon.counters.board``; also the window's
    board follower, ``lanemon.agents.board_follow``)."""
    live = row.live(now)
    if row.customers:
        state, owner, customer = CounterState.ASSIGNED, row.seated_by[-1], row.customers[0]
    elif live:
        state, owner, customer = CounterState.CLAIMED, row.owner, row.customer
    else:
        state, owner, customer = CounterState.FREE, None, None
    return CounterView(
        id=row.counter, state=state, owner=owner, customer=customer, customers=row.customers,
        ttl_left=(row.expires_at - now) if live else None, epoch=row.epoch,
        conflict=len(row.customers) > 1,
        expired_owner=row.owner if (row.epoch is not None and not live) else None)


def _token(token: ClaimToken | Claim) -> ClaimToken:
    return token.token if isinstance(token, Claim) else token


def _check_ttl(ttl: float) -> None:
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not (0 < ttl < float("inf")):
        raise ValueError(f"a TTL must be a positive finite number of seconds, not {ttl!r}")
