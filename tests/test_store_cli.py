"""``lanemon store init|submit|dump|reset`` and ``lanemon.store.open_store``, on SQLite and PostgreSQL.

Every command and every bad input runs in-process through ``lanemon.cli.main`` (output
captured); one subprocess run checks the exit status and that no traceback is printed.
The PostgreSQL cases need the PostgreSQL backend (``lanemon.store.sql.postgres``) and the
throwaway cluster (``postgres_url``): without them they are skipped, saying why, and under
``LANEMON_REQUIRE_POSTGRES=1`` they fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from lanemon.cli import main
from lanemon.lanes.records import Reservation, State
from lanemon.store import MemoryStore, open_store
from lanemon.store.cli import ENV_STORE
from lanemon.store.url import StoreError
from tests.postgres import skip_or_fail

ENGINES = ("sqlite", "postgresql")
PASSWORD = "s3cr3t-Pw"


def have_pg_backend() -> bool:
    return importlib.util.find_spec("lanemon.store.sql.postgres") is not None


def require_pg_backend() -> None:
    if not have_pg_backend():
        skip_or_fail("the PostgreSQL backend (lanemon.store.sql.postgres) is not in this tree")


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    return request.param


@pytest.fixture
def url(request, engine: str, tmp_path: Path) -> str:
    """A URL of an empty place for a store: a new SQLite file name, or a new PostgreSQL database."""
    if engine == "sqlite":
        return "sqlite:///" + str(tmp_path / "store.db").lstrip("/")
    require_pg_backend()
    return request.getfixturevalue("postgres_url")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``lanemon ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, *argv: str) -> str:
    """Run ``lanemon ARGV``; assert it was refused as bad input (exit 2, one line on stderr,
    nothing on stdout, no traceback) and return that line."""
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (rc, out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("lanemon: error: ")
    assert "Traceback" not in err
    return lines[0]


def ok(capsys, *argv: str) -> tuple[str, str]:
    rc, out, err = run(capsys, *argv)
    assert rc == 0, (rc, out, err)
    return out, err


def dump(capsys, url: str) -> dict:
    out, _ = ok(capsys, "store", "dump", "--store", url, "--json")
    return json.loads(out)


def sql(url: str, statement: str, params: tuple = ()) -> list[tuple]:
    """Run one statement on the store's database by hand (PostgreSQL: in schema lanemon)."""
    if url.startswith("sqlite:"):
        db = sqlite3.connect(url.removeprefix("sqlite://"))
        try:
            rows = db.execute(statement, params).fetchall()
            db.commit()
            return rows
        finally:
            db.close()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path TO lanemon, public")
        cur = conn.execute(statement, params or None)
        return cur.fetchall() if cur.description else []


def sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite://"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def init(capsys, url: str) -> None:
    out, _ = ok(capsys, "store", "init", "--store", url)
    assert out.startswith("created schema v3")


def job_rows(url: str) -> int:
    return sql(url, "SELECT count(*) FROM jobs")[0][0]


# --- open_store -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_open_store_memory_makes_the_memory_engine():
    store = await open_store("memory:")
    assert isinstance(store, MemoryStore) and store.engine == "memory" and store.url.engine == "memory"
    now = [0.0]
    lanes = store.lanes("scheduled", clock=lambda: now[0], emit=None)
    token = lanes.claim("ws-01", "me")
    assert token is not None and lanes.claim("ws-01", "you") is None
    claims = store.claims(counters=2, clock=lambda: now[0])
    claim = await claims.claim(0, "me")
    assert claim is not None and await claims.claim(0, "you") is None
    assert len(store.records(events=None, keep_finished=None)) == 0
    await store.close()


@pytest.mark.asyncio
async def test_open_store_sqlite_and_refusals(tmp_path: Path):
    url = "sqlite:///" + str(tmp_path / "s.db").lstrip("/")
    with pytest.raises(StoreError, match="does not exist"):
        await open_store(url)
    assert not (tmp_path / "s.db").exists()
    store = await open_store(url, create=True, name="t")
    try:
        assert store.engine == "sqlite" and store.url.path == str(tmp_path / "s.db")
        assert await store.submit([]) == []
    finally:
        await store.close()
    with pytest.raises(StoreError, match="unknown store engine"):
        await open_store("redis://localhost/0")


# --- the commands ---------------------------------------------------------------------------


def test_init_is_idempotent(capsys, url):
    out, _ = ok(capsys, "store", "init", "--store", url)
    assert out.startswith("created schema v3 in ")
    out, _ = ok(capsys, "store", "init", "--store", url)
    assert out.strip().endswith("is already a lanemon store, schema v3")
    ok(capsys, "store", "submit", "--store", url, "--workspace", "ws-01", "--seconds", "1")
    ok(capsys, "store", "init", "--store", url)           # again: the job is still there
    data = dump(capsys, url)
    assert data["schema"] == 3 and [j["id"] for j in data["jobs"]] == [1]


def test_submit_prints_the_ids_and_a_burst_cycles_the_workspaces(capsys, url):
    init(capsys, url)
    out, err = ok(capsys, "store", "submit", "--store", url, "--workspace", "a,b", "--seconds", "2.5",
                  "--count", "5", "--fail")
    ids = [int(line) for line in out.splitlines()]
    assert len(ids) == 5 and ids == sorted(set(ids))
    assert "queued 5 jobs" in err and "reservations" in err
    out, _ = ok(capsys, "store", "submit", "--store", url, "--workspace", "c", "--queue", "cafe", "--cpu-ms", "200")
    (cpu_id,) = [int(line) for line in out.splitlines()]
    assert cpu_id > ids[-1]
    jobs = {j["id"]: j for j in dump(capsys, url)["jobs"]}
    assert [jobs[i]["workspace"] for i in ids] == ["a", "b", "a", "b", "a"]
    assert all(jobs[i]["queue"] == "reservations" and jobs[i]["seconds"] == 2.5 and jobs[i]["fail"]
               and jobs[i]["state"] == "queued" and jobs[i]["cpu_ms"] == 0 for i in ids)
    cpu = jobs[cpu_id]
    assert (cpu["workspace"], cpu["queue"], cpu["cpu_ms"], cpu["seconds"], cpu["fail"]) == ("c", "cafe", 200, 0, False)


async def _work_the_store(url: str) -> dict:
    """Two owners, one revoked while its job runs: a lane held, a job finished, a refused
    write in the ledger, a stale release. Returns the epochs."""
    store = await open_store(url, name="worker")
    try:
        backend = store.backend
        done_id, late_id = await _two_jobs(store)
        first = await backend.claim_lane("scheduled", "ws-01", "reservations#1")
        t = time.time()
        running = Reservation(id=done_id, workspace="ws-01", queue="reservations", state=State.RUNNING,
                              created_at=t, updated_at=t, run_id="run-1", started_at=t, attempts=1,
                              epoch=first.epoch)
        fence = [("scheduled", "ws-01", first.epoch)]
        assert (await backend.save_job(running, fence, "reservations#1")).outcome.value == "ok"
        done = running._replace(state=State.SUCCEEDED, finished_at=t, updated_at=t)
        assert (await backend.save_job(done, fence, "reservations#1")).outcome.value == "ok"
        assert await backend.release_lane("scheduled", "ws-01", first.epoch)
        second = await backend.claim_lane("scheduled", "ws-01", "cafe#2")
        late = Reservation(id=late_id, workspace="ws-01", queue="cafe", state=State.RUNNING, created_at=t,
                           updated_at=t, run_id="run-2", started_at=t, attempts=1, epoch=first.epoch)
        assert (await backend.save_job(late, fence, "reservations#1")).outcome.value == "stale"
        assert not await backend.release_lane("scheduled", "ws-01", first.epoch)   # stale: counted
        return {"first": first.epoch, "second": second.epoch, "done": done_id, "late": late_id}
    finally:
        await store.close()


async def _two_jobs(store) -> tuple[int, int]:
    from lanemon.store.sql.backend import JobSpec

    ids = await store.submit([JobSpec("ws-01", "reservations", seconds=1.0), JobSpec("ws-01", "cafe", seconds=1.0)])
    return ids[0], ids[1]


def test_dump_shows_lanes_jobs_ledger_and_stale_releases(capsys, url):
    init(capsys, url)
    seen = asyncio.run(_work_the_store(url))
    data = dump(capsys, url)
    assert set(data) == {"store", "schema", "now", "lanes", "jobs", "ledger", "history", "stats",
                         "stale_releases", "sessions"}
    (lane,) = data["lanes"]
    assert (lane["lane"], lane["workspace"], lane["owner"], lane["epoch"]) == ("scheduled", "ws-01", "cafe#2",
                                                                               seen["second"])
    assert lane["since"] <= data["now"] < lane["lease_until"]
    jobs = {j["id"]: j for j in data["jobs"]}
    done = jobs[seen["done"]]
    assert (done["state"], done["run_id"], done["attempts"], done["owner"], done["epoch"]) == (
        "succeeded", "run-1", 1, "reservations#1", seen["first"])
    assert done["start"] is not None and done["end"] is not None and done["start"] <= done["end"] <= data["now"]
    late = jobs[seen["late"]]
    assert (late["state"], late["start"], late["end"], late["owner"]) == ("queued", None, None, None)
    (refusal,) = data["ledger"]
    assert (refusal["writer"], refusal["job"], refusal["state"], refusal["epoch_held"], refusal["epoch_current"]) == (
        "reservations#1", seen["late"], "running", seen["first"], seen["second"])
    assert data["stale_releases"] == 1 == data["stats"]["stale_releases"]
    assert data["stats"]["stale_writes"] == 1 and data["stats"]["claims"] == 2
    assert [h["end_reason"] for h in data["history"]] == ["released", None]
    # the worker's session ended with it; the dump's own is the one connected
    assert [s["name"] for s in data["sessions"]] == ["lanemon-cli"]

    out, _ = ok(capsys, "store", "dump", "--store", url)        # the terminal form: the same facts
    assert "lanes (1):" in out and "jobs (2):" in out and "refused writes (ledger) (1):" in out
    lane_line = next(line for line in out.splitlines() if "cafe#2" in line and "scheduled" in line)
    assert str(seen["second"]) in lane_line.split()
    job_line = next(line for line in out.splitlines() if line.split()[:1] == [str(seen["done"])])
    assert "succeeded" in job_line.split() and "run-1" in job_line.split()
    assert "stale releases: 1" in out


def test_dump_of_an_empty_store_says_so(capsys, url):
    init(capsys, url)
    out, _ = ok(capsys, "store", "dump", "--store", url)
    assert "lanes: none held" in out and "jobs: none" in out and "refused writes (ledger): none" in out
    data = dump(capsys, url)
    assert (data["lanes"], data["jobs"], data["ledger"], data["stale_releases"]) == ([], [], [], 0)


def test_reset_drops_the_tables_and_init_makes_them_again(capsys, url):
    init(capsys, url)
    ok(capsys, "store", "submit", "--store", url, "--workspace", "a", "--seconds", "1")
    out, _ = ok(capsys, "store", "reset", "--store", url, "--yes")
    assert out.startswith("dropped the lanemon tables")
    line = refused(capsys, "store", "dump", "--store", url)
    assert "lanemon store init" in line
    init(capsys, url)
    assert dump(capsys, url)["jobs"] == []


class _Terminal:
    """A stdin that is a terminal and answers ``answer``."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked = 0

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        self.asked += 1
        return self.answer + "\n"


def test_reset_asks_on_a_terminal_and_refuses_without_one(capsys, monkeypatch, url):
    init(capsys, url)
    ok(capsys, "store", "submit", "--store", url, "--workspace", "a", "--seconds", "1")
    monkeypatch.setattr(sys, "stdin", _Terminal("n"))
    out, _ = ok(capsys, "store", "reset", "--store", url)
    assert "[y/N]" in out and "1 jobs" in out and out.strip().endswith("nothing dropped")
    assert sys.stdin.asked == 1 and len(dump(capsys, url)["jobs"]) == 1

    monkeypatch.setattr(sys, "stdin", _Terminal("y"))
    out, _ = ok(capsys, "store", "reset", "--store", url)
    assert "dropped the lanemon tables" in out
    assert "lanemon store init" in refused(capsys, "store", "dump", "--store", url)

    init(capsys, url)
    ok(capsys, "store", "submit", "--store", url, "--workspace", "a", "--seconds", "1")
    monkeypatch.setattr(sys, "stdin", open(os.devnull))          # not a terminal: needs --yes
    try:
        assert "--yes" in refused(capsys, "store", "reset", "--store", url)
    finally:
        sys.stdin.close()
    assert len(dump(capsys, url)["jobs"]) == 1


def test_the_store_comes_from_LANEMON_STORE(capsys, monkeypatch, url):
    monkeypatch.setenv(ENV_STORE, url)
    out, _ = ok(capsys, "store", "init")
    assert out.startswith("created schema v3")
    out, _ = ok(capsys, "store", "submit", "--workspace", "a", "--seconds", "1")
    assert out.split() == ["1"]
    assert [j["id"] for j in json.loads(ok(capsys, "store", "dump", "--json")[0])["jobs"]] == [1]


# --- refusals that need no store ------------------------------------------------------------


@pytest.mark.parametrize("command", [["init"], ["submit", "--workspace", "a", "--seconds", "1"], ["dump"],
                                     ["reset", "--yes"]])
def test_no_store_and_the_memory_store_are_refused(capsys, monkeypatch, command):
    monkeypatch.delenv(ENV_STORE, raising=False)
    assert "--store" in refused(capsys, "store", *command)
    line = refused(capsys, "store", *command, "--store", "memory:")
    assert "memory:" in line and "in-process" in line


@pytest.mark.parametrize("text, says", [
    ("sqlite://somehost/x.db", "three slashes"),
    ("sqlite:///", "no database file"),
    ("nosuch://x/y", "unknown store engine"),
    ("just-a-path.db", "needs a scheme"),
    (f"postgresql://bob:{PASSWORD}@db.example:notaport/lanes", "not a valid PostgreSQL URL"),
    (f"postgresql://bob:{PASSWORD}@db.example:5432/", "no database named"),
    (f"postgresql://bob:{PASSWORD}@db.example/lanes?lease=soon", "is not a number"),
])
def test_a_malformed_url_is_one_line_without_the_password(capsys, text, says):
    for command in (["init"], ["dump"], ["submit", "--workspace", "a", "--seconds", "1"]):
        line = refused(capsys, "store", *command, "--store", text)
        assert says in line
        assert PASSWORD not in line


@pytest.mark.parametrize("args, says", [
    (["--workspace", "a", "--seconds", "-1"], "out of range"),
    (["--workspace", "a", "--seconds", "nan"], "out of range"),
    (["--workspace", "a", "--cpu-ms", "0"], "out of range"),
    (["--workspace", "a", "--seconds", "1", "--count", "0"], "out of range"),
    (["--workspace", "a", "--seconds", "1", "--count", "100001"], "out of range"),
    (["--workspace", "a b", "--seconds", "1"], "not a workspace name"),
    (["--workspace", "a,,b", "--seconds", "1"], "empty workspace name"),
    (["--workspace", "x" * 41, "--seconds", "1"], "longer than 40"),
    (["--workspace", "a", "--seconds", "1", "--cpu-ms", "5"], "not allowed with"),
    (["--workspace", "a"], "one of the arguments --seconds --cpu-ms is required"),
    (["--workspace", "a", "--cpu-ms", "5", "--fail"], "--fail is for simulated jobs"),
    (["--workspace", "a", "--seconds", "1", "--queue", "kitchen"], "invalid choice"),
])
def test_bad_submit_arguments_write_nothing(capsys, tmp_path, args, says):
    url = "sqlite:///" + str(tmp_path / "store.db").lstrip("/")
    init(capsys, url)
    assert says in refused(capsys, "store", "submit", "--store", url, *args)
    assert job_rows(url) == 0


# --- refusals by the store ------------------------------------------------------------------


@pytest.mark.parametrize("command", [["submit", "--workspace", "a", "--seconds", "1"], ["dump"], ["reset", "--yes"]])
def test_a_missing_store_says_run_init_and_creates_nothing(capsys, url, command):
    line = refused(capsys, "store", *command, "--store", url)
    assert "lanemon store init" in line
    if url.startswith("sqlite:"):
        assert not sqlite_path(url).exists()
    else:
        assert sql(url, "SELECT count(*) FROM pg_namespace WHERE nspname = 'lanemon'") == [(0,)]


def test_a_newer_schema_version_is_refused_and_left_alone(capsys, url):
    init(capsys, url)
    ok(capsys, "store", "submit", "--store", url, "--workspace", "a", "--seconds", "1")
    sql(url, "UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    for command in (["init"], ["dump"], ["submit", "--workspace", "a", "--seconds", "1"], ["reset", "--yes"]):
        line = refused(capsys, "store", *command, "--store", url)
        assert "schema version 4, newer than this lanemon's (3)" in line
    assert job_rows(url) == 1
    assert sql(url, "SELECT value FROM meta WHERE key = 'schema_version'") == [("4",)]


def test_an_older_schema_version_can_be_reset_as_its_refusal_says(capsys, url):
    init(capsys, url)
    sql(url, "UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    line = refused(capsys, "store", "dump", "--store", url)
    assert "older than this lanemon's" in line and "lanemon store reset" in line
    ok(capsys, "store", "reset", "--store", url, "--yes")
    init(capsys, url)


def test_a_database_of_another_schema_is_refused(capsys, url):
    if url.startswith("sqlite:"):
        sql(url, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    else:
        sql(url, "CREATE SCHEMA lanemon")
        sql(url, "CREATE TABLE lanemon.customers (id integer PRIMARY KEY, name text)")
    sql(url, "INSERT INTO customers VALUES (1, 'ada')")
    for command in (["init"], ["dump"], ["submit", "--workspace", "a", "--seconds", "1"], ["reset", "--yes"]):
        line = refused(capsys, "store", *command, "--store", url)
        assert "not a lanemon store" in line
    assert sql(url, "SELECT id, name FROM customers") == [(1, "ada")]


def test_a_file_that_is_not_sqlite_is_refused_and_unchanged(capsys, tmp_path):
    for name, content in (("junk.db", bytes(range(256)) * 16), ("notes.db", b"a text file\n")):
        path = tmp_path / name
        path.write_bytes(content)
        url = "sqlite:///" + str(path).lstrip("/")
        for command in (["init"], ["dump"], ["submit", "--workspace", "a", "--seconds", "1"], ["reset", "--yes"]):
            line = refused(capsys, "store", *command, "--store", url)
            assert "is not an SQLite database" in line
        assert path.read_bytes() == content


def test_a_missing_folder_is_refused(capsys, tmp_path):
    url = "sqlite:///" + str(tmp_path / "nowhere" / "store.db").lstrip("/")
    assert "does not exist" in refused(capsys, "store", "init", "--store", url)
    assert not (tmp_path / "nowhere").exists()


@contextlib.contextmanager
def read_only(path: Path):
    """``path`` read-only for this process: chmod, and for root (which ignores modes) the
    immutable attribute; skipped where neither can be had."""
    mode = path.stat().st_mode
    path.chmod(0o444)
    immutable = False
    try:
        if os.geteuid() == 0:
            res = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
            if res.returncode != 0:
                pytest.skip(f"root here ignores file modes and chattr +i failed: {res.stderr.strip()}")
            immutable = True
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(mode)


def test_a_read_only_sqlite_file_is_refused_and_unchanged(capsys, tmp_path):
    url = "sqlite:///" + str(tmp_path / "store.db").lstrip("/")
    init(capsys, url)
    ok(capsys, "store", "submit", "--store", url, "--workspace", "a", "--seconds", "1")
    path = sqlite_path(url)
    before = digest(path)
    with read_only(path):
        for command in (["init"], ["submit", "--workspace", "a", "--seconds", "1"], ["dump"], ["reset", "--yes"]):
            line = refused(capsys, "store", *command, "--store", url)
            assert "read-only" in line
        assert digest(path) == before
    assert job_rows(url) == 1


def test_init_in_a_read_only_folder_is_refused_and_creates_nothing(capsys, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    url = "sqlite:///" + str(folder / "store.db").lstrip("/")
    with read_only(folder):
        line = refused(capsys, "store", "init", "--store", url)
        assert str(folder / "store.db") in line
    assert list(folder.iterdir()) == []


# --- PostgreSQL only: the server and the login -----------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server_is_one_line_without_the_password(capsys):
    require_pg_backend()
    url = f"postgresql://bob:{PASSWORD}@127.0.0.1:{_closed_port()}/lanes?connect_timeout=3"
    for command in (["init"], ["dump"], ["submit", "--workspace", "a", "--seconds", "1"], ["reset", "--yes"]):
        line = refused(capsys, "store", *command, "--store", url)
        assert PASSWORD not in line
        assert "127.0.0.1" in line


@pytest.fixture
def password_role(postgres_cluster, postgres_url):
    """A role that must log in with a password (scram) on the throwaway cluster: its name and
    the URL of the test's database with the right password."""
    import psycopg

    require_pg_backend()
    role = f"lanemon_pw_{uuid.uuid4().hex[:8]}"
    hba = Path(postgres_cluster.directory) / "data" / "pg_hba.conf"
    original = hba.read_text()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"GRANT ALL ON DATABASE {postgres_url.rsplit('/', 1)[1]} TO {role}")
        conn.execute(f"GRANT ALL ON SCHEMA public TO {role}")
    hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + original)
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
        port = postgres_cluster.port
        dbname = postgres_url.rsplit("/", 1)[1]
        wrong = f"postgresql://{role}:nope@127.0.0.1:{port}/{dbname}"
        deadline = time.monotonic() + 30
        while True:                      # the server reads the new rules in its own time
            try:
                psycopg.connect(wrong).close()
            except psycopg.OperationalError as exc:
                if "password authentication failed" in str(exc):
                    break
            if time.monotonic() > deadline:
                pytest.fail("the server never asked for the password")
            time.sleep(0.05)
        yield role, f"postgresql://{role}:{PASSWORD}@127.0.0.1:{port}/{dbname}"
    finally:
        hba.write_text(original)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")


def test_a_wrong_password_is_one_line_without_either_password(capsys, password_role):
    role, right = password_role
    wrong = right.replace(PASSWORD, "Wr0ng-Pw")
    for command in (["init"], ["dump"], ["submit", "--workspace", "a", "--seconds", "1"], ["reset", "--yes"]):
        line = refused(capsys, "store", *command, "--store", wrong)
        assert "Wr0ng-Pw" not in line and PASSWORD not in line
        assert "password" in line.lower()
    out, _ = ok(capsys, "store", "init", "--store", right)            # the right one works
    assert PASSWORD not in out and out.startswith("created schema v3")


# --- a real process -------------------------------------------------------------------------


def test_a_real_lanemon_process_exits_2_with_one_line_and_no_traceback(tmp_path):
    url = f"sqlite:///{str(tmp_path / 'missing.db').lstrip('/')}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env.pop(ENV_STORE, None)
    res = subprocess.run([sys.executable, "-m", "lanemon", "store", "submit", "--store", url,
                          "--workspace", "a", "--seconds", "1"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 2
    assert res.stdout == ""
    assert "Traceback" not in res.stderr
    (line,) = res.stderr.splitlines()
    assert line.startswith("lanemon: error: ") and "lanemon store init" in line
    assert not (tmp_path / "missing.db").exists()


def test_the_window_s_store_is_checked_before_the_window_opens(capsys):
    from lanemon.cli import main

    assert main(["--store", "redis://h/0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown store engine" in err[0]
    assert main(["--store", "sqlite:///tmp/x.db", "bench", "lag"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "put it after" in err[0]
