"""Replay of a recorded lanes Scheduler is exact: at every position k the rebuilt
``lanemon.lanes.snapshot.Snapshot`` equals the live ``Scheduler.snapshot(limit=LANES_LIMIT)``
taken inside the callback of event k (every field: lanes, queues with each job's view,
occupancy, history, holds, counts). Seeded programs of submits, cancels, stops, busy
marks, held and failed saves over two queues; the clock is a manual one, moved between
actions (no sleeps)."""

import asyncio
import random

import pytest
from lanes_works import Steps

from lanemon.counters import SimConfig, Simulation
from lanemon.counters.clock import ManualClock, run_in_virtual_time
from lanemon.lanes import Scheduler
from lanemon.replay import Recorder, Replay, open_recording
from lanemon.replay.lanes_state import take_snapshot

WORKSPACES = ("alpha", "beta", "gamma")


async def program(s: Scheduler, clock: ManualClock, rng: random.Random) -> None:
    jobs: list[asyncio.Task] = []
    cancels: list[asyncio.Task] = []
    holds = []
    for _ in range(rng.randrange(25, 45)):
        clock.advance(rng.choice([0.0, 0.01, 0.25]))
        r = rng.random()
        ws = rng.choice(WORKSPACES)
        if r < 0.45:
            queue = rng.choice(tuple(s.queues))
            jobs.append(asyncio.ensure_future(s.submit(queue, ws, Steps(rng.randrange(4), rng.random() < 0.15))))
        elif r < 0.52:
            done = [t for t in jobs if t.done() and t.exception() is None]
            if done:
                cancels.append(asyncio.ensure_future(s.cancel(rng.choice(done).result())))
        elif r < 0.57:
            s.request_stop(ws)
        elif r < 0.62:
            s.mark_busy(ws, "a notebook is open")
        elif r < 0.67:
            s.clear_busy(ws)
        elif r < 0.74:
            holds.append(s.hold_save(state="succeeded", workspace=ws))
        elif r < 0.80 and holds:
            holds.pop(rng.randrange(len(holds))).release()
        elif r < 0.84 and s.store.pending_failures() < 2:
            s.fail_next_save(state="succeeded")
        else:
            for _ in range(rng.randrange(1, 6)):
                await asyncio.sleep(0)
    for h in holds:
        h.release()
    for ws in WORKSPACES:
        s.clear_busy(ws)
    for _ in range(20_000):
        if not s.stats()["live"] and all(t.done() for t in jobs + cancels):
            break
        clock.advance(0.01)
        await asyncio.sleep(0)
    await s.join()


def record_lanes(path, seed: int, keyframe_every: int):
    live = []

    async def main():
        clock = ManualClock(100.0)
        s = Scheduler(clock=clock)
        rec = Recorder(str(path), sources_info={"test": "lanes"}, clock=clock, keyframe_every=keyframe_every,
                       keyframe_ratio=0)
        rec.attach_lanes(s)
        live.append(take_snapshot(s))
        s.events.subscribe(lambda event: live.append(take_snapshot(s)))
        await program(s, clock, random.Random(seed))
        rec.close()
        assert rec.error is None
        await s.aclose()

    asyncio.run(main())
    return live


@pytest.mark.parametrize("seed", range(12))
def test_lanes_replay_equals_live_at_every_event(tmp_path, seed):
    path = tmp_path / f"lanes{seed}.jsonl.gz"
    live = record_lanes(path, seed, keyframe_every=40)
    replay = Replay(open_recording(str(path)))
    assert len(replay) == len(live) - 1 > 20 and len(replay.recording.keyframes) > 2
    for k in range(len(replay) + 1):
        replay.seek(k)
        assert replay.lanes_snapshot() == live[k], f"seed {seed}, position {k}"
        assert replay.counters_snapshot() is None
    for k in random.Random(seed).sample(range(len(replay) + 1), 30):
        replay.seek(k)
        assert replay.lanes_snapshot() == live[k]
    assert all(replay.event(i).source == "lanes" and replay.event(i).text for i in range(len(replay)))


def test_counters_and_lanes_in_one_recording(tmp_path):
    """Both sources attached: each snapshot follows its own events; at the other source's
    events it stays as it was after its own last event (the replay holds no clock that
    moves between events)."""
    path = tmp_path / "both.jsonl.gz"
    clock = ManualClock(0.0)
    sched = Scheduler(clock=clock)
    sim = Simulation(SimConfig(strategy="short_lock", customers=60, time_limit=3600.0))
    rec = Recorder(str(path), sources_info={}, clock=sim.clock.now, keyframe_every=50, keyframe_ratio=0)
    rec.attach_counters(sim)
    rec.attach_lanes(sched)
    live = [(sim.snapshot(), take_snapshot(sched))]
    sim.subscribe(lambda e: live.append((sim.snapshot(), live[-1][1])))
    sched.events.subscribe(lambda e: live.append((live[-1][0], take_snapshot(sched))))
    sched.mark_busy("alpha", "outside")  # a lanes event before the run

    async def run():
        task = asyncio.ensure_future(sim.run())
        for _ in range(5):
            await asyncio.sleep(0.5)
            sched.mark_busy("beta", "outside")
            sched.clear_busy("beta")
        await task

    run_in_virtual_time(run())
    rec.close()
    replay = Replay(open_recording(str(path)))
    assert len(replay) == len(live) - 1
    assert {replay.event(i).source for i in range(len(replay))} == {"counters", "lanes"}
    for k in range(len(replay) + 1):
        replay.seek(k)
        assert (replay.counters_snapshot(), replay.lanes_snapshot()) == live[k], k
