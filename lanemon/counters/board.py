"""The counter board: which counter has which customer, and who is assigning it.

A **claim** is a stored state -- "counter 3 is being assigned to customer A
by staff S1, token #17, until t=4.2" -- that takes the counter out of the
candidates. It is not a lock: nothing waits on it; it is data that
``assignable()`` reads.

Guaranteed:

- ``assignable()`` lists, in counter order, exactly the counters with no
  customer and no **live** claim. A claim is live while ``now < expires_at``
  on the board's clock (injected; the board never sleeps).
- ``claim(counter, owner, customer, ttl)`` succeeds only on an assignable
  counter and returns a ``Claim`` whose ``ClaimToken`` carries an epoch that
  is strictly greater than every epoch the board handed out before (a
  fencing token). An expired claim is replaced (its token goes stale).
  Otherwise it returns ``None`` and changes nothing.
- ``finalize(token)`` seats the claim's customer only if ``token`` is the
  counter's current claim and it has not expired: ``Outcome.OK``. An
  expired claim gives ``Outcome.EXPIRED``; a released, replaced or already
  finalized one ``Outcome.STALE``. A refused finalize changes nothing.
- ``release(token)`` removes the claim only if ``token`` is still the
  counter's current claim (live or expired) and returns True; a late or
  repeated release returns False, changes nothing and never raises (it is
  called from ``except`` / ``finally`` blocks).
- ``assign(counter, customer, owner)`` is the seed's unguarded
  ``assignCustomerToCounter``: a blind write, as the lock strategies do it.
  It always seats the customer. When it lands on a counter that already has
  a customer, or that someone else holds a live claim on, it is a **double
  assignment**: counted in ``double_assignments``, announced as a
  ``double_assignment`` event, visible in the view (``customers`` has more
  than one entry, ``conflict`` is True) and returned as False. Never hidden.
  A ``finalize`` that lands on an occupied counter is counted the same way
  (only possible when blind assigns and claims are mixed).
- ``vacate(counter, customer)`` frees the customer's seat when service ends;
  the counter is free again when its last customer leaves.
- ``expire(counter)`` ends the counter's live claim now (the window's
  "expire a claim"); its owner's finalize will then fail.
- Expiry is passive (time just passes); the board notices it lazily at its
  next operation or view and then emits exactly one ``expired`` event per
  claim, stamped with the moment it ran out, and counts it in ``expired``.

Refused: an unknown counter (``IndexError``), a non-positive TTL
(``ValueError``). The board is single-threaded: use it from one event loop.

The board is the state machine of the in-memory claim store
(``lanemon.store.memory_claims.MemoryClaims``); the strategies, the
simulation and the window reach claims only through that seam
(``lanemon.store.claims.ClaimStore``, where the records ``Claim``,
``ClaimToken``, ``Outcome``, ``CounterState`` and ``CounterView`` live).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import replace

from lanemon.counters import events as ev
from lanemon.counters.events import Event, EventHub
from lanemon.store.claims import Claim, ClaimCounts, ClaimToken, CounterState, CounterView, Outcome

__all__ = ["Board", "Claim", "ClaimCounts", "ClaimToken", "CounterState", "CounterView", "Outcome"]


class _Counter:
    __slots__ = ("seated", "claim", "expiry_reported", "view")

    def __init__(self) -> None:
        self.seated: list[tuple[str, str]] = []  # (customer, seated by)
        self.claim: Claim | None = None
        self.expiry_reported = False
        self.view: tuple | None = None           # (claim, seated, CounterView) last built without a live claim


class Board:
    def __init__(
        self,
        counters: int,
        *,
        clock: Callable[[], float],
        default_ttl: float = 1.0,
        events: EventHub | None = None,
    ) -> None:
        if not isinstance(counters, int) or counters < 1:
            raise ValueError(f"a board needs at least one counter, not {counters!r}")
        _check_ttl(default_ttl)
        self._clock = clock
        self.default_ttl = float(default_ttl)
        self.events = events if events is not None else EventHub()
        self._counters = [_Counter() for _ in range(counters)]
        self._epoch = 0
        self._expiries: list[tuple[float, int, int]] = []  # (expires_at, epoch, counter)
        # tallies
        self.double_assignments = 0
        self.claims = 0
        self.claim_refused = 0
        self.finalized = 0
        self.finalize_refused = 0
        self.released = 0
        self.release_refused = 0
        self.assigned = 0
        self.expired = 0

    # -- reading ---------------------------------------------------------
    def __len__(self) -> int:
        return len(self._counters)

    def now(self) -> float:
        return self._clock()

    def _is_live(self, claim: Claim | None, now: float) -> bool:
        """The one place the rule is written: a claim is live while ``now < expires_at``."""
        return claim is not None and now < claim.expires_at

    def assignable(self) -> list[int]:
        now = self._sweep()
        return [
            i
            for i, c in enumerate(self._counters)
            if not c.seated and not self._is_live(c.claim, now)
        ]

    def free_count(self) -> int:
        return len(self.assignable())

    def counts(self) -> ClaimCounts:
        """The running totals (reads only: notices no expiry, emits nothing)."""
        return ClaimCounts(
            claims=self.claims, claim_refused=self.claim_refused, finalized=self.finalized,
            finalize_refused=self.finalize_refused, released=self.released,
            release_refused=self.release_refused, assigned=self.assigned, expired=self.expired,
            double_assignments=self.double_assignments)

    def current_claim(self, counter: int) -> Claim | None:
        """The claim on record (live or expired), or None."""
        return self._get(counter).claim

    def customers(self, counter: int) -> tuple[str, ...]:
        return tuple(name for name, _ in self._get(counter).seated)

    def next_expiry(self) -> float | None:
        """When the earliest live claim runs out, or None."""
        now = self._sweep()
        times = [c.claim.expires_at for c in self._counters if self._is_live(c.claim, now)]
        return min(times) if times else None

    def view(self, counter: int) -> CounterView:
        now = self._sweep()
        return self._view(counter, self._get(counter), now)

    def views(self) -> tuple[CounterView, ...]:
        now = self._sweep()
        return tuple(self._view(i, c, now) for i, c in enumerate(self._counters))

    def _view(self, i: int, c: _Counter, now: float) -> CounterView:
        """The counter's view; the last one again when nothing it shows can have changed
        (the same claim record, still not live, and the same seated customers): a window
        reads all views ~30 times a second and most counters sit still."""
        claim = c.claim
        live = self._is_live(claim, now)
        if not live:
            seated = tuple(c.seated)
            kept = c.view
            if kept is not None and kept[0] is claim and kept[1] == seated:
                return kept[2]
            view = self._build_view(i, c, now, live)
            c.view = (claim, seated, view)
            return view
        return self._build_view(i, c, now, live)

    def _build_view(self, i: int, c: _Counter, now: float, live: bool | None = None) -> CounterView:
        """A new view of counter ``i`` at ``now`` (``live``: whether its claim is live, if known)."""
        claim = c.claim
        if live is None:
            live = self._is_live(claim, now)
        if c.seated:
            state = CounterState.ASSIGNED
            owner = c.seated[-1][1]
            customer = c.seated[0][0]
        elif live:
            state = CounterState.CLAIMED
            owner = claim.owner
            customer = claim.customer
        else:
            state = CounterState.FREE
            owner = None
            customer = None
        return CounterView(
            id=i,
            state=state,
            owner=owner,
            customer=customer,
            customers=tuple(name for name, _ in c.seated),
            ttl_left=(claim.expires_at - now) if live else None,
            epoch=claim.epoch if claim is not None else None,
            conflict=len(c.seated) > 1,
            expired_owner=claim.owner if (claim is not None and not live) else None,
        )

    # -- claims ----------------------------------------------------------
    def claim(
        self, counter: int, owner: str, customer: str | None = None, ttl: float | None = None
    ) -> Claim | None:
        c = self._get(counter)
        ttl = self.default_ttl if ttl is None else ttl
        _check_ttl(ttl)
        now = self._sweep()
        customer = owner if customer is None else customer
        if c.seated or self._is_live(c.claim, now):
            self.claim_refused += 1
            self._emit(now, ev.CLAIM_REFUSED, counter, owner, customer, None,
                       "assigned" if c.seated else f"claimed by {c.claim.owner}")
            return None
        self._epoch += 1
        claim = Claim(ClaimToken(self._epoch, counter), owner, customer, now, now + ttl)
        c.claim = claim
        c.expiry_reported = False
        heapq.heappush(self._expiries, (claim.expires_at, claim.epoch, counter))
        self.claims += 1
        self._emit(now, ev.CLAIMED, counter, owner, customer, claim.epoch, f"ttl {ttl:g}s")
        return claim

    def _holder(self, token: ClaimToken | Claim) -> tuple[ClaimToken, _Counter, Claim | None, float]:
        """``token``'s counter, its claim if the token is that claim's (the fencing rule;
        ``None`` for a stale token: no claim, or another one), and now."""
        token = _token(token)
        c = self._get(token.counter)
        now = self._sweep()
        claim = c.claim
        return token, c, (claim if claim is not None and claim.token == token else None), now

    def finalize(self, token: ClaimToken | Claim) -> Outcome:
        token, c, claim, now = self._holder(token)
        if claim is None:
            self.finalize_refused += 1
            self._emit(now, ev.FINALIZE_REFUSED, token.counter, None, None, token.epoch, "stale token")
            return Outcome.STALE
        if not self._is_live(claim, now):
            self.finalize_refused += 1
            self._emit(now, ev.FINALIZE_REFUSED, token.counter, claim.owner, claim.customer,
                       token.epoch, f"expired {now - claim.expires_at:.3f}s ago")
            return Outcome.EXPIRED
        c.claim = None
        double = bool(c.seated)
        c.seated.append((claim.customer, claim.owner))
        self.finalized += 1
        if double:
            self.double_assignments += 1
            self._emit(now, ev.DOUBLE_ASSIGNMENT, token.counter, claim.owner, claim.customer,
                       token.epoch, "already seated: " + ", ".join(n for n, _ in c.seated[:-1]))
        else:
            self._emit(now, ev.FINALIZED, token.counter, claim.owner, claim.customer, token.epoch)
        return Outcome.OK

    def release(self, token: ClaimToken | Claim) -> bool:
        token, c, claim, now = self._holder(token)
        if claim is None:
            self.release_refused += 1
            self._emit(now, ev.RELEASE_REFUSED, token.counter, None, None, token.epoch, "stale token")
            return False
        c.claim = None
        self.released += 1
        self._emit(now, ev.RELEASED, token.counter, claim.owner, claim.customer, token.epoch)
        return True

    def expire(self, counter: int) -> bool:
        """End the counter's live claim now. False if it has none."""
        c = self._get(counter)
        now = self._sweep()
        if not self._is_live(c.claim, now):
            return False
        c.claim = replace(c.claim, expires_at=now)
        heapq.heappush(self._expiries, (now, c.claim.epoch, counter))
        self._sweep()
        return True

    # -- seats -----------------------------------------------------------
    def assign(self, counter: int, customer: str, owner: str) -> bool:
        """Blind write (the lock strategies). False means: double assignment."""
        c = self._get(counter)
        now = self._sweep()
        claim = c.claim
        reasons = []
        if c.seated:
            reasons.append("already seated: " + ", ".join(n for n, _ in c.seated))
        if self._is_live(claim, now) and claim.owner != owner:
            reasons.append(f"claimed by {claim.owner}")
        c.seated.append((customer, owner))
        self.assigned += 1
        if reasons:
            self.double_assignments += 1
            self._emit(now, ev.DOUBLE_ASSIGNMENT, counter, owner, customer, None, "; ".join(reasons))
            return False
        self._emit(now, ev.ASSIGNED, counter, owner, customer, None)
        return True

    def vacate(self, counter: int, customer: str) -> bool:
        c = self._get(counter)
        now = self._sweep()
        for k, (name, _) in enumerate(c.seated):
            if name == customer:
                del c.seated[k]
                self._emit(now, ev.VACATED, counter, None, customer, None)
                return True
        return False

    # -- internals -------------------------------------------------------
    def _get(self, counter: int) -> _Counter:
        if not isinstance(counter, int) or isinstance(counter, bool) or not 0 <= counter < len(self._counters):
            raise IndexError(f"no counter {counter!r} (board has {len(self._counters)})")
        return self._counters[counter]

    def _sweep(self) -> float:
        """Notice claims that ran out; return the current time."""
        now = self._clock()
        heap = self._expiries
        while heap and heap[0][0] <= now:
            at, epoch, counter = heapq.heappop(heap)
            c = self._counters[counter]
            claim = c.claim
            if claim is not None and claim.epoch == epoch and claim.expires_at == at and not c.expiry_reported:
                c.expiry_reported = True
                self.expired += 1
                self._emit(at, ev.EXPIRED, counter, claim.owner, claim.customer, epoch)
        return now

    def _emit(self, t, kind, counter, owner, customer, epoch, detail="") -> None:
        if self.events.active:
            self.events.publish(Event(time=t, kind=kind, counter=counter, owner=owner,
                                      customer=customer, epoch=epoch, detail=detail))


def _token(token: ClaimToken | Claim) -> ClaimToken:
    return token.token if isinstance(token, Claim) else token


def _check_ttl(ttl: float) -> None:
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not (0 < ttl < float("inf")):
        raise ValueError(f"a TTL must be a positive finite number of seconds, not {ttl!r}")
