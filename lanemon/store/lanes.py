"""The lanes seam: what the scheduler needs from a store of project lanes.

A *lane store* holds at most one lane per workspace, claimed by an owner and
fenced by an epoch.  :class:`LaneStore` states the contract; the scheduler
(:class:`lanemon.lanes.Scheduler`), the UI and the fenced record writes see
lanes only through it.  The first engine is in-memory
(:class:`lanemon.lanes.ProjectLanes`, exposed by :mod:`lanemon.store.memory`);
a database engine (SQLite, PostgreSQL) implements the same Protocol.

Operations and waiting
----------------------
Every operation a database would do - claim, release, revoke, request a stop
- has two forms:

* the **awaitable** form (``aclaim``, ``arelease``, ``arevoke``,
  ``arequest_stop``): always allowed; a networked engine does its I/O there;
* the **now** form (``claim``, ``release``, ``revoke``, ``request_stop``):
  completes at once without suspending, or raises :class:`WouldBlock` and
  changes nothing when the engine cannot answer without waiting.

The in-memory engine completes both forms without suspending (its awaitable
form never yields to the loop), so the scheduler's behaviour is the same
whichever form it uses.  The scheduler uses the now form and falls back to
the awaitable one when the engine raises :class:`WouldBlock`: a release or a
cancel's stop request is then awaited where it happens; a start's claim goes
on in a task, and the job starts when both lanes are claimed if it is still
its workspace's next job and the workspace is available (else the lanes are
given back).  ``Scheduler.request_stop`` (the window's Stop) and a deliberate
``revoke`` stay synchronous: they need the now form.

Reads (``is_current``, ``holder``, ``stop_requested``, ``views``, ``epoch``,
``len``/``in``/``iter``, the counters) are synchronous: they read the engine's
own state as of its last operation (a networked engine keeps it from its own
writes and its change notifications).

Contract (what ``tests/test_store_lanes.py`` checks for every engine)
---------------------------------------------------------------------
* **Exclusive.**  ``claim(ws, owner)`` returns a fresh token when ``ws`` is
  free and ``None`` when it is held; it never waits for a held lane.
* **Epoch from the engine.**  Each token's ``epoch`` comes from a counter the
  store owns; a later claim has a strictly larger epoch than every earlier
  one (of this store), so the epoch is a fencing token.
* **Release by the current owner only.**  ``release(token)`` frees the lane
  and returns ``True`` only for the current owner's token; a stale, repeated,
  foreign or ``None`` token changes nothing, returns ``False`` and never
  raises (stale and foreign ones are counted in ``stale_releases``).
* **Stop requests** belong to one ownership: ``request_stop(ws)`` marks the
  current owner's lane (``False`` when the lane is free),
  ``stop_requested(token)`` is ``True`` once marked or when the token is no
  longer current, and a waiter added by ``add_stop_waiter`` is resolved then.
* **Revoke** forcibly clears a lane (a deliberate fencing demonstration,
  counted in ``revoked``): the old owner's later release and fenced writes are
  refused.
* ``views()`` lists the held lanes by workspace as immutable
  :class:`~lanemon.lanes.lanes.LaneView` objects; an unchanged lane's view is
  the same object in successive calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from lanemon.lanes.lanes import LaneToken, LaneView

__all__ = ["LaneStore", "LanesFactory", "WouldBlock"]


class WouldBlock(Exception):
    """The engine cannot complete this operation without waiting: nothing was
    changed; use its awaitable form."""


@runtime_checkable
class LaneStore(Protocol):
    """One lane per workspace, fenced by an epoch the store owns (see the
    module docstring for the contract)."""

    name: str
    #: releases refused because the token was not the current owner
    stale_releases: int
    #: lanes cleared by ``revoke``
    revoked: int
    #: claims granted
    claims: int

    # -- operations, now form (raise WouldBlock, or complete at once) ----------
    def claim(self, workspace: str, owner: str) -> LaneToken | None: ...
    def release(self, token: Any) -> bool: ...
    def revoke(self, workspace: str) -> LaneToken | None: ...
    def request_stop(self, workspace: str, reason: str | None = None) -> bool: ...

    # -- operations, awaitable form ------------------------------------------------
    async def aclaim(self, workspace: str, owner: str) -> LaneToken | None: ...
    async def arelease(self, token: Any) -> bool: ...
    async def arevoke(self, workspace: str) -> LaneToken | None: ...
    async def arequest_stop(self, workspace: str, reason: str | None = None) -> bool: ...

    # -- reads -----------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The last epoch handed out (0 before the first claim)."""
        ...

    def is_current(self, token: Any) -> bool: ...
    def holder(self, workspace: str) -> LaneToken | None: ...
    def is_free(self, workspace: str) -> bool: ...
    def stop_requested(self, token: LaneToken) -> bool: ...
    def add_stop_waiter(self, token: LaneToken, fut: Any) -> None: ...
    def remove_stop_waiter(self, token: LaneToken, fut: Any) -> None: ...
    def views(self) -> tuple[LaneView, ...]: ...
    def __len__(self) -> int: ...
    def __contains__(self, workspace: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...


class LanesFactory(Protocol):
    """Makes the lane stores of one scheduler (the shared ``scheduled`` lanes
    and one per queue), all of one engine; ``emit`` receives the lane events
    (``stop_requested``, ``stale_release``, ``revoked``) as ``EventHub.emit``
    does."""

    def __call__(self, name: str, *, clock: Callable[[], float],
                 emit: Callable[..., None] | None) -> LaneStore: ...
