"""The lanes' and the history's snapshot views, updated from what changed, equal the
views built from scratch (sorted by workspace, one per lane / workspace), over seeded
random claims, releases, stop requests and runs that end."""

from __future__ import annotations

import asyncio
import random

import pytest

from lanemon.lanes import Scheduler, SimulatedWork
from lanemon.lanes.lanes import ProjectLanes


@pytest.mark.parametrize("seed", range(4))
def test_lane_views_equal_a_fresh_build(seed):
    rng = random.Random(seed)
    lanes = ProjectLanes("test")
    tokens = {}
    for step in range(3000):
        ws = f"w{rng.randrange(400):03d}"
        roll = rng.random()
        if roll < 0.5:
            t = lanes.claim(ws, f"o{step}")
            if t is not None:
                tokens[ws] = t
        elif roll < 0.9:
            t = tokens.pop(ws, None)
            if t is not None:
                lanes.release(t)
        else:
            lanes.request_stop(ws, "why")
        if rng.random() < 0.1:
            views = lanes.views()
            assert [v.workspace for v in views] == sorted(tokens)
            for v in views:
                t = tokens[v.workspace]
                assert (v.owner, v.epoch) == (t.owner, t.epoch)
                assert v.stop_requested == lanes.stop_requested(t)


def test_history_view_equals_a_fresh_build():
    async def main():
        s = Scheduler()
        rng = random.Random(7)
        seen = []
        runs: dict[str, list[int]] = {}     # from the events: each workspace's runs in order
        s.subscribe(lambda ev: runs.setdefault(ev.workspace, []).append(ev.job_id)
                    if ev.kind == "finished" else None)
        for _ in range(30):
            wss = [f"ws-{rng.randrange(300):03d}" for _ in range(rng.randrange(1, 60))]
            await s.burst("reservations", wss, SimulatedWork(0.0))
            await s.join()
            hist = s.snapshot().history
            seen.append(len(hist))
            assert list(hist) == sorted(hist)
            limit = s.history_limit
            assert {ws: [sp.job_id for sp in spans] for ws, spans in hist.items()} == \
                {ws: ids[-limit:] for ws, ids in runs.items()}
        await s.aclose()
        return seen

    seen = asyncio.run(main())
    assert seen[-1] > seen[0]


def test_lane_views_after_the_change_log_overflowed_keep_unchanged_views():
    """Nobody asked for views for long (the log of changed workspaces is bounded and then
    dropped): the next ``views()`` is still right, and a lane untouched meanwhile keeps
    its view object."""
    lanes = ProjectLanes("test")
    keep = lanes.claim("keep", "k")
    tokens = {}
    first = {v.workspace: v for v in lanes.views()}
    for step in range(3025):                  # > 4 x held + 1024 changes, no views() call
        ws = f"w{step % 50:02d}"
        t = tokens.pop(ws, None)
        if t is not None:
            lanes.release(t)
        else:
            tokens[ws] = lanes.claim(ws, f"o{step}")
    lanes.request_stop(next(iter(tokens)), "why")
    views = lanes.views()
    assert [v.workspace for v in views] == sorted([*tokens, "keep"])
    by_ws = {v.workspace: v for v in views}
    assert by_ws["keep"] is first["keep"] and by_ws["keep"].epoch == keep.epoch
    for ws, t in tokens.items():
        assert (by_ws[ws].owner, by_ws[ws].epoch) == (t.owner, t.epoch)
        assert by_ws[ws].stop_requested == lanes.stop_requested(t)


@pytest.mark.parametrize("seed", range(4))
def test_lane_views_prepared_ahead_in_steps_equal_views_without(seed):
    """``prepare_views`` (a zero budget: one chunk of the change log per call, called at
    random between changes) leaves ``views()`` exactly what a twin without it returns
    (lanes, order, fields), and a lane untouched since the last ``views()`` keeps its
    view object."""
    rng = random.Random(seed)
    clock = iter(range(10**6)).__next__
    a = ProjectLanes("test", clock=clock)
    b_clock = iter(range(10**6)).__next__
    b = ProjectLanes("test", clock=b_clock)
    ta: dict[str, object] = {}
    tb: dict[str, object] = {}
    last: dict[str, object] = {}
    touched: set[str] = set()       # claimed, released or asked to stop since the last views()
    prepared = same = 0
    for step in range(6000):
        ws = f"w{rng.randrange(300):03d}"
        touched.add(ws)
        roll = rng.random()
        if roll < 0.5:
            x, y = a.claim(ws, f"o{step}"), b.claim(ws, f"o{step}")
            if x is not None:
                ta[ws], tb[ws] = x, y
        elif roll < 0.9:
            if ws in ta:
                a.release(ta.pop(ws))
                b.release(tb.pop(ws))
        else:
            a.request_stop(ws, "why")
            b.request_stop(ws, "why")
        if rng.random() < 0.3:
            prepared += a.prepare_views(0.0)
        if rng.random() < 0.05:
            va, vb = a.views(), b.views()
            assert va == vb
            assert [v.workspace for v in va] == sorted(ta)
            kept = [v for v in va if v.workspace in last and v.workspace not in touched]
            assert all(v is last[v.workspace] for v in kept)
            same += len(kept)
            last = {v.workspace: v for v in va}
            touched.clear()
    assert prepared > 1000            # the steps took most of the log, not views()
    assert same > 100                 # (views kept by identity were compared)


def test_scheduler_prepare_snapshot_takes_the_lanes_log_and_changes_no_snapshot():
    """``Scheduler.prepare_snapshot`` builds the scheduled lanes' views ahead (their change
    log is taken) and the snapshot after it shows the same lanes as one without."""
    async def main():
        s = Scheduler()
        s.snapshot()                          # views asked for once: changes are logged
        await s.burst("reservations", [f"ws-{i:03d}" for i in range(200)], SimulatedWork(30.0))
        await asyncio.sleep(0)
        before = [(v.workspace, v.epoch) for v in s.scheduled_lanes.views()]
        s.request_stop("ws-007")
        s.prepare_snapshot(10.0)
        left = s.scheduled_lanes.prepare_views(10.0)
        snap = s.snapshot()
        await s.aclose()
        return before, left, snap

    before, left, snap = asyncio.run(main())
    assert left == 0
    assert [(v.workspace, v.epoch) for v in snap.scheduled] == before and len(before) == 200
    assert [v.workspace for v in snap.scheduled if v.stop_requested] == ["ws-007"]
