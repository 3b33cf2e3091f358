"""Events of the counter board and simulation, and a synchronous hub.

Guaranteed:

- ``EventHub.subscribe(callback)`` returns an ``unsubscribe()`` function;
  calling it twice is harmless. Callbacks run synchronously, in subscription
  order, **after** the change they describe is complete, so a callback that
  reads a snapshot sees the state the event announces.
- A callback that raises is logged and skipped; it never leaves the board
  half-updated and never stops the simulation. A callback may unsubscribe
  itself (or others) while being called.
- ``Event`` is immutable plain data. ``time`` is simulation seconds (for an
  ``expired`` event: the moment the claim ran out, which may be a little
  earlier than the moment it was noticed).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

log = logging.getLogger(__name__)

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


class EventHub:
    def __init__(self) -> None:
        self._subscribers: list[Callback] = []

    def __bool__(self) -> bool:  # "does anyone listen?" -- lets emitters skip work
        return bool(self._subscribers)

    def subscribe(self, callback: Callback) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            try:
                self._subscribers.remove(callback)
            except ValueError:
                pass

        return unsubscribe

    def emit(self, event: Event) -> None:
        for callback in tuple(self._subscribers):
            try:
                callback(event)
            except Exception:
                log.exception("counter event subscriber %r failed on %r", callback, event)
