"""The recording file: JSON lines (UTF-8, one JSON value per line), gzip-compressed.

Line 1, the header (an object)::

    {"format": "lanemon-recording", "version": 1, "started": "2026-12-01T09:00:00Z",
     "started_unix": 1796115600.0, "sources": {...}}

``sources`` is what the recorder was given (``sources_info``: which store, which views).
Every other line is an array whose first item says what it is:

- ``["K", k, r, {source: {"config": {...}, "off": o, "state": {...}}}]`` -- a **keyframe**:
  the whole state of every attached source before event ``k`` (k events came before
  it), at recording time ``r``. One starts the recording (no source yet), one is written
  when a source is attached (the counters' ``config`` is the simulation's
  ``SimConfig.as_dict()``: seed and parameters) and then one after ``KEYFRAME_EVERY``
  events once their lines are ``KEYFRAME_RATIO`` times the keyframe's size (so
  keyframes stay about a third of the file); a seek decodes one block. The lines from
  one keyframe to the next are a **block**.
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

Compression: the file is a series of gzip members (``gzip -dc`` prints the JSON lines):
the header, then one member per block, each flushed (``Z_SYNC_FLUSH``) at every write
of the recorder's thread, so a crash leaves a file that decodes up to its last write.
A closed recording ends with an **index** member, ``["I", {"events": n, "blocks":
[[k, member offset, r, line number], ...], "moments": [[index, position, time, kind,
title], ...]}]``, and a 48-byte footer member ``["Z", "<index offset, 16 digits>"]``:
opening reads the header, the index and nothing else; a seek decompresses one block.
A recording without them (a crash, or a plain ``.jsonl``) is read whole on opening.

Refused on reading (``RecordingError``, naming the line where there is one): not a
recording (no header, or another ``format``), a newer ``version``, a header cut short, a
line that is not one of the above, an event before the first keyframe, a keyframe whose
count of events does not match. A recording read whole has the shape of every line
checked on opening; otherwise a malformed line raises ``RecordingError`` when the replay
first decodes its block (the replay keeps its position).
"""

from __future__ import annotations

import json
import os
import re
import zlib

FORMAT = "lanemon-recording"
VERSION = 1
KEYFRAME_EVERY = 250  # events at least between keyframes ...
KEYFRAME_RATIO = 2.0  # ... and event lines at least this many times the last keyframe's size
FLUSH_EVERY = 0.25  # seconds between writes of the recorder's thread
HEARTBEAT_BATCH = 0.5  # seconds of heartbeat ticks per "h" line
FOOTER = '["Z","{:016d}"]\n'
FOOTER_BYTES = 48  # FOOTER as a stored (level 0) gzip member

_BAD_LINE = re.compile(rb'^(?!\["[cKlhE]",[^\n]*\]$)', re.M)
_KEYFRAME = re.compile(rb'^\["K",(\d+),([^,]+),', re.M)
_BLOCKS_KEPT = 8


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
    (plain sentences: a cut last line, no closing line), ``events`` (how many),
    ``closed`` (it ended with ``close()``), and its blocks for a ``Replay``:
    ``keyframes`` ((k, recording time) of each), ``block_text(j)``, ``block_line(j)``;
    ``moments`` (the recorder's list, or None when the recording has no index)."""

    def __init__(self, path: str, header: dict, warnings: list[str], keyframes: list[tuple[int, float]],
                 lines: list[int], events: int, closed: bool, texts, moments: list | None) -> None:
        self.path = path
        self.header = header
        self.warnings = warnings
        self.keyframes = keyframes
        self._lines = lines
        self.events = events
        self.closed = closed
        self._texts = texts  # j -> the block's text (bytes)
        self.moments = moments
        self._cache: dict[int, bytes] = {}

    def __repr__(self) -> str:
        return f"<Recording {self.path!r}: {self.events} events, {len(self.keyframes)} blocks>"

    def block_text(self, j: int) -> bytes:
        """Block ``j``'s lines (its keyframe first), each ending with a newline."""
        text = self._cache.get(j)
        if text is None:
            text = self._texts(j)
            if len(self._cache) >= _BLOCKS_KEPT:
                self._cache.pop(next(iter(self._cache)))
            self._cache[j] = text
        return text

    def block_line(self, j: int) -> int:
        """The line number of block ``j``'s keyframe."""
        return self._lines[j]


def open_recording(path: str) -> Recording:
    """Read and check a recording (see the module docstring for what is refused).

    A file cut in its last line (a crash) opens without that line; a file without a
    closing line opens with what it has; both say so in ``warnings``."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise RecordingError(path, None, f"cannot read it: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        indexed = _open_indexed(path, raw)
        if indexed is not None:
            return indexed
        data, whole = _gunzip(raw)
        rec = _open_text(path, data)
        if not whole:
            rec.warnings.insert(0, "the compressed file ends in the middle (the recording did not end cleanly): "
                                   "what was written before that is shown")
        return rec
    return _open_text(path, raw)


def _gunzip(raw: bytes) -> tuple[bytes, bool]:
    """Every gzip member's text, as far as it decodes; and whether the file ended cleanly."""
    out = []
    whole = True
    while raw:
        d = zlib.decompressobj(wbits=31)
        try:
            out.append(d.decompress(raw))
        except zlib.error:
            whole = False
            break
        if not d.eof:
            whole = False
            break
        raw = d.unused_data
    return b"".join(out), whole


def _member(raw: bytes, start: int, end: int | None = None) -> bytes:
    d = zlib.decompressobj(wbits=31)
    text = d.decompress(raw[start:end])
    if not d.eof:
        raise zlib.error("member cut short")
    return text


def _open_indexed(path: str, raw: bytes) -> Recording | None:
    """A closed gzip recording through its index (None: it has none; read it whole)."""
    if len(raw) < FOOTER_BYTES:
        return None
    try:
        footer = json.loads(_member(raw, len(raw) - FOOTER_BYTES))
        if not (isinstance(footer, list) and len(footer) == 2 and footer[0] == "Z"):
            return None
        at = int(footer[1])
        index = json.loads(_member(raw, at, len(raw) - FOOTER_BYTES))
        info = index[1]
        blocks = info["blocks"]
        events = int(info["events"])
        moments = info["moments"]
        offsets = [int(b[1]) for b in blocks]
        keyframes = [(int(b[0]), float(b[2])) for b in blocks]
        lines = [int(b[3]) for b in blocks]
        first = offsets[0] if offsets else at
        head = _member(raw, 0, first)
    except (ValueError, TypeError, KeyError, IndexError, zlib.error):
        return None
    end = head.find(b"\n")
    header = _json(path, 1, head[:end] if end >= 0 else head)
    _check_header(path, header)
    bounds = offsets + [at]

    def texts(j: int) -> bytes:
        try:
            return _member(raw, bounds[j], bounds[j + 1])
        except zlib.error as exc:
            raise RecordingError(path, lines[j], f"block {j} does not decompress ({exc})") from None

    rec = Recording(path, header, [], keyframes, lines, events, True, texts, moments)
    _add_config(rec)
    return rec


def _open_text(path: str, data: bytes) -> Recording:
    """A recording read whole (plain JSON lines, or a gzip one without an index)."""
    warnings: list[str] = []
    end = data.find(b"\n")
    if end < 0:
        if not data.strip():
            raise RecordingError(path, None, "the file is empty: not a recording")
        _check_header(path, _json(path, 1, data))
        raise RecordingError(path, 1, "the recording ends inside its header line (the file was cut short)")
    header = _json(path, 1, data[:end])
    _check_header(path, header)
    body = end + 1
    if not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        line = data.count(b"\n", 0, cut) + 1
        warnings.append(f"line {line} was cut short (the recording did not end cleanly): ignored")
        data = data[:cut]
    lines_in_body = data.count(b"\n", body)
    starts = sum(data.count(b'\n["' + tag + b'",', body - 1) for tag in (b"c", b"l", b"K", b"h", b"E"))
    if len(data) > body and (starts != lines_in_body or data.count(b"]\n", body) != lines_in_body):
        # some line is not a recording's: find the first (a slower look, only then)
        bad = _BAD_LINE.search(data, body, len(data) - 1)
        if bad is not None:
            line = data.count(b"\n", 0, bad.start()) + 1
            text = data[bad.start():bad.start() + 60].split(b"\n")[0].decode("utf-8", "replace")
            raise RecordingError(path, line, f"not a line of a recording: {text!r}")
    found = []
    at = data.find(b'\n["K",', body - 1)
    while at >= 0:
        m = _KEYFRAME.match(data, at + 1)
        try:
            found.append((int(m.group(1)), float(m.group(2)), at + 1))
        except (AttributeError, ValueError):
            raise RecordingError(path, data.count(b"\n", 0, at + 1) + 1,
                                 "a keyframe line without its position and time") from None
        at = data.find(b'\n["K",', at + 1)
    events = data.count(b'\n["c",', body - 1) + data.count(b'\n["l",', body - 1)
    if events:
        first_event = min(x for x in (data.find(b'\n["c",', body - 1), data.find(b'\n["l",', body - 1)) if x >= 0)
        if not found or found[0][2] > first_event + 1:
            raise RecordingError(path, data.count(b"\n", 0, first_event + 1) + 1,
                                 "an event comes before the first keyframe (the state it changes is unknown)")
    closed = data[data.rfind(b"\n", 0, len(data) - 1) + 1:].startswith(b'["E",')
    if not closed:
        warnings.append("the recording was not closed (the recorder stopped without close(), e.g. a crash): "
                        "it ends at its last complete line")
    lines, line, prev = [], 1, 0
    for _k, _r, offset in found:
        line += data.count(b"\n", prev, offset)
        lines.append(line)
        prev = offset
    bounds = [offset for _, _, offset in found] + [len(data)]

    def texts(j: int) -> bytes:
        return data[bounds[j]:bounds[j + 1]]

    rec = Recording(path, header, warnings, [(k, r) for k, r, _ in found], lines, events, closed, texts, None)
    _add_config(rec)
    return rec


def _add_config(rec: Recording) -> None:
    """``header["counters"]``: the config of the first keyframe that has the counters."""
    for j in range(min(len(rec.keyframes), 4)):  # attached at the start, if at all: look no further
        text = rec.block_text(j)
        item = _json(rec.path, rec.block_line(j), text[:text.find(b"\n")])
        states = item[3] if isinstance(item, list) and len(item) > 3 and isinstance(item[3], dict) else {}
        entry = states.get("counters")
        if isinstance(entry, dict) and "config" in entry:
            rec.header = {**rec.header, "counters": entry["config"]}
            return


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
