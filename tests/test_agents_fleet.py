"""The fleet (``lanemon.agents.fleet``) with real processes: start, pause, resume, kill, stop,
a signal to a process that has exited, no zombie, no orphan; the rows of the Processes tab.

Until ``lanemon agent`` is in this tree, the agents are churn workers on an SQLite store
(``fleet_fakes.churn_command``: a real process with a store session) or plain sleepers.
Every wait is for a condition (``_until``), never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest
from fleet_fakes import (
    FakeSessionRow,
    FakeSessions,
    churn_command,
    new_sqlite_store,
    read_sessions,
    sleeper_command,
)
from procs import until

from lanemon import procs
from lanemon.agents.fleet import (
    AgentSpec,
    Fleet,
    FleetError,
    SessionWatch,
    agent_argv,
    process_rows,
    this_host,
)
from lanemon.work import WorkerProcess

TIMEOUT_S = 60.0


def _until(predicate, what: str, timeout_s: float = TIMEOUT_S):
    return until(predicate, what, timeout_s)


def _reaped(pid: int) -> bool:
    """No process ``pid`` at all: exited and reaped (a zombie still has a /proc entry)."""
    return procs.state(pid) is None


@pytest.fixture
def fleet():
    made: list[Fleet] = []

    def make(command) -> Fleet:
        f = Fleet(command)
        made.append(f)
        return f
    yield make
    for f in made:            # whatever a test left: stopped, then reaped
        f.close_now(grace=2.0)


def test_agent_argv_is_the_contract():
    spec = AgentSpec("sqlite:///tmp/s.db", "a1", lanes="local", role="staff", strategy="claim",
                     queues=("reservations", "cafe"), seed=7)
    assert agent_argv(spec) == [sys.executable, "-m", "lanemon", "agent", "--store", "sqlite:///tmp/s.db",
                                "--name", "a1", "--lanes", "local", "--role", "staff", "--strategy", "claim",
                                "--queues", "reservations,cafe", "--seed", "7"]
    for bad in (dict(lanes="shared"), dict(role="boss"), dict(strategy="fast"), dict(name="a b"),
                dict(store_url=" ")):
        with pytest.raises(FleetError):
            AgentSpec(**{"store_url": "sqlite:///s.db", "name": "a", **bad})


def test_agents_pause_resume_kill_stop_and_none_is_left(fleet, tmp_path):
    url, path = new_sqlite_store(tmp_path)
    f = fleet(churn_command())
    a = f.start(AgentSpec(url, f.next_name()))
    b = f.start(AgentSpec(url, f.next_name()))
    assert a.name != b.name and a.state == b.state == "running"
    # each opened its store session under its name
    _until(lambda: {(s.name, s.pid) for s in read_sessions(path)} >= {(a.name, a.pid), (b.name, b.pid)},
           "both agents' sessions in the store")

    assert f.pause(a.name).sent
    _until(lambda: f.agent(a.name).state == "paused", "a paused")
    assert procs.state(a.pid) == "T"
    assert f.resume(a.name).sent
    _until(lambda: f.agent(a.name).state == "running", "a running again")
    assert procs.state(a.pid) != "T"

    killed = f.kill(b.name)
    assert killed.sent and str(b.pid) in killed.message
    _until(lambda: f.agent(b.name).state == "exited -9", "b shown exited -9")
    assert _reaped(b.pid), "the killed agent was left a zombie"
    # signals to a process that has exited: reported, not raised, nothing sent
    for act in (f.pause, f.resume, f.kill, f.stop):
        result = act(b.name)
        assert not result.sent
        assert "already exited" in result.message and "-9" in result.message
    assert not f.pause("nobody").sent and "no agent named nobody" in f.pause("nobody").message

    # a paused agent told to stop gets its SIGTERM now (SIGCONT with it) and stops cleanly
    assert f.pause(a.name).sent
    _until(lambda: procs.state(a.pid) == "T", "a paused again")
    assert f.stop(a.name).sent
    _until(lambda: not f.agent(a.name).alive, "a exited after Stop")
    assert f.agent(a.name).state == "exited 0"
    assert _reaped(a.pid)
    assert {a.pid, b.pid} & {p for p, _ in procs.children()} == set()
    assert f.live() == []
    assert f.forget_exited() == 2 and f.agents() == []


def test_stop_kills_an_agent_that_ignores_sigterm_after_the_grace(fleet):
    f = fleet(sleeper_command(ignore_term=True))
    a = f.start(AgentSpec("sqlite:///unused.db", "deaf"))
    _until(lambda: "up" in open(a.log_path).read(), "the sleeper is up (its SIGTERM handler set)")
    assert f.stop(a.name, grace=0.3).sent
    assert f.agent(a.name).state == "stopping"
    _until(lambda: not f.agent(a.name).alive, "SIGKILL after the grace")
    assert f.agent(a.name).state == "exited -9"
    assert _reaped(a.pid)


def test_close_stops_and_reaps_every_agent_paused_ones_too(fleet):
    f = fleet(sleeper_command())
    agents = [f.start(AgentSpec("sqlite:///unused.db", f.next_name())) for _ in range(3)]
    for a in agents:
        _until(lambda a=a: "up" in open(a.log_path).read(), "sleeper up")
    f.pause(agents[0].name)
    _until(lambda: procs.state(agents[0].pid) == "T", "paused")
    log_dir = f.log_dir
    assert asyncio.run(f.aclose()) == []
    assert all(_reaped(a.pid) for a in agents)
    assert {a.state for a in f.agents()} == {"exited 0"}
    assert not os.path.exists(log_dir)
    with pytest.raises(FleetError, match="closed"):
        f.start(AgentSpec("sqlite:///unused.db", "late"))


def test_keep_leaves_the_agents_running(fleet):
    f = fleet(sleeper_command())
    a = f.start(AgentSpec("sqlite:///unused.db", "keeper"))
    try:
        kept = asyncio.run(f.aclose(keep=True))
        assert [k.name for k in kept] == ["keeper"]
        assert procs.alive(a.pid)
    finally:
        os.kill(a.pid, signal.SIGKILL)
    _until(lambda: _reaped(a.pid), "the kept agent reaped once killed")


def test_an_agent_that_exits_with_an_error_says_why():
    f = Fleet(lambda spec: [sys.executable, "-c", "import sys; print('store not opened: nope'); sys.exit(2)"])
    a = f.start(AgentSpec("sqlite:///unused.db", "bad"))
    _until(lambda: not f.agent(a.name).alive, "exited")
    state = f.agent(a.name)
    assert state.state == "exited 2" and state.last_line == "store not opened: nope"
    f.close_now()


def test_rows_join_agents_with_their_sessions_and_say_who_cannot_be_signalled(fleet):
    f = fleet(sleeper_command())
    a = f.start(AgentSpec("sqlite:///unused.db", "mine", lanes="local"))
    host = this_host()
    now = 1000.0
    elsewhere = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "lanemon-test-elsewhere"])
    try:
        sessions = [
            FakeSessionRow("s1", a.pid, host, "mine", 990.0, 999.0,
                           {"role": "lanes", "lanes": "local", "jobs_running": 2, "lanes_held": 1}),
            FakeSessionRow("s2", 4242, "far-away", "remote-agent", 900.0, 997.5,
                           {"role": "staff", "strategy": "claim", "jobs_running": 0, "lanes_held": 0}),
            FakeSessionRow("s3", os.getpid(), host, "lanemon-window", 900.0, 999.5),
            FakeSessionRow("s4", elsewhere.pid, host, "other-terminal", 900.0, 999.0, {"role": "lanes"}),
        ]
        workers = [WorkerProcess(111, "warm", True), WorkerProcess(112, "cold", True)]
        rows = {r.key: r for r in process_rows(f.agents(), sessions, workers, host=host, now=now)}
        mine = rows["agent:mine"]
        assert (mine.here, mine.jobs_running, mine.lanes_held, mine.heartbeat_age_s) == (True, 2, 1, 1.0)
        assert mine.role == "lanes · local lanes" and mine.can_signal
        assert "session:s1" not in rows                        # shown once, as the agent
        remote = rows["session:s2"]
        assert not remote.here and not remote.can_signal and remote.state == "remote"
        assert "another host (far-away)" in remote.why_not and remote.heartbeat_age_s == 2.5
        result = f.act(remote, "stop")
        assert not result.sent and "another host" in result.message
        assert "session:s3" not in {r.key for r in process_rows(f.agents(), sessions, host=host, hide=("s3",))}
        window = rows["session:s3"]
        assert not window.can_signal and "this window" in window.name and window.origin == "this window"
        assert (mine.origin, remote.origin, rows["worker:111"].origin) == ("here", "elsewhere", "runs tab")
        other = rows["session:s4"]
        assert not other.here and other.can_signal and other.state == "running"
        assert [rows[f"worker:{p}"].state for p in (111, 112)] == ["busy", "busy"]
        assert not f.act(rows["worker:111"], "pause").sent          # a worker takes Kill only
        killed_pids = []
        assert f.act(rows["worker:111"], "kill", kill_worker=lambda pid: killed_pids.append(pid) or True).sent
        assert killed_pids == [111]

        # a lanemon process of this host started elsewhere is signalled by its pid
        assert f.act(other, "pause").sent
        _until(lambda: procs.state(elsewhere.pid) == "T", "paused elsewhere")
        paused = {r.key: r for r in process_rows(f.agents(), sessions, host=host, now=now)}["session:s4"]
        assert paused.state == "paused"
        f.kill("mine")                                    # an exited agent keeps its session's row
        _until(lambda: not f.agent("mine").alive, "mine exited")
        dead = [r for r in process_rows(f.agents(), sessions, host=host, now=now) if r.pid == a.pid]
        assert [(r.key, r.state, r.heartbeat_age_s, r.can_signal) for r in dead] == [
            ("agent:mine", "exited -9", 1.0, False)]
        assert f.act(other, "stop", grace=0.3).sent      # SIGTERM (+SIGCONT): python's default ends it
        assert elsewhere.wait(30) == -signal.SIGTERM
        gone = {r.key: r for r in process_rows(f.agents(), sessions, host=host, now=now)}["session:s4"]
        assert gone.state == "gone" and not gone.can_signal
        assert not f.act(gone, "kill").sent
    finally:
        if elsewhere.poll() is None:
            elsewhere.kill()
        elsewhere.wait(30)


def test_a_session_whose_pid_now_runs_something_else_is_not_signalled(fleet):
    f = fleet(sleeper_command())
    stranger = subprocess.Popen(["sleep", "600"])
    try:
        row = process_rows([], [FakeSessionRow("s", stranger.pid, this_host(), "stale", 0.0, 0.0)])[0]
        result = f.act(row, "kill")
        assert not result.sent and "no longer runs lanemon" in result.message
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait(30)


def test_session_watch_reads_says_why_not_and_recovers():
    source = FakeSessions([FakeSessionRow("s", 1, "h", "n", 0.0, 1.0)])
    opened = []

    async def opener(url):
        opened.append(url)
        if len(opened) == 1:
            raise ConnectionError("no route to host")
        return source

    async def main():
        watch = SessionWatch("postgresql://db/x", opener=opener, period_s=0.01)
        await watch.read_once()
        first = (watch.error, watch.rows)
        await watch.read_once()
        second = (watch.error, [r.name for r in watch.rows])
        source.fail = "connection lost"
        await watch.read_once()
        third = watch.error
        source.fail = None
        await watch.read_once()
        await watch.aclose()
        return first, second, third, watch

    first, second, third, watch = asyncio.run(main())
    assert first[0] is not None and "no route to host" in first[0] and first[1] == []
    assert second == (None, ["n"])
    assert "connection lost" in third and source.closed       # the session was dropped, then opened again
    assert watch.error is None and len(opened) == 3 and watch.reads == 2

    class Old:                       # a store without sessions() (before contract 2)
        async def close(self):
            pass

    async def old_store():
        async def opener(url):
            return Old()
        w = SessionWatch("sqlite:///x.db", opener=opener)
        await w.read_once()
        return w.error
    assert "cannot list its sessions" in asyncio.run(old_store())


def test_a_fleet_its_owner_never_closed_stops_its_agents_at_exit(tmp_path):
    """A program that starts agents and ends without closing its fleet leaves no orphan."""
    script = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from fleet_fakes import sleeper_command\n"
        "from lanemon.agents.fleet import AgentSpec, Fleet\n"
        "f = Fleet(sleeper_command())\n"
        "a = f.start(AgentSpec('sqlite:///unused.db', 'orphan-candidate'))\n"
        "print(a.pid, flush=True)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    orphaned = procs.alive(pid)
    if orphaned:
        os.kill(pid, signal.SIGKILL)         # (leave nothing behind, then fail)
    assert not orphaned, "the agent outlived the program that started it"


def test_the_stop_grace_outlasts_an_agents_own_clean_stop():
    """An agent's clean stop (give its reservations back, its running jobs' grace) took longer
    than the fleet waited before its SIGKILL (5 s): a stopped agent was killed mid clean-up."""
    from lanemon.agents import agent, fleet, staff

    assert fleet.STOP_GRACE_S > agent.GIVE_BACK_S + agent.GRACE_S
    assert fleet.STOP_GRACE_S > staff.STOP_GRACE_S
