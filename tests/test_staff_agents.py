"""Staff agents in real processes on one store: the counters scenario across processes.

Every test starts three ``python -m lanemon.agents.staff`` processes (one staff
member each) on one store -- an SQLite file, or a database of the throwaway
PostgreSQL cluster -- with **one counter**. They begin together (a start file
the test makes once every agent has its session), guides last 0.2-0.6 s and
services 0.5-1.5 s (seeded: [0.5, 1.5] x the means 0.4 and 1.0). So every
agent's first choice is the one counter, all three seat within 0.4 s of each
other, and the first one seated is still there: a lock that does not serialise
across processes double-assigns in the first round, for certain, not by luck
(checked: the long lock with a process-local lock fails the long test):

* ``short``: the store lock covers only the choice: doubles > 0, counted by
  the store, and a board row shows two customers of two different agents;
* ``long``: the store lock covers choose + guide + assign: zero doubles,
  while the agents did wait for each other's lock (retries > 0);
* ``claim``: zero doubles, and claims were refused or no counter was found
  (the agents did contend).

Then the store lock under a pause: the long-lock agent holding it is SIGSTOPped on a store
with a 1 s lease; the lock passes to another agent; resumed, the paused one's release is
refused. The agents stop on SIGTERM and exit 0; no process is left (``os.kill(pid, 0)``).
Conditions are polled from the store with a generous timeout; nothing is timed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engines import open_test_store
from procs import LoggedProcesses

import lanemon
from lanemon.agents.staff import LOCK_LANE, LOCK_WORKSPACE, LockLost, StaffStats, StoreLock

pytestmark = pytest.mark.asyncio

ROOT = str(Path(lanemon.__file__).resolve().parent.parent)
TIMEOUT_S = 90.0
AGENTS = ("a1", "a2", "a3")


class Agents(LoggedProcesses):
    """The staff agent processes of one test; ``close()`` leaves none behind."""

    what = "staff agent"

    def __init__(self, url: str, folder: Path) -> None:
        super().__init__(folder)
        self.url = url

    def start(self, name: str, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        with open(self.folder / f"{name}.log", "w") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "lanemon.agents.staff", "--store", self.url, "--name", name,
                 "--stats", str(self.folder / f"{name}.json"), *args],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)

    async def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + TIMEOUT_S
        for name, proc in self.procs.items():
            while proc.poll() is None:
                assert time.monotonic() < deadline, f"{name} did not stop:\n{self.log(name)}"
                await asyncio.sleep(0.05)
            assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{self.log(name)}"

    def close(self) -> None:
        self.kill_all()
        for proc in self.procs.values():
            with pytest.raises(ProcessLookupError):
                os.kill(proc.pid, 0)


async def _until(claims, predicate, what: str, agents: Agents):
    """Re-read the store's board until ``predicate(claims)`` is truthy; return that value."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        await claims.refresh()
        value = predicate(claims)
        if value:
            return value
        for name, proc in agents.procs.items():
            assert proc.poll() is None, f"agent {name} exited early:\n{agents.log(name)}"
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {TIMEOUT_S} s: {what}")
        await asyncio.sleep(0.05)


async def _all_registered(store, agents: Agents) -> None:
    """Until every agent's session is in the store's ``sessions``."""
    deadline = time.monotonic() + TIMEOUT_S
    while not set(agents.procs) <= {s["name"] for s in (await store.dump())["sessions"]}:
        for name, proc in agents.procs.items():
            assert proc.poll() is None, f"agent {name} exited early:\n{agents.log(name)}"
        assert time.monotonic() < deadline, "the agents did not open their sessions"
        await asyncio.sleep(0.05)


def _agent_of(customer: str) -> str:
    return customer.split("/", 1)[0]


async def _scenario(request, tmp_path, engine: str, strategy: str, until, what: str):
    """Three agents of ``strategy`` on one counter until ``until(claims)``; returns the
    value it gave, the store's board counts and each agent's stats after a SIGTERM."""
    store = await open_test_store(request, engine)
    agents = Agents(store.url.text, tmp_path)
    try:
        claims = store.claims(counters=1)
        await claims.refresh()
        go = tmp_path / "go"
        for seed, name in enumerate(AGENTS):
            agents.start(name, "--strategy", strategy, "--counters", "1", "--staff", "1", "--seed", str(seed),
                         "--guide", "0.4", "--service", "1.0", "--start-file", str(go))
        await _all_registered(store, agents)
        go.touch()   # all three begin within one poll of each other (START_POLL_S)
        seen = await _until(claims, until, what, agents)
        await agents.stop_all()
        await claims.refresh()
        counts = claims.counts()
        stats = {name: agents.stats(name) for name in AGENTS}
    finally:
        agents.close()
        await store.close()
    assert set(stats[AGENTS[0]]) == {f.name for f in StaffStats.__dataclass_fields__.values()}
    return seen, counts, stats


def _two_agents_on_one_counter(claims):
    for view in claims.views():
        if len({_agent_of(c) for c in view.customers}) >= 2:
            return view.customers
    return None


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_short_lock_agents_double_assign_for_real(request, tmp_path, engine):
    seated, counts, stats = await _scenario(
        request, tmp_path, engine, "short", _two_agents_on_one_counter,
        "a counter with customers of two agents")
    assert len({_agent_of(c) for c in seated}) >= 2
    assert counts.double_assignments > 0
    # every double was an agent's blind assign, counted by that agent and by the store
    assert sum(s["doubles"] for s in stats.values()) == counts.double_assignments
    assert all(s["ended_by"] == "stop" and s["errors"] == 0 for s in stats.values())


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_long_lock_agents_serialise_across_processes(request, tmp_path, engine):
    _, counts, stats = await _scenario(
        request, tmp_path, engine, "long", lambda c: c.counts().assigned >= 4, "four customers seated")
    assert counts.double_assignments == 0
    assert counts.assigned >= 4
    assert sum(s["lock_retries"] for s in stats.values()) > 0   # they waited for each other's lock
    assert sum(s["doubles"] for s in stats.values()) == 0
    assert all(s["errors"] == 0 for s in stats.values())


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_claim_agents_never_double_assign(request, tmp_path, engine):
    _, counts, stats = await _scenario(
        request, tmp_path, engine, "claim", lambda c: c.counts().finalized >= 4, "four claims finalized")
    assert counts.double_assignments == 0
    assert counts.finalized >= 4
    assert counts.assigned == 0   # no blind write at all
    assert counts.claim_refused + sum(s["no_counter"] for s in stats.values()) > 0   # they contended
    assert all(s["errors"] == 0 for s in stats.values())


async def test_the_store_lock_is_one_holder_store_wide_and_fenced_by_its_epoch(request):
    """Two sessions (two processes' worth) on one SQLite store: the second waits until the
    first releases; a holder whose lane was revoked (its lease ran out while paused) is told
    by ``check`` not to write, and its release is refused and counted."""
    first = await open_test_store(request, "sqlite")
    from lanemon.store import url as store_url
    from lanemon.store.sql import open_sql_store

    second = await open_sql_store(store_url.parse(first.url.text), name="second")
    try:
        import random

        stop = asyncio.Event()
        stats1, stats2 = StaffStats(name="one"), StaffStats(name="two")
        lock1 = StoreLock(first.lanes(LOCK_LANE, clock=time.time, emit=None), first.backend, stats1,
                          stop=stop, rng=random.Random(1))
        lock2 = StoreLock(second.lanes(LOCK_LANE, clock=time.time, emit=None), second.backend, stats2,
                          stop=stop, rng=random.Random(2))
        order = []
        async with lock1.hold("one/S1"):
            waiter = asyncio.create_task(_take(lock2, "two/S1", order))
            while stats2.lock_retries < 3:      # the other session tries and is refused
                await asyncio.sleep(0.005)
            order.append("one releases")
        await waiter
        assert order == ["one releases", "two holds"]

        async with lock1.hold("one/S1"):
            await lock1.check("one/S1")         # current: no error
            await first.backend.revoke_lane(LOCK_LANE, LOCK_WORKSPACE)   # as a lease running out would
            with pytest.raises(LockLost):
                await lock1.check("one/S1")
            await lock1.check("one/S2")         # (not the holder: nothing to fence)
        assert stats1.lock_lost == 1
    finally:
        await second.close()
        await first.close()


async def _take(lock: StoreLock, staff: str, order: list) -> None:
    async with lock.hold(staff):
        order.append("two holds")


async def test_agents_started_together_on_a_new_sqlite_file_all_open_it(tmp_path, monkeypatch):
    """Two sessions that both found the file empty (the interleaving forced: the second one's
    look is made to see no table, as it would had it looked before the first one made them)
    both open it: the second finds the schema made, inside its own transaction."""
    from lanemon.store.sql import open_sql_store
    from lanemon.store.sql.backend import SCHEMA_VERSION
    from lanemon.store.sql.sqlite import SqliteBackend
    from lanemon.store.url import parse

    url = parse("sqlite:///" + str(tmp_path / "new.db").lstrip("/"))
    first = await open_sql_store(url, create=True, name="first")
    monkeypatch.setattr(SqliteBackend, "_tables", lambda self: set())
    second = await open_sql_store(url, create=True, name="second")
    try:
        assert second.backend.schema_version == SCHEMA_VERSION
        assert {s["name"] for s in (await second.dump())["sessions"]} == {"first", "second"}
    finally:
        await second.close()
        await first.close()


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_a_paused_lock_holder_loses_the_store_lock_with_its_lease(request, tmp_path, engine):
    """Long-lock agents on a store with a 1 s lease: the agent holding the store lock is
    SIGSTOPped (mid-guide: guides last 2-6 s); the lock passes to another agent once the
    lease ran out; resumed, the paused agent's release is refused (``lock_lost``)."""
    store = await open_test_store(request, engine, lease=1)
    agents = Agents(store.url.text, tmp_path)
    try:
        claims = store.claims(counters=2)
        await claims.refresh()
        go = tmp_path / "go"
        for seed, name in enumerate(AGENTS):
            agents.start(name, "--strategy", "long", "--counters", "2", "--seed", str(seed),
                         "--guide", "4.0", "--service", "0.2", "--start-file", str(go))
        await _all_registered(store, agents)
        go.touch()

        async def lock_row():
            lanes = (await store.dump())["lanes"]
            return next((lane for lane in lanes if lane["lane"] == LOCK_LANE), None)

        deadline = time.monotonic() + TIMEOUT_S
        while (held := await lock_row()) is None:
            assert time.monotonic() < deadline, "nobody took the store lock"
            await asyncio.sleep(0.02)
        paused = _agent_of(held["owner"])
        agents.procs[paused].send_signal(signal.SIGSTOP)
        while True:   # the lock passes on: another agent holds it under a newer epoch
            row = await lock_row()
            if row is not None and _agent_of(row["owner"]) != paused and row["epoch"] > held["epoch"]:
                break
            assert time.monotonic() < deadline, "the paused holder's lock never passed on"
            await asyncio.sleep(0.05)
        agents.procs[paused].send_signal(signal.SIGCONT)
        await agents.stop_all()
        stats = {name: agents.stats(name) for name in AGENTS}
    finally:
        agents.close()
        await store.close()
    assert stats[paused]["lock_lost"] >= 1
    assert all(s["errors"] == 0 for s in stats.values())


async def test_run_staff_says_who_it_is_and_returns_its_counts(tmp_path, monkeypatch):
    """In this process: ``run_staff`` sets its session's info where the store has
    ``set_info`` (contract 2, faked until it is merged), seats customers, and leaves the
    board as it found it (its seated customers leave at the end)."""
    from lanemon.agents.staff import run_staff
    from lanemon.store.sql import SqlStore, open_sql_store
    from lanemon.store.url import parse

    said = []

    async def set_info(self, info):
        said.append((self.session, dict(info)))

    monkeypatch.setattr(SqlStore, "set_info", set_info, raising=False)
    url = "sqlite:///" + str(tmp_path / "s.db").lstrip("/")
    stats = await run_staff(url, name="desk", strategy="claim", staff=2, counters=3, seed=4,
                            stop=asyncio.Event(), served=4, guide_time=0.01, service_time=0.05)
    assert said == [(stats.session, {"role": "staff", "strategy": "claim", "staff": 2, "counters": 3,
                                     "lanes": "store", "queues": [], "jobs_running": 0, "lanes_held": 0})]
    assert stats.ended_by == "served" and stats.served >= 4 and stats.vacated == stats.served
    assert stats.store["finalized"] == stats.served and stats.store["double_assignments"] == 0
    store = await open_sql_store(parse(url), name="look")
    try:
        claims = store.claims(counters=3)
        await claims.refresh()
        assert all(not v.customers for v in claims.views())
    finally:
        await store.close()
