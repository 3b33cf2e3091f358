"""The one event hub: a synchronous subscriber list shared by every domain (Qt-free).

Each domain keeps its own named, immutable event type (``lanemon.lanes.events.Event``,
``lanemon.counters.events.Event``); this module only delivers them.

Guarantees
----------
* ``subscribe(callback)`` returns an ``unsubscribe()`` function; calling it
  twice (or after the callback was removed another way) is harmless.
* ``publish(event)`` calls every subscriber synchronously, in subscription
  order, with that one event. Emitters publish **after** the change the event
  describes is complete, so a callback that reads a snapshot sees that state.
* The error policy, one for every domain: a subscriber that raises
  (``Exception``; not ``BaseException`` such as ``KeyboardInterrupt``) is
  counted in ``subscriber_errors``, the exception is kept in ``last_error``,
  the first one of each hub is logged with its traceback (later ones are only
  counted, so a broken subscriber cannot flood the log at 20k events/s), and
  delivery continues with the next subscriber. The emitter never sees it.
* Subscribing or unsubscribing from inside a callback is allowed; it takes
  effect from the next event (the event under way goes to the subscribers of
  the moment it was published).
* "Does anyone listen?" is cheap: ``active`` is a plain attribute (read it,
  never write it), so emitters skip building events nobody receives. A hub
  has no ``__bool__``: ``events or EventHub()`` keeps a hub nobody listens to yet.

Not promised
------------
* Callbacks must not await and should be short (mark dirty, repaint later).
* Events are not a log: nothing is buffered for late subscribers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["EventHub"]

log = logging.getLogger(__name__)

E = TypeVar("E")


class EventHub(Generic[E]):
    """Synchronous fan-out of one domain's events to its subscribers."""

    __slots__ = ("_subs", "active", "subscriber_errors", "last_error")

    def __init__(self) -> None:
        self._subs: tuple[Callable[[E], None], ...] = ()
        self.active = False  # True while at least one subscriber listens
        self.subscriber_errors = 0
        self.last_error: BaseException | None = None

    def subscribe(self, callback: Callable[[E], None]) -> Callable[[], None]:
        """Add ``callback``; returns the function that removes it (idempotent)."""
        self._subs = self._subs + (callback,)
        self.active = True
        removed = False

        def unsubscribe() -> None:
            nonlocal removed
            if removed:
                return
            removed = True
            subs = list(self._subs)
            try:
                subs.remove(callback)
            except ValueError:
                return
            self._subs = tuple(subs)
            self.active = bool(subs)

        return unsubscribe

    def publish(self, event: E) -> None:
        """Deliver ``event`` to every subscriber of this moment (see the error policy)."""
        for callback in self._subs:
            try:
                callback(event)
            except Exception as exc:  # a broken subscriber must not break the emitter
                self._failed(callback, event, exc)

    def _failed(self, callback: Callable[[E], None], event: E, exc: Exception) -> None:
        self.subscriber_errors += 1
        self.last_error = exc
        if self.subscriber_errors == 1:
            log.error("event subscriber %r failed on %r (later failures are only counted)",
                      callback, event, exc_info=exc)
