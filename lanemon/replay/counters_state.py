"""The counters' state in a recording: one model, used by the recorder to write a change
and by the replay to read it back, so that both always hold the same state.

A recorded counters event carries, besides the event itself, the **delta**: what of
``Simulation.snapshot()`` changed since the previous recorded event, beyond what the model
predicts. The model predicts only what follows from time passing (a live claim's
``ttl_left`` is its expiry minus the clock; ``elapsed``, ``throughput`` and
``wait_p99_of`` follow from the clock and ``served``); everything else that changed is
written out (a counter's row, a staff member's view, a tally, the run state, the lock
holder, the speed). The recorder checks every prediction against the live snapshot and
writes the true value wherever a prediction is off by even one bit, so the state rebuilt
from the deltas is *equal* to the live snapshot -- field by field, floats included
(JSON writes a float as its shortest repr, which reads back as the same float).

A **keyframe** is the delta from an empty model: the whole state.

Delta keys (all optional): ``T`` snapshot time (absent: the event's time), ``V`` the
clock the counter views were taken at (absent: ``T``), ``s`` run state, ``p`` speed,
``h`` ``[lock holder]``, ``c`` changed counter rows ``[id, state, owner, customer,
[customers], epoch, conflict, expired_owner, expires_at]``, ``L`` ``[[id, ttl_left]]``
for a live claim whose expiry could not be stated exactly, ``w`` changed staff
``[name, state, customer, counter, since]`` (``since`` null: ``T``), ``y`` changed
tallies as ``[field index, value, ...]`` (indices into ``TALLY_FIELDS``), ``o`` the
timeline offset (see ``lanemon.replay.format``).
"""

from __future__ import annotations

import dataclasses
import operator
from typing import NamedTuple

from lanemon.counters import events as ev
from lanemon.counters.simulation import SimConfig, Snapshot, StaffView, Tallies
from lanemon.store.claims import CounterState, CounterView

TALLY_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Tallies))
_ELAPSED = TALLY_FIELDS.index("elapsed")
_THROUGHPUT = TALLY_FIELDS.index("throughput")
_SERVED = TALLY_FIELDS.index("served")
_P99_OF = TALLY_FIELDS.index("wait_p99_of")
_DERIVED = (_ELAPSED, _THROUGHPUT, _P99_OF)
_STORED = tuple(i for i in range(len(TALLY_FIELDS)) if i not in _DERIVED)

_tally_values = operator.attrgetter(*TALLY_FIELDS)
_UNSET = object()  # a blank model's value: differs from every real one


class Happened(NamedTuple):
    """A counters event as a recording line holds it (the fields of
    ``lanemon.counters.events.Event`` but ``detail``)."""

    time: float
    kind: str
    counter: int | None
    owner: str | None
    customer: str | None
    epoch: int | None


def _steps(**by_kind: tuple[str, ...]) -> dict[str, tuple[tuple[int, int], ...]]:
    """Tallies each event kind moves: ``"-name"`` counts down."""
    return {kind: tuple((TALLY_FIELDS.index(n.lstrip("-")), -1 if n.startswith("-") else 1) for n in names)
            for kind, names in by_kind.items()}


_TALLY_STEPS = _steps(
    arrived=("arrived", "queued"), turned_away=("arrived", "turned_away"), served=("served", "-with_staff"),
    claimed=("claims",), claim_refused=("claims_refused",), finalize_refused=("finalize_refused",),
    release_refused=("release_refused",), expired=("claims_expired",), double_assignment=("double_assignments",),
    retry=("retries", "-with_staff", "queued"), abandoned=("abandoned",))
_ROW_KINDS = frozenset((ev.CLAIMED, ev.ASSIGNED, ev.DOUBLE_ASSIGNMENT, ev.FINALIZED, ev.VACATED, ev.RELEASED,
                        ev.EXPIRED))


def config_from_dict(data: dict) -> SimConfig:
    """The ``SimConfig`` a recording names (``ValueError``/``TypeError`` if it is not one)."""
    return SimConfig(**data)


class CountersModel:
    """The counters' state at one recorded event (see the module docstring)."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        n = config.counters
        self._time = 0.0
        self._views_now = 0.0
        self._state = _UNSET
        self._speed = _UNSET
        self._holder = _UNSET
        self._rows: list[tuple | None] = [None] * n
        self._expires: list[float | None] = [None] * n
        self._ttl_fixed: dict[int, float] = {}
        self._views: list[CounterView | None] = [None] * n  # built views of counters without a live claim
        self._staff: dict[str, StaffView] = {}
        self._tallies: list = [_UNSET] * len(TALLY_FIELDS)
        self._seen: list = [None] * n  # recorder: the view object each counter's row was taken from

    # -- the replay side -------------------------------------------------
    def apply(self, delta: dict, event: Happened | None) -> None:
        """Move the model to the state after ``event`` (None for a keyframe, whose delta
        always states ``T``): what the event itself implies, then ``delta``."""
        if event is not None:
            self._predict(event)
        self._residual(delta, None if event is None else event.time)

    def _predict(self, e: Happened) -> None:
        """What an event implies for the state (the recorder writes only what differs)."""
        kind = e.kind
        tallies = self._tallies
        steps = _TALLY_STEPS.get(kind)
        if steps:
            for i, step in steps:
                tallies[i] += step
        i = e.counter
        if i is None or kind not in _ROW_KINDS or not 0 <= i < len(self._rows) or self._rows[i] is None:
            return
        state, owner, customer, customers, epoch, conflict, expired_owner = self._rows[i]
        expires = self._expires[i]
        if kind == ev.CLAIMED:
            row = ("claimed", e.owner, e.customer, (), e.epoch, False, None)
            expires = e.time + self.config.ttl
        elif kind in (ev.ASSIGNED, ev.DOUBLE_ASSIGNMENT, ev.FINALIZED):
            customers = customers + (e.customer,)
            if e.epoch is not None:  # a finalize: the claim is off the record
                epoch, expired_owner, expires = None, None, None
            row = ("assigned", e.owner, customers[0], customers, epoch, len(customers) > 1, expired_owner)
        elif kind == ev.VACATED:
            if e.customer in customers:
                k = customers.index(e.customer)
                customers = customers[:k] + customers[k + 1:]
            if customers:
                row = ("assigned", owner, customers[0], customers, epoch, len(customers) > 1, expired_owner)
            elif expires is not None:
                row = ("claimed", None, None, (), epoch, False, expired_owner)  # the residual names the owner
            else:
                row = ("free", None, None, (), epoch, False, expired_owner)
        elif kind == ev.RELEASED:
            expires = None
            row = (state, owner, customer, customers, None, conflict, None) if customers else \
                ("free", None, None, (), None, False, None)
        else:  # EXPIRED
            expires = None
            row = (state, owner, customer, customers, epoch, conflict, e.owner) if customers else \
                ("free", None, None, (), epoch, False, e.owner)
        self._rows[i] = row
        self._expires[i] = expires
        self._views[i] = None

    def _residual(self, delta: dict, event_time: float | None) -> None:
        t = delta["T"] if "T" in delta else event_time
        v = delta.get("V", t)
        self._time = t
        self._views_now = v
        if "s" in delta:
            self._state = delta["s"]
        if "p" in delta:
            self._speed = delta["p"]
        if "h" in delta:
            self._holder = delta["h"][0]
        for row in delta.get("c", ()):
            i = row[0]
            self._rows[i] = (row[1], row[2], row[3], tuple(row[4]), row[5], bool(row[6]), row[7])
            self._expires[i] = row[8]
            self._views[i] = None
        self._ttl_fixed = {i: ttl for i, ttl in delta["L"]} if "L" in delta else {}
        for name, state, customer, counter, since in delta.get("w", ()):
            self._staff[name] = StaffView(name, state, customer, counter, t if since is None else since)
        tallies = self._tallies
        explicit = ()
        if "y" in delta:
            y = delta["y"]
            explicit = y[0::2]
            for k in range(0, len(y), 2):
                tallies[y[k]] = y[k + 1]
        self._predict_tallies(tallies, v, explicit)

    def _predict_tallies(self, tallies: list, views_now: float, explicit) -> None:
        served = tallies[_SERVED]
        if _ELAPSED not in explicit:
            tallies[_ELAPSED] = views_now
        if _THROUGHPUT not in explicit:
            now = tallies[_ELAPSED]
            tallies[_THROUGHPUT] = served / now if now > 0 else 0.0
        if _P99_OF not in explicit:
            tallies[_P99_OF] = min(served, self.config.wait_window)

    def _ttl_left(self, i: int) -> float | None:
        if i in self._ttl_fixed:
            return self._ttl_fixed[i]
        e = self._expires[i]
        return None if e is None else e - self._views_now

    def counter_views(self) -> tuple[CounterView, ...]:
        out = []
        for i, row in enumerate(self._rows):
            view = self._views[i]
            if view is None:
                ttl = self._ttl_left(i)
                view = CounterView(id=i, state=CounterState(row[0]), owner=row[1], customer=row[2],
                                   customers=row[3], ttl_left=ttl, epoch=row[4], conflict=row[5],
                                   expired_owner=row[6])
                if ttl is None and i not in self._ttl_fixed:
                    self._views[i] = view  # nothing in it moves with the clock
            out.append(view)
        return tuple(out)

    def snapshot(self) -> Snapshot:
        """The ``Snapshot`` as the live simulation showed it after this event."""
        config = self.config
        return Snapshot(
            time=self._time, strategy=config.strategy, label=config.label, state=self._state,
            speed=self._speed, counters=self.counter_views(), staff=tuple(self._staff.values()),
            lock_holder=self._holder, tallies=Tallies(*self._tallies), config=config)

    def staff_view(self, name: str) -> StaffView | None:
        return self._staff.get(name)

    # -- the recorder side -----------------------------------------------
    def encode(self, snap: Snapshot, event: ev.Event | None) -> dict:
        """The delta that moves this model to ``snap`` (taken right after ``event``; None
        for a keyframe), applied to the model before it is returned."""
        if event is not None:
            self._predict(event)
        delta: dict = {}
        event_time = None if event is None else event.time
        t = snap.time
        if t != event_time:
            delta["T"] = t
        views = snap.counters
        seen = self._seen
        touched = None if event is None else event.counter
        expires_now = self._expires
        rows: list = []
        for i, view in enumerate(views):
            if view is seen[i] and i != touched and view.ttl_left is None and expires_now[i] is None:
                rows.append(None)  # the board's same view object as last time: unchanged
            else:
                rows.append((view.state.value, view.owner, view.customer, view.customers, view.epoch,
                             view.conflict, view.expired_owner))
                seen[i] = view
        v = self._views_clock(t, views, rows)
        if v != t:
            delta["V"] = v
        if snap.state != self._state:
            delta["s"] = snap.state
        if snap.speed != self._speed:
            delta["p"] = snap.speed
        if snap.lock_holder != self._holder or self._holder is _UNSET:
            delta["h"] = [snap.lock_holder]
        changed, fixed = [], []
        for i, view in enumerate(views):
            row = rows[i]
            if row is None:
                continue
            ttl = view.ttl_left
            expires = self._expires[i] if row == self._rows[i] else None
            if ttl is None:
                expires = None
            elif expires is None or expires - v != ttl:
                expires = None
                candidates = [v + ttl]
                if event is not None and event.kind == ev.CLAIMED and event.counter == i:
                    candidates.insert(0, event.time + self.config.ttl)
                for cand in candidates:
                    if cand - v == ttl:
                        expires = cand
                        break
                else:
                    fixed.append([i, ttl])
            if row != self._rows[i] or expires != self._expires[i]:
                changed.append([i, row[0], row[1], row[2], list(row[3]), row[4], int(row[5]), row[6], expires])
        if changed:
            delta["c"] = changed
        if fixed:
            delta["L"] = fixed
        staff = []
        known = self._staff
        for view in snap.staff:
            was = known.get(view.name)
            if was is not view and was != view:
                staff.append([view.name, view.state, view.customer, view.counter,
                              None if view.since == t else view.since])
        if staff:
            delta["w"] = staff
        actual = _tally_values(snap.tallies)
        current = self._tallies
        y = []
        for i in _STORED:
            if actual[i] != current[i] or current[i] is _UNSET or type(actual[i]) is not type(current[i]):
                y += (i, actual[i])
        predicted = list(current)
        for k in range(0, len(y), 2):
            predicted[y[k]] = y[k + 1]
        self._predict_tallies(predicted, v, ())
        for i in _DERIVED:
            if actual[i] != predicted[i] or type(actual[i]) is not type(predicted[i]):
                y += (i, actual[i])
        if y:
            delta["y"] = y
        self._residual(delta, event_time)
        return delta

    def _views_clock(self, t: float, views, rows) -> float:
        """The clock the counter views were taken at, as far as the live claims tell: ``t``
        when every known expiry minus ``t`` gives the shown ``ttl_left`` (always, on virtual
        time), else the one the first known claim gives, if that fits them all."""
        known = [(self._expires[i], view.ttl_left) for i, view in enumerate(views)
                 if view.ttl_left is not None and self._expires[i] is not None and rows[i] == self._rows[i]]
        if not known:
            return t
        for cand in (t, known[0][0] - known[0][1]):
            if all(e - cand == ttl for e, ttl in known):
                return cand
        return t
