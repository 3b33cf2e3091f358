"""Project lanes and reservation queues (plain asyncio, no Qt, no numpy).

Public API (see each module's docstring for the exact contract):

- :mod:`.lanes`        ``ProjectLanes``, ``LaneToken``: one owner per
  workspace, fenced by a monotonic epoch; stale releases refused and counted.
- :mod:`.record_lock`  ``RecordLock``: per-reservation FIFO lock, no residue.
- :mod:`.records`      ``Reservation``, ``State``, ``RecordStore`` (awaitable,
  fenced saves; holds and injected failures), ``SaveHold``.
- :mod:`.queues`       ``Scheduler`` (the two queues ``reservations`` and
  ``cafe`` sharing ``scheduled_lanes``; ``aclose()`` ends promptly whatever is
  held or running; ``reset()`` ends every job and forgets the finished ones, so
  their memory can go), ``ReservationQueue``, ``SchedulerClosed``, ``ResetRefused``,
  ``UnknownQueue``.
- :mod:`.work`         pluggable work: ``SimulatedWork``, ``GatedWork``,
  ``CpuWork`` (placed by ``lanemon.work.place``), ``RunContext``.
- :mod:`.occupancy`    ``Occupancy``: outside reasons that make a workspace busy.
- :mod:`.owners`       ``owner_name``, ``parse_owner``, ``Owner``: the one naming
  of a lane's owner (``"<queue>#<job id>"``).
- :mod:`.events`       ``Event``, ``EventHub``: synchronous subscribers.
- :mod:`.snapshot`     immutable views: ``Snapshot``, ``QueueView``,
  ``JobView``, ``LaneView``, ``RunSpan``, ``Counts``.
- :mod:`.invariants`   ``InvariantChecker`` used by tests and the bench.

Storage goes through the store seam (:mod:`lanemon.store.lanes`,
:mod:`lanemon.store.records`): ``ProjectLanes`` and ``RecordStore`` are its
in-memory engine (:mod:`lanemon.store.memory`); ``Scheduler(lanes=...,
store=...)`` takes another engine's.

Hours of use cost bounded memory: the store, the scheduler's finished history
and the checker keep a window of finished jobs (``KEEP_FINISHED``,
``HISTORY_TOTAL``, the constructors' parameters); live jobs are always kept.
``Scheduler.reset()`` drops all of it (and ends the live jobs first).
"""

from .events import Event, EventHub
from .invariants import InvariantChecker
from .lanes import LaneToken, LaneView, ProjectLanes
from .occupancy import Occupancy
from .owners import Owner, owner_name, parse_owner
from .queues import (
    HISTORY_TOTAL,
    QUEUE_NAMES,
    Phase,
    ReservationQueue,
    ResetRefused,
    Scheduler,
    SchedulerClosed,
    UnknownQueue,
)
from .record_lock import RecordLock
from .records import (
    KEEP_FINISHED,
    TERMINAL,
    InvalidTransition,
    RecordStore,
    Reservation,
    SaveError,
    SaveFailed,
    SaveHold,
    StaleWrite,
    State,
)
from .snapshot import Counts, JobView, QueueView, RunSpan, Snapshot
from .work import (
    CpuWork,
    GatedWork,
    RunContext,
    SimulatedWork,
    StopRequested,
    Work,
    WorkFailed,
    as_work,
)

__all__ = [
    "Event", "EventHub", "InvariantChecker", "LaneToken", "LaneView", "ProjectLanes",
    "Occupancy", "Owner", "owner_name", "parse_owner", "QUEUE_NAMES", "Phase", "ReservationQueue",
    "Scheduler", "SchedulerClosed", "ResetRefused", "UnknownQueue",
    "HISTORY_TOTAL", "KEEP_FINISHED", "RecordLock",
    "TERMINAL", "InvalidTransition", "RecordStore", "Reservation", "SaveError", "SaveFailed",
    "SaveHold", "StaleWrite", "State", "Counts", "JobView", "QueueView", "RunSpan", "Snapshot",
    "CpuWork", "GatedWork", "RunContext", "SimulatedWork", "StopRequested", "Work",
    "WorkFailed", "as_work",
]
