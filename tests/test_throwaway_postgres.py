"""The throwaway PostgreSQL cluster and its fixtures (tests/postgres.py).

The server answers psycopg's async API on qasync's loop; every ``postgres_url`` is its own
empty database; a cluster left by an exception, a KeyboardInterrupt or a failed start leaves
no process and no directory behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest
from postgres import REQUIRE_ENV, fresh_database, skip_or_fail
from procs import until

from lanemon.procs import children
from lanemon.store.throwaway import ClusterError, ThrowawayCluster, available

_USER_TABLES = "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace " \
               "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')"


@pytest.fixture
def other_postgres_url(postgres_cluster):
    """A second fresh database, made the way ``postgres_url`` is."""
    with fresh_database(postgres_cluster) as url:
        yield url


def _kids(pid: int) -> set[int]:
    """Live processes whose parent is ``pid``."""
    return {kid for kid, _ in children(pid)}


def _need_cluster() -> None:
    here = available()
    if not here:
        skip_or_fail(here.reason)


def _ancestors(pid: int) -> list[int]:
    """The parent of ``pid``, its parent, ... up to PID 1."""
    chain = []
    while pid > 1:
        with open(f"/proc/{pid}/stat") as fh:
            pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        chain.append(pid)
    return chain


def _running(pid: int) -> bool:
    """``pid`` is a process that has not exited. The server is a daemon, reaped by PID 1
    (maybe late): a zombie has exited."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_psycopg_async_answers_on_the_qasync_loop(qapp, postgres_url):
    import qasync

    async def go() -> tuple[int, str, str]:
        assert isinstance(asyncio.get_running_loop(), qasync.QEventLoop)
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as listener, \
                await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as talker:
            one = await (await listener.execute("SELECT 1")).fetchone()
            await listener.execute("LISTEN lanemon_test")
            await talker.execute("SELECT pg_notify('lanemon_test', 'hello')")
            gen = listener.notifies(timeout=30, stop_after=1)
            got = [n async for n in gen]
            assert got, "no notification within 30 s"
            return one[0], got[0].channel, got[0].payload

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(qapp)) as runner:
        assert runner.run(go()) == (1, "lanemon_test", "hello")


def test_two_postgres_url_databases_are_distinct_and_empty(postgres_url, other_postgres_url):
    assert postgres_url != other_postgres_url
    with psycopg.connect(postgres_url, autocommit=True) as a, psycopg.connect(other_postgres_url,
                                                                              autocommit=True) as b:
        assert a.execute(_USER_TABLES).fetchone()[0] == 0
        assert b.execute(_USER_TABLES).fetchone()[0] == 0
        name_a = a.execute("SELECT current_database()").fetchone()[0]
        name_b = b.execute("SELECT current_database()").fetchone()[0]
        assert name_a != name_b
        a.execute("CREATE TABLE only_in_a (x int)")
        assert a.execute(_USER_TABLES).fetchone()[0] == 1
        assert b.execute(_USER_TABLES).fetchone()[0] == 0


def test_a_fresh_database_is_dropped_after_its_block_even_with_a_session_open(postgres_cluster):
    with fresh_database(postgres_cluster) as url:
        name = url.rsplit("/", 1)[1]
        assert name in postgres_cluster.databases()
        conn = psycopg.connect(url)     # left open on purpose: DROP ... WITH (FORCE) ends it
    try:
        assert name not in postgres_cluster.databases()
    finally:
        conn.close()


@pytest.mark.parametrize("exc_type", [RuntimeError, KeyboardInterrupt])
def test_an_exception_inside_with_leaves_no_process_and_no_directory(exc_type):
    _need_cluster()
    seen: dict = {}
    with pytest.raises(exc_type, match="inside the block"), ThrowawayCluster() as pg:
        seen["dir"] = pg.directory
        seen["postmaster"] = pg.postmaster_pid
        conn = psycopg.connect(pg.url(), autocommit=True)   # a backend with a client still connected
        seen["backend"] = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        seen["family"] = {pg.postmaster_pid} | _kids(pg.postmaster_pid)
        # A daemon, not our descendant: "no child process left" checks elsewhere are not disturbed.
        assert os.getpid() not in _ancestors(pg.postmaster_pid)
        assert os.path.isdir(seen["dir"])
        assert _running(seen["postmaster"])
        raise exc_type("inside the block")
    conn.close()
    assert seen["backend"] in seen["family"]
    assert len(seen["family"]) >= 4      # the postmaster, its helpers (checkpointer, ...) and the backend
    assert [pid for pid in sorted(seen["family"]) if _running(pid)] == []
    assert not os.path.exists(seen["dir"])
    assert not pg.running
    pg.stop()       # idempotent
    assert not os.path.exists(seen["dir"])


@pytest.mark.parametrize("how", ["sigkill", "segfault"])
def test_a_cluster_whose_owner_dies_without_stopping_it_is_stopped_and_removed(how):
    """The owning process dies with nothing of it running (SIGKILL, a crash): the watcher
    started with the server stops it and removes the directory."""
    _need_cluster()
    die = {"sigkill": "os.kill(os.getpid(), signal.SIGKILL)",
           "segfault": "import ctypes; ctypes.string_at(0)"}[how]
    code = (
        "import os, signal, sys\n"
        "from lanemon.store.throwaway import ThrowawayCluster\n"
        "pg = ThrowawayCluster(); pg.start()\n"
        "print(pg.directory, pg.postmaster_pid, flush=True)\n"
        f"{die}\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=root), cwd=root)
    assert proc.returncode < 0, proc.stderr[-1000:]          # died by a signal: no stop() ran
    directory, pid = proc.stdout.split()
    assert directory.startswith("/tmp/lanemon-pg-")
    try:
        until(lambda: not _running(int(pid)) and not os.path.exists(directory),
              "the server stopped and its directory removed by the watcher", 60)
    finally:   # (whatever the outcome, nothing left for the next test)
        with contextlib.suppress(ProcessLookupError):
            if _running(int(pid)):
                os.kill(int(pid), signal.SIGKILL)


def test_a_stopped_cluster_dismisses_its_watcher():
    _need_cluster()
    with ThrowawayCluster() as pg:
        directory = pg.directory
        watchers = _processes_mentioning(directory)
        assert len([w for w in watchers if w != pg.postmaster_pid and os.getpid() not in _ancestors(w)]) >= 1
    until(lambda: _processes_mentioning(directory) == [], "no process of the cluster left", 30)
    assert not os.path.exists(directory)


def _first_line(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.readline().strip()
    except OSError:
        return ""


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line holds ``text``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if text.encode() in fh.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def test_a_keyboard_interrupt_while_pg_ctl_starts_the_server_leaves_nothing(monkeypatch):
    """The interrupt lands while ``pg_ctl start`` runs, once the postmaster exists (its pid file
    is written): neither the ``with`` body nor ``__exit__`` runs, and pg_ctl is killed."""
    _need_cluster()
    from lanemon.store import throwaway

    seen: dict = {}
    real_popen = subprocess.Popen

    class InterruptedPgCtlStart(real_popen):
        def communicate(self, *args, **kwargs):
            if not (any(a.endswith("pg_ctl") for a in self.args) and "start" in self.args):
                return super().communicate(*args, **kwargs)
            pidfile = os.path.join(self.args[self.args.index("-D") + 1], "postmaster.pid")
            deadline = time.monotonic() + 60
            while not _first_line(pidfile).isdigit():
                assert time.monotonic() < deadline, "pg_ctl start made no postmaster in 60 s"
                time.sleep(0.002)
            seen["postmaster"] = int(_first_line(pidfile))
            seen["pg_ctl"] = self.pid
            raise KeyboardInterrupt

    monkeypatch.setattr(throwaway.subprocess, "Popen", InterruptedPgCtlStart)
    ours_before = _kids(os.getpid())
    pg = ThrowawayCluster()
    with pytest.raises(KeyboardInterrupt):
        pg.start()
    monkeypatch.undo()
    assert set(seen) == {"postmaster", "pg_ctl"}
    assert not _running(seen["postmaster"]) and not _running(seen["pg_ctl"])
    assert pg.directory is not None and not os.path.exists(pg.directory)
    assert _processes_mentioning(pg.directory) == []
    assert _kids(os.getpid()) - ours_before == set()
    assert not pg.running


def test_a_failed_start_says_why_and_leaves_nothing():
    _need_cluster()
    pg = ThrowawayCluster(server_options={"lanemon_no_such_setting": "1"})
    with pytest.raises(ClusterError, match="did not start") as err:
        pg.start()
    assert 'unrecognized configuration parameter "lanemon_no_such_setting"' in str(err.value)
    assert pg.directory is not None and not os.path.exists(pg.directory)
    assert pg.postmaster_pid is None or not _running(pg.postmaster_pid)
    with pytest.raises(ClusterError, match="not running"):
        pg.url()


def test_without_binaries_it_says_why_and_refuses_to_start(tmp_path):
    here = available(bindir=str(tmp_path))
    assert not here
    assert str(tmp_path) in here.reason and "initdb" in here.reason
    with pytest.raises(ClusterError, match="does not hold initdb"):
        ThrowawayCluster(bindir=str(tmp_path)).start()


def test_database_names_that_could_break_the_sql_are_refused(postgres_cluster):
    for bad in ('x"; DROP DATABASE postgres; --', "Upper", "1abc", ""):
        with pytest.raises(ClusterError, match="refused"):
            postgres_cluster.create_database(bad)
    assert "postgres" in postgres_cluster.databases()


def _outcome(reason: str) -> BaseException:
    try:
        skip_or_fail(reason)
    except BaseException as e:  # pytest's skip and fail outcomes derive from BaseException
        return e
    raise AssertionError("skip_or_fail returned")


def test_the_fixture_skips_without_postgres_and_fails_when_it_is_required(monkeypatch):
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    skipped = _outcome("no server here")
    assert isinstance(skipped, pytest.skip.Exception) and "no server here" in str(skipped)
    monkeypatch.setenv(REQUIRE_ENV, "1")
    failed = _outcome("no server here")
    assert isinstance(failed, pytest.fail.Exception) and "no server here" in str(failed)
