"""The probe's wire format: one JSON object per UDP datagram (standard library only).

Every datagram is one UTF-8 JSON object of at most ``MAX_DATAGRAM`` bytes with the common fields
``"v": 1``, ``"kind"``, ``"name"`` (str, at most ``MAX_NAME`` chars), ``"pid"`` (int), ``"host"``
(str, at most ``MAX_NAME``), ``"seq"`` (int, per sending process, +1 per datagram, also across a
probe stopped and started again), then by kind:

- ``"summary"``: ``period_ms``, ``ticks`` (int), ``p50``, ``p99``, ``max`` (lag in ms of the ticks
  in the last window), ``window_ms``;
- ``"block"``: ``duration_ms`` (how late the heartbeat was when the loop came back), ``ago_ms``
  (how long before the datagram was built the stall began: a receiver places the stall's start at
  its arrival minus ``ago_ms``), ``task`` (str or null), ``stack`` (the loop thread's frames when
  the stall was noticed, innermost first, each ``"file:line function"``, at most ``MAX_FRAMES``),
  ``folded`` (``[[frames, count], ...]``: the stacks sampled through the stall with their sample
  counts, most samples first, at most ``MAX_STACKS``, each at most ``MAX_FRAMES`` frames) and
  ``samples`` (int).

``encode`` builds a datagram and trims a block report to fit (``fit_block``: the stacks with the
fewest samples are dropped first, then the stall's stack is shortened). ``decode`` refuses
(``Refused(reason)``, ``reason`` one short word the listener counts by) anything else: too big,
not UTF-8 JSON, not an object, an unknown version or kind, a missing or mistyped field (``bool``
is not a number here), a value out of range (negative or non-finite durations, absurd sizes).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from typing import ClassVar

VERSION = 1
DEFAULT_PORT = 47200
DEFAULT_ADDRESS = f"127.0.0.1:{DEFAULT_PORT}"
MAX_DATAGRAM = 32_768
MAX_NAME = 80
MAX_TASK = 200
MAX_FRAME = 300          # characters of one "file:line function" frame
MAX_FRAMES = 30
MAX_STACKS = 32
MAX_MS = 1e9             # about 11.5 days: longer is absurd for a lag or a stall
MAX_COUNT = 1 << 40
MAX_PID = 1 << 32
MAX_SEQ = 1 << 63


class Refused(ValueError):
    """A datagram that is not a valid report; ``reason`` is a short word to count it by."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


Frames = tuple[str, ...]


@dataclass(frozen=True)
class Summary:
    """The loop's lag over the last window (ms), from one program."""

    kind: ClassVar[str] = "summary"
    period_ms: float
    ticks: int
    p50: float
    p99: float
    max: float
    window_ms: float
    name: str = ""
    pid: int = 0
    host: str = ""
    seq: int = 0


@dataclass(frozen=True)
class Block:
    """One stall of a loop: how long, where it was when noticed, where its time went."""

    kind: ClassVar[str] = "block"
    duration_ms: float
    ago_ms: float
    task: str | None
    stack: Frames
    folded: tuple[tuple[Frames, int], ...]
    samples: int
    name: str = ""
    pid: int = 0
    host: str = ""
    seq: int = 0


def as_dict(item: Summary | Block) -> dict:
    """The JSON object of ``item`` (lists for tuples), ``v`` and ``kind`` included."""
    d = {"v": VERSION, "kind": item.kind}
    d.update(asdict(item))
    if isinstance(item, Block):
        d["stack"] = list(item.stack)
        d["folded"] = [[list(frames), count] for frames, count in item.folded]
    return d


def _dump(item: Summary | Block) -> bytes:
    return json.dumps(as_dict(item), separators=(",", ":"), allow_nan=False).encode()


def fit_block(block: Block, limit: int = MAX_DATAGRAM) -> tuple[Block, bytes]:
    """``block`` trimmed to encode within ``limit`` bytes, and its bytes: stacks beyond
    ``MAX_STACKS`` or with the fewest samples go first, then the stall's own stack is shortened."""
    folded = tuple(sorted(block.folded, key=lambda fc: -fc[1]))[:MAX_STACKS]
    block = replace(block, folded=folded, stack=block.stack[:MAX_FRAMES])
    data = _dump(block)
    while len(data) > limit and block.folded:
        block = replace(block, folded=block.folded[:-1])
        data = _dump(block)
    while len(data) > limit and block.stack:
        block = replace(block, stack=block.stack[:-1])
        data = _dump(block)
    return block, data


def encode(item: Summary | Block) -> bytes:
    """The datagram of ``item`` (a block report trimmed to fit ``MAX_DATAGRAM``)."""
    if isinstance(item, Block):
        return fit_block(item)[1]
    return _dump(item)


# --- decoding -------------------------------------------------------------------------------

def _refuse_constant(name: str):
    raise Refused("not_json", f"{name} is not a number")


def _int(d: dict, key: str, low: int, high: int) -> int:
    value = d.get(key)
    if type(value) is not int:
        raise Refused("bad_field", f"{key} must be an integer")
    if not low <= value <= high:
        raise Refused("out_of_range", f"{key} = {value}")
    return value


def _ms(d: dict, key: str, *, positive: bool = False) -> float:
    value = d.get(key)
    if type(value) not in (int, float):
        raise Refused("bad_field", f"{key} must be a number")
    value = float(value)
    if not math.isfinite(value) or value < 0 or value > MAX_MS or (positive and value == 0):
        raise Refused("out_of_range", f"{key} = {value}")
    return value


def _str(value: object, key: str, limit: int) -> str:
    if type(value) is not str:
        raise Refused("bad_field", f"{key} must be a string")
    if len(value) > limit:
        raise Refused("out_of_range", f"{key} longer than {limit}")
    return value


def _frames(value: object, key: str) -> Frames:
    if type(value) is not list:
        raise Refused("bad_field", f"{key} must be a list of frames")
    if len(value) > MAX_FRAMES:
        raise Refused("out_of_range", f"{key}: more than {MAX_FRAMES} frames")
    return tuple(_str(f, key, MAX_FRAME) for f in value)


def decode(data: bytes) -> Summary | Block:
    """The report in one datagram, or ``Refused`` saying why not (never another exception)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise Refused("not_bytes")
    if len(data) > MAX_DATAGRAM:
        raise Refused("too_big", f"{len(data)} bytes")
    try:
        d = json.loads(bytes(data).decode("utf-8"), parse_constant=_refuse_constant)
    except Refused:
        raise
    except (ValueError, RecursionError) as exc:  # bad UTF-8, bad JSON, too many digits, nesting
        raise Refused("not_json", str(exc)[:80]) from None
    if type(d) is not dict:
        raise Refused("not_object")
    if d.get("v") != VERSION or type(d.get("v")) is not int:
        raise Refused("version", repr(d.get("v"))[:20])
    kind = d.get("kind")
    common = {
        "name": _str(d.get("name"), "name", MAX_NAME),
        "pid": _int(d, "pid", 0, MAX_PID),
        "host": _str(d.get("host"), "host", MAX_NAME),
        "seq": _int(d, "seq", 0, MAX_SEQ),
    }
    if kind == "summary":
        return Summary(period_ms=_ms(d, "period_ms", positive=True), ticks=_int(d, "ticks", 0, MAX_COUNT),
                       p50=_ms(d, "p50"), p99=_ms(d, "p99"), max=_ms(d, "max"), window_ms=_ms(d, "window_ms"),
                       **common)
    if kind == "block":
        task = d.get("task")
        if task is not None:
            task = _str(task, "task", MAX_TASK)
        folded = d.get("folded")
        if type(folded) is not list:
            raise Refused("bad_field", "folded must be a list")
        if len(folded) > MAX_STACKS:
            raise Refused("out_of_range", f"folded: more than {MAX_STACKS} stacks")
        stacks = []
        for entry in folded:
            if type(entry) is not list or len(entry) != 2:
                raise Refused("bad_field", "folded entries are [frames, count]")
            count = entry[1]
            if type(count) is not int or not 1 <= count <= MAX_COUNT:
                raise Refused("out_of_range", "a folded count")
            stacks.append((_frames(entry[0], "folded"), count))
        return Block(duration_ms=_ms(d, "duration_ms"), ago_ms=_ms(d, "ago_ms"), task=task,
                     stack=_frames(d.get("stack"), "stack"), folded=tuple(stacks),
                     samples=_int(d, "samples", 0, MAX_COUNT), **common)
    raise Refused("kind", repr(kind)[:20])
