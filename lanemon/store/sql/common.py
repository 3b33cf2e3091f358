"""What both SQL backends share: column lists, row conversions, the dump, version checks."""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from lanemon.lanes.records import Reservation, State
from lanemon.store.sql.backend import SCHEMA_VERSION, LaneRow
from lanemon.store.url import StoreError

__all__ = [
    "BackendSession", "JOB_COLS", "LANE_COLS", "check_version", "dump_rows", "job_record", "lane_row",
    "new_session",
]

LANE_COLS = "name, workspace, owner, session, epoch, claimed_at, lease_until, stop_requested, stop_reason"
JOB_COLS = ("id, workspace, queue, state, created_at, updated_at, run_id, error, started_at, "
            "finished_at, attempts, epoch")


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
                      "owner", "epoch", "seconds", "cpu_ms", "fail"), r))
            for r in fetch("SELECT id, workspace, queue, state, run_id, error, attempts, store_started, "
                           "store_ended, owner, epoch, seconds, cpu_ms, fail FROM jobs ORDER BY id")]
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
    sessions = [dict(zip(("session", "pid", "host", "name", "started", "last_seen"), r))
                for r in fetch("SELECT session, pid, host, name, started, last_seen FROM sessions ORDER BY started")]
    return {"now": now, "lanes": lanes, "jobs": jobs, "ledger": ledger, "history": history,
            "stats": stats, "stale_releases": stats.get("stale_releases", 0), "sessions": sessions,
            "busy": busy}


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
    control added to the store clock) and ``schema_version`` (the store's, once opened)."""

    answers_now: bool

    def __init__(self, *, lease: float, name: str = "") -> None:
        self.lease = lease
        self.name = name or "lanemon"
        self.session = new_session(name)
        self.clock_skew = 0.0
        self.schema_version: int | None = None
