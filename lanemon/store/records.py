"""The records seam: what the scheduler needs from a store of reservations.

A *record store* keeps :class:`~lanemon.lanes.records.Reservation` records
(immutable, named fields) and writes them with fenced, awaitable saves.
:class:`ReservationStore` states the contract; the scheduler and the UI see
records only through it.  The first engine is in-memory
(:class:`lanemon.lanes.RecordStore`, exposed by :mod:`lanemon.store.memory`);
a database engine implements the same Protocol, in the same engine as the
lanes whose tokens fence its writes.

Waiting
-------
``save`` and ``load`` are awaitable: a networked engine does its I/O there.
The in-memory engine completes them without suspending unless a test control
applies (a hold, an injected failure, a ``before_write`` hook).
``save_nowait`` is the synchronous fast path the scheduler tries first: it
writes now (with exactly the semantics of ``save``) and returns ``True``, or
returns ``False`` having done nothing, and the caller awaits ``save``.  An
engine that always does I/O simply returns ``False``.  ``get`` reads the
engine's own view (the records it wrote), synchronously, for views and tests.

Contract (what ``tests/test_store_lanes.py`` checks for every engine)
---------------------------------------------------------------------
* **Fenced write.**  ``save(record, fence=tokens)`` checks, inside the write
  (after any hold), that every lane token in ``fence`` is still current in its
  lane store; if one is not, nothing is written, ``stale_writes`` grows by one
  and :class:`~lanemon.lanes.records.StaleWrite` is raised.  A write without a
  fence is not fenced.
* **Transitions.**  ``queued`` -> ``running`` | ``cancelled`` | ``failed``;
  ``running`` -> a terminal state.  A terminal record is never overwritten
  (:class:`~lanemon.lanes.records.InvalidTransition`, counted in
  ``invalid_transitions``); a new record must be ``queued``.
* **The final save is fenced like any run's write**: a job whose lane was
  revoked cannot write its final state.
* A failed or refused save leaves the stored record unchanged; a successful
  one emits ``saved`` (see :mod:`lanemon.lanes.events`).
* Test controls: ``hold`` keeps matching saves open until released (``holds``,
  ``holding``, ``close_holds``); ``fail_next`` makes the next matching save
  raise :class:`~lanemon.lanes.records.SaveFailed` (``failed_saves``,
  ``pending_failures``).
* Optional: ``reserve_ids(n)`` (awaitable) hands out ``n`` job ids no other
  user of the store was or will be given; an engine shared by processes
  offers it and a scheduler then numbers its jobs with those ids (the memory
  engine has none: its scheduler counts from 1).
* Bounded: ``keep_finished`` terminal records are kept (the newest), every
  non-terminal one always (``stats()``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from lanemon.lanes.events import EventHub
    from lanemon.lanes.records import Reservation, SaveHold, State

__all__ = ["ReservationStore", "RecordsFactory"]


@runtime_checkable
class ReservationStore(Protocol):
    """Reservation records with awaitable, fenced saves (see the module docstring)."""

    keep_finished: int | None
    saves: int
    stale_writes: int
    failed_saves: int
    invalid_transitions: int

    # -- writing ---------------------------------------------------------------------
    async def save(self, record: Reservation, fence: Iterable[Any] = ()) -> Reservation: ...
    def save_nowait(self, record: Reservation, fence: Iterable[Any] = ()) -> bool: ...

    # -- reading ---------------------------------------------------------------------
    async def load(self, id: int) -> Reservation | None: ...
    def get(self, id: int) -> Reservation | None: ...
    def records(self) -> tuple[Reservation, ...]: ...
    def stats(self) -> dict[str, int | None]: ...
    def __len__(self) -> int: ...

    # -- test controls ---------------------------------------------------------------
    def hold(self, *, id: int | None = None, workspace: str | None = None,
             queue: str | None = None, state: State | str | None = None,
             terminal: bool | None = None, once: bool = True) -> SaveHold: ...
    def holds(self) -> tuple[SaveHold, ...]: ...
    def holding(self, id: int) -> bool: ...
    def close_holds(self) -> int: ...
    def fail_next(self, *, id: int | None = None, workspace: str | None = None,
                  queue: str | None = None, state: State | str | None = None,
                  terminal: bool | None = None, error: str = "injected save failure") -> None: ...
    def pending_failures(self) -> int: ...


class RecordsFactory(Protocol):
    """Makes a scheduler's record store; ``events`` receives its ``saved``,
    ``save_held``, ``save_failed`` and ``stale_write`` events."""

    def __call__(self, *, events: EventHub,
                 keep_finished: int | None) -> ReservationStore: ...
