"""Stepping through a recording: the state after any event, the notable moments, a race told.

``Replay(recording)`` starts at position 0 (before any event). ``seek(k)`` moves to the
state after the first ``k`` events (``0 <= k <= len(replay)``); ``counters_snapshot()`` /
``lanes_snapshot()`` then return what the live views showed right after event ``k - 1``:
a ``Snapshot`` equal, field by field, to the one the recorder took from the live
``snapshot()`` inside that event's callback (``counters_state``, ``lanes_state``; on
virtual time that is the snapshot any subscriber takes there; None when the recording had
no such source at that point). At a lanes event the counters' snapshot is the one of the
last counters event, and vice versa. A seek starts from the keyframe of ``k``'s block and
applies at most that block's changes (250 to a few thousand); stepping forward applies one.

``event(i)`` is the ``i``-th event (0-based) as a ``ReplayEvent``: its source, kind, the
time on the recording's timeline and a sentence in plain words. ``moments()`` lists the
notable ones; ``explain(i)`` tells how a double assignment came about.

Refused: a position or index out of range, or not a whole number (``IndexError`` /
``TypeError``). A line whose content is malformed raises ``RecordingError`` (with its line
number) when it is first decoded; the replay keeps the position it had.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass

from lanemon.replay.counters_state import CountersModel, Happened, config_from_dict
from lanemon.replay.format import Recording, RecordingError
from lanemon.replay.text import (
    LONG_STALL,
    LONG_STALL_MS,
    MOMENT_OF,
    OVERLAPPING_RUNS,
    Overlaps,
    clock_text,
    counters_text,
    lanes_text,
    stall_title,
)

_BLOCKS_KEPT = 4

@dataclass(frozen=True, slots=True)
class ReplayEvent:
    """One recorded event. ``time``: seconds on the recording's timeline; ``source``:
    "counters" or "lanes"; ``kind``: the domain event's kind (``claimed``,
    ``double_assignment``, ``started``, ...); ``text``: what happened, in plain words.
    The rest are the event's own fields where it has them (``counter`` is the board's
    0-based id; the window numbers counters from 1)."""

    index: int
    time: float
    source: str
    kind: str
    text: str
    counter: int | None = None
    staff: str | None = None
    customer: str | None = None
    workspace: str | None = None
    job_id: int | None = None
    source_time: float = 0.0  # the event's own time (simulation seconds, scheduler clock)


@dataclass(frozen=True, slots=True)
class Moment:
    """A notable event: ``index`` of the event (``event(index)``; for a long stall the
    last event before it, or -1), ``position`` to seek to (the state right after it),
    ``time`` on the timeline, ``kind`` (one of ``MOMENT_KINDS``) and a ``title``."""

    index: int
    time: float
    kind: str
    title: str
    position: int = 0


@dataclass(frozen=True, slots=True)
class Explanation:
    """How a double assignment came about: the ``counter`` (0-based id), the two
    ``staff`` (who seated first, who seated second), the story in ``lines`` (time order;
    the last line says why, when both choices were found) and, for each story line but
    that last one, ``indices[i]``: the event whose state first shows ``lines[i]`` (a
    choice is not an event of its own: the first event after it; seek to index + 1).
    The double assignment is the last index."""

    counter: int
    staff: tuple[str, str]
    indices: tuple[int, ...]
    lines: tuple[str, ...]


@dataclass(slots=True)
class _Item:
    source: str
    t: float  # the source's own time
    time: float  # timeline
    kind: str
    fields: list  # the line's items 3..7
    delta: dict
    line: int  # 1-based line number


@dataclass(slots=True)
class _Block:
    k0: int
    states: dict
    items: list


class Replay:
    """See the module docstring."""

    def __init__(self, recording: Recording) -> None:
        self._rec = recording
        self._ks = [k for k, _ in recording.keyframes]
        self._rs = [r for _, r in recording.keyframes]
        self._len = recording.events
        self._blocks: dict[int, _Block] = {}
        self._block_order: list[int] = []
        self._models: dict = {}
        self._at_block: int | None = None
        self._applied = 0
        self._position = 0
        self._moments: list[Moment] | None = None
        self._hb: dict[int, tuple[list[float], list[float]]] = {}  # block -> its heartbeat ticks
        self.seek(0)

    @property
    def recording(self) -> Recording:
        return self._rec

    def __len__(self) -> int:
        return self._len

    @property
    def position(self) -> int:
        return self._position

    # -- blocks ----------------------------------------------------------
    def _block_of(self, k: int) -> int | None:
        """The block whose keyframe is the last one at or before position ``k``."""
        j = bisect.bisect_right(self._ks, k) - 1
        return j if j >= 0 else None

    def _block(self, j: int) -> _Block:
        block = self._blocks.get(j)
        if block is None:
            block = self._decode(j)
            self._blocks[j] = block
            self._block_order.append(j)
            if len(self._block_order) > _BLOCKS_KEPT:
                self._blocks.pop(self._block_order.pop(0), None)
        return block

    def _decode(self, j: int) -> _Block:
        rec = self._rec
        data = rec.block_text(j)
        k0 = self._ks[j]
        end = len(data)
        line_no = rec.block_line(j)
        pos = 0
        states = None
        items: list[_Item] = []
        last_t: dict[str, float] = {}
        offs: dict[str, float] = {}
        loads = json.loads
        while pos < end:
            nl = data.find(b"\n", pos, end)
            if nl < 0:
                nl = end
            raw = data[pos:nl]
            try:
                item = loads(raw)
                tag = item[0]
                if tag == "c" or tag == "l":
                    source = "counters" if tag == "c" else "lanes"
                    if len(item) not in (8, 9):
                        raise ValueError(f"an event line has 8 or 9 items, not {len(item)}")
                    t = item[1]
                    if t is None:
                        t = last_t[source]
                    elif not isinstance(t, (int, float)):
                        raise ValueError(f"an event's time must be a number, not {t!r}")
                    last_t[source] = t
                    delta = item[8] if len(item) == 9 else {}
                    if not isinstance(delta, dict):
                        raise ValueError("an event's change of state must be an object")
                    if source not in offs:
                        raise ValueError(f"a {source} event, but the keyframe before it has no {source} state")
                    if "o" in delta:
                        offs[source] = delta["o"]
                    items.append(_Item(source, t, t + offs[source], item[2], item[3:8], delta, line_no))
                elif tag == "K":
                    if states is not None:
                        raise ValueError("a second keyframe inside one block")
                    states = item[3]
                    if item[1] != k0 or not isinstance(states, dict):
                        raise ValueError("a keyframe that does not match its position")
                    for source, entry in states.items():
                        offs[source] = entry["off"]
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                raise RecordingError(rec.path, line_no, f"malformed line ({exc})") from None
            pos = nl + 1
            line_no += 1
        expected = (self._ks[j + 1] if j + 1 < len(self._ks) else self._len) - k0
        if len(items) != expected:
            raise RecordingError(rec.path, rec.block_line(j),
                                 f"the keyframe says {k0} events came before it, but {len(items)} events "
                                 f"follow it where {expected} should")
        return _Block(k0, states or {}, items)

    def _load_keyframe(self, j: int) -> None:
        block = self._block(j)
        models = {}
        for source, entry in block.states.items():
            try:
                if source == "counters":
                    model = CountersModel(config_from_dict(entry["config"]))
                elif source == "lanes":
                    from lanemon.replay.lanes_state import LanesModel

                    model = LanesModel()
                else:
                    continue  # a source this lanemon does not know: skipped
                model.apply(entry["state"], None)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                raise RecordingError(self._rec.path, self._rec.block_line(j),
                                     f"malformed keyframe ({exc})") from None
            models[source] = model
        self._models = models
        self._at_block = j
        self._applied = 0

    def _apply(self, item: _Item) -> None:
        model = self._models.get(item.source)
        if model is None:
            return
        try:
            if item.source == "counters":
                counter, owner, customer, epoch, _detail = item.fields
                model.apply(item.delta, Happened(item.t, item.kind, counter, owner, customer, epoch))
            else:
                model.apply(item.delta, item)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise RecordingError(self._rec.path, item.line, f"malformed change of state ({exc})") from None

    # -- moving ----------------------------------------------------------
    def seek(self, k: int) -> None:
        """Show the state after the first ``k`` events (0: before any)."""
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError(f"a replay position is a whole number, not {k!r}")
        if not 0 <= k <= self._len:
            raise IndexError(f"position {k} is outside the recording (0..{self._len})")
        before = self._position
        try:
            self._move(k)
        except RecordingError:
            if before != k:
                self._at_block = None
                self._move(before)  # decoded before: the state shown stays that of ``position``
            raise

    def _move(self, k: int) -> None:
        j = self._block_of(k)
        if j is None:
            self._models, self._at_block, self._applied, self._position = {}, None, 0, k
            return
        block = self._block(j)
        want = k - block.k0
        if self._at_block != j or self._applied > want:
            self._load_keyframe(j)
        items = block.items
        for n in range(self._applied, want):
            self._apply(items[n])
            self._applied = n + 1
        self._position = k

    def step(self, n: int = 1) -> int:
        """Move ``n`` events forward (back if negative), within the recording; the new position."""
        self.seek(max(0, min(self._len, self._position + n)))
        return self._position

    # -- reading ---------------------------------------------------------
    def counters_snapshot(self):
        """``lanemon.counters.simulation.Snapshot`` at this position, or None."""
        model = self._models.get("counters")
        return None if model is None else model.snapshot()

    def lanes_snapshot(self):
        """``lanemon.lanes.snapshot.Snapshot`` at this position, or None."""
        model = self._models.get("lanes")
        return None if model is None else model.snapshot()

    def _item(self, i: int) -> _Item:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"an event index is a whole number, not {i!r}")
        if not 0 <= i < self._len:
            raise IndexError(f"event {i} is outside the recording (0..{self._len - 1})")
        j = bisect.bisect_right(self._ks, i) - 1
        block = self._block(j)
        return block.items[i - block.k0]

    def event(self, i: int) -> ReplayEvent:
        item = self._item(i)
        f = item.fields
        if item.source == "counters":
            counter, owner, customer, _epoch, _detail = f
            return ReplayEvent(i, item.time, "counters", item.kind, counters_text(item.kind, f),
                               counter=counter, staff=owner, customer=customer, source_time=item.t)
        workspace, _queue, job_id, _state, _detail = f
        return ReplayEvent(i, item.time, "lanes", item.kind, lanes_text(item.kind, f),
                           workspace=workspace, job_id=job_id, source_time=item.t)

    def time_at(self, k: int) -> float:
        """The timeline time of position ``k``: that of event ``k - 1`` (for 0: the first
        keyframe's, i.e. when recording began)."""
        if k == 0 or self._len == 0:
            if not 0 <= k <= self._len:
                raise IndexError(f"position {k} is outside the recording (0..{self._len})")
            return self._keyframe_times()[0] if self._ks else 0.0
        return self._item(k - 1).time if k <= self._len else self._item(k).time

    def duration(self) -> float:
        """The timeline time of the last event (0.0 without events)."""
        return self.time_at(self._len)

    def _keyframe_times(self) -> list[float]:
        return self._rs

    def position_at(self, t: float) -> int:
        """The position whose state was shown at timeline time ``t``: the number of events
        at or before ``t``."""
        if self._len == 0:
            return 0
        times = self._keyframe_times()
        j = max(0, bisect.bisect_right(times, t) - 1)
        # keyframe times are recording times; an event's timeline time may differ by the
        # rounding of its offset: look one block back as well
        j = max(0, j - 1)
        while j < len(self._ks):
            block = self._block(j)
            items = block.items
            if items and items[-1].time > t:
                return block.k0 + bisect.bisect_right([it.time for it in items], t)
            j += 1
        return self._len

    # -- heartbeat -------------------------------------------------------
    def _block_heartbeat(self, j: int) -> tuple[list[float], list[float]]:
        got = self._hb.get(j)
        if got is None:
            times: list[float] = []
            lags: list[float] = []
            data = self._rec.block_text(j)
            line_no = self._rec.block_line(j)
            for raw in data.split(b"\n"):
                if raw.startswith(b'["h",'):
                    try:
                        _, t0, dts, values = json.loads(raw)
                        times.extend(t0 + dt / 1000 for dt in dts)
                        lags.extend(values)
                    except (ValueError, TypeError) as exc:
                        raise RecordingError(self._rec.path, line_no, f"malformed heartbeat line ({exc})") from None
                line_no += 1
            if len(self._hb) >= 64:
                self._hb.pop(next(iter(self._hb)))
            got = self._hb[j] = (times, lags)
        return got

    def heartbeat(self, t0: float, t1: float) -> tuple[list[float], list[float]]:
        """The heartbeat ticks with ``t0 <= time <= t1`` (timeline seconds): their times and
        how late each was (ms), two lists in time order. Reads only the blocks around that
        span (a tick's line may follow the keyframe after it by up to half a second)."""
        rs = self._rs
        if not rs or t1 < t0:
            return [], []
        j0 = max(0, bisect.bisect_right(rs, t0) - 2)
        j1 = min(len(rs) - 1, bisect.bisect_right(rs, t1))
        ticks = []
        for j in range(j0, j1 + 1):
            times, lags = self._block_heartbeat(j)
            ticks += [(t, lag) for t, lag in zip(times, lags, strict=True) if t0 <= t <= t1]
        ticks.sort(key=lambda tick: tick[0])
        return [t for t, _ in ticks], [lag for _, lag in ticks]

    # -- moments ---------------------------------------------------------
    def moments(self) -> list[Moment]:
        """The notable moments in time order: double assignments, refused writes (a
        finalize with a dead claim, a lanes write with a stale token), stale releases,
        overlapping runs (a lanes job started while another job of its workspace ran)
        and long stalls (a heartbeat tick at least ``LONG_STALL_MS`` late)."""
        if self._moments is None:
            self._moments = self._find_moments()
        return list(self._moments)

    def _find_moments(self) -> list[Moment]:
        listed = self._rec.moments
        if listed is not None:  # the recorder's list (a closed recording's index)
            found = [Moment(int(i), float(t), str(kind), str(title), int(pos)) for i, pos, t, kind, title in listed]
        else:  # a recording without an index: every block is read
            found = []
            overlaps = Overlaps()
            for j in range(len(self._ks)):
                block = self._block(j)
                for n, item in enumerate(block.items):
                    i = block.k0 + n
                    moment = MOMENT_OF.get((item.source, item.kind))
                    if moment is not None:
                        found.append(Moment(i, item.time, moment, self.event(i).text, i + 1))
                    elif item.source == "lanes" and item.kind in ("started", "finished"):
                        ws, _queue, job, _state, _detail = item.fields
                        if item.kind == "finished":
                            overlaps.finished(ws, job)
                            continue
                        title = overlaps.started(ws, job)
                        if title is not None:
                            found.append(Moment(i, item.time, OVERLAPPING_RUNS, title, i + 1))
                times, lags = self._block_heartbeat(j)
                for t, lag in zip(times, lags, strict=True):
                    if lag >= LONG_STALL_MS:
                        pos = self.position_at(t)
                        found.append(Moment(pos - 1, t, LONG_STALL, stall_title(lag), pos))
        found.sort(key=lambda mo: (mo.time, mo.position))
        return found

    # -- a race told -----------------------------------------------------
    def explain(self, index: int) -> Explanation | None:
        """For a double assignment at event ``index``: who seated a customer at that
        counter first, who second, when each of them chose the counter, and that the
        second chose it before the first had seated anyone there (or while the counter
        was claimed). None for any other event."""
        item = self._item(index)
        if item.source != "counters" or item.kind != "double_assignment":
            return None
        counter, second, customer, _epoch, _detail = item.fields
        # walk back over this counter's story: who seated the customer already there,
        # and when each of the two chose the counter (their staff view turned to it)
        seated_by: tuple[int, _Item] | None = None
        chose: dict[str, tuple[int, float]] = {}
        i = index - 1
        limit = max(0, index - 20_000)
        while i >= limit:
            it = self._item(i)
            if it.source == "counters":
                if seated_by is None and it.fields[0] == counter and it.kind in ("assigned", "double_assignment",
                                                                                 "finalized"):
                    seated_by = (i, it)
                for row in it.delta.get("w", ()):
                    name, state, _cust, ctr, since = row
                    if ctr == counter and state == "guiding" and name not in chose and (
                            name == second or (seated_by is not None and name == seated_by[1].fields[1])):
                        chose[name] = (i, it.t if since is None else since)
            if seated_by is not None and seated_by[1].fields[1] in chose and second in chose:
                break
            i -= 1
        n = counter + 1
        first = seated_by[1].fields[1] if seated_by is not None else None
        steps: list[tuple[float, int, str]] = []
        if first is not None and first in chose:
            steps.append((chose[first][1], chose[first][0], f"{first} chose counter {n}"))
        if second in chose:
            note = f" ({first} had not seated anyone there yet)" if (
                first is not None and seated_by is not None and chose[second][1] < seated_by[1].t) else ""
            steps.append((chose[second][1], chose[second][0], f"{second} chose counter {n}{note}"))
        if seated_by is not None:
            steps.append((seated_by[1].t, seated_by[0],
                          f"{first} seated {seated_by[1].fields[2]} at counter {n}"))
        steps.append((item.t, index, f"{second} seated {customer} at counter {n} too: a double assignment"))
        steps.sort(key=lambda s: (s[0], s[1]))
        lines = tuple(f"{clock_text(t)} {text}" for t, _, text in steps)
        if first is not None and second in chose and first in chose:
            lines += (f"Both chose counter {n} before either had seated a customer there: choosing and "
                      "seating are two steps, and nothing kept the counter for the one who chose it first "
                      "(a claim would have).",)
        indices = tuple(i for _, i, _ in steps)
        return Explanation(counter, (first or "?", second), indices, lines)
