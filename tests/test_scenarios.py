"""The four scenarios' Qt-free scripts (``lanemon.agents.scenarios``) with real ``lanemon
agent`` processes on a throwaway SQLite store, each until its proof; sizes shortened
(``ScenarioOptions``): a 1 s lease, short jobs, short measuring windows. Every wait is for a
condition read from the store (inside the script), with a generous timeout; afterwards no
agent process is left and the throwaway store's folder is gone.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from lanemon import procs
from lanemon.agents.fleet import Fleet
from lanemon.agents.scenarios import SCENARIOS, ScenarioOptions, ScenarioRun, with_lease

FAST = ScenarioOptions(lease_s=1.0, long_job_s=4.0, workspaces=2, jobs_per_ws=4, job_s=0.6,
                       counters_window_s=2.0, wait_s=90.0)


def _exists(path: str) -> bool:
    return os.path.exists(path)


async def _run(key: str, options: ScenarioOptions = FAST, url: str | None = None):
    fleet = Fleet()
    run = ScenarioRun(key, fleet, url, options=options)
    folder = run.folder
    assert (folder is None) == (url is not None)
    assert folder is None or _exists(folder)
    seen = []
    task = asyncio.ensure_future(run.run())
    try:
        while not task.done():
            st = run.status()
            if not seen or seen[-1].version != st.version:
                seen.append(st)
            await asyncio.sleep(0.05)
        await task
        final = run.status()
        pids = [a.pid for a in fleet.agents()]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await run.aclose()
        await fleet.aclose()
    assert folder is None or not _exists(folder), "the throwaway store was not removed"
    assert all(procs.state(pid) is None for pid in pids), "an agent process is left"
    return run, final, seen


def test_with_lease_sets_the_lease_and_keeps_other_options():
    assert with_lease("sqlite:///tmp/a.db", 2) == "sqlite:///tmp/a.db?lease=2"
    assert with_lease("sqlite:///tmp/a.db?lease=10", 1.5) == "sqlite:///tmp/a.db?lease=1.5"
    assert with_lease("postgresql://u:p@h:5/db?sslmode=off&lease=9", 2) == \
        "postgresql://u:p@h:5/db?sslmode=off&lease=2"


@pytest.mark.asyncio
async def test_overlap_local_lanes_overlap_then_store_lanes_add_none():
    run, final, seen = await _run("overlap")
    assert final.state == "proved", final.error
    assert run.result["local_overlaps"] > 0
    assert run.result["new_overlaps"] == 0
    assert final.throwaway
    # it was described step by step while it ran, with live figures
    assert [s.step for s in seen if s.state == "running"][-1] == SCENARIOS["overlap"].steps
    assert any(f.name == "overlapping runs (local lanes)" and f.value != "0" for s in seen for f in s.figures)


@pytest.mark.asyncio
async def test_pause_past_the_lease_the_resumed_agents_write_is_in_the_ledger():
    run, final, seen = await _run("pause")
    assert final.state == "proved", final.error
    row = run.result["ledger"]
    assert row["writer"] == run.result["paused"] and row["job"] == run.result["job"]
    # (the ledger names the first fence that failed: the job's queue lane or its scheduled one)
    assert run.result["lanes_held"][row["lane"]] == row["epoch_held"]
    assert row["epoch_current"] is not None and row["epoch_held"] < row["epoch_current"]
    # the job ran to its end once, by the other agent
    assert run.result["final"]["state"] == "succeeded" and run.result["final"]["owner"] != run.result["paused"]
    assert any("PAUSED" in s.caption for s in seen) and any("RESUMED" in s.caption for s in seen)


@pytest.mark.asyncio
async def test_kill_mid_job_frees_the_lane_by_the_dead_owner_rule_and_nothing_stays_claimed():
    run, final, seen = await _run("kill")
    assert final.state == "proved", final.error
    job = run.result["final"]
    assert run.result["end_reason"] == "expired"
    assert job["state"] in ("succeeded", "failed")
    if job["state"] == "failed":
        assert job["error"] == "owner died"
    else:
        assert job["owner"] != run.result["killed"] and job["attempts"] >= 2
    assert run.result["lanes_left"] == 0


@pytest.mark.asyncio
async def test_counters_short_doubles_long_and_claim_none():
    run, final, seen = await _run("counters")
    assert final.state == "proved", final.error
    assert run.result["short"]["doubles"] > 0
    assert run.result["long"]["doubles"] == 0
    assert run.result["claim"]["doubles"] == 0
    assert run.result["long"]["seated"] > 0 and run.result["claim"]["seated"] > 0


@pytest.mark.asyncio
async def test_stopping_a_scenario_stops_its_agents():
    fleet = Fleet()
    run = ScenarioRun("pause", fleet, options=FAST)
    task = asyncio.ensure_future(run.run())
    try:
        for _ in range(2400):
            if len([a for a in fleet.agents() if a.alive]) == 2 or task.done():
                break
            await asyncio.sleep(0.05)
        assert len(fleet.live()) == 2, run.status().error
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await run.aclose()
        assert fleet.live() == []
        assert run.status().state == "stopped"
    finally:
        task.cancel()
        await run.aclose()
        await fleet.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["pause", "kill"])
async def test_pause_and_kill_on_a_given_postgresql_store(request, key):
    """On a store that was given (a database of the throwaway PostgreSQL cluster): the agents
    get it with a short lease, the scenario reaches its proof, nothing is removed."""
    url = request.getfixturevalue("postgres_url")
    run, final, _seen = await _run(key, url=url)
    assert final.state == "proved", final.error
    assert not final.throwaway and run.result["job"] > 0
    if key == "pause":
        row = run.result["ledger"]
        assert row["writer"] == run.result["paused"]
        assert row["epoch_current"] is not None and row["epoch_held"] < row["epoch_current"]
    else:
        assert run.result["final"]["state"] in ("succeeded", "failed") and run.result["lanes_left"] == 0
