"""``lanemon probe demo``: a small asyncio program with a probe, blocking its loop on purpose.

A standard-library TCP echo server on 127.0.0.1 (an ephemeral port) and a few clients hammering
it, with ``lanemon.probe`` started in the same loop (name ``lanemon-demo``). Every ``every_s``
seconds the loop blocks for about ``BLOCK_MS`` in one of three named functions, in turn:

- ``hash_a_lot``: a whole SHA-256 run over a small buffer (pure CPU in the loop);
- ``sleep_in_loop``: ``time.sleep`` (a blocking call);
- ``read_file_sync``: reading a scratch file with plain ``read`` calls (synchronous I/O).

A line on stdin (``h``, ``s`` or ``r``) blocks at once in that one. It prints what it does on
stderr; the probe's reports go to ``address`` (``lanemon probe listen`` or the window hear them).
Standard library only (like the probe).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sys
import tempfile
import time

import lanemon.probe

BLOCK_MS = 200.0
CLIENTS = 4
SCRATCH_BYTES = 4 << 20


def hash_a_lot(ms: float = BLOCK_MS) -> int:
    """SHA-256 of a small buffer, over and over, for ``ms``: CPU work run in the loop."""
    end = time.perf_counter() + ms / 1000.0
    digest, n = b"lanemon", 0
    while time.perf_counter() < end:
        for _ in range(200):
            digest = hashlib.sha256(digest).digest()
        n += 200
    return n


def sleep_in_loop(ms: float = BLOCK_MS) -> None:
    """``time.sleep`` in the loop: a blocking call."""
    time.sleep(ms / 1000.0)


def read_file_sync(path: str, ms: float = BLOCK_MS) -> int:
    """Read ``path`` in 4 KiB ``read`` calls, from the start again at its end, for ``ms``."""
    end = time.perf_counter() + ms / 1000.0
    total = 0
    with open(path, "rb", buffering=0) as f:
        while time.perf_counter() < end:
            chunk = f.read(4096)
            if not chunk:
                f.seek(0)
            total += len(chunk)
    return total


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(4096):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def hammer(port: int, stop: asyncio.Event) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while not stop.is_set():
            writer.write(b"ping " * 20)
            await writer.drain()
            await reader.readexactly(100)
            await asyncio.sleep(0.002)
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


def _say(text: str) -> None:
    print(f"lanemon-demo: {text}", file=sys.stderr, flush=True)


async def demo(address: str, seconds: float | None = None, every_s: float = 3.0) -> None:
    """Run the demo until ``seconds`` have passed (forever when None) or it is cancelled."""
    fd, scratch = tempfile.mkstemp(prefix="lanemon-demo-", suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(SCRATCH_BYTES))
        blockers = {
            "h": ("hash_a_lot", hash_a_lot),
            "s": ("sleep_in_loop", sleep_in_loop),
            "r": ("read_file_sync", lambda: read_file_sync(scratch)),
        }
        stop = asyncio.Event()
        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        probe = lanemon.probe.start(name="lanemon-demo", address=address)
        _say(f"echo server on 127.0.0.1:{port}, {CLIENTS} clients; probe (pid {os.getpid()}) sends to {address}")
        _say(f"blocks every {every_s:g} s in turn: hash_a_lot, sleep_in_loop, read_file_sync "
             "(or type h, s or r and Enter)")
        loop = asyncio.get_running_loop()

        def block(letter: str) -> None:
            name, fn = blockers[letter]
            _say(f"blocking the loop in {name} for ~{BLOCK_MS:.0f} ms")
            fn()

        def on_stdin() -> None:
            line = sys.stdin.readline()
            if not line:
                loop.remove_reader(sys.stdin)
                return
            letter = line.strip()[:1].lower()
            if letter in blockers:
                block(letter)

        reading = False
        with contextlib.suppress(Exception):
            loop.add_reader(sys.stdin, on_stdin)
            reading = True
        clients = [asyncio.create_task(hammer(port, stop), name=f"client-{i}") for i in range(CLIENTS)]
        started = time.monotonic()
        try:
            turn = 0
            while seconds is None or time.monotonic() - started < seconds:
                wait = every_s if seconds is None else min(every_s, seconds - (time.monotonic() - started))
                await asyncio.sleep(max(wait, 0.0))
                if seconds is not None and time.monotonic() - started >= seconds:
                    break
                block("hsr"[turn % 3])
                turn += 1
        finally:
            stop.set()
            if reading:
                loop.remove_reader(sys.stdin)
            await asyncio.gather(*clients, return_exceptions=True)
            server.close()
            await server.wait_closed()
            await probe.stop()
            _say(f"stopped: {probe.sent} datagrams sent, {probe.blocks} blocks reported")
    finally:
        os.unlink(scratch)


def run_demo(address: str, seconds: float | None = None, every_s: float = 3.0) -> int:
    """``lanemon probe demo``: run ``demo`` (Ctrl-C ends it); exit status 0."""
    try:
        asyncio.run(demo(address, seconds, every_s))
    except KeyboardInterrupt:
        _say("interrupted")
    return 0
