"""What a listener knows of the probes it hears (Qt-free, standard library only).

``ProbeBook.feed(data, addr)`` takes one datagram as received. It is decoded and checked
(``lanemon.probe.wire``) and stored under its program's key ``(name, pid, host)``, or dropped and
counted in ``dropped[reason]``; ``feed`` never raises. Reasons beyond the wire's refusals:

- ``flood``: more than ``rate`` datagrams per second from one sender address (a token bucket
  of ``burst``), or more than ``total_rate`` from all of them, or a new address while
  ``16 * max_programs`` addresses are being counted. This is checked before decoding, so a flood
  costs a dictionary lookup per datagram, not a JSON parse. (Each probe sends from its own
  socket: ~10 datagrams a second.)
- ``too_many_programs``: a new program while ``max_programs`` are known;
- ``replayed``: a ``seq`` not above the last one stored for that program (a repeat, an old
  datagram, or someone else sending under its name and pid).

Time is the book's ``clock`` (seconds), read at each ``feed`` and ``sweep``: a program silent for
``stale_s`` is shown stale, one silent for ``drop_s`` is forgotten with its history; lag points and
blocks older than ``keep_s`` go. A block's ``t_start`` is its arrival minus ``ago_ms``. ``version``
grows whenever what the book shows changed (a view redraws when it differs from the last one it
drew). Not thread-safe: one event loop feeds and reads it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from lanemon.probe.wire import Block, Frames, Refused, Summary, decode

Key = tuple[str, int, str]
MINUTE_S = 60.0
SWEEP_EVERY_S = 0.05     # feed sweeps at most this often (a flood costs one decode per datagram)


@dataclass(frozen=True)
class ProgramView:
    key: Key
    name: str
    pid: int
    host: str
    first_seen: float
    last_seen: float
    stale: bool
    p99_now: float | None      # the last summary's p99 (ms); None before one, or when stale
    blocks_last_minute: int
    index: int                 # stable while the program is known: the smallest index free when it came


@dataclass(frozen=True)
class LagPoint:
    t: float                   # the book's clock at arrival (s)
    p50: float
    p99: float
    max: float
    ticks: int


@dataclass(frozen=True)
class BlockView:
    t_start: float             # the book's clock: arrival - ago_ms
    duration_ms: float
    task: str | None
    stack: Frames
    folded: tuple[tuple[Frames, int], ...]
    samples: int
    seq: int


class _Program:
    __slots__ = ("key", "first_seen", "last_seen", "seq", "p99", "lag", "blocks", "index", "stale")

    def __init__(self, key: Key, now: float, index: int) -> None:
        self.key = key
        self.first_seen = now
        self.last_seen = now
        self.seq = -1
        self.p99: float | None = None
        self.lag: deque[LagPoint] = deque()
        self.blocks: deque[BlockView] = deque()
        self.index = index
        self.stale = False


class ProbeBook:
    """What the listener knows of every probe it hears (one event loop; not thread-safe)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, stale_s: float = 5.0,
                 drop_s: float = 60.0, keep_s: float = 120.0, rate: float = 200.0, burst: float = 400.0,
                 total_rate: float = 2000.0, max_programs: int = 64,
                 on_item: Callable[[Key, Summary | Block], object] | None = None) -> None:
        if (not 0 < stale_s <= drop_s or keep_s <= 0 or rate <= 0 or burst < 1 or total_rate < rate
                or max_programs < 1):
            raise ValueError("need 0 < stale_s <= drop_s, keep_s > 0, rate > 0, burst >= 1, total_rate >= rate, "
                             "max_programs >= 1")
        self.clock = clock
        self.stale_s = stale_s
        self.drop_s = drop_s
        self.keep_s = keep_s
        self.rate = rate
        self.burst = burst
        self.total_rate = total_rate
        self._total = [total_rate, clock()]        # the all-senders bucket: [tokens, at]
        self.max_programs = max_programs
        self.on_item = on_item
        self.dropped: dict[str, int] = {}
        self.accepted = 0
        self.version = 0
        self._programs: dict[Key, _Program] = {}
        self._buckets: dict[object, list[float]] = {}    # sender address -> [tokens, at]
        self._swept = float("-inf")
        self._pruned = float("-inf")

    # --- taking datagrams -------------------------------------------------------------------

    def _drop(self, reason: str) -> bool:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        return False

    @staticmethod
    def _take(bucket: list[float], now: float, rate: float, burst: float) -> bool:
        tokens = min(burst, bucket[0] + max(0.0, now - bucket[1]) * rate)
        bucket[1] = now
        if tokens < 1.0:
            bucket[0] = tokens
            return False
        bucket[0] = tokens - 1.0
        return True

    def _allow(self, who: object, now: float) -> bool:
        bucket = self._buckets.get(who)
        if bucket is None:
            if len(self._buckets) >= 16 * self.max_programs:
                if now - self._pruned < 1.0:          # one scan a second at most, even under a flood
                    return False
                self._pruned = now
                self._prune_buckets(now)
                if len(self._buckets) >= 16 * self.max_programs:
                    return False
            bucket = self._buckets[who] = [self.burst, now]
        return (self._take(bucket, now, self.rate, self.burst)
                and self._take(self._total, now, self.total_rate, self.total_rate))

    def _prune_buckets(self, now: float) -> None:
        full_after = self.burst / self.rate
        for who in [w for w, (_, at) in self._buckets.items() if now - at > full_after]:
            del self._buckets[who]

    def feed(self, data: bytes, addr: tuple) -> bool:
        """Decode, check and store one datagram; False when it was dropped (counted). Never raises."""
        now = self.clock()
        try:
            who = tuple(addr) if isinstance(addr, (tuple, list)) else addr
            hash(who)
        except TypeError:
            who = repr(addr)
        if not self._allow(who, now):
            return self._drop("flood")
        try:
            item = decode(data)
        except Refused as exc:
            return self._drop(exc.reason)
        except Exception:                     # a bug in decode must not reach the listener
            return self._drop("error")
        if now - self._swept >= SWEEP_EVERY_S:
            self.sweep(now)
        key = (item.name, item.pid, item.host)
        program = self._programs.get(key)
        if program is None:
            if len(self._programs) >= self.max_programs:
                return self._drop("too_many_programs")
            used = {p.index for p in self._programs.values()}
            index = next(i for i in range(len(used) + 1) if i not in used)
            program = self._programs[key] = _Program(key, now, index)
        elif item.seq <= program.seq:
            return self._drop("replayed")
        program.seq = item.seq
        program.last_seen = now
        program.stale = False
        if isinstance(item, Summary):
            program.p99 = item.p99
            program.lag.append(LagPoint(t=now, p50=item.p50, p99=item.p99, max=item.max, ticks=item.ticks))
        else:
            program.blocks.append(BlockView(t_start=now - item.ago_ms / 1000.0, duration_ms=item.duration_ms,
                                            task=item.task, stack=item.stack, folded=item.folded,
                                            samples=item.samples, seq=item.seq))
        self.accepted += 1
        self.version += 1
        if self.on_item is not None:
            self.on_item(key, item)
        return True

    def sweep(self, now: float | None = None) -> None:
        """Mark programs silent for ``stale_s`` stale, forget those silent for ``drop_s``, and
        forget history older than ``keep_s``."""
        if now is None:
            now = self.clock()
        self._swept = now
        changed = False
        for key in list(self._programs):
            program = self._programs[key]
            silent = now - program.last_seen
            if silent >= self.drop_s:
                del self._programs[key]
                changed = True
                continue
            if silent >= self.stale_s and not program.stale:
                program.stale = True
                changed = True
            horizon = now - self.keep_s
            while program.lag and program.lag[0].t < horizon:
                program.lag.popleft()
                changed = True
            while program.blocks and program.blocks[0].t_start < horizon:
                program.blocks.popleft()
                changed = True
        if changed:
            self.version += 1

    # --- reading ----------------------------------------------------------------------------

    def programs(self) -> tuple[ProgramView, ...]:
        """Every known program, sorted by name then pid (then host)."""
        now = self.clock()
        views = []
        for key in sorted(self._programs):
            p = self._programs[key]
            recent = sum(1 for b in p.blocks if now - b.t_start <= MINUTE_S)
            views.append(ProgramView(key=key, name=key[0], pid=key[1], host=key[2], first_seen=p.first_seen,
                                     last_seen=p.last_seen, stale=p.stale,
                                     p99_now=None if p.stale else p.p99, blocks_last_minute=recent,
                                     index=p.index))
        return tuple(views)

    def lag(self, key: Key) -> tuple[LagPoint, ...]:
        """The program's summaries of the last ``keep_s`` seconds, oldest first (empty if unknown)."""
        program = self._programs.get(tuple(key))
        return tuple(program.lag) if program is not None else ()

    def blocks(self, key: Key) -> tuple[BlockView, ...]:
        """The program's blocks of the last ``keep_s`` seconds, oldest first (empty if unknown)."""
        program = self._programs.get(tuple(key))
        return tuple(program.blocks) if program is not None else ()
