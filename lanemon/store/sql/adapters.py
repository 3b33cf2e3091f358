"""The seam's lanes and records over a SQL backend (shared by SQLite and PostgreSQL).

:class:`SqlLanes` is a :class:`~lanemon.store.lanes.LaneStore` and
:class:`SqlRecords` a :class:`~lanemon.store.records.ReservationStore`; both
send every operation to the backend (:mod:`lanemon.store.sql.backend`), where
the fencing, the epochs and the leases are enforced, and keep this process's
own view for the synchronous reads.

Guaranteed, beyond the seam's contracts:

* The immediate forms (``claim``, ``release``, ``revoke``, ``request_stop``,
  ``save_nowait``) complete at once on a backend that ``answers_now``
  (SQLite); on a networked one (PostgreSQL) they raise
  :class:`~lanemon.store.lanes.WouldBlock` / return ``False`` having done
  nothing, and the awaitable forms do the round trip.
* The synchronous reads (``is_current``, ``holder``, ``views``,
  ``stop_requested``, ``len``) describe the lanes **this process** holds, as
  of its last operation on them. A lane this process lost to another one (its
  lease ran out while it was paused) still reads as held here until its next
  write or release, which the store refuses (``StaleWrite``, a stale
  release): the store, not this view, decides.
* ``stale_releases``, ``stale_writes`` and the other attributes count this
  process's refusals; the store-wide totals are in ``SqlStore.dump()``.
* A release never raises: a backend failure during it is counted in
  ``release_errors`` and the lane is left to its lease.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from lanemon.lanes.events import EventHub
from lanemon.lanes.lanes import LaneToken, LaneView
from lanemon.lanes.records import InvalidTransition, RecordStore, Reservation, StaleWrite
from lanemon.store.claims import completed_now
from lanemon.store.lanes import WouldBlock
from lanemon.store.sql.backend import Backend, LaneRow, SaveOutcome

__all__ = ["SqlLanes", "SqlRecords"]

log = logging.getLogger(__name__)


class SqlLanes:
    """One named lane store (``scheduled``, a queue's) in a SQL store (see the module docstring)."""

    def __init__(self, backend: Backend, name: str, *, clock: Callable[[], float],
                 emit: Callable[..., None] | None) -> None:
        self.name = name
        self._backend = backend
        self._clock = clock
        self._emit = emit
        self._held: dict[str, LaneToken] = {}       # the lanes this process holds
        self._stops: dict[str, str | None] = {}     # held lanes asked to stop -> reason
        self._waiters: dict[str, list] = {}         # held lanes waited on -> futures
        self._views: tuple[LaneView, ...] | None = None
        self._epoch = 0
        self.stale_releases = 0
        self.revoked = 0
        self.claims = 0
        self.release_errors = 0

    # -- immediate forms ---------------------------------------------------------
    def _now_form(self, operation):
        if not self._backend.answers_now:
            operation.close()
            raise WouldBlock
        return completed_now(operation)

    def claim(self, workspace: str, owner: str) -> LaneToken | None:
        return self._now_form(self.aclaim(workspace, owner))

    def release(self, token: Any) -> bool:
        return self._now_form(self.arelease(token))

    def revoke(self, workspace: str) -> LaneToken | None:
        return self._now_form(self.arevoke(workspace))

    def request_stop(self, workspace: str, reason: str | None = None) -> bool:
        return self._now_form(self.arequest_stop(workspace, reason))

    # -- awaitable forms -----------------------------------------------------------
    async def aclaim(self, workspace: str, owner: str) -> LaneToken | None:
        row = await self._backend.claim_lane(self.name, workspace, owner)
        if row is None:
            return None
        self._forget(workspace)  # (a lane of ours the store expired: that ownership is over)
        token = LaneToken(workspace=workspace, owner=owner, epoch=row.epoch, claimed_at=self._clock(),
                          lanes=self)
        self._held[workspace] = token
        self._epoch = row.epoch
        self.claims += 1
        self._views = None
        return token

    async def arelease(self, token: Any) -> bool:
        if token is None:
            return False
        if type(token) is LaneToken and token.lanes is self:
            try:
                released = await self._backend.release_lane(self.name, token.workspace, token.epoch)
            except Exception as exc:  # never raise from a release (it runs in finally blocks)
                self.release_errors += 1
                log.warning("lane %s:%s release failed: %s", self.name, token.workspace, exc)
                released = False
            if self.is_current(token):
                self._forget(token.workspace)
            if released:
                return True
        self.stale_releases += 1
        if self._emit is not None:
            self._emit("stale_release", getattr(token, "workspace", None),
                       detail=getattr(token, "epoch", None), queue=self.name)
        return False

    async def arevoke(self, workspace: str) -> LaneToken | None:
        row = await self._backend.revoke_lane(self.name, workspace)
        if row is None:
            return None
        token = self._held.get(workspace)
        if token is None or token.epoch != row.epoch:
            token = self._token(row)
        self._forget(workspace)
        self.revoked += 1
        if self._emit is not None:
            self._emit("revoked", workspace, detail=row.epoch, queue=self.name)
        return token

    async def arequest_stop(self, workspace: str, reason: str | None = None) -> bool:
        row = await self._backend.request_stop(self.name, workspace, reason)
        if row is None:
            return False
        mine = self._held.get(workspace)
        if mine is not None and mine.epoch == row.epoch:
            self._stops[workspace] = reason
            self._views = None
            self._wake(workspace)
        if self._emit is not None:
            self._emit("stop_requested", workspace, detail=reason, queue=self.name)
        return True

    def _token(self, row: LaneRow) -> LaneToken:
        return LaneToken(workspace=row.workspace, owner=row.owner, epoch=row.epoch,
                         claimed_at=self._clock(), lanes=self)

    def _forget(self, workspace: str) -> None:
        """This process no longer holds ``workspace``'s lane: drop it, wake its waiters."""
        if self._held.pop(workspace, None) is not None:
            self._views = None
        self._stops.pop(workspace, None)
        self._wake(workspace)

    def _wake(self, workspace: str) -> None:
        for fut in self._waiters.pop(workspace, ()):
            if not fut.done():
                fut.set_result(True)

    # -- reads (this process's own view) ---------------------------------------------
    @property
    def epoch(self) -> int:
        """The last epoch this lane store was handed (0 before its first claim)."""
        return self._epoch

    def is_current(self, token: Any) -> bool:
        if type(token) is not LaneToken or token.lanes is not self:
            return False
        current = self._held.get(token.workspace)
        return current is not None and current.epoch == token.epoch

    def holder(self, workspace: str) -> LaneToken | None:
        return self._held.get(workspace)

    def is_free(self, workspace: str) -> bool:
        return workspace not in self._held

    def stop_requested(self, token: LaneToken) -> bool:
        return not self.is_current(token) or token.workspace in self._stops

    def add_stop_waiter(self, token: LaneToken, fut: Any) -> None:
        if self.stop_requested(token):
            if not fut.done():
                fut.set_result(True)
            return
        self._waiters.setdefault(token.workspace, []).append(fut)

    def remove_stop_waiter(self, token: LaneToken, fut: Any) -> None:
        waiters = self._waiters.get(token.workspace)
        if waiters and fut in waiters:
            waiters.remove(fut)

    def views(self) -> tuple[LaneView, ...]:
        views = self._views
        if views is None:
            views = self._views = tuple(
                LaneView(lanes=self.name, workspace=ws, owner=t.owner, epoch=t.epoch, claimed_at=t.claimed_at,
                         stop_requested=ws in self._stops, stop_reason=self._stops.get(ws))
                for ws, t in sorted(self._held.items()))
        return views

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, workspace: object) -> bool:
        return workspace in self._held

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._held))


class SqlRecords(RecordStore):
    """Reservation records in a SQL store: the memory store's test controls
    (holds, injected failures) and bounded own view, with the write itself
    done -- fenced, checked, counted -- by the backend. ``writer`` is what the
    store records as the job's owner and, for a refused write, in the ledger.

    ``fenced=False``: the fence tokens a save is given are not checked (the
    write goes to the store without a fence): for a scheduler whose lanes are
    in memory (``lanemon agent --lanes local``, the seed's design scaled out),
    whose tokens mean nothing to the store; nor do its epochs: the store keeps the
    job's epoch empty (``None``). The transition rule still holds
    (one job is saved ``running`` once: never run twice), but nothing stops two
    processes running two jobs of one workspace at once."""

    def __init__(self, backend: Backend, *, events: EventHub | None = None,
                 keep_finished: int | None = None, writer: str = "", fenced: bool = True) -> None:
        super().__init__(events=events, keep_finished=keep_finished)
        self._backend = backend
        self._writer = writer or backend.session
        self._fenced = fenced

    async def save(self, record: Reservation, fence: Iterable[Any] = ()) -> Reservation:
        await self._controls(record)
        return await self._store_write(record, fence)

    def save_nowait(self, record: Reservation, fence: Iterable[Any] = ()) -> bool:
        if not self._backend.answers_now or self.has_controls():
            return False
        completed_now(self._store_write(record, fence))
        return True

    async def load(self, id: int) -> Reservation | None:
        return await self._backend.load_job(id)

    async def reserve_ids(self, n: int) -> list[int]:
        """``n`` job ids from the store (a scheduler on a shared store numbers its jobs
        with these: see ``Scheduler``). Refused: ``n`` not an int >= 0 (``ValueError``: a
        negative count would move the shared counter back, and hand out again IDs
        another process reserved)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be an int >= 0, not {n!r}")
        return await self._backend.reserve_ids(n)

    async def _store_write(self, record: Reservation, fence: Iterable[Any]) -> Reservation:
        rows = []
        for token in (fence if self._fenced else ()):
            if type(token) is not LaneToken or not isinstance(token.lanes, SqlLanes):
                # a token of another engine cannot fence this store's write
                self._refused_stale(record, getattr(token, "epoch", None), getattr(token, "lanes", None))
            rows.append((token.lanes.name, token.workspace, token.epoch))
        # an unfenced writer's epochs are its own lanes' (in its memory): the store keeps none,
        # or the dead-owner rule of a store lane of the same number would reap its job
        stored = record if self._fenced or record.epoch is None else record._replace(epoch=None)
        result = await self._backend.save_job(stored, rows, self._writer)
        if result.outcome is SaveOutcome.OK:
            return self._accept(record)
        if result.outcome is SaveOutcome.STALE:
            name, _, epoch = result.fence
            self._refused_stale(record, epoch, name, result.current_epoch)
        self.invalid_transitions += 1
        raise InvalidTransition(f"record {record.id}: {result.current_state} -> {record.state.value}")

    def _refused_stale(self, record: Reservation, epoch: Any, lanes: Any, current: int | None = None) -> None:
        self.stale_writes += 1
        self._events.emit("stale_write", record.workspace, record.queue, record.id, record.state, epoch)
        lane = getattr(lanes, "name", lanes)
        now = "free" if current is None else f"epoch {current}"
        raise StaleWrite(f"record {record.id}: token epoch {epoch} of {lane!r} is no longer current "
                         f"(the lane is {now})")
