"""``lanemon agent`` (role lanes) in this process: agents as tasks on one loop, SQLite,
seeded; what they leave in the store is checked by ``lanemon.agents.audit``."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
import pytest_asyncio

from lanemon.agents import agent as agent_mod
from lanemon.agents.agent import run_agent, work_for
from lanemon.agents.audit import audit, most_at_once, overlapping_runs
from lanemon.lanes.work import CpuWork, SimulatedWork
from lanemon.store.sql import open_sql_store
from lanemon.store.sql.backend import JobSpec
from lanemon.store.sql.sqlite import SqliteBackend
from lanemon.store.url import StoreError, parse

pytestmark = pytest.mark.asyncio

TIMEOUT_S = 30.0


@pytest_asyncio.fixture
async def store(tmp_path):
    url = "sqlite:///" + str(tmp_path / "agents.db").lstrip("/") + "?lease=1"
    s = await open_sql_store(parse(url), create=True, name="test")
    yield s
    await s.close()


class Agents:
    """Agents as tasks of this loop; ``stop()`` stops them all and returns their stats."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.tasks: dict[str, asyncio.Task] = {}
        self.stops: dict[str, asyncio.Event] = {}
        self.lines: list[str] = []

    def start(self, name: str, **options) -> None:
        stop = self.stops[name] = asyncio.Event()
        self.tasks[name] = asyncio.ensure_future(run_agent(
            self.url, name=name, stop=stop, say=lambda n, text: self.lines.append(f"{n}: {text}"), **options))

    async def stop(self, *names: str) -> dict:
        names = names or tuple(self.tasks)
        for name in names:
            self.stops[name].set()
        return {name: await asyncio.wait_for(self.tasks.pop(name), TIMEOUT_S) for name in names}

    async def close(self) -> None:
        for stop in self.stops.values():
            stop.set()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


async def _until(store, predicate, what: str):
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        dump = await store.dump()
        if value := predicate(dump):
            return value
        assert time.monotonic() < deadline, f"not reached within {TIMEOUT_S} s: {what}"
        await asyncio.sleep(0.02)


def _all_terminal(n: int):
    return lambda d: d if len(d["jobs"]) == n and not audit(d).not_terminal else None


@pytest.mark.parametrize("seed", range(3))
async def test_agents_on_store_lanes_run_every_job_once_never_two_of_a_workspace_at_once(store, seed):
    rng = random.Random(seed)
    agents = Agents(store.url.text)
    try:
        for i in range(3):
            agents.start(f"a{i}", seed=seed * 10 + i, queues=["reservations", "cafe"][: rng.choice([1, 2])]
                         if i else ["reservations", "cafe"])
        specs = [JobSpec(f"w{rng.randrange(3)}", rng.choice(["reservations", "cafe"]),
                         seconds=rng.choice([0.0, 0.01, 0.03]), fail=rng.random() < 0.1) for _ in range(40)]
        ids = await store.submit(specs[:20])
        await asyncio.sleep(rng.uniform(0, 0.1))
        ids += await store.submit(specs[20:])
        dump = await _until(store, _all_terminal(40), "every job terminal")
        sessions = {s.name: s for s in await store.sessions()}
        stats = await agents.stop()
    finally:
        await agents.close()
    result = audit(dump)
    assert result.problems() == []
    assert result.most_at_once == 1
    expected = {i: "failed" if s.fail else "succeeded" for i, s in zip(ids, specs)}
    assert {j["id"]: j["state"] for j in dump["jobs"]} == expected
    assert all(j["error"] == "WorkFailed: simulated failure" for j in dump["jobs"] if j["state"] == "failed")
    ran = [i for s in stats.values() for i in s.finished]
    assert sorted(ran) == sorted(ids), "every job ran once, in one agent"
    for name, s in stats.items():
        assert {j["id"] for j in dump["jobs"] if j["owner"] == name} == set(s.finished)
        assert s.adopted == len(s.finished) + s.taken_elsewhere
        assert s.unsaved_finals == 0 and s.stale_writes == 0 and s.ended_by == "stop"
    assert {"a0", "a1", "a2"} <= set(sessions)
    info = sessions["a0"].info
    assert (info["role"], info["lanes"], info["queues"], info["strategy"]) == (
        "lanes", "store", ["reservations", "cafe"], None)
    assert dump["ledger"] == []
    after = await store.dump()
    assert after["lanes"] == [] and {s["name"] for s in after["sessions"]} == {"test"}


async def test_a_stopped_agent_finishes_its_running_jobs_and_leaves_its_waiting_ones_queued(store):
    agents = Agents(store.url.text)
    try:
        agents.start("a", grace=10.0)
        # (the first job outlasts the looks below: 1 s, while the keeper writes the info every 1/3 s)
        ids = await store.submit([JobSpec("w", "reservations", seconds=1.0)] + [JobSpec("w", "reservations")] * 3)
        await _until(store, lambda d: any(j["state"] == "running" for j in d["jobs"]), "a runs a job")
        info = await _until(store, lambda d: next((s["info"] for s in d["sessions"] if s["name"] == "a"
                                                   and s["info"].get("jobs_running") == 1), None),
                            "a says it runs one job")
        assert info["lanes_held"] == 2 and info["jobs_waiting"] == 3
        (stats,) = (await agents.stop("a")).values()
        dump = await store.dump()
    finally:
        await agents.close()
    states = [j["state"] for j in dump["jobs"]]
    assert states == ["succeeded", "queued", "queued", "queued"], states
    assert stats.finished == [ids[0]] and stats.cancelled_at_stop == 0
    assert dump["lanes"] == []
    # nothing lost: another agent takes the rest
    agents = Agents(store.url.text)
    try:
        agents.start("b")
        dump = await _until(store, _all_terminal(4), "b runs the rest")
    finally:
        await agents.close()
    assert [(j["state"], j["owner"]) for j in dump["jobs"]] == [("succeeded", "a")] + [("succeeded", "b")] * 3


async def test_after_its_grace_a_stopped_agent_cancels_its_running_job(store):
    agents = Agents(store.url.text)
    try:
        agents.start("a", grace=0.05)
        (jid,) = await store.submit([JobSpec("w", "cafe", seconds=60)])
        await _until(store, lambda d: d["jobs"][0]["state"] == "running", "a runs the job")
        (stats,) = (await agents.stop("a")).values()
        dump = await store.dump()
    finally:
        await agents.close()
    (job,) = dump["jobs"]
    assert (job["state"], job["error"], job["owner"]) == ("cancelled", "task cancelled (agent stopped)", "a")
    assert stats.cancelled_at_stop == 1 and dump["lanes"] == []


async def test_agents_on_local_lanes_run_one_workspace_twice_at_once(store):
    """``--lanes local``: the seed's in-process lanes in each agent: overlapping runs of one
    workspace (what store lanes never allow), yet each job still runs once."""
    agents = Agents(store.url.text)
    try:
        agents.start("l1", lanes="local")
        agents.start("l2", lanes="local")
        ids = await store.submit([JobSpec("w", "reservations", seconds=0.3)] * 6)
        dump = await _until(store, _all_terminal(6), "every job terminal")
        stats = await agents.stop()
    finally:
        await agents.close()
    result = audit(dump)
    assert result.overlaps and result.most_at_once == 2
    assert result.problems(local=True) == []
    assert result.problems() != []
    assert sorted(i for s in stats.values() for i in s.finished) == ids
    assert {j["owner"] for j in dump["jobs"]} == {"l1", "l2"}
    assert dump["history"] == [] and dump["ledger"] == []


async def test_a_job_taken_but_not_adopted_is_given_back_not_kept_reserved(store, monkeypatch):
    """A job the agent reserved but could not adopt (still live in it: the store re-queued it
    while its final save failed) goes back at once; the keeper renews every reservation of the
    session, so before, such a job stayed reserved by an agent that did not know it, and no
    agent ever ran it (seen with a server restart in tests/test_agents_processes.py)."""
    from lanemon.lanes import Scheduler

    real = Scheduler.adopt
    refused: list[int] = []

    def adopt(self, queue, record, work=None):
        if not refused:                       # the first job offered: "still live here"
            refused.append(record.id)
            return False
        return real(self, queue, record, work)

    monkeypatch.setattr(Scheduler, "adopt", adopt)
    agents = Agents(store.url.text)
    try:
        agents.start("a")
        ids = await store.submit([JobSpec("w", "reservations", seconds=0.05)] * 3)
        dump = await _until(store, _all_terminal(3), "every job terminal, the one refused too")
        (stats,) = (await agents.stop("a")).values()
    finally:
        await agents.close()
    assert refused == [ids[0]] and sorted(stats.finished) == ids
    assert all(j["taken_by"] is None for j in dump["jobs"])


async def test_an_agent_that_loses_its_store_stops_taking_jobs_says_so_and_comes_back(store, monkeypatch):
    down = asyncio.Event()
    real = SqliteBackend.take_jobs

    async def take_jobs(self, queues, limit):
        if down.is_set() and self.name == "a":
            raise StoreError("sqlite store: busy (injected)")
        return await real(self, queues, limit)

    monkeypatch.setattr(SqliteBackend, "take_jobs", take_jobs)
    monkeypatch.setattr(agent_mod, "BACKOFF_MIN_S", 0.01)
    agents = Agents(store.url.text)
    try:
        agents.start("a")
        await store.submit([JobSpec("w", "reservations", seconds=0.6)]
                           + [JobSpec("w", "reservations", seconds=0.1)] * 2)
        await _until(store, lambda d: any(j["state"] == "running" for j in d["jobs"]), "a runs a job")
        down.set()
        lost = await _until(store, lambda d: next((s["info"] for s in d["sessions"] if s["name"] == "a"
                                                   and s["info"]["store"] == "lost"), None), "a says it lost")
        assert lost["jobs_waiting"] == 0  # let go: they stay queued in the store
        await _until(store, lambda d: [j["state"] for j in d["jobs"]] == ["succeeded", "queued", "queued"],
                     "its running job ends, the others wait in the store")
        more = await store.submit([JobSpec("v", "reservations")])
        await asyncio.sleep(0.2)  # (nothing to wait for: a lost agent must not take it)
        assert (await store.dump())["jobs"][-1]["state"] == "queued"
        down.clear()
        dump = await _until(store, _all_terminal(4), "a takes jobs again")
        (stats,) = (await agents.stop("a")).values()
    finally:
        await agents.close()
    assert [line for line in agents.lines if "store" in line and "lost" in line][:1] == [
        "a: store lost: sqlite store: busy (injected); not taking jobs, retrying"]
    assert sum("store lost:" in line for line in agents.lines) == 1  # said once, not per retry
    assert any(line.startswith("a: store back after") for line in agents.lines)
    assert stats.store_lost == 1 and len(stats.finished) == 4 and more[0] in stats.finished
    assert audit(dump).problems() == []


async def test_the_work_of_a_stored_job():
    assert isinstance(work_for(JobSpec("w", "cafe", cpu_ms=20.0)), CpuWork)
    sim = work_for(JobSpec("w", "cafe", seconds=1.5, fail=True))
    assert isinstance(sim, SimulatedWork) and sim.duration == 1.5 and sim.fail
    assert work_for(JobSpec("w", "cafe")).duration == 0.0


async def test_overlapping_runs_and_most_at_once():
    jobs = [
        {"id": 1, "workspace": "a", "start": 0.0, "end": 2.0},
        {"id": 2, "workspace": "a", "start": 2.0, "end": 3.0},   # touches 1: [start, end) does not overlap
        {"id": 3, "workspace": "a", "start": 1.0, "end": 2.5},   # overlaps 1 and 2
        {"id": 4, "workspace": "b", "start": 1.0, "end": 5.0},
        {"id": 5, "workspace": "b", "start": 4.0, "end": None},  # still running: overlaps 4
        {"id": 6, "workspace": "a", "start": None, "end": None},  # never ran
    ]
    assert overlapping_runs(jobs) == [("a", 1, 3), ("a", 3, 2), ("b", 4, 5)]
    assert most_at_once(jobs) == 2
    assert most_at_once(jobs[:2]) == 1 and most_at_once([]) == 0


async def test_audit_words_each_broken_rule():
    dump = {"now": 10.0, "jobs": [{"id": 1, "workspace": "a", "state": "running", "start": 1.0, "end": None},
                                  {"id": 2, "workspace": "a", "state": "succeeded", "start": 2.0, "end": 3.0}],
            "history": [{"epoch": 1, "lane": "scheduled", "workspace": "a", "claimed_at": 0.0, "ended_at": None},
                        {"epoch": 2, "lane": "scheduled", "workspace": "a", "claimed_at": 1.0, "ended_at": 2.0},
                        {"epoch": 2, "lane": "scheduled", "workspace": "b", "claimed_at": 1.0, "ended_at": 2.0}],
            "ledger": [{"at": 1.5, "writer": "x", "job": 2, "state": "succeeded", "lane": "scheduled",
                        "workspace": "a", "epoch_held": 1, "epoch_current": 2}]}
    result = audit(dump)
    text = "\n".join(result.problems())
    for says in ("overlapping runs", "epochs granted twice: [2]", "two owners at once", "jobs not terminal: [1]",
                 "not stale"):
        assert says in text
    assert "overlapping" not in "\n".join(result.problems(local=True))


async def test_the_agent_modules_import_neither_qt_nor_numpy():
    import subprocess
    import sys
    code = ("import sys, lanemon.agents.agent, lanemon.agents.audit; "
            "print(sorted(m for m in ('numpy', 'PySide6', 'qasync', 'pyqtgraph') if m in sys.modules))")
    out = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=60, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_failed_claim_with_polls_that_work_is_a_lost_store_too(store, monkeypatch):
    """A short outage can be waited out inside a poll (PostgreSQL's pool waits for a
    connection): the operation that met the broken connection first -- here a claim -- is what
    tells the agent, through its session's error count."""
    down = asyncio.Event()
    real = SqliteBackend.claim_lane

    async def claim_lane(self, name, workspace, owner):
        if down.is_set() and self.name == "a":
            self.count_error("connection lost (injected)")
            raise StoreError("connection lost (injected)")
        return await real(self, name, workspace, owner)

    monkeypatch.setattr(SqliteBackend, "claim_lane", claim_lane)
    monkeypatch.setattr(agent_mod, "BACKOFF_MIN_S", 0.01)
    agents = Agents(store.url.text)
    try:
        agents.start("a")
        await _sessions_up_in(store, "a")
        down.set()
        await store.submit([JobSpec("w", "reservations")])
        deadline = time.monotonic() + TIMEOUT_S
        while not any("store lost:" in line for line in agents.lines):
            assert time.monotonic() < deadline, agents.lines
            await asyncio.sleep(0.01)
        down.clear()
        dump = await _until(store, _all_terminal(1), "a runs the job once the claims work")
        (stats,) = (await agents.stop("a")).values()
    finally:
        await agents.close()
    assert "a: store lost: connection lost (injected); not taking jobs, retrying" in agents.lines
    assert any(line.startswith("a: store back after") for line in agents.lines)
    assert stats.store_lost == 1 and stats.claim_errors >= 1 and dump["jobs"][0]["owner"] == "a"


async def _sessions_up_in(store, name: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while name not in {s.name for s in await store.sessions()}:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
