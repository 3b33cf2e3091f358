"""``lanemon.probe``: watch any asyncio program's loop from the lanemon window (standard library only).

Two lines in a program (Python 3.11+, inside its running loop)::

    import lanemon.probe
    probe = lanemon.probe.start(name="my-service")      # ... await probe.stop() at the end

or ``async with lanemon.probe.watch(name="my-service"):``. The probe:

- re-arms a heartbeat timer (``loop.call_later``) every ``period_ms`` and measures how late each
  tick fired (the loop's **lag**); every ~100 ms it sends a summary (ticks, p50, p99, max);
- runs a watchdog thread (``lanemon.probe.watchdog``) that notices a tick overdue by more than
  ``block_ms``, then samples the loop thread's stack every ~5 ms until the loop comes back, and
  sends a block report: the stall's duration, the stack when it was noticed, the sampled stacks
  folded with their counts (where the time went) and the current task's name;
- sends each report as one small JSON datagram over UDP (``lanemon.probe.wire``) to ``address``
  (default ``127.0.0.1:47200``; ``lanemon probe listen`` or the window listen there).

Guarantees: sending never blocks and never raises into the program (a non-blocking, unconnected
UDP socket; errors are counted in ``Probe.send_errors``); with nobody listening a datagram costs
the same. After ``stop_now()`` (or ``await stop()``) returns, no datagram is sent: the timer is
cancelled, the watchdog thread is joined and the socket closed. The watchdog is a daemon thread:
a program that ends without stopping its probe still exits.

The task's name: the watchdog thread reads ``asyncio.current_task(loop)`` once, when it notices
the stall. On CPython that is one dictionary lookup under the GIL (3.14 looks the loop's thread
up with the world stopped), so it is safe from another thread; the name is the task running at
that moment, or null when the loop was blocked outside a task (a callback, a timer).

What a report carries: source paths, line numbers and function names of the program (not
arguments or locals). The transport is unauthenticated local UDP: anyone on the host can send
to a listener, and a listener on another address hears whoever can reach it.

Works on any asyncio loop that implements ``call_later`` (uvloop included; not required).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import threading
import time
from dataclasses import replace

from lanemon.probe.watchdog import Watchdog
from lanemon.probe.wire import DEFAULT_ADDRESS, MAX_NAME, Block, Summary, encode
from lanemon.stats import percentile

__all__ = ["Probe", "start", "watch", "parse_address", "DEFAULT_ADDRESS"]

WINDOW_S = 0.1          # a summary per ~100 ms

# Sequence numbers are per process, not per probe: a program that stops its probe and starts
# another (same name, same pid) goes on numbering upwards, so a listener does not take the new
# probe's datagrams for replays. The lock also keeps numbering and sending in one order.
_SEND_LOCK = threading.Lock()
_NEXT_SEQ = [0]


def parse_address(address: str) -> tuple[str, int]:
    """``"host:port"`` (``"[v6]:port"`` for IPv6) as ``(host, port)``; ``ValueError`` saying why not."""
    if not isinstance(address, str):
        raise ValueError(f"an address is host:port, got {address!r}")
    host, sep, port = address.rpartition(":")
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"an address is host:port with a port 0-65535, got {address!r}")
    return host, int(port)


def _default_name() -> str:
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    return (os.path.basename(argv0) or "python")[:MAX_NAME]


def _task_name(loop: asyncio.AbstractEventLoop) -> str | None:
    task = asyncio.current_task(loop)
    return None if task is None else task.get_name()


class Probe:
    """One program's probe; made by ``start()``. Counters: ``sent``, ``send_errors``, ``blocks``;
    ``last_seq``: the number of its last datagram (-1 before one; numbers are per process)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, name: str | None, address: str,
                 period_ms: float, block_ms: float) -> None:
        for label, value in (("period_ms", period_ms), ("block_ms", block_ms)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 60_000:
                raise ValueError(f"{label} must be a number of ms above 0 and at most 60000, got {value!r}")
        host, port = parse_address(address)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        family, _, _, _, self.address = infos[0]
        self.name = (name if name is not None else _default_name())[:MAX_NAME]
        self.pid = os.getpid()
        self.host = socket.gethostname()[:MAX_NAME]
        self.period_ms = float(period_ms)
        self.block_ms = float(block_ms)
        self.sent = 0
        self.send_errors = 0
        self.blocks = 0
        self.last_seq = -1
        self._loop = loop
        self._period = period_ms / 1000.0
        self._closed = False
        self._sock = socket.socket(family, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._lags: list[float] = []
        self._window_start = time.monotonic()
        self._due = self._window_start + self._period
        self._watchdog = Watchdog(threading.get_ident(), block_ms, self._on_block, period_ms=period_ms,
                                  task_of=lambda: _task_name(loop), alive=loop.is_running)
        self._handle = loop.call_later(self._period, self._tick)
        self._watchdog.start()

    @property
    def stopped(self) -> bool:
        return self._closed

    # --- the loop's side ---------------------------------------------------------------

    def _tick(self) -> None:
        if self._closed:
            return
        now = time.monotonic()
        self._watchdog.beat(now)
        lag = (now - self._due) * 1000.0
        self._lags.append(lag if lag > 0 else 0.0)
        self._due = now + self._period
        self._handle = self._loop.call_later(self._period, self._tick)
        if now - self._window_start >= WINDOW_S:
            self._summary(now)

    def _summary(self, now: float) -> None:
        lags = sorted(self._lags)
        window_ms = (now - self._window_start) * 1000.0
        self._lags = []
        self._window_start = now
        if lags:
            self._send(Summary(period_ms=self.period_ms, ticks=len(lags), p50=percentile(lags, 50),
                               p99=percentile(lags, 99), max=lags[-1], window_ms=window_ms))

    # --- the watchdog's side --------------------------------------------------------------

    def _on_block(self, block: Block) -> None:
        self.blocks += 1
        self._send(block)

    def _send(self, item: Summary | Block) -> bool:
        """Send one report (from either thread); False when stopped or the send failed."""
        with _SEND_LOCK:
            if self._closed:
                return False
            try:
                seq = _NEXT_SEQ[0]
                data = encode(replace(item, name=self.name, pid=self.pid, host=self.host, seq=seq))
                _NEXT_SEQ[0] = seq + 1
                self.last_seq = seq
                self._sock.sendto(data, self.address)
            except Exception:           # never into the program: counted
                self.send_errors += 1
                return False
            self.sent += 1
            return True

    # --- stopping ------------------------------------------------------------------------

    def stop_now(self) -> None:
        """Stop at once (idempotent; any thread, though the timer is the loop's: call it from the
        loop's thread or a stopped loop). No datagram is sent after it returns."""
        with _SEND_LOCK:
            if self._closed:
                return
            self._closed = True
        self._handle.cancel()
        self._watchdog.stop()
        with _SEND_LOCK:
            self._sock.close()

    async def stop(self) -> None:
        """Send the last partial summary, then ``stop_now()``."""
        if not self._closed:
            self._summary(time.monotonic())
        self.stop_now()

    async def __aenter__(self) -> Probe:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()


def start(name: str | None = None, address: str = DEFAULT_ADDRESS, period_ms: float = 10,
          block_ms: float = 50) -> Probe:
    """Start a probe on the running loop (``RuntimeError`` without one; ``ValueError`` for a bad
    address or period). ``name`` defaults to the program's script name. ``address`` should be a
    numeric IP: a host name is resolved once, here, and that may block."""
    loop = asyncio.get_running_loop()
    return Probe(loop, name=name, address=address, period_ms=period_ms, block_ms=block_ms)


@contextlib.asynccontextmanager
async def watch(name: str | None = None, address: str = DEFAULT_ADDRESS, period_ms: float = 10,
                block_ms: float = 50):
    """``async with watch(...) as probe:`` a probe for the block's duration."""
    probe = start(name=name, address=address, period_ms=period_ms, block_ms=block_ms)
    try:
        yield probe
    finally:
        await probe.stop()
