"""The counter board's SQL, for SQLite and PostgreSQL: one transaction per operation.

The board is the table ``board`` of the store, one row per counter:

=================  ==========================================================
column             meaning
=================  ==========================================================
counter            0 .. n-1
customers          the customers seated on it, in seating order (SQLite: a
                   JSON list; PostgreSQL: ``text[]``)
seated_by          who seated each of them (same order and length)
owner, customer    the claim on record (live or expired), or NULL
epoch              its fencing token (from the store's epoch counter: SQLite
                   the ``epoch`` row of ``meta``, PostgreSQL the sequence
                   ``lanemon.epoch_seq``; shared with the lanes, so an epoch
                   is unique store-wide and strictly increasing)
claimed_at,        store clock (seconds); the claim is live while
expires_at         ``now < expires_at``
expiry_reported    its expiry was noticed and counted (once per claim)
=================  ==========================================================

Change feed: every change of a board row is announced as ``('board',
counter)`` (SQLite: a row of ``changes``, by triggers; PostgreSQL: ``NOTIFY
lanemon, 'board:<counter>'``, delivered at commit).

Counts live in ``stats`` under :data:`BOARD_STATS` (``board_claims`` ...,
one per field of :class:`~lanemon.store.claims.ClaimCounts`): store-wide
running totals over every session since the board was made.

Guaranteed by every operation (SQLite: one ``BEGIN IMMEDIATE`` transaction
through ``SqliteBackend.transaction()``; PostgreSQL: one call of the plpgsql
function ``lanemon.board_op``, one round trip, one transaction):

* it is serialized with every other board operation of every session
  (SQLite: the write lock; PostgreSQL: the transaction advisory lock
  ``(1818324581, 3)``, two-int key space, taken first);
* the store clock is read **after** that lock (SQLite ``backend.clock()``,
  PostgreSQL ``clock_timestamp()`` + the caller's skew), and every TTL of the
  operation is judged by that one reading;
* it first **sweeps**: every claim whose ``expires_at <= now`` and whose
  expiry was not reported yet is marked reported, counted
  (``board_expired``) and returned (:class:`Expiry`, ordered by
  ``expires_at, epoch``), so each expiry is announced exactly once
  store-wide, by the session whose operation noticed it;
* the fencing check is inside the write: ``finalize`` seats the customer
  only if the token's epoch is the counter's current claim and it is live;
  ``release`` clears the claim only if the epoch is current; anything else is
  refused, counted, and changes nothing else;
* it returns a :class:`BoardReply`: the outcome, the clock reading, the
  counter's row after the sweep and before the change (``before``: the
  adapter derives each event's details from it), the expiries, and the whole
  board and its counts after the operation (the adapter's synchronous reads).

Outcomes: ``claim`` ok | refused | missing; ``finalize`` ok | expired |
stale; ``release`` ok | stale; ``expire`` ok | none | missing; ``assign``
ok | double | missing; ``vacate`` ok | absent | missing; ``snapshot`` ok;
``ensure`` ok | in_use. ``missing``: the counter has no row (another
session resized the board); a finalize or release of a missing counter is
stale.

``ensure(n)`` makes the table and its counts if needed and gives the board
``n`` counters: a board of another size is resized only while it is idle (no
customer seated, no live claim; expired claims on removed counters go with
them), else the outcome is ``in_use`` and nothing changes.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from lanemon.store.sql.sqlite import bump, next_epoch
from lanemon.store.url import StoreError

__all__ = [
    "BOARD_STATS", "BoardReply", "BoardRow", "Expiry", "PG_BOARD_DDL", "PG_EPOCH_SEQUENCE", "PG_FEED_CHANNEL",
    "PgBoard", "SQLITE_BOARD_DDL", "SqliteBoard",
]

#: the board's counts in ``stats`` (``board_`` + a ``ClaimCounts`` field)
BOARD_STATS = ("board_claims", "board_claim_refused", "board_finalized", "board_finalize_refused",
               "board_released", "board_release_refused", "board_assigned", "board_expired",
               "board_double_assignments")

#: the PostgreSQL backend's epoch counter (``lanemon.store.sql.postgres``: ``epoch_seq``)
PG_EPOCH_SEQUENCE = "lanemon.epoch_seq"

#: the change feed's NOTIFY channel (``lanemon.store.sql.postgres.FEED_CHANNEL``)
PG_FEED_CHANNEL = "lanemon"

#: advisory lock keys (two-int space; ``postgres.py`` uses (1818324581, 1) while making its schema)
_PG_INSTALL_LOCK = (1818324581, 2)
_PG_BOARD_LOCK = (1818324581, 3)

#: bumped when the PostgreSQL functions change: a store with another version gets them again
BOARD_SQL_VERSION = 1

_COLS = "counter, customers, seated_by, owner, customer, epoch, claimed_at, expires_at, expiry_reported"

SQLITE_BOARD_DDL = """
CREATE TABLE IF NOT EXISTS board (
    counter INTEGER PRIMARY KEY, customers TEXT NOT NULL DEFAULT '[]', seated_by TEXT NOT NULL DEFAULT '[]',
    owner TEXT, customer TEXT, epoch INTEGER UNIQUE, claimed_at REAL, expires_at REAL,
    expiry_reported INTEGER NOT NULL DEFAULT 0);
""" + "".join(
    f"""
CREATE TRIGGER IF NOT EXISTS board_{op.lower()}_feed AFTER {op} ON board
BEGIN INSERT INTO changes (tbl, key) VALUES ('board', {'OLD' if op == 'DELETE' else 'NEW'}.counter); END;"""
    for op in ("INSERT", "UPDATE", "DELETE"))


@dataclass(frozen=True, slots=True)
class BoardRow:
    """One counter as the store has it (times on the store clock)."""

    counter: int
    customers: tuple[str, ...]
    seated_by: tuple[str, ...]
    owner: str | None
    customer: str | None
    epoch: int | None
    claimed_at: float | None
    expires_at: float | None
    expiry_reported: bool

    def live(self, now: float) -> bool:
        """The one rule: a claim is live while ``now < expires_at``."""
        return self.epoch is not None and now < self.expires_at


@dataclass(frozen=True, slots=True)
class Expiry:
    """A claim whose TTL ran out, noticed (and counted) by this operation."""

    counter: int
    owner: str
    customer: str
    epoch: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class BoardReply:
    outcome: str
    now: float          # the store clock the operation decided by (skew included)
    skew: float         # the skew it was given
    mono: float         # this process's time.monotonic() at (about) that reading
    before: BoardRow | None
    expired: tuple[Expiry, ...]
    board: tuple[BoardRow, ...]
    stats: dict[str, int]


# -- SQLite ------------------------------------------------------------------------------------


def _sqlite_row(r: tuple) -> BoardRow:
    return BoardRow(counter=r[0], customers=tuple(json.loads(r[1])), seated_by=tuple(json.loads(r[2])),
                    owner=r[3], customer=r[4], epoch=r[5], claimed_at=r[6], expires_at=r[7],
                    expiry_reported=bool(r[8]))


class SqliteBoard:
    """The board's operations on a :class:`~lanemon.store.sql.sqlite.SqliteBackend`
    (each one ``backend.transaction()``; they complete without suspending)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    async def ensure(self, counters: int) -> BoardReply:
        return self._run("ensure", None, counters)

    async def snapshot(self) -> BoardReply:
        return self._run("snapshot", None)

    async def claim(self, counter: int, owner: str, customer: str, ttl: float) -> BoardReply:
        return self._run("claim", counter, owner, customer, ttl)

    async def finalize(self, counter: int, epoch: int) -> BoardReply:
        return self._run("finalize", counter, epoch)

    async def release(self, counter: int, epoch: int) -> BoardReply:
        return self._run("release", counter, epoch)

    async def expire(self, counter: int) -> BoardReply:
        return self._run("expire", counter)

    async def assign(self, counter: int, customer: str, owner: str) -> BoardReply:
        return self._run("assign", counter, customer, owner)

    async def vacate(self, counter: int, customer: str) -> BoardReply:
        return self._run("vacate", counter, customer)

    # -- the transaction ---------------------------------------------------------------
    def _run(self, name: str, counter: int | None, *args) -> BoardReply:
        backend = self._backend
        op = getattr(self, "_" + name)
        try:
            with backend.transaction() as cur:
                if name == "ensure":
                    sqlite_install(cur)
                now = backend.clock()
                mono = time.monotonic()
                if counter is None:
                    expired = self._sweep(cur, now)
                    return self._reply(cur, op(cur, now, expired, *args), now, mono, None, expired)
                if self._row(cur, counter) is None:
                    if name in ("finalize", "release"):
                        bump(cur, f"board_{name}_refused")
                        return self._reply(cur, "stale", now, mono, None, [])
                    return self._reply(cur, "missing", now, mono, None, [])
                expired = self._sweep(cur, now)
                before = self._row(cur, counter)
                return self._reply(cur, op(cur, now, expired, before, *args), now, mono, before, expired)
        except sqlite3.Error as exc:  # (the transaction turns its own errors into StoreError)
            raise StoreError(f"sqlite store: counter board: {exc}") from None

    def _reply(self, cur, outcome: str, now: float, mono: float, before: BoardRow | None,
               expired: list[Expiry]) -> BoardReply:
        board = tuple(_sqlite_row(r) for r in cur.execute(f"SELECT {_COLS} FROM board ORDER BY counter"))
        stats = {k: int(v) for k, v in cur.execute("SELECT key, value FROM stats WHERE key LIKE 'board\\_%' "
                                                    "ESCAPE '\\'")}
        return BoardReply(outcome=outcome, now=now, skew=self._backend.clock_skew, mono=mono, before=before,
                          expired=tuple(expired), board=board, stats=stats)

    @staticmethod
    def _row(cur, counter: int) -> BoardRow | None:
        r = cur.execute(f"SELECT {_COLS} FROM board WHERE counter=?", (counter,)).fetchone()
        return None if r is None else _sqlite_row(r)

    @staticmethod
    def _sweep(cur, now: float) -> list[Expiry]:
        rows = cur.execute("UPDATE board SET expiry_reported=1 WHERE epoch IS NOT NULL AND expiry_reported=0 "
                           "AND expires_at <= ? RETURNING counter, owner, customer, epoch, expires_at",
                           (now,)).fetchall()
        if rows:
            bump(cur, "board_expired", len(rows))
        gone = [Expiry(counter=r[0], owner=r[1], customer=r[2], epoch=r[3], expires_at=r[4]) for r in rows]
        gone.sort(key=lambda e: (e.expires_at, e.epoch))
        return gone

    @staticmethod
    def _set_seats(cur, counter: int, customers: list[str], seated_by: list[str], clear_claim: bool) -> None:
        claim = (", owner=NULL, customer=NULL, epoch=NULL, claimed_at=NULL, expires_at=NULL, "
                 "expiry_reported=0") if clear_claim else ""
        cur.execute(f"UPDATE board SET customers=?, seated_by=?{claim} WHERE counter=?",
                    (json.dumps(customers), json.dumps(seated_by), counter))

    # -- the operations (inside the transaction, after the sweep) -------------------------
    def _ensure(self, cur, now: float, expired: list[Expiry], counters: int) -> str:
        n, busy = cur.execute("SELECT count(*), coalesce(sum(customers <> '[]' OR "
                              "(epoch IS NOT NULL AND expires_at > ?)), 0) FROM board", (now,)).fetchone()
        if n == counters:
            return "ok"
        if busy:
            return "in_use"
        cur.execute("DELETE FROM board WHERE counter >= ?", (counters,))
        cur.executemany("INSERT OR IGNORE INTO board (counter) VALUES (?)", [(i,) for i in range(counters)])
        return "ok"

    def _snapshot(self, cur, now: float, expired: list[Expiry]) -> str:
        return "ok"

    def _claim(self, cur, now: float, expired, before: BoardRow, owner: str, customer: str, ttl: float) -> str:
        if before.customers or before.live(now):
            bump(cur, "board_claim_refused")
            return "refused"
        epoch = next_epoch(cur)
        cur.execute("UPDATE board SET owner=?, customer=?, epoch=?, claimed_at=?, expires_at=?, expiry_reported=0 "
                    "WHERE counter=?", (owner, customer, epoch, now, now + ttl, before.counter))
        bump(cur, "board_claims")
        return "ok"

    def _finalize(self, cur, now: float, expired, before: BoardRow, epoch: int) -> str:
        if before.epoch != epoch:
            bump(cur, "board_finalize_refused")
            return "stale"
        if not before.live(now):
            bump(cur, "board_finalize_refused")
            return "expired"
        self._set_seats(cur, before.counter, [*before.customers, before.customer],
                        [*before.seated_by, before.owner], clear_claim=True)
        bump(cur, "board_finalized")
        if before.customers:
            bump(cur, "board_double_assignments")
        return "ok"

    def _release(self, cur, now: float, expired, before: BoardRow, epoch: int) -> str:
        if before.epoch != epoch:
            bump(cur, "board_release_refused")
            return "stale"
        self._set_seats(cur, before.counter, list(before.customers), list(before.seated_by), clear_claim=True)
        bump(cur, "board_released")
        return "ok"

    def _expire(self, cur, now: float, expired: list[Expiry], before: BoardRow) -> str:
        if not before.live(now):
            return "none"
        cur.execute("UPDATE board SET expires_at=? WHERE counter=?", (now, before.counter))
        expired.extend(self._sweep(cur, now))
        return "ok"

    def _assign(self, cur, now: float, expired, before: BoardRow, customer: str, owner: str) -> str:
        double = bool(before.customers) or (before.live(now) and before.owner != owner)
        self._set_seats(cur, before.counter, [*before.customers, customer], [*before.seated_by, owner],
                        clear_claim=False)
        bump(cur, "board_assigned")
        if double:
            bump(cur, "board_double_assignments")
            return "double"
        return "ok"

    def _vacate(self, cur, now: float, expired, before: BoardRow, customer: str) -> str:
        if customer not in before.customers:
            return "absent"
        k = before.customers.index(customer)
        customers, seated_by = list(before.customers), list(before.seated_by)
        del customers[k], seated_by[k]
        self._set_seats(cur, before.counter, customers, seated_by, clear_claim=False)
        return "ok"


def sqlite_install(cur) -> None:
    """Make the board table, its change-feed triggers and its counts (idempotent)."""
    for stmt in SQLITE_BOARD_DDL.split(";\n"):
        if stmt.strip():
            cur.execute(stmt)
    cur.executemany("INSERT OR IGNORE INTO stats VALUES (?, 0)", [(k,) for k in BOARD_STATS])


# -- PostgreSQL ---------------------------------------------------------------------------------

PG_BOARD_DDL = f"""
CREATE TABLE IF NOT EXISTS lanemon.board (
    counter integer PRIMARY KEY, customers text[] NOT NULL DEFAULT '{{}}',
    seated_by text[] NOT NULL DEFAULT '{{}}', owner text, customer text, epoch bigint UNIQUE,
    claimed_at float8, expires_at float8, expiry_reported boolean NOT NULL DEFAULT false);
CREATE TABLE IF NOT EXISTS lanemon.stats (key text PRIMARY KEY, value bigint NOT NULL);
INSERT INTO lanemon.stats (key, value)
    SELECT k, 0 FROM unnest(ARRAY[{', '.join(f"'{k}'" for k in BOARD_STATS)}]) AS k
    ON CONFLICT (key) DO NOTHING;

-- the change feed: NOTIFY lanemon, 'board:<counter>' (delivered at commit), as the backend's tables do
CREATE OR REPLACE FUNCTION lanemon.board_feed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{PG_FEED_CHANNEL}', 'board:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.counter
                                                        ELSE NEW.counter END);
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER board_feed AFTER INSERT OR UPDATE OR DELETE ON lanemon.board
    FOR EACH ROW EXECUTE FUNCTION lanemon.board_feed();

CREATE OR REPLACE FUNCTION lanemon.board_sql_version() RETURNS integer LANGUAGE sql IMMUTABLE AS
$$ SELECT {BOARD_SQL_VERSION} $$;

CREATE OR REPLACE FUNCTION lanemon.boardbump(k text, n bigint DEFAULT 1) RETURNS void LANGUAGE sql AS
$$ UPDATE lanemon.stats SET value = value + n WHERE key = k $$;

-- notice the claims that ran out (once each): mark, count, return them in (expires_at, epoch) order
CREATE OR REPLACE FUNCTION lanemon.board_sweep(t float8) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE gone jsonb; n integer;
BEGIN
    WITH g AS (UPDATE lanemon.board SET expiry_reported = true
               WHERE epoch IS NOT NULL AND NOT expiry_reported AND expires_at <= t
               RETURNING counter, owner, customer, epoch, expires_at)
    SELECT coalesce(jsonb_agg(jsonb_build_object('counter', counter, 'owner', owner, 'customer', customer,
                                                 'epoch', epoch, 'expires_at', expires_at)
                              ORDER BY expires_at, epoch), '[]'::jsonb), count(*)
        INTO gone, n FROM g;
    IF n > 0 THEN
        PERFORM lanemon.boardbump('board_expired', n);
    END IF;
    RETURN gone;
END $$;

-- one board operation (see lanemon/store/sql/board.py): the outcome, the clock, the row before,
-- the expiries noticed, and the whole board and its counts after
CREATE OR REPLACE FUNCTION lanemon.board_op(p_op text, p_counter integer, p_epoch bigint, p_owner text,
        p_customer text, p_ttl float8, p_skew float8) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    t float8;
    b lanemon.board;
    before jsonb := NULL;
    gone jsonb := '[]'::jsonb;
    outcome text := 'ok';
    k integer;
    n integer;
    busy boolean;
BEGIN
    PERFORM pg_advisory_xact_lock({_PG_BOARD_LOCK[0]}, {_PG_BOARD_LOCK[1]});
    t := extract(epoch FROM clock_timestamp())::float8 + p_skew;  -- after the lock: the time we decide at
    IF p_op = 'ensure' THEN
        gone := lanemon.board_sweep(t);
        SELECT count(*), coalesce(bool_or(cardinality(customers) > 0 OR (epoch IS NOT NULL AND t < expires_at)),
                                  false)
            INTO n, busy FROM lanemon.board;
        IF n <> p_counter THEN
            IF busy THEN
                outcome := 'in_use';
            ELSE
                DELETE FROM lanemon.board WHERE counter >= p_counter;
                INSERT INTO lanemon.board (counter) SELECT g FROM generate_series(0, p_counter - 1) AS g
                    ON CONFLICT (counter) DO NOTHING;
            END IF;
        END IF;
    ELSIF p_op = 'snapshot' THEN
        gone := lanemon.board_sweep(t);
    ELSE
        PERFORM 1 FROM lanemon.board WHERE counter = p_counter;
        IF NOT FOUND THEN
            IF p_op IN ('finalize', 'release') THEN
                outcome := 'stale';
                PERFORM lanemon.boardbump('board_' || p_op || '_refused');
            ELSE
                outcome := 'missing';
            END IF;
        ELSE
            gone := lanemon.board_sweep(t);
            SELECT * INTO b FROM lanemon.board WHERE counter = p_counter;
            before := to_jsonb(b);
            IF p_op = 'claim' THEN
                IF cardinality(b.customers) > 0 OR (b.epoch IS NOT NULL AND t < b.expires_at) THEN
                    outcome := 'refused';
                    PERFORM lanemon.boardbump('board_claim_refused');
                ELSE
                    UPDATE lanemon.board SET owner = p_owner, customer = p_customer,
                        epoch = nextval('{PG_EPOCH_SEQUENCE}'), claimed_at = t, expires_at = t + p_ttl,
                        expiry_reported = false
                        WHERE counter = p_counter;
                    PERFORM lanemon.boardbump('board_claims');
                END IF;
            ELSIF p_op IN ('finalize', 'release') THEN
                IF b.epoch IS DISTINCT FROM p_epoch THEN
                    outcome := 'stale';
                ELSIF p_op = 'finalize' AND NOT t < b.expires_at THEN
                    outcome := 'expired';
                END IF;
                IF outcome <> 'ok' THEN
                    PERFORM lanemon.boardbump('board_' || p_op || '_refused');
                ELSE
                    UPDATE lanemon.board SET
                        customers = CASE WHEN p_op = 'finalize' THEN customers || b.customer ELSE customers END,
                        seated_by = CASE WHEN p_op = 'finalize' THEN seated_by || b.owner ELSE seated_by END,
                        owner = NULL, customer = NULL, epoch = NULL, claimed_at = NULL, expires_at = NULL,
                        expiry_reported = false
                        WHERE counter = p_counter;
                    IF p_op = 'finalize' THEN
                        PERFORM lanemon.boardbump('board_finalized');
                        IF cardinality(b.customers) > 0 THEN
                            PERFORM lanemon.boardbump('board_double_assignments');
                        END IF;
                    ELSE
                        PERFORM lanemon.boardbump('board_released');
                    END IF;
                END IF;
            ELSIF p_op = 'expire' THEN
                IF b.epoch IS NULL OR NOT t < b.expires_at THEN
                    outcome := 'none';
                ELSE
                    UPDATE lanemon.board SET expires_at = t WHERE counter = p_counter;
                    gone := gone || lanemon.board_sweep(t);
                END IF;
            ELSIF p_op = 'assign' THEN
                UPDATE lanemon.board SET customers = customers || p_customer, seated_by = seated_by || p_owner
                    WHERE counter = p_counter;
                PERFORM lanemon.boardbump('board_assigned');
                IF cardinality(b.customers) > 0
                        OR (b.epoch IS NOT NULL AND t < b.expires_at AND b.owner <> p_owner) THEN
                    outcome := 'double';
                    PERFORM lanemon.boardbump('board_double_assignments');
                END IF;
            ELSIF p_op = 'vacate' THEN
                k := array_position(b.customers, p_customer);
                IF k IS NULL THEN
                    outcome := 'absent';
                ELSE
                    UPDATE lanemon.board SET customers = customers[:k - 1] || customers[k + 1:],
                                             seated_by = seated_by[:k - 1] || seated_by[k + 1:]
                        WHERE counter = p_counter;
                END IF;
            ELSE
                RAISE EXCEPTION 'unknown board operation %', p_op;
            END IF;
        END IF;
    END IF;
    RETURN jsonb_build_object(
        'outcome', outcome, 'now', t, 'before', before, 'expired', gone,
        'board', (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.counter), '[]'::jsonb) FROM lanemon.board r),
        'stats', (SELECT jsonb_object_agg(key, value) FROM lanemon.stats WHERE key LIKE 'board\\_%'));
END $$;
"""


def _pg_row(d: dict) -> BoardRow:
    return BoardRow(counter=d["counter"], customers=tuple(d["customers"]), seated_by=tuple(d["seated_by"]),
                    owner=d["owner"], customer=d["customer"], epoch=d["epoch"], claimed_at=d["claimed_at"],
                    expires_at=d["expires_at"], expiry_reported=bool(d["expiry_reported"]))


class PgBoard:
    """The board's operations over a PostgreSQL backend's ``pool`` (a
    ``psycopg_pool.AsyncConnectionPool`` of autocommit connections) and its
    ``clock_skew``: each one call of ``lanemon.board_op`` (one round trip).
    The first ``ensure`` installs :data:`PG_BOARD_DDL` when the store lacks it
    (or has another :data:`BOARD_SQL_VERSION`), under an advisory lock."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._installed = False

    async def ensure(self, counters: int) -> BoardReply:
        if not self._installed:
            await self._install()
        return await self._call("ensure", counters)

    async def snapshot(self) -> BoardReply:
        return await self._call("snapshot")

    async def claim(self, counter: int, owner: str, customer: str, ttl: float) -> BoardReply:
        return await self._call("claim", counter, owner=owner, customer=customer, ttl=ttl)

    async def finalize(self, counter: int, epoch: int) -> BoardReply:
        return await self._call("finalize", counter, epoch=epoch)

    async def release(self, counter: int, epoch: int) -> BoardReply:
        return await self._call("release", counter, epoch=epoch)

    async def expire(self, counter: int) -> BoardReply:
        return await self._call("expire", counter)

    async def assign(self, counter: int, customer: str, owner: str) -> BoardReply:
        return await self._call("assign", counter, owner=owner, customer=customer)

    async def vacate(self, counter: int, customer: str) -> BoardReply:
        return await self._call("vacate", counter, customer=customer)

    async def _install(self) -> None:
        import psycopg

        try:
            async with self._backend.pool.connection() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", _PG_INSTALL_LOCK)
                cur = await conn.execute("SELECT to_regprocedure('lanemon.board_sql_version()') IS NOT NULL")
                present = (await cur.fetchone())[0]
                if present:
                    cur = await conn.execute("SELECT lanemon.board_sql_version()")
                    present = (await cur.fetchone())[0] == BOARD_SQL_VERSION
                if not present:
                    await conn.execute(PG_BOARD_DDL)
        except psycopg.Error as exc:
            raise StoreError(f"postgresql store: counter board: {_first_line(exc)}") from None
        self._installed = True

    async def _call(self, op: str, counter: int | None = None, *, epoch: int | None = None,
                    owner: str | None = None, customer: str | None = None,
                    ttl: float | None = None) -> BoardReply:
        import psycopg

        backend = self._backend
        skew = backend.clock_skew
        try:
            async with backend.pool.connection() as conn:
                t0 = time.monotonic()
                cur = await conn.execute("SELECT lanemon.board_op(%s, %s, %s, %s, %s, %s, %s)",
                                         (op, counter, epoch, owner, customer, ttl, skew))
                data = (await cur.fetchone())[0]
                t1 = time.monotonic()
        except psycopg.Error as exc:
            raise StoreError(f"postgresql store: counter board: {_first_line(exc)}") from None
        before = data["before"]
        return BoardReply(
            outcome=data["outcome"], now=float(data["now"]), skew=skew, mono=(t0 + t1) / 2,
            before=None if before is None else _pg_row(before),
            expired=tuple(Expiry(counter=e["counter"], owner=e["owner"], customer=e["customer"],
                                 epoch=e["epoch"], expires_at=float(e["expires_at"])) for e in data["expired"]),
            board=tuple(_pg_row(r) for r in data["board"]),
            stats={k: int(v) for k, v in (data["stats"] or {}).items()})


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
