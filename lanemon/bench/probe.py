"""``lanemon bench probe``: what ``lanemon.probe`` costs a program, and whether its blocks are right.

One process, one asyncio loop (the standard one), measured in this run:

1. **Lag with and without the probe**: the demo's echo server with ``CLIENTS`` clients hammering
   it; a ``LagRecorder`` (1 ms period) measures the loop's lag over ``ROUND_S`` rounds, the probe
   (period 10 ms, block 50 ms, sending to a listener in the same loop) on and off in alternate
   rounds, ``ROUNDS`` of each. Figure: the median of the rounds' p99s with and without, and the
   difference. Goal: within +``GOAL_LAG_MS`` ms.
2. **CPU cost at period 10 ms**: an idle loop, ``ROUND_S`` rounds without the probe, with only a
   bare re-armed 10 ms ``call_later`` (what any heartbeat of that period costs this loop: the
   wake-ups) and with the probe (sending to a bound socket nobody reads), in turn; the process's
   CPU time (``resource.getrusage``: user + system, every thread) per round. Figure: (mean CPU
   with the probe - mean without) / round time, in % of one core, and the bare timer's share of
   it. Goal: under ``GOAL_CPU_PCT`` %.
3. **Blocks reported**: ``BLOCKS`` stalls of ``BLOCK_MS`` ms, alternately pure CPU (``spin_cpu``)
   and a blocking call (``sleep_block``), each received by the listener (a ``ProbeBook``) before
   the next. Figure: how many report a duration within ``TOLERANCE`` of ``BLOCK_MS`` and name the
   blocking function in their stack, and the durations' range. Goal: all of them.
"""

from __future__ import annotations

import asyncio
import resource
import socket
import statistics
import time

import lanemon.probe
from lanemon.bench._common import goal, machine
from lanemon.bench.goals import Goal
from lanemon.probe.book import ProbeBook
from lanemon.probe.demo import echo, hammer
from lanemon.probe.listen import bound_address, listen
from lanemon.work.lag import LagRecorder

ROUND_S = 0.6
ROUNDS = 10
CLIENTS = 4
BLOCKS = 20
BLOCK_MS = 200.0
TOLERANCE = 0.10
GOAL_LAG_MS = 0.2
GOAL_CPU_PCT = 1.0


def spin_cpu(ms: float) -> int:
    """Pure CPU in the loop for ``ms``."""
    end = time.perf_counter() + ms / 1000.0
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def sleep_block(ms: float) -> None:
    """A blocking call in the loop for ``ms``."""
    time.sleep(ms / 1000.0)


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def _until(condition, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.01)
    return True


async def _lag_rounds(address: str) -> tuple[list[float], list[float]]:
    stop = asyncio.Event()
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    clients = [asyncio.create_task(hammer(port, stop)) for _ in range(CLIENTS)]
    with_probe, without = [], []
    try:
        await asyncio.sleep(0.3)
        for i in range(2 * ROUNDS):
            probe = lanemon.probe.start(name="bench", address=address) if i % 2 == 0 else None
            async with LagRecorder(1.0) as rec:
                await asyncio.sleep(ROUND_S)
            if probe is not None:
                await probe.stop()
            (with_probe if probe is not None else without).append(rec.stats().p99)
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        server.close()
        await server.wait_closed()
    return with_probe, without


async def _cpu_rounds(address: str) -> dict[str, list[float]]:
    """CPU seconds per round: no probe, a bare re-armed 10 ms timer (the floor any heartbeat of
    that period pays on this loop), the probe."""
    loop = asyncio.get_running_loop()
    rounds: dict[str, list[float]] = {"none": [], "timer": [], "probe": []}
    for i in range(3 * ROUNDS):
        mode = ("none", "timer", "probe")[i % 3]
        probe = lanemon.probe.start(name="bench", address=address) if mode == "probe" else None
        handle = None

        def tick() -> None:
            nonlocal handle
            handle = loop.call_later(0.01, tick)

        if mode == "timer":
            tick()
        c0 = _cpu_s()
        await asyncio.sleep(ROUND_S)
        c1 = _cpu_s()
        if handle is not None:
            handle.cancel()
        if probe is not None:
            await probe.stop()
        rounds[mode].append(c1 - c0)
    return rounds


async def _blocks(book: ProbeBook, address: str) -> list[tuple[str, float | None, bool]]:
    """(function, reported duration or None when no report came, named in the stack)."""
    probe = lanemon.probe.start(name="bench-blocks", address=address)
    results = []
    try:
        await asyncio.sleep(0.2)
        for i in range(BLOCKS):
            fn = spin_cpu if i % 2 == 0 else sleep_block
            key = (probe.name, probe.pid, probe.host)
            before = len(book.blocks(key))
            fn(BLOCK_MS)
            if not await _until(lambda before=before, key=key: len(book.blocks(key)) > before, 2.0):
                results.append((fn.__name__, None, False))
                continue
            block = book.blocks(key)[-1]
            frames = list(block.stack) + [f for frames, _ in block.folded[:1] for f in frames]
            named = any(f.endswith(" " + fn.__name__) for f in frames)
            results.append((fn.__name__, block.duration_ms, named))
            await asyncio.sleep(0.15)
    finally:
        await probe.stop()
    return results


def run(out) -> dict:
    async def scenario():
        book = ProbeBook()
        transport = await listen(book, "127.0.0.1:0")
        try:
            address = bound_address(transport)
            lag = await _lag_rounds(address)
            sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)   # bound, never read: no listener's cost
            sink.bind(("127.0.0.1", 0))
            try:
                cpu = await _cpu_rounds(f"127.0.0.1:{sink.getsockname()[1]}")
            finally:
                sink.close()
            blocks = await _blocks(book, address)
        finally:
            transport.close()
        return lag, cpu, blocks, dict(book.dropped)

    (lag_with, lag_without), cpu, blocks, dropped = asyncio.run(scenario())
    out(f"machine: {machine()}")
    p99_with, p99_without = statistics.median(lag_with), statistics.median(lag_without)
    delta = p99_with - p99_without
    out(f"loop lag p99 under an echo load ({CLIENTS} clients), median of {ROUNDS} alternating {ROUND_S:g} s rounds: "
        f"with the probe {p99_with:.3f} ms, without {p99_without:.3f} ms, difference {delta:+.3f} ms "
        f"(goal <= +{GOAL_LAG_MS} ms: {goal(delta <= GOAL_LAG_MS)})")
    mean = {mode: statistics.mean(v) for mode, v in cpu.items()}
    cpu_pct = (mean["probe"] - mean["none"]) / ROUND_S * 100.0
    timer_pct = (mean["timer"] - mean["none"]) / ROUND_S * 100.0
    out(f"probe CPU at period 10 ms on an idle loop (getrusage, {ROUNDS} rounds of {ROUND_S:g} s each, "
        f"none / bare timer / probe in turn): {cpu_pct:.2f} % of a core (goal < {GOAL_CPU_PCT} %: "
        f"{goal(cpu_pct < GOAL_CPU_PCT)}); a bare re-armed 10 ms call_later alone: {timer_pct:.2f} %, "
        f"so the probe's own work is {cpu_pct - timer_pct:+.2f} %")
    durations = [d for _, d, _ in blocks if d is not None]
    good = sum(1 for _, d, named in blocks
               if d is not None and named and abs(d - BLOCK_MS) <= TOLERANCE * BLOCK_MS)
    reported = len(durations)
    span = "-"
    if durations:
        span = f"{min(durations):.1f}-{max(durations):.1f} ms, median {statistics.median(durations):.1f}"
    out(f"blocks of {BLOCK_MS:.0f} ms (spin_cpu / sleep_block alternately): {reported}/{BLOCKS} reported, "
        f"{good}/{BLOCKS} within {TOLERANCE:.0%} naming the function; durations {span} "
        f"(goal {BLOCKS}/{BLOCKS}: {goal(good == BLOCKS)})")
    if dropped:
        out(f"listener dropped: {dropped}")
    return {
        "lag_p99_with_ms": round(p99_with, 3), "lag_p99_without_ms": round(p99_without, 3),
        "lag_p99_delta_ms": round(delta, 3), "lag_rounds_with": [round(v, 3) for v in lag_with],
        "lag_rounds_without": [round(v, 3) for v in lag_without],
        "cpu_pct_of_core": round(cpu_pct, 3), "bare_timer_cpu_pct_of_core": round(timer_pct, 3),
        "blocks": BLOCKS, "blocks_reported": reported, "blocks_good": good,
        "block_durations_ms": [round(d, 1) for d in durations],
        "goals": [Goal("probe: loop lag p99 with vs without it (median of rounds)", p99_with, GOAL_LAG_MS,
                       floor=p99_without, agreed=sum(w - wo <= GOAL_LAG_MS for w, wo in zip(lag_with, lag_without)),
                       alternations=len(lag_with)).as_dict(),
                  Goal("probe: CPU at period 10 ms, % of a core", cpu_pct, GOAL_CPU_PCT, unit="%").as_dict(),
                  Goal("probe: 200 ms blocks reported within 10 %, named", good, BLOCKS, unit="blocks",
                       at_least=True).as_dict()],
    }
