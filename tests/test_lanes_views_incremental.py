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
