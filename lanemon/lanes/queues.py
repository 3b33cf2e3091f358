"""Two reservation queues sharing one app-level ``scheduled_lanes`` claim.

:class:`Scheduler` owns the general ``"reservations"`` queue and the
``"cafe"`` delivery queue.  Each :class:`ReservationQueue` has its own
internal lanes (a :class:`~lanemon.store.lanes.LaneStore`); both share the
scheduler's ``scheduled_lanes``, so one workspace never runs in both queues at
once while different workspaces run side by side.

Guarantees
----------
* **Start rule.**  A job starts only when, at that instant, its workspace's
  lane is free in its queue's lanes *and* in ``scheduled_lanes``, and
  ``project_available(workspace)`` agrees (no outside occupancy, plus an
  optional app predicate).  Both lanes are claimed synchronously, together.
* **Order.**  Jobs of one workspace start in the order they entered their
  queue (right after their ``queued`` record was saved: the ``saved`` event),
  FIFO per workspace across both queues: the older waiting job gets the
  workspace.  IDs are assigned at the call to ``submit``; with concurrent
  submits whose saves interleave, queue order may differ from ID order.
* **No head-of-line blocking.**  Waiting is per workspace: a job whose
  workspace is busy never delays a job of another workspace submitted after
  it.  A freed workspace is re-examined at once (release, outside occupancy
  cleared, ``kick()``), in O(1) per workspace.
* **Record changes are serialised per reservation** by the shared
  :class:`~lanemon.lanes.record_lock.RecordLock`: the claim (``running``
  save), cancel and final save of one reservation run in order.  The dispatch
  (the work) runs **outside** the record lock.
* **Release only after the final save.**  When the work ends, the final state
  (succeeded / failed / cancelled), run ID and error are saved under the
  record lock, fenced by the job's lane tokens; the lanes are released in
  ``finally`` after that.  While a final save is held open, the workspace
  stays claimed: its next job, in either queue, does not start, while other
  workspaces go on.
* **Failures are recorded and never leak lanes.**  A failing work ends
  ``failed`` with its error.  A failing save (``SaveFailed``, a refused stale
  write, anything) is counted, the failure is written as a ``failed`` record
  with the error (up to 3 attempts; otherwise counted in ``unsaved_finals``)
  and the lanes are still released.
* **Exactly one terminal state.**  Every submitted job ends once, in exactly
  one of succeeded / failed / cancelled, and emits one ``finished`` event.
* **Cancel.**  ``cancel(id)`` of a waiting job (or one whose lanes were just
  claimed but whose ``running`` record is not yet saved) saves ``cancelled``;
  a job that has started never runs its work then.  ``cancel`` of a running
  job requests a stop through its lanes: the work honours it at its next
  checkpoint and ends ``cancelled``; if the work finishes first it keeps its
  real outcome.  Cancel of a finished job changes nothing.

Refused
-------
* A record write from an owner whose token is no longer current (its lane was
  revoked) is refused by the store (``stale_write``); the job's release is
  then stale too and changes nothing.
* A ``submit`` whose ``queued`` save fails raises that error and creates no
  job (the ID it drew is not reused).

Tasks and shutdown
------------------
A started job runs in a *runner* task.  When a finishing job's release starts
the next job of the same workspace, that job continues in the same runner
(one task per busy workspace, not per job); the runner yields to the loop
before every ``RUNNER_BATCH``-th job, so a burst never starves the loop.

``aclose(reason)`` ends everything promptly, whatever is held or running:

1. from its first step no job starts any more and ``submit`` raises
   :class:`SchedulerClosed`; every save hold is released and later holds are
   inert (``RecordStore.close_holds``), so no save waits on a hold again;
2. waiting jobs are saved ``cancelled`` ("cancelled while queued (<reason>)");
3. the tasks of started jobs that are not already in their final save are
   cancelled: a running work sees ``CancelledError`` and ends ``cancelled``
   ("task cancelled (<reason>)"); a job whose lanes were claimed but which had
   not run yet ends ``cancelled`` ("task cancelled before it ran"); a job in
   its final save (a released hold) completes that save with the outcome it
   reached;
4. it returns once every job has finished: each job's final record is saved
   **before** its lanes are released, on close as always.

**Unsaved finals.**  When a job's final record cannot be written (every
attempt failed, a save of a closing scheduler failed, or its task was
cancelled while the write was in progress, e.g. the caller of ``aclose`` was
itself cancelled), the job still ends and frees its lanes, but never with an
outcome the store does not show: it ends ``failed``, its error says
``final record not saved: <why>`` (with the outcome it had reached), an
``unsaved`` event (``detail`` = that text) precedes its ``finished`` event,
and ``Counts.unsaved_finals`` counts it.  The stored record keeps its last
written state.

**Availability.**  A ``project_available`` predicate that raises is treated
as "not available" for that look (the job waits; the next release, ``kick``
or occupancy change looks again), counted in ``Counts.available_errors`` and
announced by an ``available_failed`` event (``detail`` = the error).  A
failing predicate never breaks a release or a job's end.

Bounded memory
--------------
Live jobs (waiting, starting, running, saving) are always kept.  Of the
finished ones the scheduler keeps only what the views read: the last
``recent_limit`` jobs per queue (``QueueView.recent``, ``job(id)``), and per
workspace the last ``history_limit`` runs (``Snapshot.history``: the
timeline, the "last run" column), at most ``history_total`` runs over all
workspaces: beyond that the oldest-ended runs go first, except each
workspace's last run, which is kept while the workspace is listed.  What is
kept per workspace (its name, its last run) grows with the number of
distinct workspaces, not with the number of jobs: a submitted job's workspace
(in its records, views and events) is the scheduler's one string of that name,
not the caller's equal copy (a 99,999-job burst over 9,999 workspaces keeps
9,999 names).  The store keeps its own
window of finished records (``RecordStore(keep_finished=...)``).
``stats()`` reports these sizes.

Storage
-------
The scheduler keeps lanes and records only through the store seam
(:class:`~lanemon.store.lanes.LaneStore`,
:class:`~lanemon.store.records.ReservationStore`); the in-memory engine is
the default.  It uses each operation's now form and awaits the awaitable form
where an engine raises ``WouldBlock`` (releases, stop requests of a cancel,
record saves).  A start whose claim must wait goes on in a task: the
workspace is not looked at again until it ends, and the job starts only if,
once both lanes are claimed, it is still its workspace's next waiting job, the
scheduler is not closing and ``project_available`` agrees; otherwise the
lanes are given back and the workspace looked at again.  ``join``, ``aclose``
and ``idle_clean`` count such claims in progress.  The scheduler owns its
state machine: the queues (:class:`ReservationQueue`) are views over
the state it keeps per queue.

Adopted jobs (several processes on one store)
---------------------------------------------
``adopt(queue, record, work)`` takes a job another process already stored as
``queued`` (``lanemon store submit``, a window, another agent): it enters its
queue as a submitted job does, **without** a ``queued`` save, and the start
rule, the order and the lanes are the same.  Since other processes may adopt
the same job, the store decides who runs it: the job's ``running`` save goes
through the store's transition rule (``queued`` -> ``running`` once) and its
fence.  If that save is refused or fails (``InvalidTransition``: another
process ran it, or it is terminal; ``StaleWrite``: the lane was lost; a store
error), the job is **dropped quietly**: no terminal write by this scheduler,
no ``failed``, no ``finished`` event, its lanes released; it is counted in
``taken_elsewhere`` and announced by a ``taken_elsewhere`` event.  A waiting
adopted job is never saved ``cancelled`` by ``aclose`` or let go by
``let_go_adopted()``: it is dropped the same way, left ``queued`` in the store
for another process.  One that ran ends as any job (its final save fenced).
Counts: ``jobs_submitted`` (adopted jobs included) = ``jobs_finished`` + live
jobs + ``taken_elsewhere``.

Claims that fail
----------------
A claim that raises (a store that went away: not ``WouldBlock``, not a
refusal) leaves the job waiting, counted in ``claim_errors`` and announced by
a ``claim_failed`` event; nothing is held (a first lane already claimed is
given back).  The workspace is looked at again on its next event or ``kick``
(``retry_waiting``).

Single event loop; not thread-safe.  Methods that change records are
coroutines; the rest are synchronous and atomic on the loop.
"""

from __future__ import annotations

import asyncio
import time
from bisect import insort
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from itertools import islice
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from lanemon.store.lanes import LanesFactory, LaneStore, WouldBlock
from lanemon.store.records import ReservationStore

from .events import EventHub
from .occupancy import Occupancy
from .owners import owner_name
from .record_lock import RecordLock
from .records import KEEP_FINISHED, TERMINAL, Reservation, State
from .snapshot import Counts, JobView, QueueView, RunSpan, Snapshot
from .work import RunContext, StopRequested, as_work

__all__ = ["Scheduler", "ReservationQueue", "QUEUE_NAMES", "Phase", "SchedulerClosed",
           "ResetRefused", "UnknownQueue", "HISTORY_TOTAL", "RESET_BATCH", "RESET_BUDGET_S"]

#: runs kept in the scheduler's history over all workspaces (see "Bounded memory")
HISTORY_TOTAL = 20_000

QUEUE_NAMES = ("reservations", "cafe")

#: job ids a scheduler on a shared store takes from it at a time
ID_BLOCK = 64

# ``_reservation(Reservation, id=..., ...)`` builds a record by field name exactly
# as ``Reservation(id=..., ...)`` does (same fields and defaults; a missing or
# unknown name raises), at a third of the cost on the hot path: calling the
# class packs keyword arguments into a dict, its own ``__new__`` does not.
_reservation = Reservation.__new__
_QUEUED = State.QUEUED
_RUNNING = State.RUNNING
_SUCCEEDED = State.SUCCEEDED
_FAILED = State.FAILED
_CANCELLED = State.CANCELLED
_span = RunSpan.__new__  # a RunSpan by field name, without the class call's keyword dict
_seq_of = attrgetter("seq")


class SchedulerClosed(RuntimeError):
    """Refused: the scheduler was closed (``aclose``), or a ``reset`` is ending its jobs;
    it takes no new job (until the reset ends)."""


class ResetRefused(RuntimeError):
    """Refused: a ``reset`` is already under way."""


class UnknownQueue(KeyError):
    """Refused: a queue name that is not one of the scheduler's (``QUEUE_NAMES``). A
    ``KeyError`` whose ``str()`` is its one-line message."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown queue"


#: a reset ends at most this many jobs per loop turn ...
RESET_BATCH = 200
#: ... and stops a turn's batch after this long (a frame is 16.7 ms)
RESET_BUDGET_S = 0.004


class Phase:
    WAITING = "waiting"
    STARTING = "starting"
    RUNNING = "running"
    SAVING = "saving"
    DONE = "done"


# the phases as module names: the hot path reads them several times per job
_WAITING = Phase.WAITING
_STARTING = Phase.STARTING
_PH_RUNNING = Phase.RUNNING
_SAVING = Phase.SAVING
_DONE = Phase.DONE


class _Queue:
    """The scheduler's state of one queue (a plain record the scheduler alone
    changes; :class:`ReservationQueue` is the public view over it)."""

    __slots__ = ("name", "lanes", "waiting", "by_ws", "running", "recent", "submitted",
                 "finished", "emit")

    def __init__(self, name: str, lanes: LaneStore, recent_limit: int,
                 emit: Callable[..., None]) -> None:
        self.name = name
        self.lanes = lanes                              # this queue's internal lanes
        self.emit = emit                                # the scheduler's events (for its jobs)
        self.waiting: dict[int, _Job] = {}              # FIFO over all workspaces
        self.by_ws: dict[str, deque[_Job]] = {}         # FIFO per workspace
        self.running: dict[int, _Job] = {}
        self.recent: deque[_Job] = deque(maxlen=recent_limit)
        self.submitted = 0
        self.finished = {s: 0 for s in TERMINAL}


class _Job:
    __slots__ = ("id", "seq", "queue", "workspace", "work", "record", "phase", "outcome",
                 "lane_token", "sched_token", "task", "error", "placement", "result",
                 "started_at", "ended_at", "final_state", "rev", "view",
                 "view_rev", "unsaved", "notes", "adopted", "dropped")

    def __init__(self, id: int, queue: _Queue, workspace: str, work: Any,
                 record: Reservation) -> None:
        self.id = id
        self.seq = 0  # enqueue order (FIFO key), set when it enters its queue
        self.queue = queue
        self.workspace = workspace
        self.work = work
        self.record = record
        self.phase = _WAITING
        self.outcome: State | None = None
        self.lane_token = None
        self.sched_token = None
        self.task: asyncio.Task | None = None
        self.error: str | None = None
        self.placement: str | None = None
        self.result: Any = None
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.final_state: State | None = None
        # ``rev`` is bumped on every change a JobView shows; ``view`` caches the
        # JobView built at ``view_rev`` (see Scheduler._job_view)
        self.rev = 0
        self.view: JobView | None = None
        self.view_rev = -1
        self.unsaved: str | None = None  # why its final record was not written (if so)
        self.notes: tuple[tuple[str, Any], ...] = ()  # what its work noted (JobView.notes)
        self.adopted = False  # queued by another process (Scheduler.adopt)
        self.dropped: str | None = None  # adopted, left without running here: why

    def note(self, key: str, value: Any) -> None:
        """What the running work says about itself (``RunContext.note``): every
        note is kept, the latest value per key, in ``JobView.notes``;
        ``placement`` is also ``JobView.placement`` and announced (``placed``)."""
        notes = dict(self.notes)
        notes[key] = value
        self.notes = tuple(notes.items())
        self.rev += 1
        if key == "placement":
            self.placement = value
            q = self.queue
            q.emit("placed", self.workspace, q.name, self.id, None, value)


def _err(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ReservationQueue:
    """One queue with its own internal lanes: a view over the state its
    :class:`Scheduler` owns (created by it; changes go through the scheduler)."""

    def __init__(self, scheduler: Scheduler, state: _Queue) -> None:
        self._sched = scheduler
        self._q = state

    @property
    def name(self) -> str:
        return self._q.name

    @property
    def lanes(self) -> LaneStore:
        """This queue's internal lanes."""
        return self._q.lanes

    @property
    def submitted(self) -> int:
        """Jobs submitted to this queue (their ``queued`` record saved)."""
        return self._q.submitted

    @property
    def finished(self) -> Mapping[State, int]:
        """Finished jobs of this queue per terminal state."""
        return MappingProxyType(self._q.finished)

    # -- public API -------------------------------------------------------------
    async def submit(self, workspace: str, work: Any = None) -> int:
        """Queue a job for ``workspace``; returns its reservation ID once the
        ``queued`` record is saved."""
        return await self._sched.submit(self._q.name, workspace, work)

    async def cancel(self, job_id: int) -> str:
        """``Scheduler.cancel`` (any job of the scheduler, whichever its queue)."""
        return await self._sched.cancel(job_id)

    def waiting_ids(self) -> tuple[int, ...]:
        """This queue's waiting jobs now, oldest first."""
        return tuple(self._q.waiting)

    def running_ids(self) -> tuple[int, ...]:
        """This queue's started jobs now (running or saving), in start order."""
        return tuple(self._q.running)

    def view(self, limit: int | None = None, lanes: bool = True) -> QueueView:
        """This queue at this instant.  ``limit`` keeps at most that many jobs
        in each list (the first waiting in FIFO order, the oldest running, the
        newest recent; ``counts`` stay complete); ``lanes=False`` leaves the
        internal lanes out (``()``).  Both only make the view cheaper."""
        return self._sched.queue_view(self._q.name, limit, lanes)


class Scheduler:
    """The app-level scheduler: two queues, shared lanes, store, events.

    Bounds on the finished history it keeps (see "Bounded memory"):
    ``recent_limit`` finished jobs per queue, ``history_limit`` runs per
    workspace, ``history_total`` runs over all workspaces (each workspace's
    last run aside).  The store it makes keeps ``keep_finished`` terminal
    records (a store passed in keeps its own bound).

    Storage goes through the store seam only: ``store`` (a
    :class:`~lanemon.store.records.ReservationStore`, made with this
    scheduler's ``events`` so its ``saved`` events reach the subscribers) and
    ``lanes`` (a :class:`~lanemon.store.lanes.LanesFactory` that makes the
    shared ``scheduled`` lanes and each queue's lanes, all of one engine, the
    one whose tokens fence ``store``'s writes).  Either left out is the
    in-memory engine's (:mod:`lanemon.store.memory`)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        project_available: Callable[[str], bool] | None = None,
        store: ReservationStore | None = None,
        lanes: LanesFactory | None = None,
        events: EventHub | None = None,
        history_limit: int = 50,
        recent_limit: int = 100,
        history_total: int = HISTORY_TOTAL,
        keep_finished: int | None = KEEP_FINISHED,
        queue_names: Iterable[str] = QUEUE_NAMES,
    ) -> None:
        for name, v in (("history_limit", history_limit), ("recent_limit", recent_limit),
                        ("history_total", history_total)):
            if type(v) is not int or v < 1:
                raise ValueError(f"{name} must be an int >= 1, not {v!r}")
        self.clock = clock
        self.events = events or EventHub(clock)
        if store is None or lanes is None:  # the default engine (lanemon.store.memory)
            from lanemon.store.memory import MemoryRecords, memory_lanes
            if store is None:  # (not ``store or``: an empty store is falsy)
                store = MemoryRecords(events=self.events, keep_finished=keep_finished)
            if lanes is None:
                lanes = memory_lanes
        self.store: ReservationStore = store
        self.record_lock = RecordLock()
        self.scheduled_lanes: LaneStore = lanes("scheduled", clock=clock, emit=self.events.emit)
        self.occupancy = Occupancy(self._on_occupancy)
        self.available_hook = project_available
        self.history_limit = history_limit
        self.recent_limit = recent_limit
        self.history_total = history_total
        self._queue_list = tuple(
            _Queue(n, lanes(n, clock=clock, emit=self.events.emit), recent_limit, self.events.emit)
            for n in queue_names)
        self._queue_by_name = {q.name: q for q in self._queue_list}
        self.queues: dict[str, ReservationQueue] = {
            q.name: ReservationQueue(self, q) for q in self._queue_list}
        self._live: dict[int, _Job] = {}
        # workspace -> its runs, oldest first: an immutable tuple, replaced on each change,
        # so a snapshot takes it as it is (a tuple per workspace per snapshot cost ~5 ms
        # at 10,000 workspaces)
        self._history: dict[str, tuple[RunSpan, ...]] = {}
        self._history_order: deque[RunSpan] = deque()  # runs counted, oldest first
        self._history_order_ws: deque[str] = deque()   # ... and their workspaces
        self._history_uncounted: set[str] = set()  # workspaces whose one run is kept uncounted
        # every workspace seen -> its name: the one string of that name the scheduler keeps
        # (a job's workspace, records and events use it: 99,999 jobs over 9,999 workspaces
        # keep 9,999 names, not one equal string per job from the caller)
        self._workspaces: dict[str, str] = {}
        # snapshot caches, rebuilt only after a change: history (None after a
        # run ended) and the sorted workspaces (keyed by their count: they only grow)
        self._history_views: MappingProxyType | None = None
        self._history_keys: list[str] = []  # sorted workspaces of _history (keys only grow)
        self._history_dirty: set[str] = set()  # workspaces whose runs changed since the last view
        self._history_last: dict[str, tuple[RunSpan, ...]] | None = None  # the last view's dict
        self._workspace_views: tuple[str, ...] = ()
        self._next_id = 0
        # a store shared by processes hands out the job ids (``reserve_ids``, optional in the
        # seam); the memory engine has none: this scheduler numbers its jobs itself
        self._reserve_ids = getattr(store, "reserve_ids", None)
        self._ids: list[int] = []  # ids taken from the store, not yet given (last first)
        self._finishing: _Job | None = None
        self._handoff: _Job | None = None
        self._claims: dict[str, asyncio.Task] = {}  # workspace -> its awaited claim (WouldBlock)
        self._stops: set[asyncio.Task] = set()  # awaited stop requests (WouldBlock)
        self._seq = 0
        self._idle: asyncio.Future | None = None  # set when fewer than _wake_below jobs are live
        self._wake_below = 0                 # (0: nobody waits)
        self._loop_ref: asyncio.AbstractEventLoop | None = None
        self._closing: str | None = None     # aclose's (or a reset's) reason, while no job starts
        self._aclosed = False                # aclose began: closed for good
        self._resetting = False              # a reset is ending the live jobs
        self._counts_base: Counts | None = None  # the engines' counts at the last reset
        self._unsubmitted: set[int] = set()  # IDs drawn by submits whose queued save failed (kept by reset)
        self.unsaved_finals = 0
        self.available_errors = 0
        self.jobs_submitted = 0
        self.jobs_finished = 0
        self.jobs_adopted = 0
        self.taken_elsewhere = 0
        self.claim_errors = 0

    # -- the state machine of a job (the queues are views over it) ------------------
    # (a job enters its queue in ``_enter``, from ``_submit`` or ``adopt``)
    def _unqueue(self, job: _Job) -> None:
        q = job.queue
        if q.waiting.pop(job.id, None) is None:
            return
        dq = q.by_ws[job.workspace]
        if dq[0] is job:
            dq.popleft()
        else:
            dq.remove(job)
        if not dq:
            del q.by_ws[job.workspace]

    def _start(self, job: _Job) -> bool:
        """Claim both lanes for ``job`` and dispatch it (synchronous).  An
        engine that cannot claim now (``WouldBlock``): the claim goes on in a
        task (``_claim_awaited``) and the job starts when it succeeds."""
        q = job.queue
        ws = job.workspace
        owner = owner_name(q.name, job.id)
        try:
            lt = q.lanes.claim(ws, owner)
        except WouldBlock:
            self._claim_later(job)
            return False
        except Exception as exc:  # a store that went away (see "Claims that fail")
            self._claim_failed(job, exc)
            return False
        if lt is None:
            return False
        try:
            st = self.scheduled_lanes.claim(ws, owner)
        except WouldBlock:
            q.lanes.release(lt)
            self._claim_later(job)
            return False
        except Exception as exc:
            q.lanes.release(lt)
            self._claim_failed(job, exc)
            return False
        if st is None:
            q.lanes.release(lt)
            return False
        self._started(job, lt, st)
        return True

    def _claim_later(self, job: _Job) -> None:
        """Claim ``job``'s lanes through the awaitable forms, in a task; its
        workspace is not looked at again until that claim has ended."""
        self._claims[job.workspace] = self._loop().create_task(self._claim_awaited(job))

    async def _claim_awaited(self, job: _Job) -> None:
        """Claim both lanes awaiting the engine, then start ``job`` if, at that
        instant, it is still its workspace's next waiting job, the scheduler is
        not closing and ``project_available`` agrees (the start rule);
        otherwise give the lanes back and look at the workspace again."""
        q = job.queue
        ws = job.workspace
        owner = owner_name(q.name, job.id)
        lt = st = None
        try:
            try:
                lt = await q.lanes.aclaim(ws, owner)
                if lt is not None:
                    st = await self.scheduled_lanes.aclaim(ws, owner)
            except Exception as exc:  # a store that went away (see "Claims that fail")
                self._claim_failed(job, exc)
                if lt is not None:
                    await q.lanes.arelease(lt)
                return
            claimed = lt is not None and st is not None
            still_next = claimed and job.phase is Phase.WAITING and self._closing is None \
                and self._next_waiting(ws) is job
            if still_next and self._available(ws, job):
                self._started(job, lt, st)
                return
            for lanes, token in ((q.lanes, lt), (self.scheduled_lanes, st)):
                if token is not None:
                    await lanes.arelease(token)
        finally:
            del self._claims[ws]  # (join and aclose wait for it until here)
        # Look again: a kick, release or occupancy change that came while these
        # lanes were held by the claim found the workspace taken and did nothing.
        if lt is not None:
            self._kick(ws)

    def _claim_failed(self, job: _Job, exc: Exception) -> None:
        self.claim_errors += 1
        self.events.emit("claim_failed", job.workspace, job.queue.name, job.id, None, _err(exc))

    def _started(self, job: _Job, lt: Any, st: Any) -> None:
        """``job`` holds both lanes: it leaves its queue and is dispatched."""
        q = job.queue
        ws = job.workspace
        # it leaves its queue (== self._unqueue(job) for a waiting job, inlined)
        del q.waiting[job.id]
        dq = q.by_ws[ws]
        if dq[0] is job:
            dq.popleft()
        else:
            dq.remove(job)
        if not dq:
            del q.by_ws[ws]
        job.lane_token = lt
        job.sched_token = st
        job.phase = _STARTING
        job.started_at = st.claimed_at
        job.rev += 1
        q.running[job.id] = job
        self.events.emit("started", ws, q.name, job.id, None, st.epoch)
        # dispatch: to the runner of the job that is finishing in this workspace
        # (see "A job runs in a *runner* task"), else to a new runner
        f = self._finishing
        if f is not None and f.workspace == ws and self._handoff is None \
                and f.task is not None:
            self._handoff = job
            job.task = f.task
        else:
            job.task = self._loop().create_task(self._runner(job))

    async def _run(self, job: _Job, yield_first: bool = False, orphaned: bool = False) -> None:
        """Run a started job to its end.  ``orphaned``: its task was cancelled
        before its first step (so none of this ran); end it, cancelled before it
        ran, from the caller (``aclose``)."""
        q = job.queue
        store = self.store
        lock = self.record_lock
        jid = job.id
        fence = (job.lane_token, job.sched_token)
        cancelled_exc: BaseException | None = None  # re-raised at the end
        before_run = orphaned  # cancelled before its work started
        try:
            if yield_first:  # a runner lets the loop breathe between jobs
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError as exc:
                    cancelled_exc = exc  # the task was cancelled before this job ran
                    before_run = True
            # 1. claim the record (serialised with cancel / other changes)
            if not lock.try_acquire(jid):
                try:
                    await lock.acquire(jid)
                except asyncio.CancelledError as exc:
                    # cancelled before it ran: still write that, in turn
                    cancelled_exc = exc
                    before_run = True
                    await lock.acquire(jid)
            try:
                rec = job.record
                if rec.state is not _QUEUED:  # cancelled before it could run
                    return
                if not before_run:
                    now = self.clock()
                    epoch = job.sched_token.epoch
                    run_id = f"run-{epoch}"
                    # (id, workspace and queue are the job's own: its record's)
                    running = _reservation(
                        Reservation, id=jid, workspace=job.workspace, queue=q.name, state=_RUNNING,
                        created_at=rec.created_at, updated_at=now, run_id=run_id,
                        error=rec.error, started_at=now, finished_at=rec.finished_at,
                        attempts=rec.attempts + 1, epoch=epoch)
                    try:
                        if not store.save_nowait(running, fence):
                            await store.save(running, fence)
                    except asyncio.CancelledError as exc:
                        cancelled_exc = exc  # not written: the job has not run
                        before_run = True
                    except Exception as exc:
                        if job.adopted:  # the store gave it to another (see "Adopted jobs")
                            job.dropped = f"running save refused: {_err(exc)}"
                            return
                        job.outcome = _FAILED
                        job.error = f"running save failed: {_err(exc)}"
                        job.rev += 1
                        await self._final_save_locked(job, fence)
                        return
                if before_run:
                    if job.adopted:  # left queued in the store, for another process
                        job.dropped = "let go before it ran" if self._closing is None \
                            else f"let go before it ran ({self._closing})"
                        return
                    job.outcome = _CANCELLED
                    job.error = "task cancelled before it ran"
                    job.rev += 1
                    await self._final_save_locked(job, fence)
                    return
                job.record = running
                job.phase = _PH_RUNNING
                job.rev += 1
            finally:
                lock.release(jid)
            # 2. dispatch, outside the record lock
            ctx = RunContext(jid, job.workspace, q.name, run_id, fence, job.note)
            try:
                job.result = await job.work.run(ctx)
                job.outcome = _SUCCEEDED
            except StopRequested:
                job.outcome = _CANCELLED
                job.error = "stopped at a checkpoint"
            except asyncio.CancelledError as exc:
                job.outcome = _CANCELLED
                closing = self._closing
                job.error = "task cancelled" if closing is None else f"task cancelled ({closing})"
                cancelled_exc = exc
            except Exception as exc:
                job.outcome = _FAILED
                job.error = _err(exc)
            # 3. final save, under the record lock, before any release
            job.phase = _SAVING
            job.rev += 1
            if not lock.try_acquire(jid):
                await lock.acquire(jid)
            try:
                # the write the store can do now needs no coroutine (one per job)
                final = self._final_record(job)
                first = None
                try:
                    saved = store.save_nowait(final, fence)
                except Exception as exc:  # (a CancelledError is not an Exception)
                    saved, first = False, exc
                if saved:
                    job.record = final
                    job.rev += 1
                else:
                    await self._final_save_locked(job, fence, final, first)
            finally:
                lock.release(jid)
        finally:
            # 4. release, only now (a record left non-terminal is said by _retire)
            try:
                q.lanes.release(job.lane_token)
            except WouldBlock:
                cancelled_exc = await self._release_awaited(q.lanes, job.lane_token) \
                    or cancelled_exc
            try:
                self.scheduled_lanes.release(job.sched_token)
            except WouldBlock:
                cancelled_exc = await self._release_awaited(self.scheduled_lanes,
                                                            job.sched_token) or cancelled_exc
            self._finishing = job  # its runner may go on with the workspace's next job
            try:
                self._retire(job, started=True)
            finally:
                self._finishing = None
            if cancelled_exc is not None:
                raise cancelled_exc

    @staticmethod
    async def _release_awaited(lanes: LaneStore, token: Any) -> BaseException | None:
        """Release through the awaitable form (an engine that cannot release
        now); a cancellation meanwhile is returned, re-raised once the job has
        ended, so the job still ends (``_retire``)."""
        try:
            await lanes.arelease(token)
        except asyncio.CancelledError as exc:
            return exc
        return None

    def _final_record(self, job: _Job) -> Reservation:
        """The record ``job`` ends with: its outcome and error, finished now."""
        now = self.clock()
        rec = job.record
        return _reservation(  # (id, workspace and queue are the job's own: its record's)
            Reservation, id=job.id, workspace=job.workspace, queue=job.queue.name, state=job.outcome,
            created_at=rec.created_at, updated_at=now, run_id=rec.run_id, error=job.error,
            started_at=rec.started_at, finished_at=now, attempts=rec.attempts, epoch=rec.epoch)

    async def _final_save_locked(self, job: _Job, fence: tuple, final: Reservation | None = None,
                                 first: Exception | None = None) -> None:
        """Write ``job``'s final record (``final``, or built now), under its
        record lock; ``first``: that write already failed so (the caller tried
        it without awaiting).  A failed write is recorded as a ``failed``
        record (up to 3 attempts), else the job ends as an unsaved final."""
        store = self.store
        if first is None:
            if final is None:
                final = self._final_record(job)
            try:
                if not store.save_nowait(final, fence):
                    await store.save(final, fence)
                job.record = final
                job.rev += 1
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                first = exc
        # The final save failed: record the failure itself.
        note = f"final save failed: {_err(first)}"
        first = None   # (the exception's traceback holds this frame: no cycle left for the collector)
        if job.outcome is not _FAILED or job.error:
            note += f" (outcome was {job.outcome.value}{': ' + job.error if job.error else ''})"
        job.outcome = _FAILED
        job.error = note
        job.rev += 1
        for _ in range(3):
            now = self.clock()
            rec = job.record._replace(state=_FAILED, error=note, finished_at=now, updated_at=now)
            try:
                await store.save(rec, fence)
                job.record = rec
                job.rev += 1
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                continue
        self._unsaved(job, note, with_outcome=False)

    def _retire(self, job: _Job, started: bool) -> None:
        """The job is over: bookkeeping, event, and re-examine its workspace."""
        if job.phase is _DONE:
            return
        if job.dropped is not None:
            self._drop(job, started)
            return
        q = job.queue
        rec = job.record
        state = rec.state
        if state not in TERMINAL:
            # its final record was not written: it ends failed, never with an
            # outcome the store does not show (see "Unsaved finals")
            if job.unsaved is None:  # its run was cancelled (again) before the write
                self._unsaved(job, "its task was cancelled before the record was written")
            state = _FAILED
        job.final_state = state
        job.phase = _DONE
        now = job.ended_at = self.clock()
        job.rev += 1
        jid = job.id
        if started:
            del q.running[jid]
        else:
            self._unqueue(job)
        q.recent.append(job)
        q.finished[state] += 1
        live = self._live
        del live[jid]
        self.jobs_finished += 1
        ws = job.workspace
        if started:
            # keep the run in its workspace's history, within the bounds ("Bounded memory")
            span = _span(RunSpan, job_id=jid, queue=q.name, run_id=rec.run_id,
                         started_at=job.started_at, ended_at=now, state=state)
            hist = self._history.get(ws)
            if hist is None:
                self._history[ws] = (span,)
            else:
                if self._history_uncounted and ws in self._history_uncounted:
                    self._history_uncounted.discard(ws)  # its one kept run is older than all counted
                    hist = hist[1:]
                if len(hist) >= self.history_limit:  # the oldest goes (its order entry goes stale)
                    hist = hist[len(hist) - self.history_limit + 1:]
                self._history[ws] = (*hist, span)
            order = self._history_order
            order.append(span)
            self._history_order_ws.append(ws)
            self._history_views = None
            self._history_dirty.add(ws)
            if len(order) > self.history_total:
                self._forget_run()
        self.events.emit("finished", ws, q.name, jid, state, started)
        if started:
            self._kick(ws)  # may hand the next job to this job's runner task
        job.task = None
        if self._idle is not None and len(live) < self._wake_below:
            self._wake_waiters()

    def _drop(self, job: _Job, started: bool) -> None:
        """An adopted job leaves without running here (see "Adopted jobs"): nothing
        written, no ``finished`` event; counted, announced; its workspace looked at again."""
        q = job.queue
        job.phase = _DONE
        job.rev += 1
        if started:
            del q.running[job.id]
        else:
            self._unqueue(job)
        del self._live[job.id]
        self.taken_elsewhere += 1
        self.events.emit("taken_elsewhere", job.workspace, q.name, job.id, job.record.state, job.dropped)
        if started:
            self._kick(job.workspace)
        job.task = None
        if self._idle is not None and len(self._live) < self._wake_below:
            self._wake_waiters()

    def _wake_waiters(self) -> None:
        idle, self._idle, self._wake_below = self._idle, None, 0
        if not idle.done():
            idle.set_result(None)

    # -- convenience accessors ----------------------------------------------------
    @property
    def reservations(self) -> ReservationQueue:
        return self.queues["reservations"]

    @property
    def cafe(self) -> ReservationQueue:
        return self.queues["cafe"]

    def subscribe(self, callback: Callable) -> Callable[[], None]:
        """Subscribe to change events; returns ``unsubscribe()``."""
        return self.events.subscribe(callback)

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop_ref
        if loop is None:
            loop = self._loop_ref = asyncio.get_running_loop()
        return loop

    # -- availability -------------------------------------------------------------
    def project_available(self, workspace: str) -> bool:
        """No outside occupancy and the app's predicate (if any) agrees."""
        if self.occupancy.is_busy(workspace):
            return False
        hook = self.available_hook
        return hook is None or bool(hook(workspace))

    def mark_busy(self, workspace: str, reason: str = "outside") -> None:
        """``workspace`` is busy for ``reason`` (idempotent per reason): none of its jobs
        starts until every reason is cleared; a running one goes on (see "Availability")."""
        self._workspaces.setdefault(workspace, workspace)
        self.occupancy.mark_busy(workspace, reason)

    def clear_busy(self, workspace: str, reason: str | None = None) -> None:
        """``reason`` (``None``: every reason) no longer keeps ``workspace`` busy; when none
        is left its next job may start. Nothing happens for a workspace not busy."""
        self.occupancy.clear(workspace, reason)

    def _on_occupancy(self, workspace: str, busy: bool) -> None:
        self.events.emit("occupancy", workspace, None, None, None, busy)
        if not busy:
            self._kick(workspace)

    # -- submit / cancel / stop ---------------------------------------------------------
    async def submit(self, queue: str, workspace: str, work: Any = None) -> int:
        """Queue ``work`` (see :func:`~lanemon.lanes.work.as_work`) for
        ``workspace`` in ``queue`` (``"reservations"`` or ``"cafe"``).

        Raises :class:`SchedulerClosed` once ``aclose`` began and while a ``reset``
        runs; :class:`UnknownQueue` for another queue name; ``TypeError`` /
        ``ValueError`` for a work ``as_work`` refuses.  A submit whose
        ``queued`` record is saved while the scheduler closes returns its ID,
        the job already cancelled like the other waiting jobs."""
        try:                 # (inline, not _queue_named: a call per job counts, test_lanes_hot_path)
            q = self._queue_by_name[queue]
        except KeyError:
            q = self._queue_named(queue)      # (raises UnknownQueue)
        return await self._submit(q, workspace, work)

    def _queue_named(self, name: str) -> _Queue:
        """The queue ``name``, or :class:`UnknownQueue` naming the queues there are."""
        try:
            return self._queue_by_name[name]
        except KeyError:
            raise UnknownQueue(f"no queue {name!r} (the queues: {', '.join(self._queue_by_name)})") from None

    async def burst(self, queue: str, workspaces: Iterable[str], work: Any = None) -> list[int]:
        """Submit one job per workspace given, in order (refusals as ``submit``)."""
        q = self._queue_named(queue)
        return [await self._submit(q, ws, work) for ws in workspaces]

    def adopt(self, queue: str, record: Reservation, work: Any = None) -> bool:
        """Take ``record``, a job already stored ``queued`` by another process, into
        ``queue`` (see "Adopted jobs"): no save now; it starts by the start rule and
        runs only if its ``running`` save is accepted by the store.

        False (nothing done) when the job is already live here or the record is not
        ``queued`` or not of ``queue``; :class:`SchedulerClosed` once ``aclose`` began;
        :class:`UnknownQueue` for a queue name that is not one of this scheduler's."""
        if self._closing is not None:
            raise self._refused()
        q = self._queue_named(queue)
        jid = record.id
        if jid in self._live or record.state is not _QUEUED or record.queue != queue:
            return False
        work = as_work(work)
        ws = record.workspace
        self._workspaces.setdefault(ws, ws)
        if jid > self._next_id:
            self._next_id = jid
        job = _Job(jid, q, ws, work, record)
        job.adopted = True
        self.jobs_adopted += 1
        self._enter(job)
        self.events.emit("adopted", ws, q.name, jid, _QUEUED, None)
        self._kick(ws)
        return True

    def let_go_adopted(self, why: str = "let go") -> int:
        """Drop every adopted job still waiting (not started), leaving it ``queued``
        in the store for another process; returns how many. Nothing is written."""
        n = 0
        for q in self._queue_list:
            for job in [j for j in q.waiting.values() if j.adopted and j.phase is _WAITING]:
                job.dropped = why
                self._drop(job, started=False)
                n += 1
        return n

    def adopted_waiting(self) -> int:
        """Adopted jobs waiting for their lanes (not started)."""
        return sum(1 for q in self._queue_list for j in q.waiting.values() if j.adopted)

    def waiting_on_others(self) -> bool:
        """True when a job waits in a workspace whose ``scheduled`` lane this scheduler
        neither holds nor is claiming: nothing done here will start it (another holder's
        release, occupancy cleared, ``project_available`` will; an agent follows the
        store's change feed only then). A job waiting behind this scheduler's own running
        job of its workspace is not counted: its release here starts it."""
        held = self.scheduled_lanes
        claims = self._claims
        return any(ws not in held and ws not in claims
                   for q in self._queue_list for ws, dq in q.by_ws.items() if dq)

    def _enter(self, job: _Job) -> None:
        """``job`` is live and enters its queue (``_submit`` and ``adopt``, the only places
        one does): FIFO over all workspaces and per workspace."""
        q = job.queue
        jid = job.id
        self._live[jid] = job
        q.submitted += 1
        self.jobs_submitted += 1
        job.seq = self._seq = self._seq + 1
        q.waiting[jid] = job
        dq = q.by_ws.get(job.workspace)
        if dq is None:
            q.by_ws[job.workspace] = deque((job,))
        else:
            dq.append(job)

    async def _submit(self, q: _Queue, workspace: str, work: Any) -> int:
        if self._closing is not None:
            raise self._refused()
        work = as_work(work)
        if self._reserve_ids is None:
            self._next_id += 1
            jid = self._next_id
        else:  # a store shared by processes numbers the jobs
            if not self._ids:
                self._ids = (await self._reserve_ids(ID_BLOCK))[::-1]
            jid = self._ids.pop()
            if jid > self._next_id:
                self._next_id = jid
        now = self.clock()
        workspace = self._workspaces.setdefault(workspace, workspace)   # its one name string
        rec = _reservation(Reservation, id=jid, workspace=workspace, queue=q.name, state=_QUEUED,
                           created_at=now, updated_at=now)
        try:
            if not self.store.save_nowait(rec):
                await self.store.save(rec)
        except BaseException:
            self._unsubmitted.add(jid)
            raise
        job = _Job(jid, q, workspace, work, rec)
        self._enter(job)
        if self._closing is not None:  # closed while its queued record was being saved
            await self._close_waiting(job)
        else:
            self._kick(workspace)
        return jid

    async def cancel(self, job_id: int) -> str:
        """Cancel a job of this scheduler.  Returns ``"cancelled"`` (it will not
        run), ``"stop_requested"`` (it is running; it stops at its next
        checkpoint), ``"finished"`` (already over, even when its record has
        left the store's window), ``"elsewhere"`` (on a store shared by
        processes: another process's job, not over; nothing is done -- it is
        that process's to cancel), ``"unknown"`` (no job had that ID), or
        ``"failed: ..."`` when saving the cancellation failed (the job stays
        queued)."""
        job = self._live.get(job_id)
        if job is None:
            outcome = await self._not_live_outcome(job_id)
            self.events.emit("cancel", None, None, job_id, None, outcome)
            return outcome
        async with self.record_lock.hold(job_id):
            outcome = await self._cancel_locked(job)
        self.events.emit("cancel", job.workspace, job.queue.name, job_id,
                         job.record.state, outcome)
        return outcome

    async def _not_live_outcome(self, job_id: int) -> str:
        """What ``cancel`` says of an ID with no live job here."""
        rec = await self.store.load(job_id)
        if self._reserve_ids is not None:
            # a shared store numbers every process's jobs and keeps their records
            if rec is None:
                return "unknown"
            return "finished" if rec.state in TERMINAL else "elsewhere"
        # this scheduler's own numbering: a finished job's record may have left the
        # store's window, and an ID it gave to a job no longer live is a finished job
        known = rec is not None or (type(job_id) is int and 0 < job_id <= self._next_id
                                    and job_id not in self._unsubmitted)
        return "finished" if known else "unknown"

    async def _cancel_locked(self, job: _Job) -> str:
        rec = job.record
        if job.phase is Phase.DONE or rec.state in TERMINAL:
            return "finished"
        if rec.state is _QUEUED:
            now = self.clock()
            closing = self._closing
            cancelled = rec._replace(
                state=_CANCELLED, finished_at=now, updated_at=now,
                error="cancelled while queued" if closing is None
                else f"cancelled while queued ({closing})")
            try:
                await self.store.save(cancelled)
            except Exception as exc:
                return f"failed: {_err(exc)}"
            job.record = cancelled
            job.outcome = _CANCELLED
            job.rev += 1
            if job.phase is Phase.WAITING:
                self._retire(job, started=False)
            # else: lanes already claimed; its run sees the record and ends.
            return "cancelled"
        # running: ask through the lanes
        requested = False
        why = f"cancel #{job.id}"
        for lanes, t in ((job.queue.lanes, job.lane_token), (self.scheduled_lanes, job.sched_token)):
            if t is not None and lanes.is_current(t):
                try:
                    asked = lanes.request_stop(t.workspace, why)
                except WouldBlock:
                    asked = await lanes.arequest_stop(t.workspace, why)
                requested = asked or requested
        return "stop_requested" if requested else "finished"

    async def retry_waiting(self, period: float) -> None:
        """Look again at every waiting workspace each ``period`` seconds, until cancelled.

        For a scheduler on a store shared with other processes: a lane they
        hold is given back without telling this scheduler (no change feed
        yet), so a job refused its lane would otherwise wait for the next
        local event of its workspace. A look claims nothing that is held."""
        while True:
            await asyncio.sleep(period)
            if self._aclosed:
                return
            if self._closing is None:
                self.kick()

    def request_stop(self, workspace: str, reason: str | None = "stop") -> bool:
        """Ask whatever runs in ``workspace`` (either queue) to stop.

        ``True`` when its lane is held and the request was made -- or, on an
        engine that cannot answer now (``WouldBlock``), when this scheduler
        holds the lane and the request is on its way (a task awaits the
        engine's ``arequest_stop``; the owner sees it when it lands)."""
        lanes = self.scheduled_lanes
        try:
            return lanes.request_stop(workspace, reason)
        except WouldBlock:
            if workspace not in lanes:
                return False
            task = asyncio.get_running_loop().create_task(lanes.arequest_stop(workspace, reason))
            self._stops.add(task)
            task.add_done_callback(self._stops.discard)
            return True

    # -- save controls (delegated to the store) ---------------------------------------
    def hold_save(self, **criteria: Any):
        """Hold matching saves open (see ``RecordStore.hold``); e.g.
        ``hold_save(id=7, terminal=True)`` holds job 7's final save. Refused
        (:class:`SchedulerClosed`) while a ``reset`` runs."""
        if self._resetting:
            raise self._refused()
        return self.store.hold(**criteria)

    def release_holds(self, job_id: int | None = None, armed: bool = False) -> int:
        """Release the holds currently holding a save of ``job_id`` (or every
        active hold when ``None``); returns how many were released.  With
        ``armed=True`` also the holds set up for ``job_id`` (``hold_save(id=job_id,
        ...)``) that hold nothing yet; without it those stay armed."""
        n = 0
        for h in self.store.holds():
            if job_id is None or any(r.id == job_id for r in h.held) or (
                    armed and h.criteria.get("id") == job_id):
                h.release()
                n += 1
        return n

    def holds_for(self, job_id: int) -> int:
        """How many active holds were set up for ``job_id`` (``hold_save(id=job_id, ...)``)
        or hold one of its saves now."""
        return sum(1 for h in self.store.holds()
                   if h.criteria.get("id") == job_id or any(r.id == job_id for r in h.held))

    def fail_next_save(self, **criteria: Any) -> None:
        """Make the next matching save raise (see ``RecordStore.fail_next``)."""
        self.store.fail_next(**criteria)

    # -- scheduling core ------------------------------------------------------------------
    def kick(self, workspace: str | None = None) -> None:
        """Re-examine one workspace (or all waiting ones), e.g. after the
        ``project_available`` predicate changed."""
        if workspace is not None:
            self._kick(workspace)
            return
        pending = {ws for q in self._queue_list for ws in q.by_ws}
        for ws in sorted(pending):
            self._kick(ws)

    def _kick(self, ws: str) -> None:
        if ws in self.scheduled_lanes or self._closing is not None or ws in self._claims:
            return
        best = None
        for q in self._queue_list:
            dq = q.by_ws.get(ws)
            if dq and (best is None or dq[0].seq < best.seq) and ws not in q.lanes:
                best = dq[0]
        if best is None:
            return
        try:  # (== self._available(ws, best) and self.project_available(ws), inlined)
            hook = self.available_hook
            available = not self.occupancy.is_busy(ws) and (hook is None or bool(hook(ws)))
        except Exception as exc:  # "cannot tell" is "not available" (see "Availability")
            self.available_errors += 1
            self.events.emit("available_failed", ws, None, best.id, None, _err(exc))
            return
        if available:
            self._start(best)

    def _next_waiting(self, ws: str) -> _Job | None:
        """The oldest waiting job of ``ws`` over both queues."""
        best = None
        for q in self._queue_list:
            dq = q.by_ws.get(ws)
            if dq and (best is None or dq[0].seq < best.seq):
                best = dq[0]
        return best

    def _available(self, ws: str, job: _Job) -> bool:
        """``project_available(ws)``; one that raises is "not available" for
        this look, counted and announced (see "Availability")."""
        try:
            return self.project_available(ws)
        except Exception as exc:
            self.available_errors += 1
            self.events.emit("available_failed", ws, None, job.id, None, _err(exc))
            return False

    # A job runs in a *runner* task.  When a job finishes and its release
    # starts the next job of the same workspace, that job is handed to the
    # same runner instead of a new task (one task per busy workspace rather
    # than per job); the runner yields to the loop every RUNNER_BATCH jobs.
    RUNNER_BATCH = 16

    async def _runner(self, job: _Job) -> None:
        n = 0
        yield_first = False
        while True:
            try:
                await self._run(job, yield_first)
            except BaseException:
                nxt, self._handoff = self._handoff, None
                if nxt is not None:
                    nxt.task = self._loop().create_task(self._runner(nxt))
                raise
            nxt, self._handoff = self._handoff, None
            if nxt is None:
                return
            job = nxt
            n += 1
            yield_first = n % self.RUNNER_BATCH == 0

    async def join(self) -> None:
        """Wait until every submitted job has finished (and every awaited claim
        of an engine that cannot claim now has ended)."""
        while self._live or self._claims:
            if not self._live:
                await asyncio.wait(list(self._claims.values()))
                continue
            await self._live_drops_below(1)

    async def wait_live_below(self, n: int) -> None:
        """Return once fewer than ``n`` jobs are live (queued or running here), at once
        if so now: a feeder's backpressure (the window's burst keeps its live jobs
        bounded with it).

        Guaranteed: on return ``live_jobs < n`` (nothing ran in between); woken by
        the job ends that bring it there, whatever ends them (their work, a cancel,
        ``reset``, ``aclose``), without polling. Not guaranteed: that it stays so
        (another task may submit before the caller does). Refused: ``n`` not an int
        >= 1 (``ValueError``: no job count is below 0). Cancelling the wait affects
        nothing else."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, not {n!r}")
        while len(self._live) >= n:
            await self._live_drops_below(n)

    async def _live_drops_below(self, n: int) -> None:
        """Wait for the next job end that leaves fewer than ``n`` live (one shared future:
        the highest threshold asked wakes every waiter, each looks again)."""
        if self._idle is None:
            self._idle = self._loop().create_future()
        if n > self._wake_below:
            self._wake_below = n
        await asyncio.shield(self._idle)

    @property
    def closed(self) -> bool:
        """True once ``aclose`` began: no job starts any more."""
        return self._aclosed

    @property
    def resetting(self) -> bool:
        """True while a ``reset`` ends the live jobs (no job starts, ``submit`` is refused)."""
        return self._resetting

    def _refused(self) -> SchedulerClosed:
        if self._resetting and not self._aclosed:
            return SchedulerClosed(f"the scheduler is resetting ({self._closing}): no new job "
                                   "until the reset ends")
        return SchedulerClosed(f"the scheduler is closed ({self._closing}): no new job")

    async def aclose(self, reason: str = "scheduler closed") -> None:
        """End every job promptly, whatever is held or running; see "Tasks and
        shutdown" in the module docstring.  Returns once no job is live (final
        records saved before lanes are released, or recorded as unsaved).

        A save that never completes by itself (a ``before_write`` hook that
        never returns) keeps it waiting: cancel the caller to give up; the jobs
        then end as unsaved finals.  Calling it again is harmless."""
        if self._closing is None or self._resetting:
            self._closing = str(reason)
        self._aclosed = True
        self.store.close_holds()
        await self._end_live()

    async def _end_live(self) -> None:
        """End every live job (``_closing`` is set: none starts): waiting ones saved
        cancelled, running ones' tasks cancelled, claims and stop requests awaited;
        returns once none is live (see "Tasks and shutdown")."""
        while True:
            for q in self._queue_list:
                for job in list(q.waiting.values()):
                    if job.phase is Phase.WAITING:
                        await self._close_waiting(job)
            tasks: dict[asyncio.Task, None] = dict.fromkeys(self._claims.values())
            tasks.update(dict.fromkeys(self._stops))  # stop requests on their way finish
            for j in list(self._live.values()):
                t = j.task
                if t is not None and not t.done():
                    tasks[t] = None
                    if j.phase is not Phase.SAVING:  # a final save in progress completes
                        t.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
                continue
            orphans = [j for j in self._live.values() if j.task is not None and j.task.done()]
            for j in orphans:  # their task was cancelled before its first step
                if j.phase is not Phase.DONE:
                    await self._run(j, orphaned=True)
            if not orphans and not any(q.waiting for q in self._queue_list):
                return

    async def reset(self, reason: str = "reset", *, budget_s: float = RESET_BUDGET_S,
                    batch: int = RESET_BATCH) -> int:
        """Start afresh: end every live job, then forget every finished one, so that
        their memory can go; returns how many live jobs it ended.

        Guaranteed, in this order:

        1. from its first step until it returns no job starts and ``submit`` /
           ``adopt`` raise :class:`SchedulerClosed` (``resetting`` is true);
           ``hold_save`` is refused the same way and every hold is released;
        2. the live jobs end as on ``aclose`` (see "Tasks and shutdown"): waiting ones
           saved ``cancelled`` ("cancelled while queued (<reason>)"), running ones'
           tasks cancelled ("task cancelled (<reason>)"), each with its final save
           before its lanes go and its ``finished`` event; adopted waiting jobs are
           dropped, left ``queued`` in the store. The work is spread over loop turns:
           at most ``batch`` jobs and about ``budget_s`` seconds per turn, then every
           timer already due runs (a frame, a heartbeat) before the next turn;
        3. then the finished history goes: the queues' recent jobs, every
           workspace's runs, the workspaces seen (those still busy outside stay:
           their occupancy is not history), the snapshot caches, and the store's
           terminal records when the store can forget them (``forget_finished``:
           the memory engine; a store shared by processes keeps its records); the
           job tables and the lanes' tables are made anew at their present size
           (``compact`` where the lanes have it: the memory engine's);
        4. the counts start again from zero (``Counts``, the queues' tallies,
           ``jobs_submitted`` ...); the lanes' epochs and the job IDs go on growing
           (an ID or token from before the reset is never taken for a new one's:
           ``cancel`` of an old ID says ``"finished"``);
        5. a ``reset`` event (``detail`` = the jobs it ended) tells subscribers that
           every view of a job or run from before is gone; ``snapshot()`` is empty.

        Afterwards the scheduler takes jobs again, as new.

        Refused: on a closed scheduler (:class:`SchedulerClosed`), while another
        reset is under way (:class:`ResetRefused`), and a ``batch`` not an int >= 1 or a
        ``budget_s`` not a positive number (``ValueError``; nothing done). If ``aclose``
        begins during a reset, the jobs end with its reason and the scheduler stays closed; if the
        caller is cancelled, the reset stops where it is (nothing is forgotten) and the
        jobs not ended yet go on (waiting ones are looked at again)."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch must be an int >= 1, not {batch!r}")
        if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not budget_s > 0:
            raise ValueError(f"budget_s must be a positive number of seconds, not {budget_s!r}")
        if self._resetting:
            raise ResetRefused("a reset is already under way")
        if self._closing is not None:
            raise self._refused()
        self._closing = str(reason)
        self._resetting = True
        ended0 = self.jobs_finished + self.taken_elsewhere
        forget = False
        try:
            for h in self.store.holds():
                h.release()
            await self._end_waiting_in_turns(budget_s, batch)
            await self._end_live()
            forget = True
        finally:
            self._resetting = False
            if not self._aclosed:
                self._closing = None
                if not forget:
                    self.kick()      # the jobs left waiting go on
        ended = self.jobs_finished + self.taken_elsewhere - ended0
        self._forget_finished()
        self.events.emit("reset", None, None, None, None, ended)
        return ended

    async def _end_waiting_in_turns(self, budget_s: float, batch: int) -> None:
        """Reset's step 2, spread over loop turns: the waiting jobs saved cancelled,
        then the started jobs' tasks cancelled, ``batch`` jobs and ``budget_s`` per turn
        at most (a 99,999-job burst's waiting jobs ended at once held the loop for
        seconds, and each cancelled task is a wake-up in the loop's next pass)."""
        from lanemon.work.slicing import yield_to_timers

        clock = time.perf_counter
        waiting = [j for q in self._queue_list for j in q.waiting.values()]
        waiting.sort(key=_seq_of)      # the oldest first, over both queues
        i = 0
        while i < len(waiting):
            t0 = clock()
            end = min(len(waiting), i + batch)
            while i < end:
                job = waiting[i]
                i += 1
                if job.phase is _WAITING:
                    await self._close_waiting(job)
                if clock() - t0 > budget_s:
                    break
            await yield_to_timers()
        del waiting
        started = [j for j in self._live.values() if j.task is not None]
        for k in range(0, len(started), batch):
            for j in started[k:k + batch]:
                t = j.task
                if t is not None and not t.done() and j.phase is not _SAVING:
                    t.cancel()
            await yield_to_timers()

    def _forget_finished(self) -> None:
        """Reset's steps 3 and 4 (see ``reset``); live jobs are not touched. The job tables
        and the lanes' tables (``ProjectLanes.compact``) are made anew: a dict keeps the
        table of the most entries it ever held (a 99,999-job burst's ``_live`` and
        ``waiting``: megabytes each; its 9,999 workspaces' held lanes and views)."""
        self._live = dict(self._live)
        for lanes in (self.scheduled_lanes, *(q.lanes for q in self._queue_list)):
            compact = getattr(lanes, "compact", None)     # (the memory engine's tables)
            if compact is not None:
                compact()
        if not len(self.record_lock):
            self.record_lock = RecordLock()
        for q in self._queue_list:
            q.waiting = dict(q.waiting)
            q.running = dict(q.running)
            q.by_ws = dict(q.by_ws)
            q.recent.clear()
            q.submitted = len(q.waiting) + len(q.running)
            q.finished = dict.fromkeys(TERMINAL, 0)
        self._history = {}
        self._history_order = deque()
        self._history_order_ws = deque()
        self._history_uncounted = set()
        live_ws = {j.workspace for j in self._live.values()}
        busy = self.occupancy.views()
        self._workspaces = {ws: ws for ws in self._workspaces if ws in live_ws or busy.get(ws)}
        self._history_views = None
        self._history_keys = []
        self._history_dirty = set()
        self._history_last = None
        self._workspace_views = ()
        forget = getattr(self.store, "forget_finished", None)
        if forget is not None:
            forget()
        self.jobs_submitted = len(self._live)
        self.jobs_finished = 0
        self.jobs_adopted = sum(1 for j in self._live.values() if j.adopted)
        self.unsaved_finals = self.available_errors = self.taken_elsewhere = self.claim_errors = 0
        self._counts_base = None
        self._counts_base = self.counts()

    async def _close_waiting(self, job: _Job) -> None:
        """Cancel a waiting job of a closing scheduler: saved ``cancelled``;
        if that save fails, it ends as an unsaved final. An adopted one is
        dropped instead, left ``queued`` in the store (see "Adopted jobs")."""
        if job.adopted:
            job.dropped = f"let go while waiting ({self._closing})"
            self._drop(job, started=False)
            return
        async with self.record_lock.hold(job.id):
            outcome = await self._cancel_locked(job)
        if job.phase is Phase.WAITING:  # the save failed: the record stays queued
            job.outcome = _CANCELLED
            self._unsaved(job, f"{self._closing} and its cancellation could not be saved "
                               f"({outcome})")
            self._retire(job, started=False)
        self.events.emit("cancel", job.workspace, job.queue.name, job.id,
                         job.record.state, outcome)

    def _unsaved(self, job: _Job, why: str, with_outcome: bool = True) -> None:
        """``job``'s final record was not written: it ends ``failed`` with the
        reason; counted, announced by an ``unsaved`` event (see "Unsaved finals")."""
        text = f"final record not saved: {why}"
        outcome = job.outcome
        if with_outcome and (outcome is not None or job.error):
            text += (f" (outcome was {outcome.value if outcome is not None else 'none'}"
                     f"{': ' + job.error if job.error else ''})")
        job.unsaved = text
        job.outcome = _FAILED
        job.error = text
        job.rev += 1
        self.unsaved_finals += 1
        self.events.emit("unsaved", job.workspace, job.queue.name, job.id, job.record.state,
                         text)

    def _forget_run(self) -> None:
        """Drop the oldest-ended run counted in the history (see "Bounded memory"),
        unless it is its workspace's last run: that one stays, uncounted."""
        old = self._history_order.popleft()
        ws = self._history_order_ws.popleft()
        h = self._history[ws]
        if h[0] is old:  # else it already left with history_limit: nothing to drop
            if len(h) > 1:
                self._history[ws] = h[1:]
                self._history_dirty.add(ws)
            else:
                self._history_uncounted.add(ws)

    # -- observation ------------------------------------------------------------------------
    def _job_view(self, j: _Job) -> JobView:
        """The job's immutable view; the cached one while nothing it shows changed
        (the job's ``rev``, its lanes' stop request, a hold on its save)."""
        st = j.sched_token
        stop = False
        if j.phase is not Phase.DONE and st is not None:
            stop = (st.lanes.stop_requested(st) or j.lane_token.lanes.stop_requested(j.lane_token))
        held = j.phase is not Phase.DONE and self.store.holding(j.id)
        v = j.view
        if v is not None and j.view_rev == j.rev and v.stop_requested is stop \
                and v.save_held is held:
            return v
        rec = j.record
        outcome = j.final_state or j.outcome
        result = None if j.result is None else repr(j.result)[:60]
        describe = getattr(j.work, "describe", None)
        v = j.view = JobView(
            id=j.id, queue=j.queue.name, workspace=j.workspace, state=rec.state.value,
            phase=j.phase, outcome=None if outcome is None else outcome.value,
            run_id=rec.run_id, error=j.error or rec.error, attempts=rec.attempts,
            created_at=rec.created_at, started_at=rec.started_at or j.started_at,
            finished_at=rec.finished_at or j.ended_at,
            epoch=None if st is None else st.epoch, stop_requested=stop, save_held=held,
            work=describe() if describe else type(j.work).__name__, placement=j.placement,
            result=result, notes=j.notes,
        )
        j.view_rev = j.rev
        return v

    def queue_view(self, name: str, limit: int | None = None, lanes: bool = True) -> QueueView:
        """Queue ``name`` at this instant (see ``ReservationQueue.view``); :class:`UnknownQueue`
        for a name that is not one of this scheduler's."""
        return self._queue_view(self._queue_named(name), limit, lanes)

    def _queue_view(self, q: _Queue, limit: int | None, lanes: bool) -> QueueView:
        counts = {"submitted": q.submitted, "waiting": len(q.waiting),
                  "running": len(q.running),
                  **{st.value: n for st, n in q.finished.items()}}
        waiting = q.waiting.values()
        running = q.running.values()
        recent = q.recent
        if limit is not None:
            limit = max(0, int(limit))
            waiting = islice(waiting, limit)
            running = islice(running, limit)
            recent = list(recent)[-limit:] if limit else ()
        view = self._job_view
        return QueueView(
            name=q.name,
            waiting=tuple(view(j) for j in waiting),
            running=tuple(view(j) for j in running),
            recent=tuple(view(j) for j in recent),
            lanes=q.lanes.views() if lanes else (),
            counts=MappingProxyType(counts),
        )

    def job(self, job_id: int) -> JobView | None:
        """A view of one live or recently finished job (``None`` if unknown)."""
        j = self._live.get(job_id)
        if j is None:
            for q in self._queue_list:
                for r in q.recent:
                    if r.id == job_id:
                        j = r
        return None if j is None else self._job_view(j)

    def counts(self) -> Counts:
        """The tallies since the scheduler was made or last reset."""
        lanes = [self.scheduled_lanes, *(q.lanes for q in self._queue_list)]
        n = Counts(
            stale_releases=sum(lane.stale_releases for lane in lanes),
            stale_writes=self.store.stale_writes,
            failed_saves=self.store.failed_saves,
            unsaved_finals=self.unsaved_finals,
            revoked=sum(lane.revoked for lane in lanes),
            subscriber_errors=self.events.subscriber_errors,
            jobs_submitted=self.jobs_submitted,
            jobs_finished=self.jobs_finished,
            available_errors=self.available_errors,
        )
        base = self._counts_base
        if base is None:
            return n
        # the engines' and the hub's tallies only grow: counted from the last reset
        return replace(n, stale_releases=n.stale_releases - base.stale_releases,
                       stale_writes=n.stale_writes - base.stale_writes,
                       failed_saves=n.failed_saves - base.failed_saves,
                       revoked=n.revoked - base.revoked,
                       subscriber_errors=n.subscriber_errors - base.subscriber_errors)

    @property
    def live_jobs(self) -> int:
        """Jobs queued or running now (cheap: a pacer reads it every few ms)."""
        return len(self._live)

    def stats(self) -> dict[str, int]:
        """Sizes of what the scheduler keeps (public observation for tests, a
        bench or a memory check): ``live`` jobs; finished jobs kept in the
        queues' ``recent`` lists; ``history_runs`` kept over all workspaces,
        ``history_uncounted`` (workspaces whose one kept run is beyond
        ``history_total``: each workspace keeps its last run) and
        ``history_workspaces`` (workspaces with a run kept); ``workspaces`` seen;
        the store's ``records`` and ``finished_records``."""
        st = self.store.stats()
        return {
            "live": len(self._live),
            "recent": sum(len(q.recent) for q in self._queue_list),
            "history_runs": sum(len(h) for h in self._history.values()),
            "history_uncounted": len(self._history_uncounted),
            "history_workspaces": len(self._history),
            "workspaces": len(self._workspaces),
            "records": st["records"],
            "finished_records": st["finished"],
        }

    def snapshot(self, limit: int | None = None, queue_lanes: bool = True) -> Snapshot:
        """A consistent, immutable view at this instant (built without awaiting).

        ``limit`` and ``queue_lanes=False`` make it cheaper for a UI that draws
        only what fits (see ``ReservationQueue.view``): each queue's waiting,
        running and recent lists keep at most ``limit`` jobs (``counts`` stay
        complete) and each queue's internal ``lanes`` are left out; the shared
        ``scheduled`` lanes, occupancy, history and counts are always complete."""
        holds = tuple(
            ", ".join(f"{k}={v}" for k, v in h.criteria.items() if v is not None)
            + (f" [holding {len(h.held)}]" if h.held else "")
            for h in self.store.holds()
        )
        return Snapshot(
            at=self.clock(),
            scheduled=self.scheduled_lanes.views(),
            queues=MappingProxyType({q.name: self._queue_view(q, limit, queue_lanes)
                                     for q in self._queue_list}),
            occupancy=MappingProxyType(self.occupancy.views()),
            history=self._history_view(),
            holds=holds,
            pending_failures=self.store.pending_failures(),
            counts=self.counts(),
            workspaces=self._workspaces_view(),
        )

    def prepare_snapshot(self, budget_s: float = 0.002) -> None:
        """Do part of the next ``snapshot()``'s work now, within about ``budget_s``: the
        shared ``scheduled`` lanes' views of the lanes changed since the last snapshot
        (``prepare_views`` of the lanes engine, when it has one: the memory engine).
        A UI calls it on the frames between two snapshots, so that a snapshot in a
        99,999-job burst (thousands of lanes claimed again between two) does not build
        them all in one loop turn.

        Guaranteed: nothing a snapshot shows changes (the next ``snapshot()`` equals what
        it would have been without this call); no event, no await. Refused: nothing
        (a lanes engine without ``prepare_views`` makes it a no-op)."""
        prepare = getattr(self.scheduled_lanes, "prepare_views", None)
        if prepare is not None:
            prepare(budget_s)

    def _history_view(self) -> MappingProxyType:
        """workspace -> its recent runs (sorted by workspace); rebuilt only after a run
        ended, from the workspaces whose runs changed: the last view copied with their
        (immutable) tuples replaced, or (a workspace added) the sorted keys updated in
        place and the dict made again -- each at C speed (``map``/``zip``/``update``): no
        Python loop over 10,000 workspaces per snapshot. An unchanged workspace's tuple
        is the same object in successive views (a UI compares them by identity)."""
        h = self._history_views
        if h is None:
            hist = self._history
            last = self._history_last
            dirty = self._history_dirty
            if last is not None and len(last) == len(hist):
                out = last.copy()
                out.update(zip(dirty, map(hist.__getitem__, dirty)))
            else:                             # keys are only ever added
                keys = self._history_keys
                added = hist.keys() - last.keys() if last is not None else ()
                if last is None or len(added) > len(keys) // 8 + 16:
                    keys = self._history_keys = sorted(hist)
                else:
                    for ws in added:
                        insort(keys, ws)
                out = dict(zip(keys, map(hist.__getitem__, keys)))
            dirty.clear()
            self._history_last = out
            h = self._history_views = MappingProxyType(out)
        return h

    def _workspaces_view(self) -> tuple[str, ...]:
        w = self._workspace_views
        if len(w) != len(self._workspaces):
            w = self._workspace_views = tuple(sorted(self._workspaces))
        return w

    def idle_clean(self) -> list[str]:
        """Problems left behind when idle: held lanes, lock entries, live jobs
        (empty list = clean)."""
        problems = []
        if len(self.scheduled_lanes):
            problems.append(f"scheduled lanes held: {list(self.scheduled_lanes)}")
        for q in self._queue_list:
            if len(q.lanes):
                problems.append(f"{q.name} lanes held: {list(q.lanes)}")
            if q.waiting or q.running or q.by_ws:
                problems.append(f"{q.name} has waiting/running jobs")
        if len(self.record_lock):
            problems.append(f"record lock entries left: {len(self.record_lock)}")
        if self._live:
            problems.append(f"live jobs: {sorted(self._live)[:10]}")
        if self._claims:
            problems.append(f"claims in progress: {sorted(self._claims)}")
        return problems
