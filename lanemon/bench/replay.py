"""``lanemon bench replay``: the size of an hour's recording and how fast it opens and seeks.

What is recorded: one hour of the counters simulation at full activity -- the claim
strategy (the most events per customer: claims refused, retries) on an endless stream at
the default 50 arrivals/s, 8 staff, 24 counters -- run on **virtual time** (the same code
as a live run, without waiting the hour), with a lanes scheduler beside it running a job
every half second over four workspaces, and heartbeat ticks every 10 ms (seeded lags,
one 150-300 ms stall a minute), all through the real ``Recorder``. Then, on that file:
open it and show the first frame (``open_recording``, ``Replay``, both snapshots), seek to
the end, 50 seeks to random positions (the slider), the moments list.

A live recording writes a little more per event than a virtual one (its clocks move
between the reads of one snapshot): a short real-time run (claim, speed 1) gives the
bytes per event live, and the hour at that size is printed beside the goal too.

Goals: the hour's file under 100 MB; open + first frame and seek to the end each under
2 s; a seek to any position under 100 ms (a slider must follow the hand).
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable

from lanemon.bench._common import goal, machine
from lanemon.tasks import cancel_and_wait

HOUR = 3600.0
SIZE_GOAL_MB = 100.0
OPEN_GOAL_S = 2.0
SEEK_GOAL_MS = 100.0
LIVE_SECONDS = 4.0


class _Job:
    """A lanes job that takes a few loop turns."""

    def __init__(self, turns: int) -> None:
        self.turns = turns

    async def run(self, ctx) -> None:
        for _ in range(self.turns):
            await asyncio.sleep(0)
            ctx.checkpoint()


async def _hour(path: str, seconds: float) -> dict:
    from lanemon.counters import SimConfig, Simulation
    from lanemon.lanes import Scheduler
    from lanemon.replay import Recorder

    sim = Simulation(SimConfig(strategy="claim", customers=None, time_limit=seconds))
    sched = Scheduler(clock=sim.clock.now)
    rec = Recorder(path, sources_info={"bench": "replay"}, clock=sim.clock.now)
    rec.attach_counters(sim)
    rec.attach_lanes(sched)
    rng = random.Random(18)
    run = asyncio.ensure_future(sim.run())

    async def beat(counted: dict) -> None:
        while True:
            await sim.clock.sleep(0.010)
            n = counted["ticks"] = counted["ticks"] + 1
            lag = rng.uniform(150, 300) if n % 6000 == 0 else rng.expovariate(1 / 0.4)
            rec.heartbeat(sim.clock.now(), lag)

    async def jobs(counted: dict) -> None:
        workspaces = ("north", "south", "east", "west")
        queues = tuple(sched.queues)
        pending = set()
        while True:
            await sim.clock.sleep(0.5)
            n = counted["jobs"]
            task = asyncio.ensure_future(sched.submit(queues[n % 2], workspaces[n % 4], _Job(n % 5)))
            pending.add(task)
            task.add_done_callback(pending.discard)
            counted["jobs"] = n + 1

    counted = {"ticks": 0, "jobs": 0}
    others = [asyncio.ensure_future(beat(counted)), asyncio.ensure_future(jobs(counted))]
    await run
    await cancel_and_wait(others)  # the clock froze with the run: their sleeps never end
    await sched.join()
    rec.close()
    await sched.aclose()
    return {"events": rec.events_written, "ticks": counted["ticks"], "jobs": counted["jobs"], "error": rec.error}


def _live_bytes_per_event(folder: str) -> tuple[float, int]:
    """Bytes per event of a real-time recording (claim, speed 1, ``LIVE_SECONDS``)."""
    from lanemon.counters import SimConfig, Simulation
    from lanemon.replay import Recorder

    path = os.path.join(folder, "live.jsonl.gz")

    async def main() -> int:
        sim = Simulation(SimConfig(strategy="claim", customers=None, time_limit=LIVE_SECONDS))
        rec = Recorder(path, sources_info={"bench": "replay live"})
        rec.attach_counters(sim)
        await sim.run()
        rec.close()
        return rec.events_written

    events = asyncio.run(main())
    return os.path.getsize(path) / max(events, 1), events


def run(out: Callable[[str], None] = print) -> dict:
    from lanemon.counters.clock import run_in_virtual_time
    from lanemon.replay import Replay, open_recording

    out("replay: an hour's recording -- its size, opening it, seeking in it")
    out(f"  machine: {machine()}")
    out("  recorded: the counters simulation at full activity (claim strategy, endless stream at 50")
    out("  arrivals/s, 8 staff, 24 counters), a lanes job every 0.5 s over 4 workspaces, heartbeat ticks")
    out("  every 10 ms (one 150-300 ms stall a minute): 1 simulated hour on virtual time, real Recorder")
    with tempfile.TemporaryDirectory(prefix="lanemon-bench-replay-") as folder:
        path = os.path.join(folder, "hour.jsonl.gz")
        c0, w0 = time.process_time(), time.perf_counter()
        made = run_in_virtual_time(_hour(path, HOUR))
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        assert made["error"] is None, made["error"]
        size = os.path.getsize(path)
        mb = size / 1e6
        events = made["events"]
        out(f"  recorded {events:,} events ({events / HOUR:.0f}/s), {made['ticks']:,} heartbeat ticks, "
            f"{made['jobs']:,} lanes jobs in {wall:.1f} s wall, {cpu:.1f} s CPU (simulation + recorder)")
        out(f"  file size: {mb:.1f} MB ({size / events:.1f} bytes/event, gzip JSON lines)   "
            f"goal < {SIZE_GOAL_MB:.0f} MB: {goal(mb < SIZE_GOAL_MB)}")

        w0 = time.perf_counter()
        rec = open_recording(path)
        replay = Replay(rec)
        first = (replay.counters_snapshot(), replay.lanes_snapshot())
        open_s = time.perf_counter() - w0
        assert first[0] is not None and first[1] is not None
        index = "through its index" if rec.moments is not None else "read whole (no index)"
        out(f"  open + first frame: {open_s * 1000:.0f} ms ({len(rec.keyframes):,} blocks, {index})   "
            f"goal < {OPEN_GOAL_S:g} s: {goal(open_s < OPEN_GOAL_S)}")
        w0 = time.perf_counter()
        replay.seek(len(replay))
        last = (replay.counters_snapshot(), replay.lanes_snapshot())
        end_s = time.perf_counter() - w0
        assert last[0].tallies.elapsed > HOUR - 1
        out(f"  seek to the end + its frame: {end_s * 1000:.0f} ms   goal < {OPEN_GOAL_S:g} s: "
            f"{goal(end_s < OPEN_GOAL_S)}")
        rng = random.Random(5)
        seeks = []
        for _ in range(50):
            k = rng.randrange(len(replay) + 1)
            w0 = time.perf_counter()
            replay.seek(k)
            replay.counters_snapshot()
            replay.lanes_snapshot()
            seeks.append((time.perf_counter() - w0) * 1000)
        worst = max(seeks)
        out(f"  50 seeks to random positions + frame: median {statistics.median(seeks):.1f} ms, max {worst:.1f} ms"
            f"   goal < {SEEK_GOAL_MS:g} ms each: {goal(worst < SEEK_GOAL_MS)}")
        w0 = time.perf_counter()
        moments = replay.moments()
        moments_s = time.perf_counter() - w0
        kinds: dict[str, int] = {}
        for m in moments:
            kinds[m.kind] = kinds.get(m.kind, 0) + 1
        out(f"  moments list: {len(moments):,} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}) "
            f"in {moments_s * 1000:.0f} ms")
        live_bpe, live_events = _live_bytes_per_event(folder)
        live_mb = live_bpe * events / 1e6
        out(f"  live: {live_bpe:.1f} bytes/event over a {LIVE_SECONDS:g} s real-time run ({live_events} events); "
            f"the hour at that size: {live_mb:.1f} MB   goal < {SIZE_GOAL_MB:.0f} MB: {goal(live_mb < SIZE_GOAL_MB)}")
    return {
        "measured_on": "1 simulated hour on virtual time through the real Recorder",
        "events": events, "heartbeat_ticks": made["ticks"], "lanes_jobs": made["jobs"],
        "record_wall_s": round(wall, 1), "record_cpu_s": round(cpu, 1),
        "size_mb": round(mb, 2), "bytes_per_event": round(size / events, 1), "size_goal_mb": SIZE_GOAL_MB,
        "open_first_frame_ms": round(open_s * 1000, 1), "seek_end_ms": round(end_s * 1000, 1),
        "open_goal_ms": OPEN_GOAL_S * 1000,
        "seek_median_ms": round(statistics.median(seeks), 2), "seek_max_ms": round(worst, 2),
        "seek_goal_ms": SEEK_GOAL_MS,
        "moments": len(moments), "moments_ms": round(moments_s * 1000, 1),
        "live_bytes_per_event": round(live_bpe, 1), "live_hour_mb": round(live_mb, 2),
    }
