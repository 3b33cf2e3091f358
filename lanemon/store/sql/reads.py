"""What a follower reads from a SQL store: one full read, then only the rows that changed.

The queries are the same for both engines (``?`` placeholders; each backend's
``read(queries)`` runs a list of them in one read snapshot and returns the
store clock with their rows). A follower (:mod:`lanemon.agents.follow`) asks
for:

* :func:`full_read` -- once at the start and after the change feed says
  ``None``: the held lanes, every job not finished (queued, running), the
  newest ``recent`` finished jobs, the job counts per queue and state, the
  ledger's size and newest ``ledger`` rows, the outside occupancy, the sessions
  and the highest job id. Bounded by ``recent``/``ledger`` and by the live
  jobs (the store's backlog), not by the store's history.
* :func:`changed` -- the rows the feed named, jobs, lanes, occupancy and
  ledger rows at once, in **one** read (on PostgreSQL: the clock and one
  statement per kind, autocommit, no transaction's round trips);
  :func:`jobs_by_ids`, :func:`ledger_by_ids`, :func:`lanes_by_keys`,
  :func:`busy_by_workspaces` -- one kind each (a key with no row: the row was
  deleted). The keys go as one array parameter (PostgreSQL ``= ANY (...)``,
  SQLite ``IN (SELECT value FROM json_each(?))``), so each query's text is the
  same whatever the number of keys: parsed once by the driver, prepared by
  the server (an ``IN (?, ?, ...)`` list made a new query for every count, and
  psycopg spent ~1.5 ms of the loop parsing each).
* :func:`sessions` -- who is connected (session id, name, pid, host, last seen).

Every row is a frozen dataclass, built and read by field name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from lanemon.store.sql.backend import LaneRow
from lanemon.store.sql.common import LANE_COLS, lane_row

__all__ = [
    "BusyRow", "Changed", "FullRead", "LedgerEntry", "SessionInfo", "StoreJob", "TERMINAL_STATES",
    "busy_by_workspaces", "changed", "full_read", "jobs_by_ids", "lanes_by_keys", "ledger_by_ids", "sessions",
]

TERMINAL_STATES = ("succeeded", "failed", "cancelled")

_JOB_COLS = ("id, workspace, queue, state, run_id, error, attempts, created_at, store_started, store_ended, "
             "owner, epoch, seconds, cpu_ms, fail")
_LEDGER_COLS = "id, at, writer, job_id, state, lane, workspace, epoch_held, epoch_current"


@dataclass(frozen=True, slots=True)
class StoreJob:
    """One job as the store has it (``started`` / ``ended``: ``store_started`` /
    ``store_ended``, the store clock; ``owner``: the writer of its last accepted write)."""

    id: int
    workspace: str
    queue: str
    state: str
    run_id: str | None
    error: str | None
    attempts: int
    created_at: float
    started: float | None
    ended: float | None
    owner: str | None
    epoch: int | None
    seconds: float
    cpu_ms: float
    fail: bool

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A refused write: who (``writer``), which write (``job_id``, ``state``), on which
    lane, the epoch it held and the lane's epoch then (``None``: the lane was free), when
    (``at``, store clock)."""

    id: int
    at: float
    writer: str
    job_id: int
    state: str
    lane: str
    workspace: str
    epoch_held: int
    epoch_current: int | None


@dataclass(frozen=True, slots=True)
class BusyRow:
    workspace: str
    reason: str
    since: float


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session: str
    name: str
    pid: int
    host: str
    last_seen: float


@dataclass(frozen=True, slots=True)
class FullRead:
    now: float
    lanes: tuple[LaneRow, ...]
    live: tuple[StoreJob, ...]         # queued and running, by id
    recent: tuple[StoreJob, ...]       # the newest finished, oldest first
    counts: tuple[tuple[str, str, int], ...]   # (queue, state, jobs)
    ledger_total: int
    ledger_max_id: int
    ledger: tuple[LedgerEntry, ...]    # the newest, oldest first
    by_writer: tuple[tuple[str, int], ...]   # (writer, refused writes)
    busy: tuple[BusyRow, ...]
    sessions: tuple[SessionInfo, ...]
    max_job_id: int


def _job(r: tuple) -> StoreJob:
    return StoreJob(id=r[0], workspace=r[1], queue=r[2], state=r[3], run_id=r[4], error=r[5],
                    attempts=r[6], created_at=r[7], started=r[8], ended=r[9], owner=r[10], epoch=r[11],
                    seconds=r[12], cpu_ms=r[13], fail=bool(r[14]))


def _entry(r: tuple) -> LedgerEntry:
    return LedgerEntry(id=r[0], at=r[1], writer=r[2], job_id=r[3], state=r[4], lane=r[5], workspace=r[6],
                       epoch_held=r[7], epoch_current=r[8])


def _session(r: tuple) -> SessionInfo:
    return SessionInfo(session=r[0], name=r[1], pid=r[2], host=r[3], last_seen=r[4])


_SESSIONS = ("SELECT session, name, pid, host, last_seen FROM sessions ORDER BY started", ())


async def full_read(backend, *, recent: int, ledger: int) -> FullRead:
    """Everything a follower starts from, in one read snapshot (see the module docstring)."""
    now, (lanes, live, fin, counts, ltot, lrows, writers, busy, sess, top) = await backend.read([
        (f"SELECT {LANE_COLS} FROM lanes ORDER BY name, workspace", ()),
        (f"SELECT {_JOB_COLS} FROM jobs WHERE state IN ('queued', 'running') ORDER BY id", ()),
        (f"SELECT {_JOB_COLS} FROM jobs WHERE state IN ('succeeded', 'failed', 'cancelled') "
         "ORDER BY coalesce(store_ended, 0) DESC, id DESC LIMIT ?", (int(recent),)),
        ("SELECT queue, state, count(*) FROM jobs GROUP BY queue, state", ()),
        ("SELECT count(*), coalesce(max(id), 0) FROM ledger", ()),
        (f"SELECT {_LEDGER_COLS} FROM ledger ORDER BY id DESC LIMIT ?", (int(ledger),)),
        ("SELECT writer, count(*) FROM ledger GROUP BY writer", ()),
        ("SELECT workspace, reason, since FROM occupancy", ()),
        _SESSIONS,
        ("SELECT coalesce(max(id), 0) FROM jobs", ()),
    ])
    return FullRead(
        now=now, lanes=tuple(lane_row(r) for r in lanes), live=tuple(_job(r) for r in live),
        recent=tuple(_job(r) for r in reversed(fin)),
        counts=tuple((q, s, int(n)) for q, s, n in counts),
        ledger_total=int(ltot[0][0]), ledger_max_id=int(ltot[0][1]),
        ledger=tuple(_entry(r) for r in reversed(lrows)), by_writer=tuple((w, int(n)) for w, n in writers),
        busy=tuple(_busy(r) for r in busy),
        sessions=tuple(_session(r) for r in sess), max_job_id=int(top[0][0]))


@dataclass(frozen=True, slots=True)
class Changed:
    """The rows :func:`changed` found (those of the keys asked for that exist), with the
    store clock of the read."""

    now: float
    jobs: tuple[StoreJob, ...]
    lanes: tuple[LaneRow, ...]
    busy: tuple[BusyRow, ...]
    ledger: tuple[LedgerEntry, ...]


def _among(backend, expr: str, values: Sequence, kind: str) -> tuple[str, tuple]:
    """``expr`` is one of ``values``: the condition and its one parameter (an array)."""
    if getattr(backend, "dialect", "sqlite") == "postgresql":
        return f"{expr} = ANY (?::{kind}[])", (list(values),)
    return f"{expr} IN (SELECT value FROM json_each(?))", (json.dumps(list(values)),)


def _busy(r: tuple) -> BusyRow:
    return BusyRow(workspace=r[0], reason=r[1], since=r[2])


_KINDS = (  # (what, the query with {where}, the key type, the row's conversion)
    ("jobs", f"SELECT {_JOB_COLS} FROM jobs WHERE {{where}} ORDER BY id", "id", "bigint", _job),
    ("lanes", f"SELECT {LANE_COLS} FROM lanes WHERE {{where}}", "name || ':' || workspace", "text", lane_row),
    ("busy", "SELECT workspace, reason, since FROM occupancy WHERE {where}", "workspace", "text", _busy),
    ("ledger", f"SELECT {_LEDGER_COLS} FROM ledger WHERE {{where}} ORDER BY id", "id", "bigint", _entry),
)


async def changed(backend, *, jobs: Sequence[int] = (), lanes: Sequence[str] = (), busy: Sequence[str] = (),
                  ledger: Sequence[int] = ()) -> Changed:
    """The rows among these keys (jobs and ledger rows by id, lanes by ``"lane:workspace"``,
    occupancy by workspace) in one read of ``backend``; kinds with no key are not read."""
    asked = {"jobs": [int(i) for i in jobs], "lanes": list(lanes), "busy": list(busy),
             "ledger": [int(i) for i in ledger]}
    queries, kinds = [], []
    for what, sql, expr, kind, _ in _KINDS:
        if asked[what]:
            where, params = _among(backend, expr, asked[what], kind)
            queries.append((sql.format(where=where), params))
            kinds.append(what)
    if not queries:
        return Changed(now=await backend.now(), jobs=(), lanes=(), busy=(), ledger=())
    # (no snapshot: each kind is applied on its own, as the feed names them; on PostgreSQL
    # that saves the BEGIN, SET and COMMIT round trips)
    now, results = await backend.read(queries, snapshot=False)
    got = dict.fromkeys(asked, ())
    for what, rows in zip(kinds, results):
        convert = next(k[4] for k in _KINDS if k[0] == what)
        got[what] = tuple(convert(r) for r in rows)
    return Changed(now=now, **got)


async def jobs_by_ids(backend, ids: Sequence[int]) -> tuple[float, list[StoreJob]]:
    """The store clock and the jobs among ``ids`` that exist (by id)."""
    got = await changed(backend, jobs=ids)
    return got.now, list(got.jobs)


async def ledger_by_ids(backend, ids: Sequence[int]) -> list[LedgerEntry]:
    """The ledger rows among ``ids`` (by id)."""
    return list((await changed(backend, ledger=ids)).ledger)


async def lanes_by_keys(backend, keys: Sequence[str]) -> list[LaneRow]:
    """The held lanes among ``keys`` (``"lane:workspace"``, the feed's key)."""
    return list((await changed(backend, lanes=keys)).lanes)


async def busy_by_workspaces(backend, workspaces: Sequence[str]) -> list[BusyRow]:
    """The occupancy rows among ``workspaces``."""
    return list((await changed(backend, busy=workspaces)).busy)


async def sessions(backend) -> list[SessionInfo]:
    """Every session of the store, oldest first."""
    return [_session(r) for r in (await backend.read([_SESSIONS]))[1][0]]
