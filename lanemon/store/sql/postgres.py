"""The PostgreSQL backend: several processes on several hosts share one database.

Everything lanemon keeps lives in the schema ``lanemon`` (every connection
sets ``search_path`` to it): the tables of :mod:`lanemon.store.sql.backend`,
the sequence ``epoch_seq`` (the epoch counter: it survives a server restart)
and one plpgsql function per operation, made by ``open(create=True)``. An
operation is **one round trip**: one ``SELECT * FROM lanemon.<op>(...)`` in
autocommit mode, so the function body is one transaction on the server, and
every rule of the backend contract is decided there, whatever process calls.

Guaranteed
----------
* The store clock is ``extract(epoch from clock_timestamp()) + skew``
  (``lanemon.clock(skew)``): read when the function decides, not the
  transaction's start (``now()``).
* ``save_job`` first reads the fencing lane rows ``FOR SHARE`` (in name,
  workspace order, as ``reap`` locks them ``FOR UPDATE``: no lock-order
  deadlock between them), so a revoke, a release or an expiry of one of those
  lanes waits for a save in flight, and a save waits for them; a stale fence
  writes a ledger row and counts ``stale_writes`` in the same transaction,
  exactly as SQLite does.
* Epochs are ``nextval('epoch_seq')``: unique and strictly increasing across
  every session and every restart. A claim that loses a race for a free lane
  to another session's claim (both saw it free) leaves a gap in the numbers
  (a sequence never goes back); a claim refused because the lane is held takes
  none.
* Sessions: every opened backend holds a session-level advisory lock
  (``pg_advisory_lock(hashtextextended(session, 0))``) on a **dedicated
  connection** kept open for the session's life. ``claim_lane`` and ``reap``
  treat a held lane whose session's lock is free
  (``pg_try_advisory_xact_lock`` succeeds) as dead: it is expired at once,
  before its lease runs out. The server frees the lock when the owner's
  connection closes -- a SIGKILLed or crashed process, a closed laptop whose
  TCP connection the server dropped -- so its lanes go to the next claimer
  as soon as the server has seen the connection close (measured by
  ``tests/test_store_postgres.py``, which prints it: 8-14 ms from the SIGKILL
  to the new owner's granted claim, the kill's reaping and the polling claims
  included, on this shared 2-core machine under load; the issue's prototype saw
  4.5 ms). A process that is only paused (SIGSTOP, a long GC pause) keeps its
  connection and its lock: the lease is what catches it.

  Connections per session: the lock connection plus a pool of
  :data:`POOL_MIN`..:data:`POOL_MAX` (psycopg_pool); a change feed adds one
  LISTEN connection.

  Why one lock per *session* and not one per lane or workspace (as a first
  design had it): a session-level advisory lock belongs to one connection,
  so a lock per lane would pin one connection per held lane for as long as it
  is held (a process holding 50 lanes would need 50 connections, and a
  release would have to find the connection that locked it). A lock per
  session costs one idle connection per process, whatever it holds, and the
  lanes table already names each lane's session, so "is this lane's owner
  alive" is one ``pg_try_advisory_xact_lock`` on its session's key. The
  transaction-level try-lock is released at the end of the claimer's
  transaction, so probing never keeps a dead session's key.
* Bad input gives :class:`~lanemon.store.url.StoreError` with one line and
  never the password: an unreachable server (libpq ``connect_timeout``,
  :data:`CONNECT_TIMEOUT_S` unless the URL sets one), a refused login (wrong
  password, no such role), no such database, a ``lanemon`` schema that is not
  a lanemon store, a store of another schema version (the messages of
  :mod:`lanemon.store.sql.sqlite`). A connection lost in the middle of an
  operation gives a StoreError too (the server rolls the transaction back:
  nothing half-written).
* Change feed: triggers on ``lanes``, ``jobs`` and ``ledger`` send
  ``NOTIFY lanemon, 'table:key'`` (delivered at commit, in commit order; see
  :mod:`lanemon.store.sql.feed`).

Not covered: a session whose lock connection is lost while the process runs
on is seen as dead by others (its lanes go to the next claimer; its late
writes are refused by the fence). ``renew`` takes the lock again on a new
connection for the lanes it still holds.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

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
from lanemon.store.url import StoreError, StoreUrl

__all__ = ["CONNECT_TIMEOUT_S", "FEED_CHANNEL", "PostgresBackend", "connect", "explain"]

#: seconds to wait for a server before "unreachable" (unless the URL sets connect_timeout)
CONNECT_TIMEOUT_S = 4

#: the NOTIFY channel of the change feed
FEED_CHANNEL = "lanemon"

#: the pool's sizes (one process: the scheduler's operations and the keeper)
POOL_MIN, POOL_MAX = 1, 4

#: advisory lock (two-int key space, apart from the sessions' bigint keys) held while making the schema
_INIT_LOCK = "pg_advisory_xact_lock(1818324581, 1)"
#: ``add_jobs`` of at least this many jobs analyzes the jobs table when its statistics know fewer rows
ANALYZE_AFTER = 1000
#: the two-int key space's class of the per-lane claim locks (``claim_lane``: claims of one lane take turns)
_CLAIM_LOCK_CLASS = 1818324582

_TABLES = ("meta", "lanes", "lane_history", "jobs", "ledger", "stats", "occupancy", "sessions")

SCHEMA = f"""
CREATE SCHEMA IF NOT EXISTS lanemon;
SET LOCAL search_path TO lanemon;
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE SEQUENCE epoch_seq;
CREATE SEQUENCE job_id_seq;
CREATE TABLE lanes (
    name text NOT NULL, workspace text NOT NULL, owner text NOT NULL, session text NOT NULL,
    epoch bigint NOT NULL UNIQUE, claimed_at float8 NOT NULL, lease_until float8 NOT NULL,
    stop_requested boolean NOT NULL DEFAULT false, stop_reason text,
    PRIMARY KEY (name, workspace));
-- (no index on session or lease_until: the table holds the lanes held now, a few rows per
-- process, and every index is work for each claim and release)
CREATE TABLE lane_history (
    epoch bigint PRIMARY KEY, name text NOT NULL, workspace text NOT NULL, owner text NOT NULL,
    session text NOT NULL, claimed_at float8 NOT NULL, ended_at float8, end_reason text);
CREATE TABLE jobs (
    id bigint PRIMARY KEY, workspace text NOT NULL, queue text NOT NULL,
    state text NOT NULL, created_at float8 NOT NULL, updated_at float8 NOT NULL, run_id text, error text,
    started_at float8, finished_at float8, attempts integer NOT NULL DEFAULT 0, epoch bigint,
    owner text, store_started float8, store_ended float8,
    seconds float8 NOT NULL DEFAULT 0, cpu_ms float8 NOT NULL DEFAULT 0, fail boolean NOT NULL DEFAULT false,
    taken_by text, taken_until float8);
CREATE INDEX jobs_queued ON jobs (state, queue, id);
CREATE INDEX jobs_epoch ON jobs (epoch);
CREATE INDEX jobs_taken ON jobs (taken_by) WHERE taken_by IS NOT NULL;
CREATE TABLE ledger (
    id bigserial PRIMARY KEY, at float8 NOT NULL, writer text NOT NULL,
    job_id bigint NOT NULL, state text NOT NULL, lane text NOT NULL, workspace text NOT NULL,
    epoch_held bigint NOT NULL, epoch_current bigint);
CREATE TABLE stats (key text PRIMARY KEY, value bigint NOT NULL);
CREATE TABLE occupancy (workspace text PRIMARY KEY, reason text NOT NULL, since float8 NOT NULL);
CREATE TABLE sessions (
    session text PRIMARY KEY, pid integer NOT NULL, host text NOT NULL, name text NOT NULL,
    started float8 NOT NULL, last_seen float8 NOT NULL, info jsonb NOT NULL DEFAULT '{{}}'::jsonb);

CREATE FUNCTION clock(skew float8) RETURNS float8 LANGUAGE sql VOLATILE AS
$$ SELECT extract(epoch FROM clock_timestamp())::float8 + skew $$;

-- is the session that holds a lane gone? (its advisory lock is free; ours never is)
CREATE FUNCTION session_gone(s text, mine text) RETURNS boolean LANGUAGE sql VOLATILE AS
$$ SELECT s <> mine AND pg_try_advisory_xact_lock(hashtextextended(s, 0)) $$;

-- end a held lane (lease ran out / session gone): history, count, its running jobs
CREATE FUNCTION expire(l lanemon.lanes, t float8, why text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lanemon.lanes WHERE name = l.name AND workspace = l.workspace AND epoch = l.epoch;
    UPDATE lanemon.lane_history SET ended_at = t, end_reason = 'expired' WHERE epoch = l.epoch;
    UPDATE lanemon.stats SET value = value + 1 WHERE key = 'lease_expired';
    PERFORM lanemon.lost_owner(l, t, why);
END $$;

-- the jobs still running under an ended lane's epoch: re-queued, or failed "owner died"
CREATE FUNCTION lost_owner(l lanemon.lanes, t float8, why text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE j record;
BEGIN
    FOR j IN SELECT id, attempts FROM lanemon.jobs WHERE epoch = l.epoch AND state = 'running'
             ORDER BY id FOR UPDATE LOOP
        IF j.attempts < {MAX_ATTEMPTS} THEN
            UPDATE lanemon.jobs SET state = 'queued', run_id = NULL, epoch = NULL, owner = NULL,
                store_started = NULL, taken_by = NULL, taken_until = NULL,
                error = 're-queued: owner ' || l.owner || ' lost its lane (' || why || ')'
            WHERE id = j.id;
            UPDATE lanemon.stats SET value = value + 1 WHERE key = 'requeued';
        ELSE
            UPDATE lanemon.jobs SET state = 'failed', error = 'owner died', store_ended = t WHERE id = j.id;
            UPDATE lanemon.stats SET value = value + 1 WHERE key = 'owner_died';
        END IF;
    END LOOP;
END $$;

CREATE FUNCTION claim_lane(p_name text, p_ws text, p_owner text, p_session text, p_lease float8,
                           p_skew float8) RETURNS SETOF lanemon.lanes LANGUAGE plpgsql AS $$
DECLARE held lanemon.lanes; t float8; got boolean;
BEGIN
    -- (a mark committed after this read is one made after this claim: the lane is granted and
    -- stays held, as for any lane held when a mark is made)
    PERFORM 1 FROM lanemon.occupancy WHERE workspace = p_ws;
    IF FOUND THEN
        UPDATE lanemon.stats SET value = value + 1 WHERE key = 'busy_refusals';
        RETURN;
    END IF;
    -- claims of one lane take turns (a transaction lock, two-int key space): without it a claim
    -- that read the lane free while another session's claim of it was not yet committed waited
    -- inside its INSERT and was stamped with the time read before the wait -- earlier than the
    -- end of that other ownership when its transaction also ended it
    PERFORM pg_advisory_xact_lock({_CLAIM_LOCK_CLASS}, hashtext(p_name || chr(31) || p_ws));
    SELECT * INTO held FROM lanemon.lanes WHERE name = p_name AND workspace = p_ws FOR UPDATE;
    got := FOUND;
    t := lanemon.clock(p_skew);  -- after the row lock: the time this claim decides at
    IF got THEN
        IF held.lease_until > t AND NOT lanemon.session_gone(held.session, p_session) THEN
            RETURN;
        END IF;
        PERFORM lanemon.expire(held, t, CASE WHEN held.lease_until > t THEN 'session gone'
                                             ELSE 'lease expired' END);
    END IF;
    -- the lane, its history row and the count in one statement (a claim that lost the race
    -- to another session's commits nothing but the sequence number it drew)
    RETURN QUERY
    WITH ins AS (
        INSERT INTO lanemon.lanes VALUES (p_name, p_ws, p_owner, p_session, nextval('lanemon.epoch_seq'), t,
                                          t + p_lease, false, NULL)
        ON CONFLICT (name, workspace) DO NOTHING RETURNING *),
    hist AS (
        INSERT INTO lanemon.lane_history (epoch, name, workspace, owner, session, claimed_at)
        SELECT i.epoch, i.name, i.workspace, i.owner, i.session, i.claimed_at FROM ins i)
    SELECT * FROM ins;
END $$;

CREATE FUNCTION release_lane(p_name text, p_ws text, p_epoch bigint, p_skew float8)
        RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l lanemon.lanes; t float8;
BEGIN
    DELETE FROM lanemon.lanes WHERE name = p_name AND workspace = p_ws AND epoch = p_epoch RETURNING * INTO l;
    IF NOT FOUND THEN
        UPDATE lanemon.stats SET value = value + 1 WHERE key = 'stale_releases';
        RETURN false;
    END IF;
    t := lanemon.clock(p_skew);
    UPDATE lanemon.lane_history SET ended_at = t, end_reason = 'released' WHERE epoch = l.epoch;
    -- (a job left running under it: its final save was lost; the dead-owner rule)
    PERFORM lanemon.lost_owner(l, t, 'released with its job running');
    RETURN true;
END $$;

CREATE FUNCTION revoke_lane(p_name text, p_ws text, p_skew float8)
        RETURNS SETOF lanemon.lanes LANGUAGE plpgsql AS $$
DECLARE l lanemon.lanes;
BEGIN
    DELETE FROM lanemon.lanes WHERE name = p_name AND workspace = p_ws RETURNING * INTO l;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE lanemon.lane_history SET ended_at = lanemon.clock(p_skew), end_reason = 'revoked'
        WHERE epoch = l.epoch;
    UPDATE lanemon.stats SET value = value + 1 WHERE key = 'revoked';
    RETURN NEXT l;
END $$;

CREATE FUNCTION request_stop(p_name text, p_ws text, p_reason text)
        RETURNS SETOF lanemon.lanes LANGUAGE sql AS $$
    UPDATE lanemon.lanes SET stop_requested = true, stop_reason = p_reason
        WHERE name = p_name AND workspace = p_ws RETURNING *
$$;

CREATE FUNCTION mark_busy(p_ws text, p_reason text, p_skew float8) RETURNS boolean LANGUAGE sql AS $$
    INSERT INTO lanemon.occupancy VALUES (p_ws, p_reason, lanemon.clock(p_skew))
        ON CONFLICT (workspace) DO UPDATE SET reason = excluded.reason
        RETURNING xmax = 0
$$;

CREATE FUNCTION clear_busy(p_ws text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lanemon.occupancy WHERE workspace = p_ws;
    RETURN FOUND;
END $$;

CREATE FUNCTION renew(p_session text, p_lease float8, p_skew float8, p_pid integer, p_host text,
                      p_name text, p_started float8, p_info jsonb) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE t float8 := lanemon.clock(p_skew); n integer;
BEGIN
    -- (made again if a reaper dropped it: e.g. the lock connection was lost and is back)
    INSERT INTO lanemon.sessions VALUES (p_session, p_pid, p_host, p_name, coalesce(p_started, t), t, p_info)
        ON CONFLICT (session) DO UPDATE SET last_seen = excluded.last_seen, info = excluded.info;
    UPDATE lanemon.lanes SET lease_until = t + p_lease WHERE session = p_session;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- the reservations of the jobs it waits to run too: after the lanes, the order save_job
    -- locks them in (lanes FOR SHARE, then the job row): jobs first deadlocked with a save of
    -- one of those jobs by the same process's scheduler, on another connection of its pool
    UPDATE lanemon.jobs SET taken_until = t + p_lease WHERE taken_by = p_session AND state = 'queued';
    RETURN n;
END $$;

CREATE FUNCTION reap(p_session text, p_skew float8) RETURNS SETOF lanemon.lanes LANGUAGE plpgsql AS $$
DECLARE l lanemon.lanes; t float8; gone text[];
BEGIN
    SELECT coalesce(array_agg(s), '{{}}') INTO gone FROM
        (SELECT DISTINCT session AS s FROM lanemon.lanes WHERE session <> p_session
         UNION SELECT session FROM lanemon.sessions WHERE session <> p_session) AS others
        WHERE lanemon.session_gone(s, p_session);
    t := lanemon.clock(p_skew);
    FOR l IN SELECT * FROM lanemon.lanes WHERE lease_until <= t OR session = ANY (gone)
             ORDER BY name, workspace FOR UPDATE LOOP
        PERFORM lanemon.expire(l, t, CASE WHEN l.lease_until > t THEN 'session gone'
                                          ELSE 'lease expired' END);
        RETURN NEXT l;
    END LOOP;
    DELETE FROM lanemon.sessions WHERE session = ANY (gone);
    -- a gone session's reservations end at once (not only when they run out)
    UPDATE lanemon.jobs SET taken_by = NULL, taken_until = NULL WHERE taken_by = ANY (gone);
END $$;

CREATE FUNCTION save_job(p_id bigint, p_ws text, p_queue text, p_state text, p_created float8,
                         p_updated float8, p_run_id text, p_error text, p_started float8,
                         p_finished float8, p_attempts integer, p_epoch bigint,
                         f_names text[], f_wss text[], f_epochs bigint[], p_writer text,
                         p_allowed_from text[], p_skew float8,
                         OUT outcome text, OUT fence_name text, OUT fence_ws text, OUT fence_epoch bigint,
                         OUT current_epoch bigint, OUT current_state text)
        LANGUAGE plpgsql AS $$
DECLARE i integer; cur bigint; prev text; t float8; keys text[]; epochs bigint[];
BEGIN
    -- the fencing lanes, read FOR SHARE in a fixed order: a revoke/expiry waits for this save
    SELECT array_agg(k.key), array_agg(k.epoch) INTO keys, epochs FROM (
        SELECT l.name || ':' || l.workspace AS key, l.epoch FROM lanemon.lanes l
            JOIN unnest(f_names, f_wss) AS f(n, w) ON l.name = f.n AND l.workspace = f.w
            ORDER BY l.name, l.workspace FOR SHARE OF l) AS k;
    t := lanemon.clock(p_skew);
    FOR i IN 1 .. coalesce(array_length(f_names, 1), 0) LOOP
        cur := epochs[array_position(keys, f_names[i] || ':' || f_wss[i])];
        IF cur IS DISTINCT FROM f_epochs[i] THEN
            INSERT INTO lanemon.ledger (at, writer, job_id, state, lane, workspace, epoch_held, epoch_current)
                VALUES (t, p_writer, p_id, p_state, f_names[i], f_wss[i], f_epochs[i], cur);
            UPDATE lanemon.stats SET value = value + 1 WHERE key = 'stale_writes';
            outcome := 'stale'; fence_name := f_names[i]; fence_ws := f_wss[i];
            fence_epoch := f_epochs[i]; current_epoch := cur;
            RETURN;
        END IF;
    END LOOP;
    IF 'new' = ANY (p_allowed_from) THEN
        INSERT INTO lanemon.jobs (id, workspace, queue, state, created_at, updated_at, run_id, error,
                                  started_at, finished_at, attempts, epoch, owner)
            VALUES (p_id, p_ws, p_queue, p_state, p_created, p_updated, p_run_id, p_error, p_started,
                    p_finished, p_attempts, p_epoch, p_writer)
            ON CONFLICT (id) DO NOTHING;
        IF FOUND THEN
            outcome := 'ok';
            RETURN;
        END IF;
    END IF;
    -- the transition rule in the write itself (a concurrent writer's row is re-checked after its commit)
    UPDATE lanemon.jobs SET workspace = p_ws, queue = p_queue, state = p_state, created_at = p_created,
        updated_at = p_updated, run_id = p_run_id, error = p_error, started_at = p_started,
        finished_at = p_finished, epoch = p_epoch, owner = p_writer, taken_by = NULL, taken_until = NULL,
        -- the store counts the attempts (a writer's record may be older than a re-queue)
        attempts = CASE WHEN p_state = 'running' THEN attempts + 1 ELSE attempts END,
        store_started = CASE WHEN p_state = 'running' THEN t ELSE store_started END,
        store_ended = CASE WHEN p_state IN ('succeeded', 'failed', 'cancelled') THEN t ELSE store_ended END
        WHERE id = p_id AND state = ANY (p_allowed_from);
    IF FOUND THEN
        outcome := 'ok';
        RETURN;
    END IF;
    SELECT state INTO prev FROM lanemon.jobs WHERE id = p_id;
    UPDATE lanemon.stats SET value = value + 1 WHERE key = 'invalid_transitions';
    outcome := 'invalid'; current_state := coalesce(prev, 'new');
END $$;

CREATE FUNCTION add_jobs(p_wss text[], p_queues text[], p_seconds float8[], p_cpu float8[], p_fail boolean[],
                         p_skew float8) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE t float8; jid bigint; i integer;
BEGIN
    t := lanemon.clock(p_skew);
    FOR i IN 1 .. coalesce(array_length(p_wss, 1), 0) LOOP
        jid := nextval('lanemon.job_id_seq');  -- (the ids every process takes: reserve_ids too)
        INSERT INTO lanemon.jobs (id, workspace, queue, state, created_at, updated_at, seconds, cpu_ms, fail)
            VALUES (jid, p_wss[i], p_queues[i], 'queued', t, t, p_seconds[i], p_cpu[i], p_fail[i]);
        RETURN NEXT jid;
    END LOOP;
END $$;

-- reserve up to p_limit queued jobs that no session holds (or whose reservation ran out); rows
-- another transaction has locked (a save in flight) are skipped, not waited for
CREATE FUNCTION take_jobs(p_queues text[], p_limit integer, p_session text, p_lease float8, p_skew float8)
        RETURNS SETOF lanemon.jobs LANGUAGE plpgsql AS $$
DECLARE t float8 := lanemon.clock(p_skew);
BEGIN
    RETURN QUERY UPDATE lanemon.jobs j SET taken_by = p_session, taken_until = t + p_lease
        WHERE j.id IN (SELECT f.id FROM lanemon.jobs f WHERE f.state = 'queued' AND f.queue = ANY (p_queues)
                       AND (f.taken_by IS NULL OR f.taken_until <= t) ORDER BY f.id LIMIT p_limit
                       FOR UPDATE SKIP LOCKED)
        RETURNING j.*;
END $$;

CREATE FUNCTION reserve_ids(n integer) RETURNS SETOF bigint LANGUAGE sql AS $$
    SELECT nextval('lanemon.job_id_seq') FROM generate_series(1, n)
$$;

CREATE FUNCTION feed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    IF TG_TABLE_NAME = 'lanes' THEN
        PERFORM pg_notify('{FEED_CHANNEL}', 'lanes:' || r.name || ':' || r.workspace);
    ELSIF TG_TABLE_NAME = 'occupancy' THEN
        PERFORM pg_notify('{FEED_CHANNEL}', 'occupancy:' || r.workspace);
    ELSE
        PERFORM pg_notify('{FEED_CHANNEL}', TG_TABLE_NAME || ':' || r.id);
    END IF;
    RETURN NULL;
END $$;
""" + "".join(
    f"\nCREATE TRIGGER {tbl}_feed AFTER INSERT OR {FEED_UPDATE_OF if tbl == 'jobs' else 'UPDATE'} "
    f"OR DELETE ON {tbl} "
    "FOR EACH ROW EXECUTE FUNCTION feed();"
    for tbl in ("lanes", "jobs", "ledger", "occupancy"))

_SQL = {
    "claim": f"SELECT {LANE_COLS} FROM lanemon.claim_lane(%s::text, %s::text, %s::text, %s::text, "
             "%s::float8, %s::float8)",
    "release": "SELECT lanemon.release_lane(%s::text, %s::text, %s::bigint, %s::float8)",
    "revoke": f"SELECT {LANE_COLS} FROM lanemon.revoke_lane(%s::text, %s::text, %s::float8)",
    "stop": f"SELECT {LANE_COLS} FROM lanemon.request_stop(%s::text, %s::text, %s::text)",
    "busy": "SELECT lanemon.mark_busy(%s::text, %s::text, %s::float8)",
    "unbusy": "SELECT lanemon.clear_busy(%s::text)",
    "renew": "SELECT lanemon.renew(%s::text, %s::float8, %s::float8, %s::integer, %s::text, %s::text, "
             "%s::float8, %s::jsonb)",
    "sessions": f"SELECT {SESSION_COLS} FROM lanemon.sessions ORDER BY started",
    "queued": f"SELECT {QUEUED_COLS} FROM lanemon.jobs WHERE state = 'queued' AND queue = ANY (%s::text[]) "
              "AND id > %s::bigint ORDER BY id LIMIT %s::integer",
    "reap": f"SELECT {LANE_COLS} FROM lanemon.reap(%s::text, %s::float8)",
    "save": "SELECT * FROM lanemon.save_job(%s::bigint, %s::text, %s::text, %s::text, %s::float8, "
            "%s::float8, %s::text, %s::text, %s::float8, %s::float8, %s::integer, %s::bigint, "
            "%s::text[], %s::text[], %s::bigint[], %s::text, %s::text[], %s::float8)",
    "add": "SELECT * FROM lanemon.add_jobs(%s::text[], %s::text[], %s::float8[], %s::float8[], "
           "%s::boolean[], %s::float8)",
    "give_back": "WITH g AS (UPDATE lanemon.jobs SET taken_by = NULL, taken_until = NULL "
                 "WHERE taken_by = %s::text RETURNING 1) SELECT count(*) FROM g",
    "give_back_some": "WITH g AS (UPDATE lanemon.jobs SET taken_by = NULL, taken_until = NULL "
                      "WHERE taken_by = %s::text AND id = ANY (%s::bigint[]) RETURNING 1) SELECT count(*) FROM g",
    "clock": "SELECT lanemon.clock(%s::float8)",
    "load": f"SELECT {JOB_COLS} FROM lanemon.jobs WHERE id = %s::bigint",
    "lanes": f"SELECT {LANE_COLS} FROM lanemon.lanes ORDER BY name, workspace",
}

#: ``take_jobs``'s one statement (``{head}``: one ``SELECT`` per queue, :func:`_take_sql`), sent by the
#: client (the schema's older ``take_jobs`` function, which knows no workspace in use elsewhere and no
#: share, stays for stores made before and is no longer called). The fair share
#: (``SqlStore.take_jobs``): the workspaces at the head of the queues divided by the live taking
#: sessions; this session's own workspaces first, then those nobody uses, lowest job first.
_TAKE = (
    "WITH t AS MATERIALIZED (SELECT lanemon.clock(%(skew)s::float8) AS now), "
    # who uses each workspace: a lane held, a job reserved (this session or others)
    "used AS MATERIALIZED (SELECT u.workspace, bool_or(u.mine) AS mine, "
    "bool_or(u.lane AND NOT u.mine) AS other_lane FROM ("
    "SELECT l.workspace, l.session = %(me)s::text AS mine, true AS lane FROM lanemon.lanes l "
    "WHERE l.lease_until > (SELECT now FROM t) "
    "UNION ALL SELECT r.workspace, r.taken_by = %(me)s::text, false FROM lanemon.jobs r "
    "WHERE r.taken_by IS NOT NULL AND r.state = 'queued' AND r.taken_until > (SELECT now FROM t)"
    ") u GROUP BY u.workspace), "
    # the head of the queues: their first TAKE_HEAD queued jobs (each queue's read in id order
    # from the (state, queue, id) index, however many jobs ended before them), and its workspaces
    "head AS MATERIALIZED (SELECT h.id, h.workspace FROM ({head}) h ORDER BY h.id LIMIT %(head)s::integer), "
    "queued AS MATERIALIZED (SELECT h.workspace, min(h.id) AS first FROM head h GROUP BY h.workspace), "
    "takers AS (SELECT count(*) + 1 AS n FROM lanemon.sessions s WHERE s.session <> %(me)s::text "
    "AND s.info->>'role' = 'lanes' AND coalesce(s.info->>'lanes', 'store') = 'store' "
    "AND s.last_seen > (SELECT now FROM t) - %(stale)s::float8), "
    # each workspace picked is locked through its first queued job's row (SKIP LOCKED): takes
    # running at once pick different workspaces (their snapshots do not see each other's
    # reservations; the row lock, and its recheck once the other committed, do)
    "share AS MATERIALIZED (SELECT greatest(1, ceil((SELECT count(*) FROM queued)::float8 "
    "/ (SELECT n FROM takers)))::integer AS k), "
    # (the candidates in order, twice the share: a take beside this one may hold some)
    "candidate AS MATERIALIZED (SELECT q.workspace, q.first, u.workspace IS NOT NULL AS mine "
    "FROM queued q LEFT JOIN used u ON u.workspace = q.workspace "
    "WHERE (u.workspace IS NULL OR u.mine AND NOT u.other_lane) "
    "ORDER BY u.workspace IS NOT NULL DESC, q.first LIMIT 2 * (SELECT k FROM share)), "
    "allowed AS (SELECT c.workspace FROM candidate c JOIN lanemon.jobs w ON w.id = c.first "
    "WHERE w.state = 'queued' AND (w.taken_by IS NULL OR w.taken_by = %(me)s::text "
    "OR w.taken_until <= (SELECT now FROM t)) "
    "ORDER BY c.mine DESC, c.first LIMIT (SELECT k FROM share) FOR UPDATE OF w SKIP LOCKED) "
    "UPDATE lanemon.jobs j SET taken_by = %(me)s::text, taken_until = (SELECT now FROM t) + %(lease)s::float8 "
    # (NOT .. NOT IN: a hashed subplan whatever the planner guesses; an IN became a nested
    # loop over every queued job when the jobs table had no statistics yet: 3 s at 50,000)
    "WHERE j.id IN (SELECT f.id FROM lanemon.jobs f WHERE f.id = ANY (ARRAY("
    "SELECT h.id FROM head h WHERE NOT h.workspace NOT IN (SELECT a.workspace FROM allowed a))) "
    "AND f.state = 'queued' AND (f.taken_by IS NULL OR f.taken_until <= (SELECT now FROM t)) "
    "ORDER BY f.id LIMIT %(limit)s::integer FOR UPDATE OF f SKIP LOCKED) "
    f"RETURNING {', '.join('j.' + c.strip() for c in QUEUED_COLS.split(','))}")


@functools.lru_cache(maxsize=16)
def _take_sql(n_queues: int) -> str:
    """``_TAKE`` for ``n_queues`` queues ``%(q0)s``..: the first ``%(head)s`` queued jobs of each, read
    in id order from the ``(state, queue, id)`` index (a branch per queue: the planner knows each
    queue's rows; one ``= ANY`` read the whole table in id order for a queue with no job)."""
    return _TAKE.replace("{head}", " UNION ALL ".join(
        f"(SELECT q.id, q.workspace FROM lanemon.jobs q WHERE q.state = 'queued' AND q.queue = %(q{i})s::text "
        f"ORDER BY q.state, q.queue, q.id LIMIT %(head)s::integer)" for i in range(n_queues)))


#: for each state written, the stored states it may follow ("new": no row yet): records.transition_allowed
_ALLOWED_FROM = {new: ["new" if prev is None else prev.value for prev in (None, *State)
                       if transition_allowed(prev, new)] for new in State}





def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line
    return "unknown error"


def explain(url: StoreUrl, exc: BaseException) -> str:
    """One line saying what went wrong with ``url`` (never its password)."""
    shown = url.redacted()
    text = str(exc)
    low = text.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        why = "login refused: wrong password or user"
    elif "role" in low and "does not exist" in low:
        why = f"login refused: {_first_line(text).split('FATAL:')[-1].strip()}"
    elif "database" in low and "does not exist" in low:
        why = _first_line(text).split("FATAL:")[-1].strip()
    elif "timeout expired" in low or "timed out" in low:
        why = "server unreachable (no answer within the connect timeout)"
    elif "connection refused" in low:
        why = "server unreachable (connection refused: is PostgreSQL running there?)"
    elif ("server closed the connection" in low or "terminating connection" in low
          or "consuming input failed" in low or "connection is closed" in low or "connection is lost" in low
          or isinstance(exc, psycopg.OperationalError) and "connection" in low):
        why = f"connection lost: {_first_line(text)}"
    else:
        why = _first_line(text)
    line = f"postgresql store {shown}: {why}"
    password = _password(url)
    if password:
        line = line.replace(password, "***")
    return " ".join(line.split())


def _password(url: StoreUrl) -> str | None:
    from urllib.parse import parse_qsl, unquote, urlsplit
    try:
        parts = urlsplit(url.text)
        pw = parts.password
        if pw is None:
            pw = dict(parse_qsl(parts.query)).get("password")
        return unquote(pw) if pw else None
    except ValueError:
        return None


def _conninfo_kwargs(url: StoreUrl) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in url.options:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
    return kwargs


async def connect(url: StoreUrl) -> psycopg.AsyncConnection:
    """A new autocommit connection to ``url`` with ``search_path`` ``lanemon``
    (:class:`StoreError` when it cannot be made)."""
    try:
        conn = await psycopg.AsyncConnection.connect(url.dsn, **_conninfo_kwargs(url))
    except psycopg.Error as exc:
        raise StoreError(explain(url, exc)) from None
    except OSError as exc:
        raise StoreError(explain(url, exc)) from None
    try:
        await conn.execute("SET search_path TO lanemon")
    except psycopg.Error as exc:
        await conn.close()
        raise StoreError(explain(url, exc)) from None
    return conn


class PostgresBackend(BackendSession):
    """One session on one PostgreSQL store (see the module docstring)."""

    answers_now = False
    dialect = "postgresql"

    def __init__(self, url: StoreUrl, *, lease: float, name: str = "", info: dict[str, Any] | None = None) -> None:
        super().__init__(lease=lease, name=name, info=info)
        self.url = url
        self.lock_key: int | None = None
        self._lock_conn: psycopg.AsyncConnection | None = None
        self._pool: AsyncConnectionPool | None = None
        self._own: psycopg.AsyncConnection | None = None   # taken from the pool for the session's life
        self._own_busy = False

    # -- connection and schema -------------------------------------------------------
    async def open(self, *, create: bool, older_ok: bool = False) -> None:
        """Connect, check (or with ``create`` make) the schema, lock and register the
        session. ``older_ok``: accept a lanemon store of an older schema version, for
        ``reset`` only (``schema_version`` says which; no session is registered in it)."""
        conn = await connect(self.url)  # the session's own: the advisory lock lives on it
        try:
            await self._check_or_create(conn, create, older_ok)
            if self.schema_version != SCHEMA_VERSION:
                self._lock_conn = conn
                pool = AsyncConnectionPool(self.url.dsn, min_size=1, max_size=1, open=False,
                                           kwargs=_conninfo_kwargs(self.url), configure=_configure)
                try:
                    await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 2)
                except Exception as exc:    # (as below: a StoreError, never the pool's own)
                    await pool.close()
                    raise StoreError(explain(self.url, exc)) from None
                self._pool = pool
                return
            await self._lock(conn)
            self._lock_conn = conn
            pool = AsyncConnectionPool(self.url.dsn, min_size=POOL_MIN, max_size=POOL_MAX, open=False,
                                       kwargs=_conninfo_kwargs(self.url), configure=_configure,
                                       name=f"lanemon-{self.name}")
            try:
                await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 2)
            except Exception as exc:
                await pool.close()
                raise StoreError(explain(self.url, exc)) from None
            self._pool = pool
            self._own = await pool.getconn()
            t = await self.now()
            await self._call(f"INSERT INTO lanemon.sessions ({SESSION_COLS}) VALUES (%s, %s, %s, %s, %s, %s, "
                             "%s::jsonb) ON CONFLICT (session) DO NOTHING", self.session_values(t), fetch=False)
        except BaseException:
            await self.close()
            await conn.close()
            raise

    async def _lock(self, conn: psycopg.AsyncConnection) -> None:
        try:
            cur = await conn.execute("SELECT hashtextextended(%s, 0), pg_advisory_lock(hashtextextended(%s, 0))",
                                     (self.session, self.session))
            self.lock_key = (await cur.fetchone())[0]
        except psycopg.Error as exc:
            raise StoreError(explain(self.url, exc)) from None

    async def _check_or_create(self, conn: psycopg.AsyncConnection, create: bool, older_ok: bool = False) -> None:
        where = self.url.redacted()
        try:
            async with conn.transaction():
                if create:
                    await conn.execute(f"SELECT {_INIT_LOCK}")
                cur = await conn.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'lanemon' AND c.relkind IN ('r', 'v', 'm', 'p', 'f') ORDER BY 1")
                tables = [r[0] for r in await cur.fetchall()]
                cur = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'lanemon'")
                schema = await cur.fetchone() is not None
                if "meta" in tables:
                    cur = await conn.execute("SELECT value FROM lanemon.meta WHERE key = 'schema_version'")
                    row = await cur.fetchone()
                    if row is None or not str(row[0]).isdigit():
                        raise StoreError(f"postgresql store {where}: schema lanemon has a meta table but no "
                                         "schema_version: not a lanemon store")
                    self.schema_version = int(row[0])
                    if older_ok and self.schema_version < SCHEMA_VERSION:
                        return
                    check_version(self.schema_version, where)
                    missing = set(_TABLES) - set(tables)
                    if missing:
                        raise StoreError(f"postgresql store {where}: schema lanemon lacks "
                                         f"{', '.join(sorted(missing))}: not a lanemon store")
                    return
                if tables:
                    raise StoreError(f"postgresql store {where}: schema lanemon holds other tables "
                                     f"({', '.join(tables[:4])}): not a lanemon store")
                if not create:
                    if schema:
                        raise StoreError(f"postgresql store {where}: schema lanemon is empty: "
                                         "run `lanemon store init` first")
                    raise StoreError(f"postgresql store {where} has no lanemon schema: "
                                     "run `lanemon store init` first")
                await conn.execute(SCHEMA)
                await conn.execute("INSERT INTO lanemon.meta VALUES ('schema_version', %s)",
                                   (str(SCHEMA_VERSION),))
                self.schema_version = SCHEMA_VERSION
                for k in STATS_KEYS:
                    await conn.execute("INSERT INTO lanemon.stats VALUES (%s, 0)", (k,))
        except psycopg.Error as exc:
            raise StoreError(explain(self.url, exc)) from None

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        own, self._own = self._own, None
        if pool is not None:
            if own is not None:
                await pool.putconn(own)
            try:
                async with pool.connection(timeout=2) as conn:
                    await conn.execute("DELETE FROM lanemon.sessions WHERE session = %s", (self.session,))
                    await conn.execute(_SQL["give_back"], (self.session,))
            except Exception:  # a lost server: the session row is reaped by others
                pass
            await pool.close()
        conn, self._lock_conn = self._lock_conn, None
        if conn is not None:
            await conn.close()  # frees the advisory lock

    @property
    def pool(self) -> AsyncConnectionPool:
        """The session's pool (autocommit connections, ``search_path`` lanemon), for the
        other tables' operations (the counter board)."""
        if self._pool is None:
            raise StoreError(f"postgresql store {self.url.redacted()} is closed")
        return self._pool

    async def reset(self) -> None:
        """Drop the schema ``lanemon`` (tables, sequence, functions); ``open(create=True)`` makes it again."""
        await self._call("DROP SCHEMA IF EXISTS lanemon CASCADE", fetch=False)

    async def _call(self, sql: str, params: Any = None, *, fetch: bool | str = True) -> Any:
        """Run ``sql`` (one round trip) on the session's own pooled connection, or on another
        one of the pool while that one is busy (operations in flight at once: the scheduler's
        and the keeper's). ``fetch``: True -> every row, "one" -> the first row, False ->
        nothing. Failures -> :class:`StoreError`; a broken connection goes back to the pool,
        which replaces it."""
        pool = self._pool
        if pool is None:
            raise StoreError(f"postgresql store {self.url.redacted()} is closed")
        try:
            conn = self._own
            if conn is None and not self._own_busy:   # (lost with a broken connection: take another)
                self._own_busy = True
                try:
                    conn = self._own = await pool.getconn()
                finally:
                    self._own_busy = False
            if conn is None or self._own_busy:
                async with pool.connection() as conn:
                    return await _run(conn, sql, params, fetch)
            self._own_busy = True
            try:
                return await _run(conn, sql, params, fetch)
            finally:
                self._own_busy = False
                if conn.broken or conn.closed:
                    self._own = None
                    await pool.putconn(conn)
        except (psycopg.Error, PoolTimeout, PoolClosed) as exc:
            message = explain(self.url, exc)
            self.count_error(message)
            raise StoreError(message) from None

    async def now(self) -> float:
        return (await self._call(_SQL["clock"], (self.clock_skew,), fetch="one"))[0]

    # -- lanes ---------------------------------------------------------------------
    async def claim_lane(self, name: str, workspace: str, owner: str) -> LaneRow | None:
        row = await self._call(_SQL["claim"], (name, workspace, owner, self.session, self.lease,
                                               self.clock_skew), fetch="one")
        return None if row is None else lane_row(row)

    async def release_lane(self, name: str, workspace: str, epoch: int) -> bool:
        return bool((await self._call(_SQL["release"], (name, workspace, epoch, self.clock_skew),
                                      fetch="one"))[0])

    async def revoke_lane(self, name: str, workspace: str) -> LaneRow | None:
        row = await self._call(_SQL["revoke"], (name, workspace, self.clock_skew), fetch="one")
        return None if row is None else lane_row(row)

    async def request_stop(self, name: str, workspace: str, reason: str | None) -> LaneRow | None:
        row = await self._call(_SQL["stop"], (name, workspace, reason), fetch="one")
        return None if row is None else lane_row(row)

    async def mark_busy(self, workspace: str, reason: str) -> bool:
        """Mark ``workspace`` busy outside; False if it already was (the reason is updated)."""
        return bool((await self._call(_SQL["busy"], (workspace, reason, self.clock_skew), fetch="one"))[0])

    async def clear_busy(self, workspace: str) -> bool:
        return bool((await self._call(_SQL["unbusy"], (workspace,), fetch="one"))[0])

    async def renew(self) -> int:
        try:
            await self._relock()
        except StoreError as exc:
            self.count_error(str(exc))
            raise
        return int((await self._call(_SQL["renew"], (self.session, self.lease, self.clock_skew, self.pid,
                                                     self.host, self.name, self.started, self.info_json),
                                     fetch="one"))[0])

    async def sessions(self) -> list[SessionRow]:
        return [session_row(r) for r in await self._call(_SQL["sessions"])]

    async def queued_jobs(self, queues: list[str], after_id: int, limit: int) -> list[StoredJob]:
        return [stored_job(r) for r in await self._call(_SQL["queued"], (list(queues), after_id, limit))]

    async def take_jobs(self, queues: list[str], limit: int) -> list[StoredJob]:
        """Reserve up to ``limit`` queued jobs of ``queues`` for this session (one statement:
        ``FOR UPDATE SKIP LOCKED``), from its fair share of the workspaces (``SqlStore.take_jobs``);
        in id order."""
        params = {f"q{i}": q for i, q in enumerate(queues)}
        params.update(limit=limit, me=self.session, lease=self.lease, skew=self.clock_skew,
                      stale=STALE_SESSION_LEASES * self.lease, head=TAKE_HEAD)
        rows = await self._call(_take_sql(len(queues)), params)
        return sorted((stored_job(r) for r in rows), key=lambda j: j.record.id)

    async def give_back_jobs(self, ids: list[int] | None = None) -> int:
        """End this session's reservations, or those of the jobs ``ids`` (others may take those
        jobs now)."""
        if ids is None:
            return int((await self._call(_SQL["give_back"], (self.session,), fetch="one"))[0])
        return int((await self._call(_SQL["give_back_some"], (self.session, ids), fetch="one"))[0])

    @property
    def lock_pid(self) -> int | None:
        """The server process id of the connection holding the session's advisory lock."""
        conn = self._lock_conn
        return None if conn is None or conn.closed else conn.info.backend_pid

    async def _relock(self) -> None:
        """Take the session's advisory lock again if its connection was lost (a server
        restart, a dropped TCP connection): until then other sessions see this one as gone."""
        conn = self._lock_conn
        if conn is not None and not conn.closed and not conn.broken:
            try:
                await conn.execute("SELECT 1")
                return
            except psycopg.Error:
                pass
        self._lock_conn = None
        if conn is not None:
            await conn.close()
        new = await connect(self.url)
        try:
            await self._lock(new)
        except BaseException:
            await new.close()
            raise
        self._lock_conn = new

    async def reap(self) -> list[LaneRow]:
        return [lane_row(r) for r in await self._call(_SQL["reap"], (self.session, self.clock_skew))]

    async def lane_rows(self) -> list[LaneRow]:
        return [lane_row(r) for r in await self._call(_SQL["lanes"])]

    # -- jobs ----------------------------------------------------------------------
    async def save_job(self, record: Reservation, fence: list[tuple[str, str, int]],
                       writer: str) -> SaveResult:
        state = record.state
        row = await self._call(_SQL["save"], (
            record.id, record.workspace, record.queue, state.value, record.created_at, record.updated_at,
            record.run_id, record.error, record.started_at, record.finished_at, record.attempts, record.epoch,
            [f[0] for f in fence], [f[1] for f in fence], [f[2] for f in fence], writer,
            _ALLOWED_FROM[state], self.clock_skew), fetch="one")
        outcome, name, ws, epoch, current, current_state = row
        if outcome == "ok":
            return SaveResult(SaveOutcome.OK)
        if outcome == "stale":
            return SaveResult(SaveOutcome.STALE, fence=(name, ws, epoch), current_epoch=current)
        return SaveResult(SaveOutcome.INVALID, current_state=current_state)

    async def load_job(self, id: int) -> Reservation | None:
        row = await self._call(_SQL["load"], (id,), fetch="one")
        return None if row is None else job_record(row)

    async def reserve_ids(self, n: int) -> list[int]:
        """``n`` job ids no one else was or will be given (in this store)."""
        rows = await self._call("SELECT * FROM lanemon.reserve_ids(%s::integer)", (n,))
        return [r[0] for r in rows]

    async def add_jobs(self, specs: list[JobSpec]) -> list[int]:
        """Add queued jobs; after a batch of at least :data:`ANALYZE_AFTER` that outnumbers the
        rows the planner's statistics know of (a new store: none), the jobs table is analyzed
        (``take_jobs``'s plan chosen without statistics read every queued job once per picked
        workspace: 3 s a take at 50,000 jobs, 10 ms with them; autovacuum comes a minute later)."""
        rows = await self._call(_SQL["add"], ([s.workspace for s in specs], [s.queue for s in specs],
                                              [float(s.seconds) for s in specs], [float(s.cpu_ms) for s in specs],
                                              [bool(s.fail) for s in specs], self.clock_skew))
        if len(specs) >= ANALYZE_AFTER:
            (known,) = await self._call("SELECT reltuples FROM pg_class WHERE oid = 'lanemon.jobs'::regclass",
                                        fetch="one")
            if known < len(specs):
                await self._call("ANALYZE lanemon.jobs", fetch=False)
        return [r[0] for r in rows]

    # -- everything --------------------------------------------------------------------
    async def dump(self) -> dict[str, Any]:
        """Every table as plain data, read in one REPEATABLE READ snapshot."""
        return await dump_by_read(self.read)

    async def read(self, queries: list[tuple[str, tuple]], *,
                   snapshot: bool = True) -> tuple[float, list[list[tuple]]]:
        """Run the SELECTs ``queries`` (``?`` placeholders, made ``%s`` here) in one
        REPEATABLE READ snapshot; returns the store clock and each query's rows (the
        follower's reads, :mod:`lanemon.store.sql.reads`). ``snapshot=False``: each
        statement on its own (autocommit: no BEGIN, SET and COMMIT round trips), for
        reads whose queries need not agree with each other. Failures -> StoreError."""
        pool = self._pool
        if pool is None:
            raise StoreError(f"postgresql store {self.url.redacted()} is closed")
        try:
            async with pool.connection() as conn:
                async with (conn.transaction() if snapshot else contextlib.nullcontext()):
                    if snapshot:
                        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    cur = await conn.execute(_SQL["clock"], (self.clock_skew,))
                    now = (await cur.fetchone())[0]
                    results = []
                    for sql, params in queries:
                        cur = await conn.execute(sql.replace("?", "%s"), params)
                        results.append(await cur.fetchall())
        except psycopg.Error as exc:
            raise StoreError(explain(self.url, exc)) from None
        except (PoolTimeout, PoolClosed) as exc:
            raise StoreError(explain(self.url, exc)) from None
        return now, results


async def _run(conn: psycopg.AsyncConnection, sql: str, params: Any, fetch: bool | str) -> Any:
    cur = await conn.execute(sql, params)
    if fetch == "one":
        return await cur.fetchone()
    if fetch:
        return await cur.fetchall()
    return None


async def _configure(conn: psycopg.AsyncConnection) -> None:
    await conn.execute("SET search_path TO lanemon")

