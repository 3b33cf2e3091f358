"""Change events: a synchronous subscriber list, cheap enough for 20k+ jobs/s.

Guarantees
----------
* ``subscribe(callback)`` returns an ``unsubscribe()`` function; calling it
  twice is harmless.  Callbacks are called synchronously, in subscription
  order, at the moment of the change, with one :class:`Event` each.
* Events are small immutable tuples (``Event`` is a ``NamedTuple``).  Their
  order is the order in which changes happened on the loop.
* A callback that raises does not break the scheduler or the other
  subscribers: the exception is counted in ``subscriber_errors`` (and the
  last one kept in ``last_error``) and delivery continues (the one policy
  of :mod:`lanemon.events`, which also logs a hub's first failure).
* Subscribing or unsubscribing from inside a callback is allowed; it takes
  effect from the next event.
* With no subscriber, ``emit`` builds nothing (a UI that is closed costs
  nothing).

Not promised
------------
* Callbacks must not await and should be short: a UI should only mark itself
  dirty and repaint from ``snapshot()`` on its own timer (e.g. 30 fps).
* Events are not a log: nothing is buffered for late subscribers.

Event kinds (``Event.kind``)
----------------------------
``saved``          a record write succeeded (``state`` is the written state);
                   ``saved`` with state ``queued`` is a new job: it enters its
                   queue in the same step, so these events are in queue order
``started``        a job claimed its lanes (``detail`` = scheduled epoch)
``placed``         a CPU job's placement was decided (``detail`` = "loop"|...)
``save_held``      a save is being held open by a hold (``detail`` = state)
``save_failed``    a record write raised (``detail`` = error text)
``stale_write``    a write was refused: the writer's token is no longer current
``stop_requested`` a lane's owner was asked to stop (``queue`` = lanes name)
``stale_release``  a release from a non-current token was refused
``revoked``        a lane was forcibly cleared
``cancel``         a cancel was processed (``detail`` = its outcome)
``unsaved``        a job's final record could not be written; it ends failed
                   (``state`` = the record's stored state, ``detail`` = why);
                   its ``finished`` event follows
``available_failed`` the ``project_available`` predicate raised: the job
                   (``job_id``) does not start on that look (``detail`` = error)
``finished``       a job left the scheduler in a terminal state, lanes free
``occupancy``      outside occupancy of a workspace changed (``detail`` = busy)
``adopted``        a job queued elsewhere entered its queue (``Scheduler.adopt``)
``taken_elsewhere`` an adopted job left without running here: its ``running``
                   save was refused (``detail`` = why: run elsewhere, terminal,
                   stale lane, a store error) or it was let go while waiting;
                   no terminal write, no ``finished`` event
``claim_failed``   claiming a job's lanes raised (a store error): it stays
                   waiting (``detail`` = error)
``reset``          ``Scheduler.reset`` ended every live job and forgot the
                   finished ones (``detail`` = the jobs it ended): a view of a
                   job or run from before is stale
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

from lanemon.events import EventHub as _Hub

__all__ = ["Event", "EventHub"]


class Event(NamedTuple):
    """One change (immutable).  Read it by field name (``ev.kind``,
    ``ev.job_id``, ...): the order of the fields is not part of the contract."""

    kind: str
    at: float
    workspace: str | None = None
    queue: str | None = None
    job_id: int | None = None
    state: str | None = None  # a State (a str subclass) for record events
    detail: Any = None


# builds an Event by field name as ``Event(...)`` does, without the keyword
# dict a class call makes (see ``_reservation`` in queues.py)
_event = Event.__new__


class EventHub(_Hub[Event]):
    """The one hub (:class:`lanemon.events.EventHub`: subscribe, ``active``, error
    policy) with the scheduler's builder: ``emit`` stamps an :class:`Event` with
    this hub's clock, and builds nothing when nobody listens."""

    __slots__ = ("_clock",)

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock

    def emit(self, kind: str, workspace: str | None = None, queue: str | None = None,
             job_id: int | None = None, state: str | None = None, detail: Any = None) -> None:
        """Build the :class:`Event` stamped with this hub's clock and deliver it
        exactly as ``publish`` does (same subscribers of the moment, same order,
        same error policy); nothing is built when nobody listens."""
        if self.active:
            ev = _event(Event, kind=kind, at=self._clock(), workspace=workspace, queue=queue,
                        job_id=job_id, state=state, detail=detail)
            # ``publish``'s loop, inlined: ~5 events per job make the extra call
            # a visible share of ``bench sched``
            for callback in self._subs:
                try:
                    callback(ev)
                except Exception as exc:  # the one hub's policy (lanemon.events)
                    self._failed(callback, ev, exc)
