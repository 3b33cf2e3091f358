"""The throwaway PostgreSQL cluster and its fixtures (tests/postgres.py).

The server answers psycopg's async API on qasync's loop; every ``postgres_url`` is its own
empty database; a cluster left by an exception, a KeyboardInterrupt or a failed start leaves
no process and no directory behind.
"""

from __future__ import annotations

import asyncio
import os
import time
from types import SimpleNamespace

import psycopg
import pytest
from postgres import REQUIRE_ENV, fresh_database, skip_or_fail

from lanemon.store.throwaway import ClusterError, ThrowawayCluster, available

_USER_TABLES = "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace " \
               "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')"


@pytest.fixture
def other_postgres_url(postgres_cluster):
    """A second fresh database, made the way ``postgres_url`` is."""
    with fresh_database(postgres_cluster) as url:
        yield url


def _need_cluster() -> None:
    here = available()
    if not here:
        skip_or_fail(here.reason)


def _children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid``."""
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(name))
    return found


def _exists(pid: int) -> bool:
    """``pid`` is in the process table (a zombie counts: it was not reaped)."""
    return os.path.exists(f"/proc/{pid}")


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
        seen["family"] = {pg.postmaster_pid} | _children(pg.postmaster_pid)
        assert os.path.isdir(seen["dir"])
        assert _exists(seen["postmaster"])
        raise exc_type("inside the block")
    conn.close()
    assert seen["backend"] in seen["family"]
    assert len(seen["family"]) >= 4      # the postmaster, its helpers (checkpointer, ...) and the backend
    assert [pid for pid in sorted(seen["family"]) if _exists(pid)] == []
    assert not os.path.exists(seen["dir"])
    assert not pg.running


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


def test_a_keyboard_interrupt_while_the_server_starts_leaves_nothing(monkeypatch):
    """The interrupt lands right after the server process was spawned, before it is ready
    (the readiness wait's first clock read), where neither ``with`` nor ``__exit__`` runs."""
    _need_cluster()
    from lanemon.store import throwaway

    spawned: list[bool] = []

    def interrupted() -> float:
        spawned.append(True)
        raise KeyboardInterrupt

    monkeypatch.setattr(throwaway, "time", SimpleNamespace(perf_counter=time.perf_counter, sleep=time.sleep,
                                                           monotonic=interrupted))
    ours_before = _children(os.getpid())
    pg = ThrowawayCluster()
    with pytest.raises(KeyboardInterrupt):
        pg.start()
    assert spawned == [True]
    assert pg.directory is not None and not os.path.exists(pg.directory)
    assert _processes_mentioning(pg.directory) == []
    assert _children(os.getpid()) - ours_before == set()


def test_a_failed_start_says_why_and_leaves_nothing():
    _need_cluster()
    pg = ThrowawayCluster(server_options={"lanemon_no_such_setting": "1"})
    with pytest.raises(ClusterError, match="did not start") as err:
        pg.start()
    assert 'unrecognized configuration parameter "lanemon_no_such_setting"' in str(err.value)
    assert pg.directory is not None and not os.path.exists(pg.directory)
    assert pg.postmaster_pid is None or not _exists(pg.postmaster_pid)
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
