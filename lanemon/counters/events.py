"""Events of the counter board and simulation; delivered by the one hub.

Guaranteed:

- ``EventHub`` is :class:`lanemon.events.EventHub` (the hub every domain
  uses): ``subscribe(callback)`` returns an ``unsubscribe()`` function;
  calling it twice is harmless. Callbacks run synchronously, in subscription
  order, **after** the change they describe is complete, so a callback that
  reads a snapshot sees the state the event announces.
- A callback that raises is counted (``subscriber_errors``, ``last_error``;
  a hub's first failure is logged) and skipped; it never leaves the board
  half-updated and never stops the simulation. A callback may unsubscribe
  itself (or others) while being called.
- ``Event`` is immutable plain data with named fields (built by name, read by
  name). ``time`` is simulation seconds (for an ``expired`` event: the moment
  the claim ran out, which may be a little earlier than the moment it was
  noticed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lanemon.events import EventHub

__all__ = [
    "Event", "EventHub", "Callback",
    "CLAIMED", "CLAIM_REFUSED", "FINALIZED", "FINALIZE_REFUSED", "RELEASED", "RELEASE_REFUSED",
    "ASSIGNED", "DOUBLE_ASSIGNMENT", "VACATED", "EXPIRED",
    "ARRIVED", "TURNED_AWAY", "SERVED", "RETRY", "ABANDONED", "RETURNED", "LOCK_ACQUIRED", "FINISHED",
]

# Board events
CLAIMED = "claimed"
CLAIM_REFUSED = "claim_refused"
FINALIZED = "finalized"
FINALIZE_REFUSED = "finalize_refused"
RELEASED = "released"
RELEASE_REFUSED = "release_refused"
ASSIGNED = "assigned"
DOUBLE_ASSIGNMENT = "double_assignment"
VACATED = "vacated"
EXPIRED = "expired"
# Simulation events
ARRIVED = "arrived"
TURNED_AWAY = "turned_away"  # arrived to a full queue: never served
SERVED = "served"
RETRY = "retry"
ABANDONED = "abandoned"
RETURNED = "returned"
LOCK_ACQUIRED = "lock_acquired"
FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class Event:
    time: float
    kind: str
    counter: int | None = None
    owner: str | None = None  # staff member
    customer: str | None = None
    epoch: int | None = None  # claim token epoch
    detail: str = ""


Callback = Callable[[Event], None]
