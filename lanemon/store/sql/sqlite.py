"""The SQLite backend: several processes on one machine share one file.

Every operation is one ``BEGIN IMMEDIATE`` transaction (the write lock is
taken at its start, so the reads that decide and the write they allow are one
atomic step across processes), in WAL mode (readers never wait for the
writer), with a busy timeout (:data:`BUSY_TIMEOUT_S`): a writer waits at most
that long for another process's transaction, then the operation fails with
:class:`~lanemon.store.url.StoreError`. The store clock is this machine's
clock (``time.time()``), read after the write lock is taken. The epoch counter
is the ``epoch`` row of ``meta``, in the file: it survives every restart.

The operations complete without suspending (``answers_now``): the lane and
record adapters use them from their immediate forms too. The rules are the
ones of :mod:`lanemon.store.sql.backend`.

Change feed: triggers append ``(table, key)`` to ``changes`` in the writing
transaction (so in commit order: SQLite has one writer at a time); a reader
polls ``PRAGMA data_version`` on its own connection (it changes when another
connection commits) and reads ``changes`` after the last ``seq`` it saw.

Checkpoints (copying the WAL back into the file, with its fsyncs) run mostly in
a thread of their own (:class:`_Checkpointer`): SQLite's own, at a commit in
the loop's thread, then finds little left to copy and flush.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from typing import Any

from lanemon.lanes.records import Reservation, State, transition_allowed
from lanemon.store.sql.backend import (
    MAX_ATTEMPTS,
    SCHEMA_VERSION,
    STALE_SESSION_LEASES,
    STATS_KEYS,
    TAKE_HEAD,
    JobSpec,
    LaneRow,
    SaveOutcome,
    SaveResult,
    SessionRow,
    StoredJob,
)
from lanemon.store.sql.common import (
    FEED_UPDATE_OF,
    JOB_COLS,
    LANE_COLS,
    QUEUED_COLS,
    SESSION_COLS,
    BackendSession,
    check_version,
    dump_by_read,
    job_record,
    lane_row,
    session_row,
    stored_job,
)
from lanemon.store.url import StoreError

__all__ = ["BUSY_TIMEOUT_S", "SqliteBackend", "SqliteFeed", "read_only_uri"]

#: how long a write waits for another process's transaction before failing
BUSY_TIMEOUT_S = 5.0

#: commits of one connection between two checkpoints of its thread (:class:`_Checkpointer`)
CHECKPOINT_EVERY = 20

#: change rows kept for readers that fell behind (older ones are pruned; a reader
#: that missed some reads a fresh snapshot)
KEEP_CHANGES = 20_000


def _feed_op(table: str, op: str) -> str:
    return FEED_UPDATE_OF if (table, op) == ("jobs", "UPDATE") else op


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lanes (
    name TEXT NOT NULL, workspace TEXT NOT NULL, owner TEXT NOT NULL, session TEXT NOT NULL,
    epoch INTEGER NOT NULL UNIQUE, claimed_at REAL NOT NULL, lease_until REAL NOT NULL,
    stop_requested INTEGER NOT NULL DEFAULT 0, stop_reason TEXT,
    PRIMARY KEY (name, workspace));
CREATE INDEX IF NOT EXISTS lanes_session ON lanes (session);
CREATE INDEX IF NOT EXISTS lanes_lease ON lanes (lease_until);
CREATE TABLE IF NOT EXISTS lane_history (
    epoch INTEGER PRIMARY KEY, name TEXT NOT NULL, workspace TEXT NOT NULL, owner TEXT NOT NULL,
    session TEXT NOT NULL, claimed_at REAL NOT NULL, ended_at REAL, end_reason TEXT);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, workspace TEXT NOT NULL, queue TEXT NOT NULL,
    state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, run_id TEXT, error TEXT,
    started_at REAL, finished_at REAL, attempts INTEGER NOT NULL DEFAULT 0, epoch INTEGER,
    owner TEXT, store_started REAL, store_ended REAL,
    seconds REAL NOT NULL DEFAULT 0, cpu_ms REAL NOT NULL DEFAULT 0, fail INTEGER NOT NULL DEFAULT 0,
    taken_by TEXT, taken_until REAL);
CREATE INDEX IF NOT EXISTS jobs_queued ON jobs (state, queue, id);
CREATE INDEX IF NOT EXISTS jobs_epoch ON jobs (epoch);
CREATE INDEX IF NOT EXISTS jobs_taken ON jobs (taken_by) WHERE taken_by IS NOT NULL;
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, writer TEXT NOT NULL,
    job_id INTEGER NOT NULL, state TEXT NOT NULL, lane TEXT NOT NULL, workspace TEXT NOT NULL,
    epoch_held INTEGER NOT NULL, epoch_current INTEGER);
CREATE TABLE IF NOT EXISTS stats (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS occupancy (workspace TEXT PRIMARY KEY, reason TEXT NOT NULL, since REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, name TEXT NOT NULL,
    started REAL NOT NULL, last_seen REAL NOT NULL, info TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL,
    key TEXT NOT NULL);
""" + "".join(
    f"""
CREATE TRIGGER IF NOT EXISTS {tbl}_{op.lower()}_feed AFTER {_feed_op(tbl, op)} ON {tbl}
BEGIN INSERT INTO changes (tbl, key) VALUES ('{tbl}', {key.replace('ROW', 'OLD' if op == 'DELETE' else 'NEW')}); END;"""
    for tbl, key in (("lanes", "ROW.name || ':' || ROW.workspace"), ("jobs", "ROW.id"),
                     ("ledger", "ROW.id"), ("occupancy", "ROW.workspace"))
    for op in ("INSERT", "UPDATE", "DELETE")
)


class SqliteBackend(BackendSession):
    """One connection to one SQLite store file (see the module docstring)."""

    answers_now = True
    dialect = "sqlite"

    def __init__(self, path: str, *, lease: float, name: str = "", info: dict[str, Any] | None = None) -> None:
        super().__init__(lease=lease, name=name, info=info)
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._checkpointer: _Checkpointer | None = None

    # -- connection and schema -----------------------------------------------------
    async def open(self, *, create: bool, older_ok: bool = False) -> None:
        """Connect, check (or with ``create`` make) the schema, register the session.
        ``older_ok``: accept a lanemon store of an older schema version, for ``reset``
        only (``schema_version`` says which; no session is registered in it)."""
        path = self.path
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            raise StoreError(f"sqlite store {path}: the folder {folder} does not exist")
        exists = os.path.exists(path)
        if not exists and not create:
            raise StoreError(f"sqlite store {path} does not exist: create it with "
                             f"`lanemon store init --store sqlite:///{path.lstrip('/')}`")
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S,
                                 check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"sqlite store {path}: cannot open: {exc}") from None
        self._db = db
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            self._checkpointer = _Checkpointer(path)
            self._check_or_create(create, older_ok)
            if self.schema_version != SCHEMA_VERSION:
                return
            with self._tx() as cur:
                self._upsert_session(cur, self._now())
        except sqlite3.DatabaseError as exc:
            self._close_connections()
            raise StoreError(_explain(path, exc)) from None
        except StoreError:
            self._close_connections()
            raise

    def _tables(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def _check_or_create(self, create: bool, older_ok: bool = False) -> None:
        db = self._db
        tables = self._tables()
        if "meta" in tables:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                raise StoreError(f"sqlite store {self.path}: has a meta table but no schema_version: "
                                 "not a lanemon store")
            self.schema_version = int(row[0])
            if not (older_ok and self.schema_version < SCHEMA_VERSION):
                check_version(self.schema_version, self.path)
            return
        if tables - {"sqlite_sequence"}:
            raise StoreError(f"sqlite store {self.path}: holds other tables ({', '.join(sorted(tables)[:4])}): "
                             "not a lanemon store")
        if not create:
            raise StoreError(f"sqlite store {self.path} is empty: run `lanemon store init` first")
        with self._tx() as cur:
            for stmt in SCHEMA.split(";\n"):
                if stmt.strip():
                    cur.execute(stmt)
            made = cur.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if made is not None:  # another process made it since the look above (agents started together)
                self.schema_version = int(made[0])
                check_version(self.schema_version, self.path)
                return
            cur.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            self.schema_version = SCHEMA_VERSION
            cur.execute("INSERT INTO meta VALUES ('epoch', '0')")
            cur.executemany("INSERT INTO stats VALUES (?, 0)", [(k,) for k in STATS_KEYS])

    async def close(self) -> None:
        db = self._db
        if db is not None:
            try:
                with _Tx(db) as cur:
                    cur.execute("DELETE FROM sessions WHERE session=?", (self.session,))
                    _give_back(cur, self.session)
            except (sqlite3.Error, StoreError):  # (a reset store has no sessions table)
                pass
        self._close_connections()

    def _close_connections(self) -> None:
        """The checkpointer's thread joined, then the connection closed (idempotent)."""
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.close()
        db, self._db = self._db, None
        if db is not None:
            db.close()

    @property
    def checkpoints(self) -> tuple[int, int]:
        """(checkpoints its thread ran, those that failed) so far; (0, 0) once closed."""
        c = self._checkpointer
        return (c.runs, c.failures) if c is not None else (0, 0)

    async def reset(self) -> None:
        """Drop every lanemon table (the file stays); ``open(create=True)`` makes them again."""
        db = self._require()
        with self._tx() as cur:
            for (name,) in cur.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
                cur.execute(f'DROP TRIGGER IF EXISTS "{name}"')
            for name in ("changes", "sessions", "occupancy", "stats", "ledger", "jobs", "lane_history", "lanes",
                         "board", "meta"):
                cur.execute(f"DROP TABLE IF EXISTS {name}")
        del db

    def _require(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"sqlite store {self.path} is closed")
        return self._db

    def _tx(self) -> _Tx:
        return _Tx(self._require(), self.count_error, self._checkpointer)

    def transaction(self) -> _Tx:
        """``with backend.transaction() as cur:`` one ``BEGIN IMMEDIATE`` transaction
        (for the other tables' operations, e.g. the counter board)."""
        return self._tx()

    def clock(self) -> float:
        """The store clock now (seconds; read it inside the transaction that decides)."""
        return self._now()

    def _now(self) -> float:
        return time.time() + self.clock_skew

    async def now(self) -> float:
        return self._now()

    # -- lanes ---------------------------------------------------------------------
    async def claim_lane(self, name: str, workspace: str, owner: str) -> LaneRow | None:
        with self._tx() as cur:
            now = self._now()
            if cur.execute("SELECT 1 FROM occupancy WHERE workspace=?", (workspace,)).fetchone():
                bump(cur, "busy_refusals")
                return None
            row = cur.execute(f"SELECT {LANE_COLS} FROM lanes WHERE name=? AND workspace=?",
                              (name, workspace)).fetchone()
            if row is not None:
                held = lane_row(row)
                if held.lease_until > now:
                    return None
                self._expire(cur, held, now)
            epoch = next_epoch(cur)
            lane = LaneRow(name=name, workspace=workspace, owner=owner, session=self.session,
                           epoch=epoch, claimed_at=now, lease_until=now + self.lease,
                           stop_requested=False, stop_reason=None)
            cur.execute("INSERT INTO lanes VALUES (?, ?, ?, ?, ?, ?, ?, 0, NULL)",
                        (name, workspace, owner, self.session, epoch, now, lane.lease_until))
            cur.execute("INSERT INTO lane_history VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                        (epoch, name, workspace, owner, self.session, now))
            return lane

    def _expire(self, cur: sqlite3.Cursor, lane: LaneRow, now: float) -> None:
        """End ``lane`` (its lease ran out): history, count, reap its running jobs."""
        cur.execute("DELETE FROM lanes WHERE name=? AND workspace=?", (lane.name, lane.workspace))
        cur.execute("UPDATE lane_history SET ended_at=?, end_reason='expired' WHERE epoch=?",
                    (now, lane.epoch))
        bump(cur, "lease_expired")
        _lost_owner(cur, lane.epoch, lane.owner, "lease expired", now)

    async def release_lane(self, name: str, workspace: str, epoch: int) -> bool:
        with self._tx() as cur:
            now = self._now()
            gone = cur.execute("DELETE FROM lanes WHERE name=? AND workspace=? AND epoch=? RETURNING owner",
                               (name, workspace, epoch)).fetchone()
            if gone is None:
                bump(cur, "stale_releases")
                return False
            cur.execute("UPDATE lane_history SET ended_at=?, end_reason='released' WHERE epoch=?",
                        (now, epoch))
            _lost_owner(cur, epoch, gone[0], "released with its job running", now)
            return True

    async def revoke_lane(self, name: str, workspace: str) -> LaneRow | None:
        with self._tx() as cur:
            now = self._now()
            row = cur.execute(f"DELETE FROM lanes WHERE name=? AND workspace=? RETURNING {LANE_COLS}",
                              (name, workspace)).fetchone()
            if row is None:
                return None
            lane = lane_row(row)
            cur.execute("UPDATE lane_history SET ended_at=?, end_reason='revoked' WHERE epoch=?",
                        (now, lane.epoch))
            bump(cur, "revoked")
            return lane

    async def request_stop(self, name: str, workspace: str, reason: str | None) -> LaneRow | None:
        with self._tx() as cur:
            row = cur.execute(f"UPDATE lanes SET stop_requested=1, stop_reason=? WHERE name=? AND workspace=? "
                              f"RETURNING {LANE_COLS}", (reason, name, workspace)).fetchone()
            return None if row is None else lane_row(row)

    async def mark_busy(self, workspace: str, reason: str) -> bool:
        """Mark ``workspace`` busy outside; False if it already was (the reason is updated)."""
        with self._tx() as cur:
            new = cur.execute("SELECT 1 FROM occupancy WHERE workspace=?", (workspace,)).fetchone() is None
            cur.execute("INSERT INTO occupancy VALUES (?, ?, ?) ON CONFLICT (workspace) DO UPDATE "
                        "SET reason=excluded.reason", (workspace, reason, self._now()))
            return new

    async def clear_busy(self, workspace: str) -> bool:
        with self._tx() as cur:
            return cur.execute("DELETE FROM occupancy WHERE workspace=?", (workspace,)).rowcount == 1

    def _upsert_session(self, cur: sqlite3.Cursor, now: float) -> None:
        """This session's row: made (again, if it was reaped), heartbeat and info now."""
        cur.execute(f"INSERT INTO sessions ({SESSION_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (session) DO UPDATE SET last_seen=excluded.last_seen, info=excluded.info",
                    self.session_values(now))

    async def renew(self) -> int:
        with self._tx() as cur:
            now = self._now()
            self._upsert_session(cur, now)
            renewed = cur.execute("UPDATE lanes SET lease_until=? WHERE session=?",
                                  (now + self.lease, self.session)).rowcount
            cur.execute("UPDATE jobs SET taken_until=? WHERE taken_by=? AND state='queued'",
                        (now + self.lease, self.session))
            return renewed

    async def sessions(self) -> list[SessionRow]:
        db = self._require()
        return [session_row(r) for r in db.execute(f"SELECT {SESSION_COLS} FROM sessions ORDER BY started")]

    async def reap(self) -> list[LaneRow]:
        with self._tx() as cur:
            now = self._now()
            rows = [lane_row(r) for r in cur.execute(
                f"SELECT {LANE_COLS} FROM lanes WHERE lease_until <= ?", (now,)).fetchall()]
            for lane in rows:
                self._expire(cur, lane, now)
            cur.execute("DELETE FROM sessions WHERE last_seen < ? AND session <> ?",
                        (now - STALE_SESSION_LEASES * self.lease, self.session))
            if rows or int(now) % 10 == 0:
                cur.execute("DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?",
                            (KEEP_CHANGES,))
            return rows

    async def lane_rows(self) -> list[LaneRow]:
        db = self._require()
        return [lane_row(r) for r in db.execute(f"SELECT {LANE_COLS} FROM lanes ORDER BY name, workspace")]

    # -- jobs ----------------------------------------------------------------------
    async def save_job(self, record: Reservation, fence: list[tuple[str, str, int]],
                       writer: str) -> SaveResult:
        with self._tx() as cur:
            now = self._now()
            for lane_name, ws, epoch in fence:
                row = cur.execute("SELECT epoch FROM lanes WHERE name=? AND workspace=?",
                                  (lane_name, ws)).fetchone()
                current = None if row is None else row[0]
                if current != epoch:
                    cur.execute("INSERT INTO ledger (at, writer, job_id, state, lane, workspace, epoch_held, "
                                "epoch_current) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                (now, writer, record.id, record.state.value, lane_name, ws, epoch, current))
                    bump(cur, "stale_writes")
                    return SaveResult(SaveOutcome.STALE, fence=(lane_name, ws, epoch), current_epoch=current)
            row = cur.execute("SELECT state, attempts FROM jobs WHERE id=?", (record.id,)).fetchone()
            prev = None if row is None else State(row[0])
            state = record.state
            if not transition_allowed(prev, state):
                bump(cur, "invalid_transitions")
                return SaveResult(SaveOutcome.INVALID, current_state="new" if prev is None else prev.value)
            # the store counts the attempts (a writer's record may be older than a re-queue)
            attempts = record.attempts if prev is None else row[1] + 1 if state is State.RUNNING else row[1]
            values = (record.workspace, record.queue, state.value, record.created_at, record.updated_at,
                      record.run_id, record.error, record.started_at, record.finished_at,
                      attempts, record.epoch)
            if prev is None:
                cur.execute(f"INSERT INTO jobs ({JOB_COLS}, owner, store_started, store_ended) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                            (record.id, *values, writer))
            else:
                cur.execute("UPDATE jobs SET workspace=?, queue=?, state=?, created_at=?, updated_at=?, "
                            "run_id=?, error=?, started_at=?, finished_at=?, attempts=?, epoch=?, owner=?, "
                            "taken_by=NULL, taken_until=NULL, "
                            "store_started = CASE WHEN ?='running' THEN ? ELSE store_started END, "
                            "store_ended = CASE WHEN ? IN ('succeeded','failed','cancelled') THEN ? "
                            "ELSE store_ended END WHERE id=?",
                            (*values, writer, state.value, now, state.value, now, record.id))
            return SaveResult(SaveOutcome.OK)

    async def load_job(self, id: int) -> Reservation | None:
        row = self._require().execute(f"SELECT {JOB_COLS} FROM jobs WHERE id=?", (id,)).fetchone()
        return None if row is None else job_record(row)

    async def add_jobs(self, specs: list[JobSpec]) -> list[int]:
        with self._tx() as cur:
            now = self._now()
            ids = _take_ids(cur, len(specs))
            cur.executemany(
                "INSERT INTO jobs (id, workspace, queue, state, created_at, updated_at, seconds, cpu_ms, fail) "
                "VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?)",
                [(i, s.workspace, s.queue, now, now, s.seconds, s.cpu_ms, int(s.fail)) for i, s in zip(ids, specs)])
            return ids

    async def reserve_ids(self, n: int) -> list[int]:
        """``n`` job ids no one else was or will be given (in this store)."""
        with self._tx() as cur:
            return _take_ids(cur, n)

    async def queued_jobs(self, queues: list[str], after_id: int, limit: int) -> list[StoredJob]:
        db = self._require()
        marks = ", ".join("?" * len(queues))
        try:
            rows = db.execute(f"SELECT {QUEUED_COLS} FROM jobs WHERE state='queued' AND queue IN ({marks}) "
                              "AND id > ? ORDER BY id LIMIT ?", (*queues, after_id, limit)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(_explain(self.path, exc)) from None
        return [stored_job(r) for r in rows]

    async def take_jobs(self, queues: list[str], limit: int) -> list[StoredJob]:
        """Reserve up to ``limit`` queued jobs of ``queues`` that no session holds (or whose
        reservation ran out), from this session's fair share of the workspaces
        (``SqlStore.take_jobs``), for this session, until ``now + lease``; in id order.

        Two steps, so that the write lock, which every other process's operation waits for, is
        held only for the second: a **pick** without the lock (a read: the fair share of the
        head of the queues, ~1-5 ms at a few hundred queued jobs), then the **reservation**
        under it (``BEGIN IMMEDIATE``), which takes of the picked jobs only those still free
        and of a workspace this session may take from now (another session may have claimed a
        lane or reserved a job meanwhile: those are left). Nothing picked takes no lock. The
        share is counted on the pick's snapshot: a take beside this one changes it by its own
        reservations at most."""
        db = self._require()
        queue_of = {f"q{i}": q for i, q in enumerate(queues)}
        me = self.session
        try:
            now = self._now()
            picked = [r[0] for r in db.execute(_pick_sql(len(queues)), {
                **queue_of, "me": me, "now": now, "limit": limit,
                "alive": now - STALE_SESSION_LEASES * self.lease, "head": TAKE_HEAD}).fetchall()]
        except sqlite3.Error as exc:
            message = _explain(self.path, exc)
            self.count_error(message)
            raise StoreError(message) from None
        if not picked:
            return []
        with self._tx() as cur:
            now = self._now()
            rows = cur.execute(_RESERVE, {"me": me, "now": now, "until": now + self.lease,
                                          "ids": json.dumps(picked)}).fetchall()
        return sorted((stored_job(r) for r in rows), key=lambda j: j.record.id)

    async def give_back_jobs(self, ids: list[int] | None = None) -> int:
        """End this session's reservations of queued jobs, or those of the jobs ``ids`` (others
        may take them now)."""
        with self._tx() as cur:
            return _give_back(cur, self.session, ids)

    # -- everything --------------------------------------------------------------------
    async def dump(self) -> dict[str, Any]:
        """Every table as plain data, in one read snapshot (WAL: a reader never waits)."""
        return await dump_by_read(self.read)

    async def read(self, queries: list[tuple[str, tuple]], *,
                   snapshot: bool = True) -> tuple[float, list[list[tuple]]]:
        """Run the SELECTs ``queries`` (``?`` placeholders) in one read snapshot (WAL: no
        writer waits; ``snapshot`` is accepted for PostgreSQL's sake: a local read
        transaction costs no round trip); returns the store clock and each query's rows
        (the follower's reads, :mod:`lanemon.store.sql.reads`). Refused: a closed or
        unreadable store (StoreError)."""
        db = self._require()
        cur = db.cursor()
        try:
            cur.execute("BEGIN")
            try:
                return self._now(), [cur.execute(sql, params).fetchall() for sql, params in queries]
            finally:
                cur.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(_explain(self.path, exc)) from None


def _take_ids(cur: sqlite3.Cursor, n: int) -> list[int]:
    """``n`` fresh job ids from the ``job_id`` row of ``meta`` (above every id ever used)."""
    cur.execute("INSERT OR IGNORE INTO meta VALUES ('job_id', '0')")
    top = cur.execute("UPDATE meta SET value = max(CAST(value AS INTEGER), (SELECT coalesce(max(id), 0) FROM jobs)) "
                      "+ ? WHERE key='job_id' RETURNING CAST(value AS INTEGER)", (n,)).fetchone()[0]
    return list(range(top - n + 1, top + 1))


# ``take_jobs``: a pick (a read, ``{head}``: one ``SELECT`` per queue, :func:`_pick_sql`), then the
# reservation of what it picked under the write lock. The fair share (``SqlStore.take_jobs``): the
# workspaces at the head of the queues divided by the live taking sessions; this session's own
# workspaces first, then those nobody uses, lowest job first.
_USED = (  # who uses each workspace now: a lane held, a job reserved (this session or others)
    "used AS (SELECT workspace, max(mine) AS mine, max(lane * (1 - mine)) AS other_lane "
    "FROM (SELECT workspace, session = :me AS mine, 1 AS lane FROM lanes WHERE lease_until > :now "
    "UNION ALL SELECT workspace, taken_by = :me, 0 FROM jobs INDEXED BY jobs_taken "
    "WHERE taken_by IS NOT NULL AND state='queued' AND taken_until > :now) GROUP BY workspace)")

#: ``take_jobs``'s pick, a read (no write lock): the jobs of this session's fair share of the head
#: of the queues (``{head}``: :func:`_pick_sql`), lowest ids first
_PICK = (
    f"WITH {_USED}, "
    "head AS MATERIALIZED (SELECT id, workspace, taken_by, taken_until FROM ({head}) ORDER BY id LIMIT :head), "
    "queued AS (SELECT workspace, min(id) AS first FROM head GROUP BY workspace), "
    "takers AS MATERIALIZED (SELECT count(*) + 1 AS n FROM sessions WHERE session <> :me "
    "AND json_extract(info, '$.role') = 'lanes' AND coalesce(json_extract(info, '$.lanes'), 'store') = 'store' "
    "AND last_seen > :alive), "
    "allowed AS (SELECT q.workspace FROM queued q LEFT JOIN used u ON u.workspace = q.workspace "
    "WHERE u.workspace IS NULL OR u.mine AND NOT u.other_lane "
    "ORDER BY u.workspace IS NOT NULL DESC, q.first "
    "LIMIT max(1, ((SELECT count(*) FROM queued) + (SELECT n FROM takers) - 1) / (SELECT n FROM takers))) "
    "SELECT id FROM head WHERE (taken_by IS NULL OR taken_until <= :now) "
    "AND workspace IN (SELECT workspace FROM allowed) ORDER BY id LIMIT :limit")

#: ``take_jobs``'s reservation, under the write lock: the picked jobs ``:ids`` (a JSON array) that
#: are still queued, held by nobody, and of a workspace this session may take from now (no lane of
#: another session; reserved by no other session unless this one uses it too)
_RESERVE = (
    f"WITH {_USED} "
    "UPDATE jobs SET taken_by = :me, taken_until = :until WHERE id IN (SELECT value FROM json_each(:ids)) "
    "AND state='queued' AND (taken_by IS NULL OR taken_until <= :now) "
    "AND workspace NOT IN (SELECT workspace FROM used WHERE NOT mine OR other_lane) "
    f"RETURNING {QUEUED_COLS}")


@functools.lru_cache(maxsize=16)
def _pick_sql(n_queues: int) -> str:
    """``_PICK`` for ``n_queues`` queues ``:q0``..: the first ``:head`` queued jobs of each (each
    read in id order from the ``(state, queue, id)`` index, however many jobs ended before them),
    as one ``UNION ALL``."""
    return _PICK.replace("{head}", " UNION ALL ".join(
        f"SELECT * FROM (SELECT id, workspace, taken_by, taken_until FROM jobs "
        f"WHERE state='queued' AND queue = :q{i} ORDER BY state, queue, id LIMIT :head)" for i in range(n_queues)))


def _give_back(cur: sqlite3.Cursor, session: str, ids: list[int] | None = None) -> int:
    if ids is None:
        return cur.execute("UPDATE jobs SET taken_by=NULL, taken_until=NULL WHERE taken_by=?", (session,)).rowcount
    n = 0
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        n += cur.execute(f"UPDATE jobs SET taken_by=NULL, taken_until=NULL WHERE taken_by=? "
                         f"AND id IN ({', '.join('?' * len(part))})", (session, *part)).rowcount
    return n


def _lost_owner(cur: sqlite3.Cursor, epoch: int, owner: str, why: str, now: float) -> None:
    """The jobs still ``running`` under ``epoch``, whose lane just ended: re-queued
    (attempts kept) below MAX_ATTEMPTS, else ``failed`` with ``owner died``."""
    for jid, attempts in cur.execute("SELECT id, attempts FROM jobs WHERE epoch=? AND state='running'",
                                     (epoch,)).fetchall():
        if attempts < MAX_ATTEMPTS:
            cur.execute("UPDATE jobs SET state='queued', run_id=NULL, epoch=NULL, owner=NULL, "
                        "store_started=NULL, error=? WHERE id=?",
                        (f"re-queued: owner {owner} lost its lane ({why})", jid))
            bump(cur, "requeued")
        else:
            cur.execute("UPDATE jobs SET state='failed', error='owner died', store_ended=? WHERE id=?",
                        (now, jid))
            bump(cur, "owner_died")


def bump(cur: sqlite3.Cursor, key: str, n: int = 1) -> None:
    """Add ``n`` to the store-wide count ``key`` (inside the caller's transaction)."""
    cur.execute("UPDATE stats SET value = value + ? WHERE key=?", (n, key))


def next_epoch(cur: sqlite3.Cursor) -> int:
    """The next epoch of the store's one counter (the ``epoch`` row of ``meta``), for lanes
    and counter claims alike; inside the caller's ``BEGIN IMMEDIATE`` transaction."""
    return int(cur.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
                           "WHERE key='epoch' RETURNING value").fetchone()[0])


def _explain(path: str, exc: sqlite3.Error) -> str:
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return f"sqlite store {path} is read-only (file or folder permissions): {text}"
    if "not a database" in text:
        return f"{path} is not an SQLite database"
    if "locked" in text or "busy" in text:
        return f"sqlite store {path} is busy: another process held it longer than {BUSY_TIMEOUT_S:g} s"
    return f"sqlite store {path}: {text}"


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception); SQLite
    errors become :class:`StoreError`."""

    __slots__ = ("_db", "_cur", "_count", "_checkpointer")

    def __init__(self, db: sqlite3.Connection, count=None, checkpointer: _Checkpointer | None = None) -> None:
        self._db = db
        self._count = count  # told every failure's message (the backend's error count)
        self._checkpointer = checkpointer  # told every commit

    def _failed(self, exc: sqlite3.Error) -> StoreError:
        message = _explain(self._db_path(), exc)
        if self._count is not None:
            self._count(message)
        return StoreError(message)

    def __enter__(self) -> sqlite3.Cursor:
        cur = self._cur = self._db.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return cur

    def _db_path(self) -> str:
        for _, name, file in self._db.execute("PRAGMA database_list"):
            if name == "main":
                return file
        return "?"

    def __exit__(self, kind, exc, tb) -> bool:
        cur = self._cur
        if kind is None:
            try:
                cur.execute("COMMIT")
            except sqlite3.Error as err:
                cur.execute("ROLLBACK")
                raise self._failed(err) from None
            if self._checkpointer is not None:
                self._checkpointer.committed()
            return False
        try:
            cur.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        if isinstance(exc, sqlite3.Error):
            raise self._failed(exc) from None
        return False


class _Checkpointer:
    """The WAL's checkpoints for one write connection, mostly in a thread of its own, on a
    connection of its own.

    SQLite checkpoints inside a commit, in the thread that commits, once the WAL passes
    1,000 pages; with ``synchronous=NORMAL`` that is the one place a disk flush happens
    (the WAL's, then the file's), and the loop that commits waits for it. Measured
    (2026-12-03, one process, claim + fenced save + release, statements traced): 74 of
    9,963 commits took over 1 ms, 13.6 ms each on average, a third of all the time.

    Here, every :data:`CHECKPOINT_EVERY` commits (``committed()``: a count) a thread runs
    ``PRAGMA wal_checkpoint(PASSIVE)``: it copies the frames no reader still needs and
    flushes, never waiting for a reader or a writer (the GIL is released while SQLite
    works). SQLite's own checkpoint at a commit stays: only a checkpoint with no write
    beside it can see the whole WAL copied and let the next write start it over (a
    ``RESTART`` from the thread loses the write lock to a busy writer again and again:
    tried, the WAL grew past 200 MB). When it comes, the thread has already copied and
    flushed all but the last few commits' frames, so it is short. Measured the same way:
    101 commits over 1 ms, 0.22 s in all instead of 1.0 s, the longest 3.5 ms instead of
    16.5 ms; the WAL at most ~10 MB; over 8 s on one file 1.4 times the cycles per second
    (alternating with the code before; over 3 s on a fresh file, within the noise).

    Guaranteed: the thread and its connection exist only once ``CHECKPOINT_EVERY`` commits
    were made (a short-lived store starts none); ``close()`` joins the thread (a checkpoint
    under way is finished first) and closes its connection. A failed checkpoint is counted
    (``failures``, ``last_error``), nothing else: SQLite's own still bounds the WAL.
    Refused: nothing."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._commits = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.runs = 0
        self.failures = 0
        self.last_error = ""

    def committed(self) -> None:
        """A commit was made on the write connection."""
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY:
            return
        self._commits = 0
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lanemon-sqlite-checkpoints", daemon=True)
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        db = None
        try:
            db = sqlite3.connect(self._path, isolation_level=None)
            db.execute("PRAGMA synchronous=NORMAL")   # (per connection: the checkpoint's flushes)
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    # (fetchall: a statement not stepped to its end keeps a read transaction open)
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
                except sqlite3.Error as exc:
                    self.failures += 1
                    self.last_error = str(exc)
        except sqlite3.Error as exc:          # (could not connect: SQLite's own checkpoint does the work)
            self.failures += 1
            self.last_error = str(exc)
        finally:
            if db is not None:
                db.close()

    def close(self) -> None:
        """Stop the thread and wait for it (idempotent)."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def read_only_uri(path: str) -> str:
    """The SQLite URI that opens the file ``path`` read-only (``uri=True``): the path
    percent-escaped, so that a ``#``, ``?`` or ``%`` in it is part of the name (unescaped,
    SQLite cut ``/data/run#2/store.db`` at the ``#``, ``mode=ro`` with it, and opened
    ``/data/run`` read-write)."""
    return "file:" + urllib.parse.quote(path, safe="/") + "?mode=ro"


class SqliteFeed:
    """The change feed of an SQLite store, on its own connection.

    ``poll()`` (cheap: ``PRAGMA data_version``, ~12 us) returns the
    ``(table, key)`` pairs committed since the last poll, each once, in commit
    order, or ``None`` when the reader fell behind the kept changes (it must
    read a fresh snapshot then). The first poll returns ``None`` (start from
    a snapshot)."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None,
                                   check_same_thread=False)
        self._version: int | None = None
        self._seq: int | None = None

    def poll(self) -> list[tuple[str, str]] | None:
        db = self._db
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if self._seq is None:
            self._version = version
            self._seq = db.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0]
            return None
        if version == self._version:
            return []
        self._version = version
        rows = db.execute("SELECT seq, tbl, key FROM changes WHERE seq > ? ORDER BY seq",
                          (self._seq,)).fetchall()
        if rows and rows[0][0] != self._seq + 1:
            oldest = db.execute("SELECT min(seq) FROM changes").fetchone()[0]
            if oldest is not None and oldest > self._seq + 1:
                self._seq = rows[-1][0]
                return None
        if rows:
            self._seq = rows[-1][0]
        seen: dict[tuple[str, str], None] = {}
        for _, tbl, key in rows:
            seen[(tbl, str(key))] = None
        return list(seen)

    def close(self) -> None:
        self._db.close()
