"""Reservation records and their store (awaitable, fenced saves).

A :class:`Reservation` is an immutable record (a ``NamedTuple``): id,
workspace, queue, state, run_id, error, timestamps and attempts.  A change is
a new record (``record._replace(...)``) written with ``await store.save``.

States and transitions
----------------------
``queued`` -> ``running`` | ``cancelled`` | ``failed``;
``running`` -> ``succeeded`` | ``failed`` | ``cancelled``.
Terminal states (``succeeded``, ``failed``, ``cancelled``) are final: the
store refuses to overwrite them (:class:`InvalidTransition`), so a record ends
in exactly one terminal state.

Guarantees of :meth:`RecordStore.save`
--------------------------------------
* It is a coroutine.  Without holds, injected failures or a ``before_write``
  hook it completes without suspending.  A :class:`SaveHold` (``hold(...)``)
  keeps matching saves open until ``release()``; a test or the UI uses it to
  stand inside "the final save".
* **Fencing.**  ``save(record, fence=tokens)`` checks, at the moment of the
  write (after any hold), that every token in ``fence`` is still current in
  its lanes.  If one is not, the write is **refused**: nothing is written,
  ``stale_writes`` is incremented and :class:`StaleWrite` is raised.  A write
  without a fence (e.g. cancelling a queued job, which owns no lane) is not
  fenced.
* The order of checks is: ``before_write`` hook, holds, injected failure
  (``fail_next``), fence, transition, write.  A failed or refused save leaves
  the stored record unchanged.
* ``saved`` events are emitted after each successful write; ``save_held``
  when a save starts waiting on a hold; ``save_failed`` / ``stale_write`` when
  a save raises for an injected failure or a fence; a refused transition
  (``InvalidTransition``, a caller's bug) raises with no event (counted in
  ``invalid_transitions``).
* ``close_holds()`` releases every hold and makes every later hold inert
  (released at creation): from then on no save waits on a hold.  A closing
  scheduler calls it so that its final saves can complete.

Bounded memory
--------------
The store keeps every record that is not terminal (``queued``, ``running``)
and only the last ``keep_finished`` terminal ones (default
:data:`KEEP_FINISHED`; ``None`` keeps them all), in the order they became
terminal: a long session costs no more memory than its live jobs plus that
window.  A forgotten record is gone: ``get`` returns ``None`` for it, and a
later write of its ID is judged as the write of a new record (only
``queued`` is accepted, so a terminal state is still never overwritten by a
run or a final save).  ``forgotten`` counts the records dropped that way.

:class:`RecordStore` is the in-memory engine of the records seam
(:class:`lanemon.store.records.ReservationStore`).

Single event loop; not thread-safe.
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from .events import EventHub

__all__ = [
    "State", "TERMINAL", "Reservation", "RecordStore", "SaveHold",
    "SaveError", "SaveFailed", "StaleWrite", "InvalidTransition", "KEEP_FINISHED",
    "transition_allowed",
]

#: terminal records a :class:`RecordStore` keeps by default (the newest ones)
KEEP_FINISHED = 10_000


class State(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    def __str__(self) -> str:
        return self.value


TERMINAL = frozenset({State.SUCCEEDED, State.FAILED, State.CANCELLED})

_ALLOWED: dict[State | None, frozenset[State]] = {
    None: frozenset({State.QUEUED}),
    State.QUEUED: frozenset({State.RUNNING, State.CANCELLED, State.FAILED}),
    State.RUNNING: frozenset({State.SUCCEEDED, State.FAILED, State.CANCELLED}),
    State.SUCCEEDED: frozenset(),
    State.FAILED: frozenset(),
    State.CANCELLED: frozenset(),
}


def transition_allowed(prev: State | None, new: State) -> bool:
    """May a record in state ``prev`` (``None``: no record yet) be written as
    ``new``?  The one rule every engine applies (see the module docstring)."""
    return new in _ALLOWED[prev]


class Reservation(NamedTuple):
    """One reservation record (immutable).  Built and read by field name; a
    change is a new record (see the module docstring)."""

    id: int
    workspace: str
    queue: str
    state: State
    created_at: float
    updated_at: float
    run_id: str | None = None
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    epoch: int | None = None  # scheduled-lane epoch of the run that wrote it


class SaveError(Exception):
    """Base class of the store's refusals and failures."""


class SaveFailed(SaveError):
    """An (injected or backend) failure: the record was not written."""


class StaleWrite(SaveError):
    """Refused: the writer's lane token is no longer current."""


class InvalidTransition(SaveError):
    """Refused: the state change is not allowed (e.g. overwriting terminal)."""


def _matches(rec: Reservation, id: int | None, workspace: str | None, queue: str | None,
             state: State | None, terminal: bool | None) -> bool:
    if id is not None and rec.id != id:
        return False
    if workspace is not None and rec.workspace != workspace:
        return False
    if queue is not None and rec.queue != queue:
        return False
    if state is not None and rec.state is not State(state):
        return False
    if terminal is not None and (rec.state in TERMINAL) != terminal:
        return False
    return True


class SaveHold:
    """Holds matching saves open until :meth:`release`.

    ``once=True`` (default) holds only the first matching save, then stops
    matching; ``once=False`` holds every matching save until released.
    ``held`` lists the records currently waiting; ``await wait_engaged()``
    returns once a save is waiting on this hold (a gate for tests).
    """

    def __init__(self, on_release: Callable[[SaveHold], None] | None = None, *, id=None,
                 workspace=None, queue=None, state=None, terminal=None, once: bool = True,
                 released: bool = False) -> None:
        self._on_release = on_release
        self.criteria = dict(id=id, workspace=workspace, queue=queue,
                             state=None if state is None else State(state), terminal=terminal)
        self.once = once
        self.matched = 0
        self.held: list[Reservation] = []
        self._open = asyncio.Event()
        self._engaged = asyncio.Event()
        if released:  # inert: holds nothing (see RecordStore.close_holds)
            self._open.set()

    @property
    def released(self) -> bool:
        return self._open.is_set()

    def matches(self, rec: Reservation) -> bool:
        if self._open.is_set() or (self.once and self.matched):
            return False
        return _matches(rec, **self.criteria)

    async def engage(self, rec: Reservation) -> None:
        """Hold the save of ``rec`` here until :meth:`release` (its store calls
        it for a save that ``matches``); ``rec`` is in ``held`` meanwhile."""
        self.matched += 1
        self.held.append(rec)
        self._engaged.set()
        try:
            await self._open.wait()
        finally:
            self.held.remove(rec)

    async def wait_engaged(self) -> Reservation:
        await self._engaged.wait()
        return self.held[0] if self.held else None  # type: ignore[return-value]

    def release(self) -> None:
        """Open the hold: every save waiting on it proceeds, in order."""
        self._open.set()
        if self._on_release is not None:
            self._on_release(self)


class _Fail:
    __slots__ = ("criteria", "error")

    def __init__(self, criteria: dict, error: str) -> None:
        self.criteria = criteria
        self.error = error


class RecordStore:
    """In-memory store of :class:`Reservation` records with awaitable saves.

    ``keep_finished``: how many terminal records to keep (the newest; ``None``
    keeps all); see "Bounded memory" in the module docstring."""

    def __init__(self, *, events: EventHub | None = None,
                 before_write: Callable[[Reservation], Awaitable[None]] | None = None,
                 keep_finished: int | None = KEEP_FINISHED) -> None:
        if keep_finished is not None and (type(keep_finished) is not int or keep_finished < 0):
            raise ValueError(f"keep_finished must be None or an int >= 0, not {keep_finished!r}")
        self._records: dict[int, Reservation] = {}
        self.keep_finished = keep_finished
        self._finished_ids: deque[int] = deque()  # terminal records kept, oldest first
        self._bounded = TERMINAL if keep_finished is not None else frozenset()
        self.forgotten = 0
        self._holds_closed = False
        self._events = events or EventHub()
        self._holds: list[SaveHold] = []
        self._fails: list[_Fail] = []
        self.before_write = before_write
        self.saves = 0
        self.stale_writes = 0
        self.failed_saves = 0
        self.invalid_transitions = 0

    # -- reading ------------------------------------------------------------
    def get(self, id: int) -> Reservation | None:
        """The record ``id`` as stored (``None``: never written, or forgotten)."""
        return self._records.get(id)

    async def load(self, id: int) -> Reservation | None:
        """``get``, awaitable (the store seam); completes without suspending."""
        return self._records.get(id)

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> tuple[Reservation, ...]:
        return tuple(self._records.values())

    def stats(self) -> dict[str, int | None]:
        """Sizes: ``records`` kept, of which ``finished`` (terminal), the
        ``keep_finished`` bound, and ``forgotten`` (terminal records dropped)."""
        return {"records": len(self._records), "finished": len(self._finished_ids),
                "keep_finished": self.keep_finished, "forgotten": self.forgotten}

    def forget_finished(self) -> int:
        """Drop every terminal record kept (a scheduler's ``reset``); the live ones
        (``queued``, ``running``) stay. Returns how many went, counted in ``forgotten``;
        a forgotten record is gone as one that left the window is (see "Bounded memory")."""
        before = len(self._records)
        # a new dict: one keeps the table of the most entries it ever held
        self._records = {rid: rec for rid, rec in self._records.items() if rec.state not in TERMINAL}
        self._finished_ids = deque()
        gone = before - len(self._records)
        self.forgotten += gone
        return gone

    # -- controls -------------------------------------------------------------
    def hold(self, *, id: int | None = None, workspace: str | None = None,
             queue: str | None = None, state: State | str | None = None,
             terminal: bool | None = None, once: bool = True) -> SaveHold:
        """Hold matching saves open until the returned hold is released."""
        h = SaveHold(self._drop_hold, id=id, workspace=workspace, queue=queue, state=state,
                     terminal=terminal, once=once, released=self._holds_closed)
        if not self._holds_closed:
            self._holds.append(h)
        return h

    def holds(self) -> tuple[SaveHold, ...]:
        """The active (not yet released) holds, oldest first."""
        return tuple(self._holds)

    def holding(self, id: int) -> bool:
        """Is a save of record ``id`` waiting on a hold at this instant?"""
        holds = self._holds
        return bool(holds) and any(r.id == id for h in holds for r in h.held)

    def close_holds(self) -> int:
        """Release every hold and make every later ``hold()`` inert (released at
        creation), so that no save waits on a hold any more; returns how many
        holds were released.  Used by a closing scheduler."""
        self._holds_closed = True
        holds = list(self._holds)
        for h in holds:
            h.release()
        return len(holds)

    def _drop_hold(self, h: SaveHold) -> None:
        try:
            self._holds.remove(h)
        except ValueError:
            pass

    def fail_next(self, *, id: int | None = None, workspace: str | None = None,
                  queue: str | None = None, state: State | str | None = None,
                  terminal: bool | None = None, error: str = "injected save failure") -> None:
        """Make the next matching save raise :class:`SaveFailed` (once)."""
        self._fails.append(_Fail(dict(id=id, workspace=workspace, queue=queue,
                                      state=None if state is None else State(state),
                                      terminal=terminal), error))

    def pending_failures(self) -> int:
        return len(self._fails)

    # -- writing --------------------------------------------------------------
    async def save(self, record: Reservation, fence: Iterable[Any] = ()) -> Reservation:
        """Write ``record``; see the module docstring for what is refused."""
        if self._holds or self._fails or self.before_write is not None:
            await self._slow_path(record)
        return self._write(record, fence)

    def has_controls(self) -> bool:
        """Does a hold, an injected failure or a ``before_write`` hook apply to saves now?"""
        return bool(self._holds or self._fails or self.before_write is not None)

    async def _controls(self, record: Reservation) -> None:
        """The test controls, in their order (hook, holds, injected failure), before a write."""
        if self._holds or self._fails or self.before_write is not None:
            await self._slow_path(record)

    def save_nowait(self, record: Reservation, fence: Iterable[Any] = ()) -> bool:
        """Write ``record`` now if no hold, injected failure or hook applies.

        Returns ``False`` (and does nothing) when the save must go through
        ``await save(...)``; otherwise it writes (or raises the same
        refusals as ``save``) and returns ``True``.  The scheduler uses it to
        keep the common path free of coroutine overhead; the semantics are
        exactly those of ``save``.
        """
        if self._holds or self._fails or self.before_write is not None:
            return False
        self._write(record, fence)
        return True

    def _write(self, record: Reservation, fence: Iterable[Any]) -> Reservation:
        for token in fence:
            if not token.lanes.is_current(token):
                self.stale_writes += 1
                self._events.emit("stale_write", record.workspace, record.queue, record.id,
                                  record.state, token.epoch)
                raise StaleWrite(f"record {record.id}: token epoch {token.epoch} of "
                                 f"{token.lanes.name!r} is no longer current")
        rid = record.id  # (each read by name once: three writes per job)
        state = record.state
        records = self._records
        prev = records.get(rid)
        if state not in _ALLOWED[None if prev is None else prev.state]:
            self.invalid_transitions += 1
            raise InvalidTransition(
                f"record {rid}: {prev.state.value if prev else 'new'} -> {state.value}")
        return self._accept(record)

    def _accept(self, record: Reservation) -> Reservation:
        """``record`` was written: keep it (bounded), count it, announce it."""
        rid = record.id
        state = record.state
        records = self._records
        records[rid] = record
        if state in self._bounded:  # a terminal record, and the window is bounded
            done = self._finished_ids
            done.append(rid)
            if len(done) > self.keep_finished:
                del records[done.popleft()]
                self.forgotten += 1
        self.saves += 1
        self._events.emit("saved", record.workspace, record.queue, rid, state)
        return record

    async def _slow_path(self, record: Reservation) -> None:
        if self.before_write is not None:
            await self.before_write(record)
        for h in list(self._holds):
            if h.matches(record):
                self._events.emit("save_held", record.workspace, record.queue, record.id,
                                  record.state)
                await h.engage(record)
        for f in self._fails:
            if _matches(record, **f.criteria):
                self._fails.remove(f)
                self.failed_saves += 1
                self._events.emit("save_failed", record.workspace, record.queue, record.id,
                                  record.state, f.error)
                raise SaveFailed(f.error)
