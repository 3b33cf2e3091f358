"""``lanemon agent`` as real OS processes on one store (SQLite file; PostgreSQL through the
``postgres_url`` fixture), with a 1-second lease.

Each case starts four agents (``python -m lanemon agent``), submits jobs over four
workspaces in both queues, and runs a SEEDED schedule over them:

* **pause**: an agent that runs a job is SIGSTOPped (checked still mid-job under its
  current lane after the stop, else resumed and another tried), kept stopped until the
  store shows its lane expired and its job taken by another agent under a new epoch
  (longer than the lease), then SIGCONTed: its late final save must be refused by the
  fence and be in the ledger (writer, job, the epoch it held);
* **kill**: an agent that runs a job is SIGKILLed mid-job: its lanes come free by the
  dead-owner rule (lease; on PostgreSQL at once, its session lock), its job is re-queued
  and run by another agent (or ends ``owner died``);

then SIGTERM to every live agent (each exits 0) and, from ``lanemon store dump --json``
run as a subprocess: no overlapping runs of one workspace, unique epochs, no lane held
by two owners at once, every job terminal (a job is one row: one terminal state), every
ledger row a stale write (its epoch ended before it), every paused agent's late final save
among them, each job saved terminal by one agent, and no process left behind (the agents
carry a marker in their environment; none is found afterwards).

With ``--lanes local`` (each agent its own in-memory lanes) the same store SHOWS
overlapping runs of one workspace, and still runs each job once.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from engines import open_test_store
from postgres import skip_or_fail
from procs import LoggedProcesses, wait_until_none_left

import lanemon
from lanemon.agents.audit import TERMINAL, audit
from lanemon.procs import alive, children
from lanemon.store.sql.backend import JobSpec
from lanemon.store.url import StoreError

pytestmark = pytest.mark.asyncio

ENGINES = ["sqlite", "postgresql"]
LEASE = 1
TIMEOUT_S = 60.0
ROOT = str(Path(lanemon.__file__).resolve().parent.parent)
MARK = "LANEMON_AGENT_TEST"


class Agents(LoggedProcesses):
    """The agent processes of one test; ``close()`` leaves none behind."""

    what = "agent"

    def __init__(self, url: str, folder: Path) -> None:
        super().__init__(folder)
        self.url = url
        self.marker = uuid.uuid4().hex

    def start(self, name: str, *more: str) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env[MARK] = self.marker
        log = open(self.folder / f"{name}.log", "w")
        proc = subprocess.Popen([sys.executable, "-m", "lanemon", "agent", "--store", self.url, "--name", name,
                                 "--stats", str(self.folder / f"{name}.json"), *more],
                                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        log.close()
        self.procs[name] = proc
        return proc

    def signal(self, name: str, sig: int) -> None:
        self.procs[name].send_signal(sig)

    async def wait(self, name: str, timeout_s: float = TIMEOUT_S) -> int:
        return await super().wait(name, timeout_s)

    def close(self) -> list:
        self.kill_all()
        return wait_until_none_left(MARK, self.marker, 10)


async def _store(request, engine: str):
    return await open_test_store(request, engine, lease=LEASE)


async def _until(store, predicate, what: str, timeout_s: float = TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    while True:
        dump = await store.dump()
        if value := predicate(dump):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {what}")
        await asyncio.sleep(0.02)


async def _writable(store) -> bool:
    """False when a stopped process holds SQLite's write lock (a SIGSTOP landed inside one of
    its transactions: no lease ends that; see DEVELOPERS.md)."""
    try:
        await asyncio.wait_for(store.backend.renew(), 8)
    except (TimeoutError, StoreError):
        return False
    return True


def _running_of(names, rng: random.Random | None = None, left_s: float = 0.15):
    """A predicate: (agent, job id, epoch) of a job running under a current lane of one of
    ``names`` with at least ``left_s`` of its work left by the store clock (a seeded choice
    among them with ``rng``)."""
    def find(dump):
        lanes = {(lane["workspace"], lane["epoch"]) for lane in dump["lanes"] if lane["lane"] == "scheduled"}
        found = sorted((job["owner"], job["id"], job["epoch"]) for job in dump["jobs"]
                       if job["state"] == "running" and job["owner"] in names
                       and (job["workspace"], job["epoch"]) in lanes
                       and job["start"] + job["seconds"] - dump["now"] >= left_s)
        if not found:
            return None
        return rng.choice(found) if rng is not None else found[0]
    return find


def _all_terminal(n: int):
    return lambda d: d if len(d["jobs"]) == n and not audit(d).not_terminal else None


def _dump_json(url: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "lanemon", "store", "dump", "--store", url, "--json"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


async def _sessions_up(store, names) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not set(names) <= {s.name for s in await store.sessions()}:
        assert time.monotonic() < deadline, "the agents did not register"
        await asyncio.sleep(0.05)


async def _pause(store, agents: Agents, live: list[str], rng: random.Random) -> tuple[str, int, int]:
    """SIGSTOP an agent mid-job past its lease until its job runs elsewhere, then SIGCONT."""
    while True:
        victim, job, epoch = await _until(store, _running_of(live, rng), "an agent runs a job")
        agents.signal(victim, signal.SIGSTOP)
        if _running_of([victim])(await store.dump()) == (victim, job, epoch) and await _writable(store):
            break  # stopped mid-job, its lane current
        agents.signal(victim, signal.SIGCONT)  # between operations: try again
    def taken(d):
        row = next(j for j in d["jobs"] if j["id"] == job)
        ended = next(h for h in d["history"] if h["epoch"] == epoch)["ended_at"] is not None
        return ended and row["epoch"] not in (None, epoch)
    await _until(store, taken, f"{victim}'s lane expires and its job runs elsewhere")
    agents.signal(victim, signal.SIGCONT)
    # (the ledger names the first fence that failed: the job's queue lane, or its scheduled one)
    await _until(store, lambda d: any(e["writer"] == victim and e["job"] == job for e in d["ledger"]),
                 f"the resumed {victim}'s late write is refused")
    return victim, job, epoch


async def _kill(store, agents: Agents, live: list[str], rng: random.Random) -> tuple[str, int, int]:
    victim, job, epoch = await _until(store, _running_of(live, rng), "an agent runs a job")
    agents.signal(victim, signal.SIGKILL)
    assert await agents.wait(victim) == -signal.SIGKILL
    live.remove(victim)
    return victim, job, epoch


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("engine", ENGINES)
async def test_agents_paused_killed_and_stopped_leave_the_store_consistent(request, tmp_path, engine, seed):
    rng = random.Random(seed)
    store = await _store(request, engine)
    agents = Agents(store.url.text, tmp_path)
    left = ["?"]
    try:
        live = [f"a{i}" for i in range(4)]
        for i, name in enumerate(live):
            agents.start(name, "--seed", str(seed * 10 + i))
        await _sessions_up(store, live)
        ids: list[int] = []
        paused, killed = [], []
        for action in rng.sample(["pause", "kill", "pause"], 3):
            # a wave of jobs before each action: something is running when it comes
            specs = [JobSpec(f"w{i % 4}", rng.choice(["reservations", "cafe"]),
                             seconds=rng.choice([0.05, 0.1, 0.3, 0.6])) for i in range(12)]
            specs += [JobSpec(f"w{rng.randrange(4)}", "cafe", cpu_ms=5.0)]  # (placed on the loop)
            specs += [JobSpec(f"w{rng.randrange(4)}", "reservations", seconds=0.05, fail=True)]
            rng.shuffle(specs)
            ids += await store.submit(specs)
            await asyncio.sleep(rng.uniform(0, 0.3))
            if action == "pause":
                paused.append(await _pause(store, agents, live, rng))
            else:
                killed.append(await _kill(store, agents, live, rng))
        await _until(store, _all_terminal(len(ids)), "every job terminal")
        for name in live:
            agents.signal(name, signal.SIGTERM)
        for name in live:
            assert await agents.wait(name) == 0, agents.log(name)
        dump = _dump_json(store.url.text)
    finally:
        left = agents.close()
        await store.close()
    assert left == [], f"processes left behind: {left}"
    for name in agents.procs:
        assert not alive(agents.procs[name].pid)

    result = audit(dump)
    assert result.problems() == [], result.problems()
    assert result.most_at_once == 1 and result.jobs == len(ids)
    jobs = {j["id"]: j for j in dump["jobs"]}
    for job in dump["jobs"]:
        if job["state"] == "failed":
            assert job["error"] in ("WorkFailed: simulated failure", "owner died") or job["error"].startswith(
                "final save failed"), job
        assert job["owner"] in agents.procs, job
    for victim, job_id, epoch in killed:  # re-queued and run by another, or "owner died"
        assert next(h for h in dump["history"] if h["epoch"] == epoch)["end_reason"] in ("expired", "released")
        job = jobs[job_id]
        if job["epoch"] == epoch and job["owner"] == victim and job["state"] == "succeeded":
            continue  # it ended in the instant between the look and the kill (a loaded machine)
        if job["error"] != "owner died":  # (owner died keeps the dead owner's epoch and name)
            assert job["epoch"] != epoch and job["attempts"] >= 2 and job["owner"] != victim, job
    writers = {victim for victim, _, _ in paused}
    for victim, job_id, epoch in paused:
        late = [e for e in dump["ledger"] if e["writer"] == victim and e["job"] == job_id]
        assert late and late[0]["state"] == "succeeded", (victim, late)  # its final save, refused
        assert all(e["epoch_held"] < epoch + 1 and e["epoch_current"] != e["epoch_held"] for e in late), late
        assert jobs[job_id]["owner"] != victim or jobs[job_id]["epoch"] != epoch
    # (only the paused ones are refused on a quiet machine; an agent starved past its lease on a
    # loaded one is refused too -- the same rule, checked for every row by the audit above)
    assert writers <= {e["writer"] for e in dump["ledger"]} <= set(agents.procs), dump["ledger"]
    assert dump["stats"]["stale_writes"] == len(dump["ledger"]) >= len(paused)
    assert dump["lanes"] == []
    for name in live:
        stats = agents.stats(name)
        assert stats["ended_by"] == "stop" and stats["cancelled_at_stop"] == 0
    survivors = [name for name in agents.procs if name not in {v for v, _, _ in killed}]
    ran = [i for name in survivors for i in agents.stats(name)["finished"]]
    assert len(ran) == len(set(ran)), "a job was saved terminal by two agents"
    assert set(ran) == {j["id"] for j in dump["jobs"] if j["owner"] in survivors}
    for victim, job_id, _ in paused:
        if victim in survivors:  # (one paused, then killed, wrote no stats)
            assert job_id in agents.stats(victim)["unsaved"]  # (it may have run it again, re-queued)


@pytest.mark.parametrize("engine", ENGINES)
async def test_many_agents_run_every_job_exactly_once_each_taken_by_one_agent(request, tmp_path, engine):
    """Six agents on one store: each job is reserved by one of them (adopted once in all: no
    herd of refused running saves), run once, never two runs of one workspace at once."""
    store = await open_test_store(request, engine, lease=5.0)  # (no reservation runs out on a slow machine)
    agents = Agents(store.url.text, tmp_path)
    names = [f"n{i}" for i in range(6)]
    try:
        for i, name in enumerate(names):
            agents.start(name, "--seed", str(i))
        await _sessions_up(store, names)
        rng = random.Random(6)
        ids = await store.submit([JobSpec(f"w{i % 10}", rng.choice(["reservations", "cafe"]),
                                          seconds=rng.choice([0.0, 0.01, 0.02])) for i in range(240)])
        await _until(store, _all_terminal(len(ids)), "every job terminal")
        for name in names:
            agents.signal(name, signal.SIGTERM)
        for name in names:
            assert await agents.wait(name) == 0, agents.log(name)
        dump = _dump_json(store.url.text)
    finally:
        left = agents.close()
        await store.close()
    assert left == []
    result = audit(dump)
    assert result.problems() == [] and result.most_at_once == 1 and result.jobs == len(ids)
    assert {j["state"] for j in dump["jobs"]} == {"succeeded"}
    assert all(j["taken_by"] is None for j in dump["jobs"])     # (a save ends a reservation)
    stats = [agents.stats(name) for name in names]
    ran = sorted(i for st in stats for i in st["finished"])
    assert ran == ids                                          # each job run and saved by one agent
    # reserved, not herded: each job adopted by one agent (before: by every agent, N-1 refused)
    assert sum(st["adopted"] for st in stats) == len(ids), [st["adopted"] for st in stats]
    assert sum(st["taken_elsewhere"] for st in stats) == 0
    assert len({j["owner"] for j in dump["jobs"]}) >= 2        # (and more than one of them worked)


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_agent_killed_holding_reservations_leaves_its_jobs_to_the_others(request, tmp_path, engine):
    """An agent reserves a workspace's backlog (one workspace: it runs them one at a time) and
    is SIGKILLed: its reserved jobs stay queued, taken by no one until the reservations run out
    (SQLite: the lease, on the store clock; PostgreSQL: at once, its session's lock is free);
    then the other agents run every one of them, and its running job is re-queued and run."""
    store = await _store(request, engine)
    agents = Agents(store.url.text, tmp_path)
    try:
        agents.start("k")
        await _sessions_up(store, ["k"])
        (k,) = [s.session for s in await store.sessions() if s.name == "k"]
        ids = await store.submit([JobSpec("w", "reservations", seconds=0.2) for _ in range(12)])

        def reserved(d):
            held = [j for j in d["jobs"] if j["state"] == "queued" and j["taken_by"] == k]
            running = [j for j in d["jobs"] if j["state"] == "running" and j["owner"] == "k"]
            return (held, running) if len(held) >= 6 and running else None
        held, _ = await _until(store, reserved, "k reserved the backlog and runs its first job")
        agents.signal("k", signal.SIGKILL)
        assert await agents.wait("k") == -signal.SIGKILL
        killed_at = (await store.dump())["now"]
        for name in ("o1", "o2"):
            agents.start(name)
        dump = await _until(store, _all_terminal(len(ids)), "every job terminal")
        for name in ("o1", "o2"):
            agents.signal(name, signal.SIGTERM)
        for name in ("o1", "o2"):
            assert await agents.wait(name) == 0, agents.log(name)
        dump = _dump_json(store.url.text)
    finally:
        left = agents.close()
        await store.close()
    assert left == []
    result = audit(dump)
    assert result.problems() == [] and result.most_at_once == 1
    jobs = {j["id"]: j for j in dump["jobs"]}
    for job in held:                                           # every reserved job run by the others
        row = jobs[job["id"]]
        assert row["state"] == "succeeded" and row["owner"] in ("o1", "o2"), row
        if engine == "sqlite":                                 # not before its reservation ran out
            assert row["start"] >= job["taken_until"] > killed_at, (row, job)
    assert all(j["state"] == "succeeded" for j in dump["jobs"])
    assert {j["owner"] for j in dump["jobs"] if j["attempts"] >= 2} <= {"o1", "o2"}  # (k's running one)
    assert sorted(agents.stats("o1")["finished"] + agents.stats("o2")["finished"]) == sorted(
        j["id"] for j in dump["jobs"] if j["owner"] != "k")


@pytest.mark.parametrize("engine", ENGINES)
async def test_agents_on_local_lanes_show_overlapping_runs_of_one_workspace(request, tmp_path, engine):
    store = await _store(request, engine)
    agents = Agents(store.url.text, tmp_path)
    try:
        for name in ("l1", "l2"):
            agents.start(name, "--lanes", "local", "--queues", "reservations")
        await _sessions_up(store, ["l1", "l2"])
        ids = await store.submit([JobSpec("w", "reservations", seconds=0.3)] * 8)
        await _until(store, _all_terminal(len(ids)), "every job terminal")
        for name in ("l1", "l2"):
            agents.signal(name, signal.SIGINT)
        for name in ("l1", "l2"):
            assert await agents.wait(name) == 0, agents.log(name)
        dump = _dump_json(store.url.text)
    finally:
        left = agents.close()
        await store.close()
    assert left == []
    result = audit(dump)
    assert result.overlaps and result.most_at_once == 2, "local lanes must show overlapping runs"
    assert result.problems(local=True) == []
    assert {j["state"] for j in dump["jobs"]} == {"succeeded"} and {j["owner"] for j in dump["jobs"]} == {"l1", "l2"}
    ran = agents.stats("l1")["finished"] + agents.stats("l2")["finished"]
    assert sorted(ran) == ids
    assert dump["history"] == [] and dump["ledger"] == []


def _cli(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env_extra or {}))
    env.pop("LANEMON_STORE", None)
    return subprocess.run([sys.executable, "-m", "lanemon", "agent", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)


@pytest.mark.parametrize(("args", "says"), [
    ((), "no store given"),
    (("--store", "memory:"), "an agent needs a shared store"),
    (("--store", "sqlite:///nowhere/at/all.db"), "does not exist"),
    (("--store", "ftp://x"), "unknown store engine"),
    (("--store", "sqlite:///tmp/x.db", "--queues", "kitchen"), "is not a queue"),
    (("--store", "sqlite:///tmp/x.db", "--lanes", "shared"), "invalid choice"),
    (("--store", "sqlite:///tmp/x.db", "--strategy", "claim"), "--strategy is for --role staff"),
    (("--store", "sqlite:///tmp/x.db", "--role", "staff", "--lanes", "local"), "--lanes is for --role lanes"),
])
async def test_bad_input_is_one_line_and_exit_2(args, says):
    out = _cli(*args)
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("lanemon: error:"), out.stderr


async def test_a_store_that_cannot_be_opened_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "not.db"
    bad.write_bytes(b"not a database at all" * 100)
    out = _cli("--store", "sqlite:///" + str(bad).lstrip("/"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "is not an SQLite database" in out.stderr


@pytest.fixture(scope="module")
def restartable_cluster():
    """A PostgreSQL cluster of this module's own: the test restarts it."""
    from lanemon.store.throwaway import ThrowawayCluster, available
    here = available()
    if not here:
        skip_or_fail(f"no throwaway PostgreSQL cluster: {here.reason}")
    with ThrowawayCluster() as cluster:
        yield cluster


async def _dump_through(store, timeout_s: float = TIMEOUT_S) -> dict:
    """A dump, waiting out a store that is coming back (a restart)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await store.dump()
        except StoreError:
            assert time.monotonic() < deadline, "the store did not come back"
            await asyncio.sleep(0.1)


async def test_agents_that_lose_the_server_say_so_come_back_and_never_write_without_a_current_epoch(
        restartable_cluster, tmp_path):
    """The PostgreSQL server restarts under two agents running jobs (every connection lost,
    every lease run out meanwhile): each says it lost the store, takes no job, says it is back,
    and the store stays consistent: every job terminal, no overlap, every refused write stale."""
    from lanemon.store.sql import open_sql_store
    from lanemon.store.url import parse

    url = restartable_cluster.create_database(f"agents_{uuid.uuid4().hex[:8]}") + f"?lease={LEASE}"
    store = await open_sql_store(parse(url), create=True, name="test")
    agents = Agents(url, tmp_path)
    left = ["?"]
    try:
        for name in ("p1", "p2"):
            agents.start(name)
        await _sessions_up(store, ["p1", "p2"])
        ids = await store.submit([JobSpec(f"w{i % 2}", "reservations", seconds=0.3) for i in range(16)])
        await _until(store, lambda d: sum(j["state"] == "running" for j in d["jobs"]) == 2, "both run a job")
        await asyncio.to_thread(restartable_cluster.restart)
        deadline = time.monotonic() + TIMEOUT_S
        while not any("store back after" in agents.log(n) for n in ("p1", "p2")):
            if time.monotonic() > deadline:
                for name in ("p1", "p2"):
                    agents.signal(name, signal.SIGUSR1)  # (where each task waits, in its log)
                await asyncio.sleep(1)
                raise AssertionError(agents.log("p1") + agents.log("p2"))
            await asyncio.sleep(0.1)
        while audit(dump := await _dump_through(store)).not_terminal:
            if time.monotonic() > deadline:
                for name in ("p1", "p2"):
                    agents.signal(name, signal.SIGUSR1)  # (where each task waits, in its log)
                await asyncio.sleep(1)
                stuck = [j for j in dump["jobs"] if j["state"] not in TERMINAL]
                raise AssertionError(f"not every job terminal: {stuck}\nlanes: {dump['lanes']}\n"
                                     f"sessions: {dump.get('sessions')}\n" + agents.log("p1") + agents.log("p2"))
            await asyncio.sleep(0.05)
        for name in ("p1", "p2"):
            agents.signal(name, signal.SIGTERM)
        for name in ("p1", "p2"):
            assert await agents.wait(name) == 0, agents.log(name)
        dump = await _dump_through(store)
    finally:
        left = agents.close()
        await store.close()
    assert left == []
    said = 0
    for name in ("p1", "p2"):
        log = agents.log(name)
        stats = agents.stats(name)
        assert "error connecting" not in log and "store keeper" not in log, log  # said once, by the agent
        if stats["store_errors"] == 0:  # (no operation of it met the outage: nothing to say; seen rarely)
            assert "store lost:" not in log and stats["store_lost"] == 0, log
            continue
        assert log.count("store lost:") == 1 and "not taking jobs, retrying" in log, log
        assert log.count("store back after") == 1 and stats["store_lost"] == 1, log
        said += 1
    assert said >= 1
    result = audit(dump)
    assert result.problems() == [] and result.jobs == len(ids)
    for job in dump["jobs"]:  # ended, or the failure of its final save recorded (fenced)
        assert job["state"] == "succeeded" or job["error"].startswith("final save failed"), job


async def test_a_cpu_job_placed_in_a_worker_runs_there_and_the_stopped_agent_leaves_no_process(
        request, tmp_path):
    """``cpu_ms`` above the placement threshold goes to the worker pool (lanemon.work); a stopped
    agent stops its pool: nothing carrying its marker is left (its workers inherit it)."""
    store = await _store(request, "sqlite")
    agents = Agents(store.url.text, tmp_path)
    try:
        agents.start("c")
        await _sessions_up(store, ["c"])
        ids = await store.submit([JobSpec("w", "cafe", cpu_ms=120.0), JobSpec("w", "cafe", cpu_ms=5.0)])
        dump = await _until(store, _all_terminal(len(ids)), "the CPU jobs end")
        kids = children(agents.procs["c"].pid)
        agents.signal("c", signal.SIGTERM)
        assert await agents.wait("c") == 0, agents.log("c")
    finally:
        left = agents.close()
        await store.close()
    assert [j["state"] for j in dump["jobs"]] == ["succeeded", "succeeded"]
    assert kids, "the 120-ms job did not start a worker process"
    assert left == [], f"processes left behind: {left}"
