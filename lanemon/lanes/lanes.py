"""Project lanes: one owner per workspace, fenced by a monotonic epoch.

A :class:`ProjectLanes` holds at most one *lane* per workspace (a project).
A lane is claimed by an owner and released by that same owner.

Guarantees
----------
* ``claim(workspace, owner)`` returns a fresh :class:`LaneToken` when the
  workspace's lane is free and ``None`` when it is held.  It never waits and
  never raises for a held lane: the caller decides what to do (queue, skip).
* Every token carries an ``epoch`` drawn from a counter that only grows, per
  ``ProjectLanes`` instance.  A later claim always has a larger epoch than any
  earlier one, so the epoch works as a *fencing token*: a writer can be refused
  when its token is no longer the current one (see ``is_current``).
* ``release(token)`` clears the lane **only** when ``token`` is the current
  owner of its workspace and returns ``True``.  A late or repeated release
  (from an old run whose lane was already released, re-claimed or revoked), a
  token issued by another ``ProjectLanes``, or any other object changes
  nothing, returns ``False`` and is counted in ``stale_releases``.  It never
  raises, so it is safe inside ``finally``.  ``release(None)`` (nothing was
  claimed) returns ``False`` and is not counted.
* A lane carries a **stop request**.  ``request_stop(workspace)`` marks the
  current owner's lane; the owner sees it through ``stop_requested(token)``
  and honours it at its next checkpoint.  A stop request belongs to one
  ownership: it is cleared when the lane is released and never leaks into the
  next owner's claim.  ``stop_requested`` is also ``True`` for a token that is
  no longer current (an owner that lost its lane must stop).
* An owner need not poll for a stop: ``add_stop_waiter(token, fut)`` resolves
  the future ``fut`` (``set_result(True)``, unless it is already done) as soon
  as ``stop_requested(token)`` becomes true - a stop request, a revoke or a
  release of that lane - or at once when it already is.
  ``remove_stop_waiter`` forgets it; waiters leave no residue when the lane
  is released.
* Idle workspaces leave no entry behind: ``len(lanes)`` is the number of held
  lanes.

Refused / deliberately unsafe
-----------------------------
* ``revoke(workspace)`` forcibly clears a lane whatever its owner.  It exists
  to *demonstrate* fencing (the old owner's later release and writes are then
  refused); it breaks mutual exclusion on purpose and is counted.

Not thread-safe: all calls are synchronous and are meant to run on one event
loop thread, where each call is atomic.

This is the in-memory engine of the lanes seam
(:class:`lanemon.store.lanes.LaneStore`): its operations never raise
``WouldBlock`` and their awaitable forms (``aclaim``, ``arelease``,
``arevoke``, ``arequest_stop``) complete without suspending.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

__all__ = ["LaneToken", "LaneView", "ProjectLanes"]


class LaneToken(NamedTuple):
    """Proof of ownership of one workspace's lane, at one epoch (immutable)."""

    workspace: str
    owner: str
    epoch: int
    claimed_at: float
    lanes: ProjectLanes

    def is_current(self) -> bool:
        return self.lanes.is_current(self)

    def __repr__(self) -> str:
        return (f"LaneToken({self.lanes.name}:{self.workspace!r}, owner={self.owner!r}, "
                f"epoch={self.epoch})")



# builds a token by field name as ``LaneToken(...)`` does, without the keyword
# dict a class call makes (see ``_reservation`` in queues.py)
_token = LaneToken.__new__


class LaneView(NamedTuple):
    """Plain, immutable view of one held lane (for snapshots). A ``NamedTuple`` (it was a
    frozen dataclass, whose ``__init__`` sets each field through ``object.__setattr__``:
    thousands of new views per snapshot in a 99,999-job burst cost ~half its time);
    built by field name with ``_lane_view`` (``LaneView.__new__``)."""

    lanes: str
    workspace: str
    owner: str
    epoch: int
    claimed_at: float
    stop_requested: bool
    stop_reason: str | None


_lane_view = LaneView.__new__  # by field name, without the class call's keyword dict

#: logged changes ``prepare_views`` takes between two looks at the clock
PREPARE_CHUNK = 64


class _Lane:
    """What a held lane carries beyond its token: made only for a lane that is
    asked to stop or waited on (most lanes never are), dropped with the lane."""

    __slots__ = ("stop", "stop_reason", "waiters")

    def __init__(self) -> None:
        self.stop = False
        self.stop_reason: str | None = None
        self.waiters: list | None = None     # futures woken by a stop (add_stop_waiter)

    def wake(self) -> None:
        waiters, self.waiters = self.waiters, None
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(True)


class ProjectLanes:
    """One lane per workspace; see the module docstring for the contract."""

    def __init__(
        self,
        name: str = "lanes",
        *,
        clock: Callable[[], float] = time.monotonic,
        emit: Callable[..., None] | None = None,
    ) -> None:
        self.name = name
        self._clock = clock
        self._emit = emit
        # workspace -> the current owner's token: a claim and a release cost one
        # dict entry each (``bench sched`` claims two lanes per job)
        self._held: dict[str, LaneToken] = {}
        self._marks: dict[str, _Lane] = {}  # held lanes asked to stop or waited on
        self._lane_views: dict[str, LaneView] = {}  # each held lane's view, once built
        self._epoch = 0
        self._views: tuple[LaneView, ...] | None = None  # cached views() (None: changed)
        self._sorted: list[str] = []         # the held workspaces at the last views(), sorted
        self._shown: set[str] = set()        # the workspaces whose views the cache holds
        self._moves = 0                      # workspaces in or out of it since the last sort
        self._resort = False                 # too many moves for bisect: views() sorts
        self._observed = False               # views() was called: changes are logged ...
        self._changes: list[str] = []        # ... here (workspaces claimed, released, stopped)
        self._lost_changes = False           # the log overflowed (cleared): views() compares
        #: releases refused because the token was not the current owner
        self.stale_releases = 0
        #: lanes cleared by ``revoke`` (deliberate fencing demonstrations)
        self.revoked = 0
        self.claims = 0

    # -- ownership -------------------------------------------------------
    def claim(self, workspace: str, owner: str) -> LaneToken | None:
        """Claim ``workspace`` for ``owner``; ``None`` when already held."""
        held = self._held
        if workspace in held:
            return None
        self._epoch += 1
        self.claims += 1
        token = held[workspace] = _token(LaneToken, workspace=workspace, owner=owner,
                                         epoch=self._epoch, claimed_at=self._clock(), lanes=self)
        self._views = None
        if self._observed:
            changes = self._changes
            changes.append(workspace)
            if len(changes) > 4 * len(held) + 1024:   # nobody looked for long: bounded
                changes.clear()
                self._lost_changes = True
        return token

    def _drop(self, workspace: str) -> None:
        """The lane of ``workspace`` was just removed from ``_held``: its stop
        state and view go with it, its stop waiters are woken."""
        self._views = None
        if self._observed:
            self._changes.append(workspace)
        if self._lane_views:
            self._lane_views.pop(workspace, None)
        if self._marks:
            mark = self._marks.pop(workspace, None)
            if mark is not None and mark.waiters:
                mark.wake()

    def release(self, token: Any) -> bool:
        """Release the lane if ``token`` is its current owner; never raises."""
        try:
            if token is None:
                return False
            if type(token) is LaneToken:
                ws = token.workspace
                current = self._held.get(ws)
                # (the very token this lane handed out, or an equal one of this lane)
                if current is token or (current is not None and token.lanes is self
                                        and current.epoch == token.epoch):
                    held = self._held
                    del held[ws]
                    self._views = None
                    if self._observed:
                        changes = self._changes
                        changes.append(ws)
                        # bounded as in claim; and none kept once no lane is held (the last
                        # release of a burst: thousands of names the next views() need not see)
                        if not held or len(changes) > 4 * len(held) + 1024:
                            changes.clear()
                            self._lost_changes = True
                    if self._lane_views or self._marks:  # (most lanes have neither)
                        self._drop(ws)
                    return True
            self.stale_releases += 1
            if self._emit is not None:
                self._emit("stale_release", getattr(token, "workspace", None),
                           detail=getattr(token, "epoch", None), queue=self.name)
            return False
        except Exception:  # pragma: no cover - must never raise in finally
            self.stale_releases += 1
            return False

    def is_current(self, token: Any) -> bool:
        """True when ``token`` is the lane's current owner."""
        if type(token) is not LaneToken:
            return False
        current = self._held.get(token.workspace)
        # (the very token this lane handed out, or an equal one of this lane)
        return current is token or (current is not None and token.lanes is self
                                    and current.epoch == token.epoch)

    def holder(self, workspace: str) -> LaneToken | None:
        return self._held.get(workspace)

    def is_free(self, workspace: str) -> bool:
        return workspace not in self._held

    # -- stop requests -----------------------------------------------------
    def request_stop(self, workspace: str, reason: str | None = None) -> bool:
        """Ask the current owner of ``workspace`` to stop.

        Returns ``False`` (and records nothing) when the lane is free: there
        is nobody to stop, and a stop must not wait for the next owner.
        """
        if workspace not in self._held:
            return False
        mark = self._mark(workspace)
        mark.stop = True
        mark.stop_reason = reason
        self._lane_views.pop(workspace, None)
        self._views = None
        if self._observed:
            self._changes.append(workspace)
        if mark.waiters:
            mark.wake()
        if self._emit is not None:
            self._emit("stop_requested", workspace, detail=reason, queue=self.name)
        return True

    def _mark(self, workspace: str) -> _Lane:
        """The stop state of ``workspace``'s held lane (made on first need)."""
        mark = self._marks.get(workspace)
        if mark is None:
            mark = self._marks[workspace] = _Lane()
        return mark

    def _stopped(self, workspace: str) -> bool:
        """Was the held lane of ``workspace`` asked to stop?"""
        if not self._marks:
            return False
        mark = self._marks.get(workspace)
        return mark is not None and mark.stop

    def stop_requested(self, token: LaneToken) -> bool:
        """Has the owner holding ``token`` been asked to stop (or lost it)?"""
        current = self._held.get(token.workspace)
        if current is not token and (current is None or current.epoch != token.epoch
                                     or token.lanes is not self):
            return True
        if self._marks:
            return self._stopped(token.workspace)
        return False

    def add_stop_waiter(self, token: LaneToken, fut: Any) -> None:
        """Resolve ``fut`` (an asyncio future) once ``stop_requested(token)`` is true.

        At once when it already is; otherwise on the lane's stop request,
        revoke or release.  No polling, no timer.
        """
        ws = token.workspace
        current = self._held.get(ws)
        if current is None or current.epoch != token.epoch or token.lanes is not self \
                or self._stopped(ws):
            if not fut.done():
                fut.set_result(True)
            return
        mark = self._mark(ws)
        if mark.waiters is None:
            mark.waiters = [fut]
        else:
            mark.waiters.append(fut)

    def remove_stop_waiter(self, token: LaneToken, fut: Any) -> None:
        """Forget a waiter added by ``add_stop_waiter`` (no-op when gone)."""
        current = self._held.get(token.workspace)
        mark = self._marks.get(token.workspace)
        if current is not None and mark is not None and mark.waiters \
                and current.epoch == token.epoch:
            try:
                mark.waiters.remove(fut)
            except ValueError:
                pass

    # -- awaitable forms (the store seam, lanemon.store.lanes): complete at once --
    async def aclaim(self, workspace: str, owner: str) -> LaneToken | None:
        """``claim``, awaitable; completes without suspending."""
        return self.claim(workspace, owner)

    async def arelease(self, token: Any) -> bool:
        """``release``, awaitable; completes without suspending."""
        return self.release(token)

    async def arevoke(self, workspace: str) -> LaneToken | None:
        """``revoke``, awaitable; completes without suspending."""
        return self.revoke(workspace)

    async def arequest_stop(self, workspace: str, reason: str | None = None) -> bool:
        """``request_stop``, awaitable; completes without suspending."""
        return self.request_stop(workspace, reason)

    # -- deliberate unsafety -----------------------------------------------
    def revoke(self, workspace: str) -> LaneToken | None:
        """Forcibly clear ``workspace``'s lane; returns the revoked token."""
        token = self._held.pop(workspace, None)
        if token is None:
            return None
        self._drop(workspace)
        self.revoked += 1
        if self._emit is not None:
            self._emit("revoked", workspace, detail=token.epoch, queue=self.name)
        return token

    # -- observation -------------------------------------------------------
    def compact(self) -> None:
        """Make this lanes' tables anew at their present size, so the memory of entries gone
        goes too: a dict or set keeps the room of the most entries it ever held (a
        9,999-workspace burst's held lanes and views: ~0.3 MB a table, kept after its drain).

        Guaranteed: nothing observable changes (the held lanes, their tokens and epochs, the
        views and the change log since the last ``views()``); it costs a copy of what is
        held now (a scheduler's reset calls it once few or no lanes are held)."""
        self._held = dict(self._held)
        self._marks = dict(self._marks)
        self._lane_views = dict(self._lane_views)
        self._shown = set(self._shown)
        self._sorted = list(self._sorted)
        self._changes = list(self._changes)

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, workspace: object) -> bool:
        return workspace in self._held

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._held))

    @property
    def epoch(self) -> int:
        """The last epoch handed out (0 before the first claim)."""
        return self._epoch

    def views(self) -> tuple[LaneView, ...]:
        """Held lanes, sorted by workspace, as immutable views.

        A lane's view is built once and reused until the lane changes (a stop
        request); the tuple is reused until a lane is claimed, released,
        stopped or revoked.  So an unchanged lane is the *same* object in
        successive calls (a UI can compare views by identity).  Once views were
        asked for, claims, releases and stops log their workspace (a list
        append, no call into Python): the next call looks at those workspaces
        only -- a few are put in or taken out of the sorted order by ``bisect``,
        many make one sort -- and makes the tuple at C speed, instead of a sort
        and a Python loop over every held lane (10,000 in a 99,999-job burst).
        ``prepare_views`` does part of that work ahead, in bounded steps."""
        views = self._views
        if views is None:
            held = self._held
            cache = self._lane_views
            if not self._observed or self._lost_changes:   # first call, or the log overflowed
                if not self._observed:
                    self._observed = True
                    changed = held.keys()
                else:                                       # compare instead
                    for ws in cache.keys() - held.keys():
                        del cache[ws]
                    changed = [ws for ws, t in held.items()
                               if (v := cache.get(ws)) is None or v.epoch != t.epoch]
                self._lost_changes = False
                self._changes.clear()
                self._rebuild(changed)
                self._shown = set(held)
                self._resort = True
            else:
                changed = set(self._changes)
                self._changes.clear()
                self._absorb(changed)
            keys = self._sorted
            if self._resort:
                keys = self._sorted = sorted(held)
                self._resort = False
            self._moves = 0
            views = self._views = tuple(map(cache.__getitem__, keys))
        return views

    def prepare_views(self, budget_s: float = 0.002) -> int:
        """Do part of the next ``views()`` call's work now: the lanes changed since the last
        call get their views built and their place in the sorted order (or the order is
        marked for one sort), taken from the change log in chunks of ``PREPARE_CHUNK``
        workspaces until ``budget_s`` has passed (at least one chunk); returns how many
        logged changes it took.

        Guaranteed: ``views()`` returns exactly what it would have without this call (the
        same lanes, order, fields, and the same objects for lanes unchanged since its last
        call); the work left to it is the changes not taken yet. Does nothing before
        ``views()`` was first called or after the log overflowed (``views()`` compares
        then)."""
        if not self._observed or self._lost_changes:
            return 0
        changes = self._changes
        clock = time.perf_counter
        t0 = clock()
        taken = 0
        while changes:
            chunk = changes[:PREPARE_CHUNK]
            del changes[:PREPARE_CHUNK]
            taken += len(chunk)
            self._absorb(chunk)
            if clock() - t0 >= budget_s:
                break
        return taken

    def _view_of(self, ws: str, t) -> LaneView:
        """The view of held workspace ``ws`` (its token ``t`` and stop mark, if any)."""
        mark = self._marks.get(ws)
        return _lane_view(
            LaneView, lanes=self.name, workspace=ws, owner=t.owner, epoch=t.epoch,
            claimed_at=t.claimed_at, stop_requested=mark is not None and mark.stop,
            stop_reason=None if mark is None else mark.stop_reason)

    def _rebuild(self, changed) -> None:
        """The views of ``changed`` (held workspaces) made anew in the cache."""
        held = self._held
        cache = self._lane_views
        view_of = self._view_of
        for ws in changed:
            cache[ws] = view_of(ws, held[ws])

    def _absorb(self, changed) -> None:
        """Logged workspaces taken into the cache: a held one's view made anew, a free
        one's dropped, and each that came or went put in or taken out of the sorted
        order by ``bisect``, or, past ``len // 32 + 8`` such moves since the last sort,
        the order marked for one sort (``_resort``)."""
        held = self._held
        cache = self._lane_views
        shown = self._shown
        keys = self._sorted
        view_of = self._view_of
        for ws in changed:
            t = held.get(ws)
            if t is None:
                cache.pop(ws, None)
                if ws not in shown:
                    continue
                shown.discard(ws)
                came = False
            else:
                cache[ws] = view_of(ws, t)
                if ws in shown:
                    continue
                shown.add(ws)
                came = True
            if self._resort:
                continue
            self._moves += 1
            if self._moves > len(keys) // 32 + 8:
                self._resort = True
                continue
            i = bisect_left(keys, ws)
            if came:
                keys.insert(i, ws)
            else:
                del keys[i]
