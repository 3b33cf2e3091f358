"""What both SQL backends share: column lists, row conversions, the dump, version checks."""

from __future__ import annotations

import json
import os
import socket
import uuid
from typing import Any

from lanemon.lanes.records import Reservation, State
from lanemon.store.sql.backend import SCHEMA_VERSION, JobSpec, LaneRow, SessionRow, StoredJob
from lanemon.store.url import StoreError

__all__ = [
    "BackendSession", "FEED_UPDATE_OF", "JOB_COLS", "LANE_COLS", "QUEUED_COLS", "SESSION_COLS", "check_version",
    "dump_by_read", "dump_rows", "job_record", "lane_row", "new_session", "session_row", "stored_job",
]

LANE_COLS = "name, workspace, owner, session, epoch, claimed_at, lease_until, stop_requested, stop_reason"
JOB_COLS = ("id, workspace, queue, state, created_at, updated_at, run_id, error, started_at, "
            "finished_at, attempts, epoch")
#: a queued job with its work (``stored_job``)
QUEUED_COLS = JOB_COLS + ", seconds, cpu_ms, fail"
SESSION_COLS = "session, pid, host, name, started, last_seen, info"
#: the change feed's trigger on ``jobs`` fires for an update of these columns only: a job's
#: reservation (``taken_by``/``taken_until``: taken, renewed, given back) is no news to a follower
FEED_UPDATE_OF = ("UPDATE OF workspace, queue, state, created_at, updated_at, run_id, error, started_at, "
                  "finished_at, attempts, epoch, owner, store_started, store_ended")


def _info(value: Any) -> dict[str, Any]:
    """A ``sessions.info`` value (SQLite: JSON text; PostgreSQL: jsonb, a dict already)."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def session_row(row: tuple) -> SessionRow:
    return SessionRow(session=row[0], pid=int(row[1]), host=row[2], name=row[3], started=row[4],
                      last_seen=row[5], info=_info(row[6]))


def stored_job(row: tuple) -> StoredJob:
    """A ``jobs`` row (``QUEUED_COLS``) as a record and the work it asks for."""
    record = job_record(row)
    return StoredJob(record=record, spec=JobSpec(workspace=record.workspace, queue=record.queue,
                                                  seconds=float(row[12]), cpu_ms=float(row[13]),
                                                  fail=bool(row[14])))


def lane_row(row: tuple) -> LaneRow:
    return LaneRow(name=row[0], workspace=row[1], owner=row[2], session=row[3], epoch=row[4],
                   claimed_at=row[5], lease_until=row[6], stop_requested=bool(row[7]),
                   stop_reason=row[8])


def job_record(row: tuple) -> Reservation:
    """A ``jobs`` row (``JOB_COLS``) as the seam's record."""
    return Reservation(id=row[0], workspace=row[1], queue=row[2], state=State(row[3]),
                       created_at=row[4], updated_at=row[5], run_id=row[6], error=row[7],
                       started_at=row[8], finished_at=row[9], attempts=row[10], epoch=row[11])


def new_session(name: str = "") -> str:
    """A session id: host, pid and a random part (unique per opened store)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}" + (f":{name}" if name else "")


def dump_rows(fetch, now: float) -> dict[str, Any]:
    """Every table as plain data (shared by both backends; ``fetch(sql) -> rows``)."""
    lanes = [dict(zip(("lane", "workspace", "owner", "session", "epoch", "since", "lease_until",
                       "stop_requested", "stop_reason"), r))
             for r in fetch(f"SELECT {LANE_COLS} FROM lanes ORDER BY name, workspace")]
    for lane in lanes:
        lane["stop_requested"] = bool(lane["stop_requested"])
    jobs = [dict(zip(("id", "workspace", "queue", "state", "run_id", "error", "attempts", "start", "end",
                      "owner", "epoch", "seconds", "cpu_ms", "fail", "taken_by", "taken_until"), r))
            for r in fetch("SELECT id, workspace, queue, state, run_id, error, attempts, store_started, "
                           "store_ended, owner, epoch, seconds, cpu_ms, fail, taken_by, taken_until "
                           "FROM jobs ORDER BY id")]
    for job in jobs:
        job["fail"] = bool(job["fail"])
    ledger = [dict(zip(("at", "writer", "job", "state", "lane", "workspace", "epoch_held", "epoch_current"), r))
              for r in fetch("SELECT at, writer, job_id, state, lane, workspace, epoch_held, epoch_current "
                             "FROM ledger ORDER BY id")]
    history = [dict(zip(("epoch", "lane", "workspace", "owner", "session", "claimed_at", "ended_at",
                         "end_reason"), r))
               for r in fetch("SELECT epoch, name, workspace, owner, session, claimed_at, ended_at, end_reason "
                              "FROM lane_history ORDER BY epoch")]
    stats = {k: int(v) for k, v in fetch("SELECT key, value FROM stats ORDER BY key")}
    stats["claims"] = len(history)  # every claim granted has its history row
    busy = [dict(zip(("workspace", "reason", "since"), r))
            for r in fetch("SELECT workspace, reason, since FROM occupancy ORDER BY workspace")]
    sessions = [dict(zip(("session", "pid", "host", "name", "started", "last_seen", "info"), r))
                for r in fetch(f"SELECT {SESSION_COLS} FROM sessions ORDER BY started")]
    for row in sessions:
        row["info"] = _info(row["info"])
    return {"now": now, "lanes": lanes, "jobs": jobs, "ledger": ledger, "history": history,
            "stats": stats, "stale_releases": stats.get("stale_releases", 0), "sessions": sessions,
            "busy": busy}



async def dump_by_read(read) -> dict[str, Any]:
    """``dump_rows`` over a backend's ``read(queries)`` (one read snapshot, the store clock):
    both backends' ``dump``."""
    wanted: list[str] = []
    dump_rows(lambda sql: wanted.append(sql) or [], 0.0)  # the queries dump_rows makes
    now, rows = await read([(sql, ()) for sql in wanted])
    return dump_rows(dict(zip(wanted, rows)).__getitem__, now)

def check_version(version: int, where: str) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(f"store {where} has schema version {version}, newer than this lanemon's "
                         f"({SCHEMA_VERSION}): upgrade lanemon to use it")
    if version < SCHEMA_VERSION:
        raise StoreError(f"store {where} has schema version {version}, older than this lanemon's "
                         f"({SCHEMA_VERSION}): `lanemon store reset` it (its data is lost)")


class BackendSession:
    """What every backend keeps about its session: ``lease`` (seconds), ``name`` (the
    process's, for ``sessions``), ``session`` (its unique id), ``clock_skew`` (a test
    control added to the store clock), ``schema_version`` (the store's, once opened),
    and what its ``sessions`` row says: ``pid``, ``host``, ``started`` (set when the row
    is first written) and ``info_json`` (``set_info``: written at open and with each renew)."""

    answers_now: bool

    def __init__(self, *, lease: float, name: str = "", info: dict[str, Any] | None = None) -> None:
        self.lease = lease
        self.name = name or "lanemon"
        self.session = new_session(name)
        self.clock_skew = 0.0
        self.schema_version: int | None = None
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.started: float | None = None
        self.info_json = "{}"
        if info is not None:
            self.set_info(info)
        #: operations of this session that failed (a lost connection, a busy file), and the last
        #: one's message: how a process that only retries learns that the store went away
        self.errors = 0
        self.last_error: str | None = None

    def count_error(self, message: str) -> None:
        self.errors += 1
        self.last_error = message

    def set_info(self, info: dict[str, Any]) -> None:
        """What the next renew writes in this session's ``info`` (a JSON object;
        refused with ``TypeError``/``ValueError`` when it is not one)."""
        if not isinstance(info, dict):
            raise TypeError(f"session info must be a dict, not {type(info).__name__}")
        self.info_json = json.dumps(info, sort_keys=True, allow_nan=False)

    def session_values(self, now: float) -> tuple:
        """This session's ``sessions`` row (``SESSION_COLS``) as of ``now``."""
        if self.started is None:
            self.started = now
        return (self.session, self.pid, self.host, self.name, self.started, now, self.info_json)
