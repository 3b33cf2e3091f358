"""What a SQL engine's backend does: one operation per method, each atomic in the store.

A backend (:class:`lanemon.store.sql.sqlite.SqliteBackend`,
:class:`lanemon.store.sql.postgres.PostgresBackend`) is the only code that
speaks SQL. Every method is one transaction (or one statement / one server
function) in its database, so every rule below is **enforced by the store**,
whatever process calls it. The adapters (:mod:`lanemon.store.sql.adapters`)
turn these rows into the seam's types (``LaneToken``, ``Reservation`` ...),
keep the process's own view for the synchronous reads, and emit events.

Every method is a coroutine. ``answers_now`` tells whether the backend
completes them without suspending (SQLite: the file is local, so an
operation runs to its end inside the call; it may block the thread up to the
busy timeout under heavy write contention) or does network I/O (PostgreSQL).

The store clock
---------------
Every time a backend writes or compares (claimed_at, lease_until,
store_started, store_ended, ledger ``at``, claim expiry) is the store's
clock in seconds since the Unix epoch: PostgreSQL ``clock_timestamp()`` (not
``now()``, which is the transaction's start), SQLite ``julianday('now')``
(one machine: one clock), plus ``clock_skew`` (a test control, 0 in use).

Schema (version :data:`SCHEMA_VERSION`; PostgreSQL keeps it in schema ``lanemon``)
--------------------------------------------------------------------------------------
``meta(key, value)`` holds ``schema_version``; a store of a newer version is
refused (:class:`~lanemon.store.url.StoreError`), an older one is refused too
(no migrations yet), a database with a ``lanemon`` schema/tables that are not
ours is refused. Tables: ``lanes`` (one row per held lane: name, workspace,
owner, session, epoch, claimed_at, lease_until, stop_requested,
stop_reason), ``lane_history`` (every ownership ever granted: epoch, name,
workspace, owner, session, claimed_at, ended_at, end_reason), ``jobs``,
``ledger`` (refused writes), ``stats`` (store-wide counts), ``occupancy``
(workspaces busy outside: workspace, reason, since), ``board`` (the
counter claims), ``sessions`` (who is connected: session, pid, host, name,
started, last_seen, info -- a JSON object the process says about itself,
SQLite TEXT, PostgreSQL jsonb; added in version 2). ``jobs.taken_by`` /
``taken_until`` (version 3): the session that reserved a queued job and
until when (``take_jobs``). The epoch counter: a
PostgreSQL sequence; a row of ``meta`` in SQLite.

Rules every backend enforces
----------------------------
* **claim_lane**: a free lane is taken with a fresh epoch (strictly larger
  than any before, from the store's counter; a refused claim takes none). A
  held lane whose lease ran out (``lease_until <= now``), or on PostgreSQL
  whose owner's session is gone (its advisory lock is free), is first
  **expired** (history ``expired``; counted ``lease_expired``; its running
  jobs reaped, below) and then taken. Otherwise ``None``.
* **Outside occupancy** (``mark_busy(ws, reason)`` / ``clear_busy(ws)``:
  the workspace is in use by something outside lanemon, e.g. a user editing
  it) is checked **inside** ``claim_lane``: no lane of a busy workspace is
  granted (``None``, counted ``busy_refusals``), whatever process asks. A
  lane already held when the mark is made is not taken away (its owner may be
  asked to stop).
* **release_lane(name, ws, epoch)**: only the current epoch's release frees
  the lane (history ``released``); any other changes nothing but
  ``stale_releases`` (+1) and returns False. A job still ``running`` under
  the released epoch (its owner's final save was lost, e.g. to a connection
  that went away) is treated as a lost owner's job (below): re-queued or
  ``owner died``, never left running under no lane.
* **revoke_lane**: clears the lane whatever its owner (history ``revoked``,
  ``revoked`` +1); jobs are not touched: the old owner's writes are refused.
* **save_job**: checks every fence ``(name, workspace, epoch)`` against the
  lane rows *in the same transaction as the write* (PostgreSQL: the lane rows
  are read ``FOR SHARE``, so a revoke or an expiry waits for a save in flight
  and a save waits for them). A fence that is not current: nothing written,
  ``stale_writes`` +1, a ledger row (writer, job, state written, epoch held,
  epoch current or NULL when the lane is free, lane, at) -> ``STALE``. Then
  the transition rule of :mod:`lanemon.lanes.records` (a terminal job is
  never overwritten; a new job must be queued): ``invalid_transitions`` +1 ->
  ``INVALID``. Else the row is written with ``owner`` = the writer,
  ``store_started`` set when it becomes running, ``store_ended`` when it
  becomes terminal -> ``OK``. ``attempts`` are counted by the store: a
  ``running`` write sets the stored count + 1, any other update keeps it
  (the record's own value is used only for a new row), so a writer holding
  a record older than a re-queue (an agent's adopted job) cannot set it back
  and the :data:`MAX_ATTEMPTS` rule holds.
* **renew**: this session's lanes get ``lease_until = now + lease``; its
  ``sessions`` row gets ``last_seen = now`` (its last heartbeat) and the
  session's current ``info`` (``set_info``), and is made again if another
  session reaped it (a process that was paused comes back in the list).
* **reap**: expires every lane whose lease ran out (and, on PostgreSQL, every
  lane of a session whose advisory lock is free). It also drops the
  ``sessions`` rows of the gone: on PostgreSQL those whose advisory lock is
  free, on SQLite (no lock to ask) those not renewed for
  :data:`STALE_SESSION_LEASES` of the reaper's leases.
* **sessions**: every session row, oldest first, as :class:`SessionRow`.
* **queued_jobs(queues, after_id, limit)**: up to ``limit`` jobs in state
  ``queued`` of those queues with ``id > after_id``, in id order, each with
  the work it asks for (:class:`StoredJob`); a read, it takes no lock and
  reserves nothing (another process may take the same job: the transition
  rule lets only one ``running`` save through).
* **take_jobs(queues, limit)**: reserves up to ``limit`` jobs in state
  ``queued`` of those queues that no session holds (``taken_by`` NULL) or
  whose reservation ran out (``taken_until <= now``), lowest ids first, for
  this session until ``now + lease``, from this session's **fair share of
  the workspaces** (``SqlStore.take_jobs`` says it whole): never a workspace
  whose lane another session holds or whose jobs another session reserved,
  unless this session uses it too (those jobs would wait for the other's
  lane: with 8 agents each job cost 1.7-3.8 refused claims and their
  wake-ups when they all reserved in id order), and at most
  ceil(workspaces at the head of the queues / live taking sessions)
  workspaces, its own first: without that cap the first session to take reserved a job of
  every workspace and then all the work (one agent of six ran all 240 jobs
  over 10 workspaces). In one atomic statement (SQLite: one
  ``UPDATE ... RETURNING`` inside ``BEGIN IMMEDIATE``; PostgreSQL: the rows
  picked ``FOR UPDATE SKIP LOCKED``): two sessions never hold one job's
  reservation at once. ``renew`` extends this session's reservations of
  jobs still queued; any ``save_job`` of the job ends its reservation;
  ``give_back_jobs`` and closing the session end all of its reservations;
  on PostgreSQL ``reap`` ends those of a gone session. A reservation is not
  a fence: it changes no rule of ``save_job`` (a job is still run once by
  the transition rule, under its lanes' fence). Taking, renewing and giving
  back are not announced by the change feed (the jobs trigger fires for
  updates of the other columns only).
* **Job ids** come from the store (``add_jobs``, ``reserve_ids``: a SQLite
  ``meta`` row, a PostgreSQL sequence), so the processes sharing a store
  never give one id to two jobs.
* **A lost owner's job** (reaped with its lane, or left running at its
  release): its running job goes back
  to ``queued`` (attempts kept; run_id, epoch, owner cleared) while
  ``attempts < MAX_ATTEMPTS``; else it ends ``failed`` with error
  ``owner died``. Either way the lost owner's later writes are refused by
  the fence.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol

from lanemon.lanes.records import Reservation

__all__ = [
    "Backend", "JobSpec", "LaneRow", "MAX_ATTEMPTS", "SCHEMA_VERSION", "STALE_SESSION_LEASES", "TAKE_HEAD",
    "SaveOutcome", "SessionRow", "StoredJob", "STATS_KEYS",
]

#: the schema this lanemon writes and reads (2: ``sessions.info``; 3: ``jobs.taken_by``/``taken_until``)
SCHEMA_VERSION = 3

#: SQLite: a session row not renewed for this many leases is dropped by ``reap``
STALE_SESSION_LEASES = 3
#: ``take_jobs`` shares out the workspaces of the first this many queued jobs (the head of the
#: queues, in id order): a take's cost stays bounded however long the queues are (it need be no
#: more than the takers times a take's batch, 8 x 32)
TAKE_HEAD = 512

#: a job reaped from a dead owner is re-queued while its attempts are below this
MAX_ATTEMPTS = 3

#: the store-wide counts kept in ``stats``
#: (claims granted are the rows of ``lane_history``; claims and saves are not
#: counted in ``stats``: one row every session updates would serialize them all)
STATS_KEYS = ("stale_releases", "revoked", "lease_expired", "stale_writes",
              "invalid_transitions", "requeued", "owner_died", "busy_refusals")


@dataclass(frozen=True, slots=True)
class LaneRow:
    """One held lane as the store has it (times on the store clock)."""

    name: str
    workspace: str
    owner: str
    session: str
    epoch: int
    claimed_at: float
    lease_until: float
    stop_requested: bool
    stop_reason: str | None


class SaveOutcome(str, enum.Enum):
    OK = "ok"
    STALE = "stale"        # a fence was not current: refused, in the ledger
    INVALID = "invalid"    # the transition is not allowed: refused


@dataclass(frozen=True, slots=True)
class SaveResult:
    outcome: SaveOutcome
    #: STALE: the refused fence (name, workspace, epoch held) and the lane's current epoch (None: free)
    fence: tuple[str, str, int] | None = None
    current_epoch: int | None = None
    #: INVALID: the stored state ("new" when there is no row)
    current_state: str | None = None


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job to add to the store (``lanemon store submit``): simulated seconds or CPU ms."""

    workspace: str
    queue: str
    seconds: float = 0.0
    cpu_ms: float = 0.0
    fail: bool = False


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One session of the store (``sessions``): who is connected. ``started`` and
    ``last_seen`` (its last heartbeat: the keeper's renew) are on the store clock;
    ``info`` is what the process says about itself (``SqlStore.set_info``), ``{}``
    until it says something."""

    session: str
    pid: int
    host: str
    name: str
    started: float
    last_seen: float
    info: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredJob:
    """A queued job as the store has it: its record and the work it asks for."""

    record: Reservation
    spec: JobSpec


class Backend(Protocol):
    answers_now: bool
    dialect: str        # "sqlite" or "postgresql" (the few queries written per engine)
    session: str
    lease: float
    clock_skew: float

    schema_version: int | None

    async def open(self, *, create: bool, older_ok: bool = False) -> None: ...
    async def close(self) -> None: ...
    async def reset(self) -> None: ...
    async def now(self) -> float: ...

    # lanes
    async def claim_lane(self, name: str, workspace: str, owner: str) -> LaneRow | None: ...
    async def release_lane(self, name: str, workspace: str, epoch: int) -> bool: ...
    async def revoke_lane(self, name: str, workspace: str) -> LaneRow | None: ...
    async def request_stop(self, name: str, workspace: str, reason: str | None) -> LaneRow | None: ...
    async def mark_busy(self, workspace: str, reason: str) -> bool: ...
    async def clear_busy(self, workspace: str) -> bool: ...
    async def renew(self) -> int: ...
    def set_info(self, info: dict[str, Any]) -> None: ...
    async def sessions(self) -> list[SessionRow]: ...
    async def reap(self) -> list[LaneRow]: ...
    async def lane_rows(self) -> list[LaneRow]: ...

    # jobs
    async def save_job(self, record: Reservation, fence: list[tuple[str, str, int]],
                       writer: str) -> SaveResult: ...
    async def load_job(self, id: int) -> Reservation | None: ...
    async def add_jobs(self, specs: list[JobSpec]) -> list[int]: ...
    async def reserve_ids(self, n: int) -> list[int]: ...
    async def queued_jobs(self, queues: list[str], after_id: int, limit: int) -> list[StoredJob]: ...
    async def take_jobs(self, queues: list[str], limit: int) -> list[StoredJob]: ...
    async def give_back_jobs(self, ids: list[int] | None = None) -> int: ...

    # everything, for ``lanemon store dump`` and the invariant checks
    async def dump(self) -> dict[str, Any]: ...

    # SELECTs in one read snapshot (``?`` placeholders): the follower's reads (``sql.reads``)
    async def read(self, queries: list[tuple[str, tuple]], *,
                   snapshot: bool = True) -> tuple[float, list[list[tuple]]]: ...
