"""The Recorder: what the lanes and counters views see, written as it happens.

``Recorder(path, sources_info=...)`` creates (or replaces) ``path`` and writes the header
at once. ``attach_counters(sim)`` / ``attach_lanes(scheduler)`` subscribe to a source:
a keyframe (its whole state, and for the counters the simulation's seed and parameters)
is written first, then every event with the change of state it came with (see
``lanemon.replay.format``). Attaching a source again (a new simulation: a reset) replaces
the previous one from that point on. ``heartbeat(t, lag_ms)`` adds one tick.

Guaranteed:

- Each event's line holds what the source's ``snapshot()`` shows right after the event
  (taken inside the event callback), so a ``Replay`` rebuilds exactly that state.
- Lines reach the file from a writer thread every ``FLUSH_EVERY`` (0.25) seconds, never
  from the caller's loop (the loop only encodes the line: ~55 us of CPU per counters
  event): a crash (even SIGKILL) loses at most the last quarter second of events and
  the last 0.75 s of heartbeat ticks (they go out in half-second batches). The file is
  never left without its header.
- ``close()`` is the only way a recording ends well (explicit; idempotent): it
  unsubscribes, writes what is pending, the closing line and the index (see
  ``lanemon.replay.format``). Events after ``close`` are not recorded.
- A write that fails (disk full, file removed) stops the recording: ``error`` holds the
  sentence that says why (``lanemon.files.cannot_write``); what was written stays readable.

Refused: ``heartbeat`` with a non-finite time or lag (``ValueError``); a ``path`` that
cannot be created (``OSError``, from the constructor).
"""

from __future__ import annotations

import collections
import json
import math
import re
import threading
import time
import zlib
from collections.abc import Callable

from lanemon.files import cannot_write
from lanemon.replay.counters_state import CountersModel
from lanemon.replay.format import (
    FLUSH_EVERY,
    FOOTER,
    FOOTER_BYTES,
    FORMAT,
    HEARTBEAT_BATCH,
    KEYFRAME_EVERY,
    KEYFRAME_RATIO,
    VERSION,
)
from lanemon.replay.text import (
    LONG_STALL,
    LONG_STALL_MS,
    MOMENT_OF,
    OVERLAPPING_RUNS,
    Overlaps,
    counters_text,
    lanes_text,
    stall_title,
)

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode
_KEYFRAME_HEAD = re.compile(r'\["K",(\d+),([^,]+),')
OFFSET_STEP = 0.001  # a source's timeline offset is written again when it drifts this far


class Recorder:
    """See the module docstring. ``clock``: the recording's timeline (seconds; default
    ``time.monotonic``, the clock of asyncio's loops); ``heartbeat`` times are on it.
    A keyframe follows once ``keyframe_every`` events *and* ``keyframe_ratio`` times the
    last keyframe's size in event lines were written: a big state (a lanes scheduler with
    its history and recent jobs) is repeated less often than a small one."""

    def __init__(self, path: str, *, sources_info: dict, clock: Callable[[], float] = time.monotonic,
                 compress: bool = True, keyframe_every: int = KEYFRAME_EVERY,
                 keyframe_ratio: float = KEYFRAME_RATIO) -> None:
        self.path = path
        self.events_written = 0
        self.error: str | None = None
        self._clock = clock
        self._t0 = clock()
        self._keyframe_every = keyframe_every
        self._keyframe_ratio = keyframe_ratio
        self._since_keyframe = 0
        self._bytes_since_keyframe = 0
        self._keyframe_bytes = 0
        self._pending: collections.deque[str] = collections.deque()  # appended here, taken by the writer
        self._lock = threading.Lock()  # the file and the heartbeat batch
        self._closed = False
        self._sources: dict[str, dict] = {}  # "counters"/"lanes" -> its snapshot, model, offset, last time
        self._hb_t0: float | None = None
        self._hb_dt: list[float] = []
        self._hb_lag: list[float] = []
        self._moments: list[list] = []  # [index, position, time, kind, title] (the index member)
        self._overlaps = Overlaps()
        # gzip: one member for the header, one per block (see ``lanemon.replay.format``),
        # flushed to a byte boundary at every write (Z_SYNC_FLUSH): a reader decodes
        # everything written so far, even after a crash
        self._compress = compress
        self._zip = None
        self._blocks: list[list] = []  # [k, member offset, r, line number]
        self._offset = 0  # bytes written
        self._lines = 0  # lines written
        self._file = open(path, "wb")
        started = time.time()
        header = {"format": FORMAT, "version": VERSION,
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                  "started_unix": round(started, 3), "sources": sources_info}
        try:
            self._write_lines([_dumps(header)])
            self._keyframe()  # every line belongs to a block: the first has no source yet
            self._write_lines(list(self._take_pending()))
        except BaseException:
            self._file.close()
            raise
        self._stop = threading.Event()
        self._writer = threading.Thread(target=self._write_loop, name="lanemon-recorder", daemon=True)
        self._writer.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def _now(self) -> float:
        return self._clock() - self._t0

    # -- sources ---------------------------------------------------------
    def attach_counters(self, sim) -> None:
        """Record ``sim`` (a ``lanemon.counters.simulation.Simulation``) from now on, in
        place of any simulation attached before."""
        self._attach("counters", sim.snapshot, sim.clock.now, lambda: CountersModel(sim.config), sim.subscribe,
                     self._on_counters, {"config": sim.config.as_dict()})

    def attach_lanes(self, scheduler) -> None:
        """Record ``scheduler`` (a ``lanemon.lanes.queues.Scheduler``) from now on, in place of
        any scheduler attached before. Its state is ``snapshot(limit=LANES_LIMIT)``
        (``lanemon.replay.lanes_state``): each queue's lists hold at most that many jobs."""
        from lanemon.replay.lanes_state import LANES_LIMIT, LanesModel, take_snapshot

        self._attach("lanes", lambda: take_snapshot(scheduler), scheduler.clock, LanesModel,
                     scheduler.events.subscribe, self._on_lanes, {"limit": LANES_LIMIT})

    def _attach(self, name: str, snapshot, clock, new_model, subscribe, callback, info: dict) -> None:
        if self._closed:
            raise RuntimeError("the recording is closed")
        old = self._sources.pop(name, None)
        if old is not None:
            old["unsub"]()
        entry = {"snapshot": snapshot, "new_model": new_model, "model": None, "info": info, "off": 0.0, "t": None,
                 "unsub": None}
        self._sources[name] = entry
        entry["off"] = round(self._now() - clock(), 3)
        self._keyframe()
        entry["unsub"] = subscribe(lambda event: callback(entry, event))

    def _keyframe(self) -> None:
        states = {}
        for name, entry in self._sources.items():
            snap = entry["snapshot"]()
            entry["model"] = model = entry["new_model"]()  # a keyframe is the whole state: from a blank model
            states[name] = {**entry["info"], "off": entry["off"], "state": model.encode(snap, None)}
            entry["t"] = None
        self._since_keyframe = 0
        self._bytes_since_keyframe = 0
        line = _dumps(["K", self.events_written, round(self._now(), 4), states])
        self._keyframe_bytes = len(line)
        self._pending.append(line)

    def _line(self, entry: dict, t: float, delta: dict) -> tuple[float | None, dict]:
        off = self._now() - t
        if abs(off - entry["off"]) > OFFSET_STEP:
            entry["off"] = delta["o"] = round(off, 3)
        same = entry["t"] == t
        entry["t"] = t
        return (None if same else t), delta

    def _on_counters(self, entry: dict, event) -> None:
        if self._closed or self._sources.get("counters") is not entry:
            return
        snap = entry["snapshot"]()  # may publish an ``expired`` event first (recorded first)
        delta = entry["model"].encode(snap, event)
        t, delta = self._line(entry, event.time, delta)
        item = ["c", t, event.kind, event.counter, event.owner, event.customer, event.epoch, event.detail]
        moment = MOMENT_OF.get(("counters", event.kind))
        if moment is not None:
            self._moment(event.time + entry["off"], moment, counters_text(event.kind, item[3:8]))
        if delta:
            item.append(delta)
        self._event(_dumps(item))

    def _on_lanes(self, entry: dict, event) -> None:
        if self._closed or self._sources.get("lanes") is not entry:
            return
        snap = entry["snapshot"]()
        delta = entry["model"].encode(snap, event)
        t, delta = self._line(entry, event.at, delta)
        item = ["l", t, event.kind, event.workspace, event.queue, event.job_id,
                None if event.state is None else str(event.state), _plain(event.detail)]
        kind = event.kind
        moment = MOMENT_OF.get(("lanes", kind))
        if moment is not None:
            self._moment(event.at + entry["off"], moment, lanes_text(kind, item[3:8]))
        elif kind == "started":
            title = self._overlaps.started(event.workspace, event.job_id)
            if title is not None:
                self._moment(event.at + entry["off"], OVERLAPPING_RUNS, title)
        elif kind == "finished":
            self._overlaps.finished(event.workspace, event.job_id)
        if delta:
            item.append(delta)
        self._event(_dumps(item))

    def _moment(self, time: float, kind: str, title: str) -> None:
        """The event about to be written is a notable moment."""
        n = self.events_written
        self._moments.append([n, n + 1, time, kind, title])

    def _event(self, line: str) -> None:
        self._pending.append(line)
        self.events_written += 1
        self._since_keyframe += 1
        self._bytes_since_keyframe += len(line)
        if self._since_keyframe >= self._keyframe_every and (
                self._bytes_since_keyframe >= self._keyframe_ratio * self._keyframe_bytes):
            self._keyframe()

    # -- heartbeat -------------------------------------------------------
    def heartbeat(self, t: float, lag_ms: float) -> None:
        """One heartbeat tick at ``t`` (on the recorder's clock) that was ``lag_ms`` late."""
        if not (math.isfinite(t) and math.isfinite(lag_ms)):
            raise ValueError(f"a heartbeat tick needs a finite time and lag, not {t!r}, {lag_ms!r}")
        if self._closed:
            return
        r = t - self._t0
        if lag_ms >= LONG_STALL_MS:
            n = self.events_written
            self._moments.append([n - 1, n, r, LONG_STALL, stall_title(lag_ms)])
        with self._lock:
            if self._hb_t0 is None or r - self._hb_t0 >= HEARTBEAT_BATCH or r < self._hb_t0:
                self._batch_out()
                self._hb_t0 = round(r, 4)
            self._hb_dt.append(round((r - self._hb_t0) * 1000, 2))
            self._hb_lag.append(round(lag_ms, 2))

    def _batch_out(self) -> None:
        """Queue the heartbeat batch (caller holds the lock)."""
        if self._hb_dt:
            self._pending.append(_dumps(["h", self._hb_t0, self._hb_dt, self._hb_lag]))
        self._hb_t0, self._hb_dt, self._hb_lag = None, [], []

    # -- writing ---------------------------------------------------------
    def _write_loop(self) -> None:
        while not self._stop.wait(FLUSH_EVERY):
            with self._lock:
                if self._hb_t0 is not None and self._now() - self._hb_t0 >= HEARTBEAT_BATCH:
                    self._batch_out()
                self._write_pending()

    def _take_pending(self):
        pending = self._pending
        for _ in range(len(pending)):
            yield pending.popleft()

    def _write_pending(self) -> None:
        """Write the queued lines (caller holds the lock)."""
        lines = list(self._take_pending())
        if self.error is not None or not lines:
            return
        try:
            self._write_lines(lines)
        except OSError as exc:
            self.error = cannot_write(self.path, exc)
            self._stop_sources()

    def _write_lines(self, lines: list[str]) -> None:
        """Write ``lines``; a keyframe line ends the gzip member before it and starts one."""
        chunk: list[str] = []
        for line in lines:
            if line.startswith('["K",') and self._compress:
                self._emit(chunk, finish=True)
                chunk = []
                m = _KEYFRAME_HEAD.match(line)
                self._blocks.append([int(m.group(1)), self._offset, float(m.group(2)), self._lines + 1])
            chunk.append(line)
            self._lines += 1
        self._emit(chunk, finish=False)

    def _emit(self, lines: list[str], finish: bool) -> None:
        data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
        if self._compress:
            if self._zip is None:
                if not data:
                    return
                self._zip = zlib.compressobj(6, zlib.DEFLATED, 31)
            data = self._zip.compress(data) + self._zip.flush(zlib.Z_FINISH if finish else zlib.Z_SYNC_FLUSH)
            if finish:
                self._zip = None
        if data:
            self._file.write(data)
            self._file.flush()
            self._offset += len(data)

    def _stop_sources(self) -> None:
        for entry in self._sources.values():
            if entry["unsub"] is not None:
                entry["unsub"]()

    def close(self) -> None:
        """Stop recording: unsubscribe, write what is pending and the closing line."""
        if self._closed:
            return
        self._closed = True
        self._stop_sources()
        self._stop.set()
        self._writer.join()
        with self._lock:
            self._batch_out()
            self._pending.append(_dumps(["E", round(self._now(), 4), self.events_written]))
            self._write_pending()
            try:
                if self.error is None and self._compress:
                    self._emit([], finish=True)
                    at = self._offset
                    index = {"events": self.events_written, "blocks": self._blocks, "moments": self._moments}
                    self._emit([_dumps(["I", index])], finish=True)
                    z = zlib.compressobj(0, zlib.DEFLATED, 31)
                    footer = z.compress(FOOTER.format(at).encode()) + z.flush(zlib.Z_FINISH)
                    assert len(footer) == FOOTER_BYTES
                    self._file.write(footer)
            except OSError as exc:
                self.error = cannot_write(self.path, exc)
            try:
                self._file.close()
            except OSError as exc:
                self.error = self.error or cannot_write(self.path, exc)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _plain(detail):
    """A lanes event's detail as JSON can hold it (text for anything else)."""
    if detail is None or isinstance(detail, (str, int, float, bool)):
        return detail
    return str(detail)
