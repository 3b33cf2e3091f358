"""Immutable views of the scheduler, for a UI or a test, at one instant.

``Scheduler.snapshot()`` builds a :class:`Snapshot` synchronously, without
awaiting, so on a single event loop it is consistent at one instant: no
change can interleave while it is built.  Everything in it is a frozen
dataclass, tuple, ``NamedTuple`` or plain value; holding on to it is safe and
it never changes afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .lanes import LaneView

__all__ = ["JobView", "QueueView", "RunSpan", "Counts", "Snapshot", "LaneView", "LaneHolder"]


@dataclass(frozen=True, slots=True)
class JobView:
    id: int
    queue: str
    workspace: str
    state: str                 # the stored record's state
    phase: str                 # waiting|starting|running|saving|done
    outcome: str | None        # the final state being saved (phase saving/done)
    run_id: str | None
    error: str | None
    attempts: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    epoch: int | None          # scheduled-lane epoch while started
    stop_requested: bool
    save_held: bool            # a save of this job is waiting on a hold
    work: str                  # description of the work
    placement: str | None      # CPU work: loop|slice|worker
    result: str | None
    notes: tuple[tuple[str, Any], ...] = ()  # every note of its work (RunContext.note),
                                             # key -> latest value, in first-noted order
    owner: str | None = None   # the process that last wrote it (a store's job: ``jobs.owner``)


@dataclass(frozen=True, slots=True)
class QueueView:
    name: str
    waiting: tuple[JobView, ...]   # FIFO order
    running: tuple[JobView, ...]   # lanes held (starting, running or saving)
    recent: tuple[JobView, ...]    # last finished jobs, newest last
    lanes: tuple[LaneView, ...]    # this queue's internal lanes
    counts: Mapping[str, int]      # submitted/waiting/running + terminal states


class RunSpan(NamedTuple):
    """One run of a workspace, for a timeline (lanes claimed -> released).

    From a followed store (``lanemon.agents.follow``): ``owner`` is the process
    that ran it (``None`` in this window's own scheduler) and ``overlap`` says
    that another run of the same workspace ran during part of it."""

    job_id: int
    queue: str
    run_id: str | None
    started_at: float
    ended_at: float
    state: str
    owner: str | None = None
    overlap: bool = False


class LaneHolder(NamedTuple):
    """Who holds a workspace's scheduled lane in a followed store: the agent's name, its
    store session and when the lease runs out (store clock)."""

    agent: str
    session: str
    lease_until: float


@dataclass(frozen=True, slots=True)
class Counts:
    stale_releases: int     # refused releases, all lanes
    stale_writes: int       # refused fenced writes
    failed_saves: int       # saves that raised SaveFailed
    unsaved_finals: int     # jobs whose final record could not be written
    revoked: int            # lanes forcibly cleared
    subscriber_errors: int
    jobs_submitted: int
    jobs_finished: int
    available_errors: int = 0  # project_available predicate calls that raised


@dataclass(frozen=True, slots=True)
class Snapshot:
    at: float
    scheduled: tuple[LaneView, ...]            # the shared app-level lanes
    queues: Mapping[str, QueueView]
    occupancy: Mapping[str, tuple[str, ...]]   # workspace -> outside reasons
    history: Mapping[str, tuple[RunSpan, ...]] # workspace -> recent runs
    holds: tuple[str, ...]                     # descriptions of active save holds
    pending_failures: int
    counts: Counts
    workspaces: tuple[str, ...] = field(default=())  # every workspace seen
    # -- a followed store only (``lanemon.agents.follow``; empty for this window's scheduler) --
    running: Mapping[str, tuple[RunSpan, ...]] = field(default_factory=dict)  # ws -> runs going on
    holders: Mapping[str, LaneHolder] = field(default_factory=dict)  # ws -> its scheduled lane's holder
    overlaps: int = 0          # runs (kept) that overlapped another run of their workspace
    max_at_once: int = 0       # the most runs of one workspace at once among them (0: no run)
    agents: tuple[str, ...] = ()  # the sessions' names (who is connected to the store)
