"""The recording file: JSON lines, UTF-8, one JSON value per line.

Line 1, the header (an object)::

    {"format": "lanemon-recording", "version": 1, "started": "2026-12-01T09:00:00Z",
     "started_unix": 1796115600.0, "sources": {...}}

``sources`` is what the recorder was given (``sources_info``: which store, which views).
Every other line is an array whose first item says what it is:

- ``["K", k, r, {source: {"config": {...}, "off": o, "state": {...}}}]`` -- a **keyframe**:
  the whole state of every attached source before event ``k`` (k events came before
  it), at recording time ``r``. One is written when a source is attached (the counters'
  ``config`` is the simulation's ``SimConfig.as_dict()``: seed and parameters) and then
  every ``KEYFRAME_EVERY`` events, so a seek decodes at most that many events.
- ``["c", t, kind, counter, owner, customer, epoch, detail, delta?]`` -- one counters
  event (``lanemon.counters.events.Event``; ``t`` null: the same time as the previous
  counters event) and the change of state it came with (``counters_state``).
- ``["l", at, kind, workspace, queue, job_id, state, detail, delta?]`` -- one lanes
  event (``lanemon.lanes.events.Event``; ``at`` null: as the previous one) and its
  change of state (``lanes_state``).
- ``["h", t0, [dt_ms, ...], [lag_ms, ...]]`` -- heartbeat ticks of half a second: tick
  ``i`` at recording time ``t0 + dt_ms[i] / 1000`` was ``lag_ms[i]`` late (0.01 ms).
- ``["E", r, n]`` -- the recording was closed at recording time ``r`` after ``n`` events.

Times: ``t`` / ``at`` are the source's own clock (simulation seconds, the scheduler's
clock), kept exactly. The **timeline** (recording time, seconds since the recorder
started: ``ReplayEvent.time``, heartbeat times) of an event is its own time plus its
source's offset ``o`` (in the keyframe; a delta's ``"o"`` changes it when the two clocks
drift apart by more than a millisecond).

The recorder writes from a thread at least every ``FLUSH_EVERY`` seconds, so a crash
loses at most the last second: the file then ends without an ``E`` line, maybe in the
middle of a line. Reading such a file works and says so in ``Recording.warnings``.

Refused on reading (``RecordingError``, naming the line): not a recording (no header, or
another ``format``), a newer ``version``, a header cut short, a line that is not one of
the above, an event before the first keyframe, a keyframe whose count of events does not
match. Opening checks the shape of every line (fast, no parsing); an event line whose
content turns out malformed raises ``RecordingError`` when the replay first decodes it.
"""

from __future__ import annotations

import json
import os
import re
import zlib

FORMAT = "lanemon-recording"
VERSION = 1
KEYFRAME_EVERY = 1000
FLUSH_EVERY = 0.25  # seconds between writes of the recorder's thread
HEARTBEAT_BATCH = 0.5  # seconds of heartbeat ticks per "h" line

_BAD_LINE = re.compile(rb'^(?!\["[cKlhE]",[^\n]*\]$)', re.M)
_KEYFRAME = re.compile(rb'^\["K",(\d+),', re.M)


class RecordingError(Exception):
    """A file that cannot be read as a recording: ``path``, ``line`` (1-based, or None
    when the problem is not one line) and ``message``; ``str()`` is one sentence that
    names the file (and line) and what is wrong."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = os.path.basename(self.path) + (f" line {self.line}" if self.line is not None else "")
        return f"{where}: {self.message}"


class Recording:
    """An opened recording: its ``header`` (the header line's object; plus ``"counters"``,
    the first attached simulation's config, when the recording has one), ``warnings``
    (plain sentences: a cut last line, no closing line) and what a ``Replay`` needs
    (``data``, the keyframes' offsets and counts, the number of events).

    The whole file is held in memory (a 1-hour recording is tens of MB)."""

    def __init__(self, path: str, data: bytes, header: dict, warnings: list[str],
                 body: int, keyframes: list[tuple[int, int]], events: int, closed: bool) -> None:
        self.path = path
        self.data = data
        self.header = header
        self.warnings = warnings
        self.body = body  # offset of line 2
        self.keyframes = keyframes  # (k, byte offset) of every keyframe, in order
        self.events = events
        self.closed = closed

    def __repr__(self) -> str:
        return f"<Recording {self.path!r}: {self.events} events, {len(self.keyframes)} keyframes>"

    def line_number(self, offset: int) -> int:
        """The 1-based number of the line that starts at (or contains) byte ``offset``."""
        return self.data.count(b"\n", 0, offset) + 1

    def error(self, offset: int | None, message: str) -> RecordingError:
        return RecordingError(self.path, None if offset is None else self.line_number(offset), message)


def open_recording(path: str) -> Recording:
    """Read and check a recording (see the module docstring for what is refused).

    A file cut in its last line (a crash) opens without that line; a file without a
    closing line opens with what it has; both say so in ``warnings``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise RecordingError(path, None, f"cannot read it: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = zlib.decompressobj(wbits=31).decompress(data)
        except zlib.error as exc:
            raise RecordingError(path, None, f"a compressed file that does not decompress ({exc})") from None
    warnings: list[str] = []
    end = data.find(b"\n")
    if end < 0:
        if not data.strip():
            raise RecordingError(path, None, "the file is empty: not a recording")
        first = _json(path, 1, data)
        _check_header(path, first)
        raise RecordingError(path, 1, "the recording ends inside its header line (the file was cut short)")
    header = _json(path, 1, data[:end])
    _check_header(path, header)
    body = end + 1
    if not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        line = data.count(b"\n", 0, cut) + 1
        warnings.append(f"line {line} was cut short (the recording did not end "
                        "cleanly): ignored")
        data = data[:cut]
    if len(data) > body:
        bad = _BAD_LINE.search(data, body, len(data) - 1)
        if bad is not None:
            line = data.count(b"\n", 0, bad.start()) + 1
            text = data[bad.start():bad.start() + 60].split(b"\n")[0].decode("utf-8", "replace")
            raise RecordingError(path, line, f"not a line of a recording: {text!r}")
    keyframes = [(int(m.group(1)), m.start()) for m in _KEYFRAME.finditer(data, body)]
    events = data.count(b'\n["c",', body - 1) + data.count(b'\n["l",', body - 1)
    if events:
        first_event = min(x for x in (data.find(b'\n["c",', body - 1), data.find(b'\n["l",', body - 1)) if x >= 0)
        if not keyframes or keyframes[0][1] > first_event + 1:
            raise RecordingError(path, data.count(b"\n", 0, first_event + 1) + 1,
                                 "an event comes before the first keyframe (the state it changes is unknown)")
    closed = data.endswith(b"\n") and data[data.rfind(b"\n", 0, len(data) - 1) + 1:].startswith(b'["E",')
    if not closed:
        warnings.append("the recording was not closed (the recorder stopped without close(), e.g. a crash): "
                        "it ends at its last complete line")
    rec = Recording(path, data, header, warnings, body, keyframes, events, closed)
    if keyframes:
        counters = _first_config(rec, "counters")
        if counters is not None:
            rec.header = {**header, "counters": counters}
    return rec


def _first_config(rec: Recording, source: str) -> dict | None:
    for _k, offset in rec.keyframes:
        line = rec.data[offset:rec.data.find(b"\n", offset)]
        item = _json(rec.path, rec.line_number(offset), line)
        entry = item[3].get(source) if isinstance(item, list) and len(item) > 3 and isinstance(item[3], dict) else None
        if isinstance(entry, dict) and "config" in entry:
            return entry["config"]
    return None


def _json(path: str, line: int, raw: bytes):
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        if line == 1:
            raise RecordingError(path, 1, "not a recording: its first line is not a lanemon recording header "
                                          f"({_reason(exc)})") from None
        raise RecordingError(path, line, f"malformed line ({_reason(exc)})") from None


def _reason(exc: Exception) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)


def _check_header(path: str, header) -> None:
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(path, 1, f"not a recording: its first line does not say \"format\": \"{FORMAT}\"")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordingError(path, 1, f"the header's version must be a whole number >= 1, not {version!r}")
    if version > VERSION:
        raise RecordingError(path, 1, f"a newer recording (format version {version}); this lanemon reads "
                                      f"version {VERSION} and older: update lanemon to open it")
