"""Follow a SQL store from its change feed: a bounded model and the Lanes tab's snapshot (Qt-free).

``Follower(url)`` opens one session and the change feed
(:mod:`lanemon.store.sql.feed`) of a SQLite or PostgreSQL store and keeps a
:class:`FollowModel` of it up to date **from the feed only**: on ``None``
(the start, a PostgreSQL reconnect, an SQLite reader that fell behind) one
full read (:func:`lanemon.store.sql.reads.full_read`), then only the rows the
feed names (jobs, ledger rows, lanes, occupancy by key). Who is connected
(the ``sessions`` table: no feed) is read every :data:`SESSIONS_S`. Nothing
re-reads the whole store per frame: ``snapshot()`` is built from the model,
synchronously, reusing the views of what did not change.

What the snapshot (a :class:`lanemon.lanes.snapshot.Snapshot`) holds, so the
existing Lanes widgets draw it:

* ``scheduled``: the store's held ``scheduled`` lanes; ``holders``: for each,
  the agent holding it (its session's name), its session and lease end;
* ``queues``: per queue (``reservations``, ``cafe``, then any other seen) the
  waiting jobs (id order as first seen), the running ones, the newest
  ``recent`` finished, and complete counts (submitted, waiting, running and
  each terminal state) kept from the full read's ``GROUP BY`` plus every
  change since;
* ``history`` (finished runs, oldest first, at most ``runs_per_ws`` per
  workspace and ``runs_total`` in all) and ``running`` (runs going on), each a
  ``RunSpan`` on the store clock with its ``owner`` (``jobs.owner``: the
  process that ran it) and ``overlap`` (another run of the workspace
  intersected it: ``[store_started, store_ended)``, a running one open-ended);
  ``overlaps`` counts the kept runs flagged so, ``max_at_once`` the most runs
  of one workspace at once among them;
* ``counts.stale_writes``: the ledger's size; ``agents``: the sessions' names
  (this follower's own session left out).

``ledger()`` gives the refused-write ledger: its total, per-writer counts and
the newest ``ledger_kept`` rows (newest first).

Memory is bounded by the store's live jobs (queued and running) plus
``recent`` per queue, ``runs_total`` runs and ``ledger_kept`` ledger rows:
not by the store's history (a store with 10,000+ finished jobs costs the
same).

Faults: a bad URL or a store that cannot be opened raises
:class:`~lanemon.store.url.StoreError` from :meth:`Follower.connect`. Once
following, a lost store (a PostgreSQL server stopped, an SQLite file deleted
or replaced, any read failing) is said in ``problem`` (``connected`` False)
and :meth:`Follower.run` tries again every ``retry_s``; once back, it starts
again from a full read. ``run`` never raises a store error.

Known limits: a job re-queued after its owner was lost loses its first run's
interval (the row keeps one ``store_started``); a finished job reported again
by the feed right after a full read that already counted it is recognised by
id (ids up to the full read's highest, and the newest finished ones).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from types import MappingProxyType

from lanemon.lanes.lanes import LaneView
from lanemon.lanes.queues import QUEUE_NAMES
from lanemon.lanes.snapshot import Counts, JobView, LaneHolder, QueueView, RunSpan, Snapshot
from lanemon.store.sql import reads
from lanemon.store.sql.backend import LaneRow
from lanemon.store.sql.reads import BusyRow, FullRead, LedgerEntry, StoreJob
from lanemon.store.url import StoreError, parse

__all__ = ["FOLLOW_NAME", "Follower", "FollowModel", "LedgerView", "RECENT", "SESSIONS_S", "session_name"]

RECENT = 100            # finished jobs kept per queue
RUNS_PER_WS = 50        # finished runs kept per workspace ...
RUNS_TOTAL = 20_000     # ... and over all workspaces
LEDGER_KEPT = 200       # ledger rows kept (the newest)
DONE_IDS = 20_000       # ids of finished jobs remembered (a late report of one is not counted again)
SESSIONS_S = 1.0        # how often the sessions are read
RETRY_S = 1.0           # how often a lost store is tried again
WAIT_S = 0.25           # one feed wait
GAP_S = 0.1             # after changes were applied, the feed gathers more for this long: at most
                        # ~10 reads a second however busy the store (a busy store changed every
                        # few ms, and each change was read and drawn at once)
FOLLOW_NAME = "lanemon-follow"   # the follower's own session name
SCHEDULED = "scheduled"
_SCHEDULED_KEY = SCHEDULED + ":"
_TERMINAL = frozenset(reads.TERMINAL_STATES)
_STATES = ("waiting", "running", "succeeded", "failed", "cancelled")


def session_name(session: str) -> str:
    """The name inside a session id (``host:pid:random:name``), or the id itself."""
    parts = session.split(":", 3)
    return parts[3] if len(parts) == 4 and parts[3] else session


def _work(job: StoreJob) -> str:
    if job.cpu_ms:
        return f"cpu {job.cpu_ms:g} ms"
    s = f"sim {job.seconds * 1000:.0f} ms"
    return s + " (fails)" if job.fail else s


def _phase(state: str) -> str:
    if state == "queued":
        return "waiting"
    return "running" if state == "running" else "done"


def job_view(job: StoreJob) -> JobView:
    """The Lanes tab's view of a store job (times on the store clock)."""
    return JobView(id=job.id, queue=job.queue, workspace=job.workspace, state=job.state,
                   phase=_phase(job.state), outcome=job.state if job.state in _TERMINAL else None,
                   run_id=job.run_id, error=job.error, attempts=job.attempts, created_at=job.created_at,
                   started_at=job.started, finished_at=job.ended, epoch=job.epoch, stop_requested=False,
                   save_held=False, work=_work(job), placement=None, result=None, owner=job.owner)


@dataclass(frozen=True, slots=True)
class LedgerView:
    """The refused-write ledger: ``total`` rows in the store, per writer (most first), and
    the newest kept rows, newest first."""

    total: int
    by_writer: tuple[tuple[str, int], ...]
    rows: tuple[LedgerEntry, ...]


class _Queue:
    __slots__ = ("counts", "recent", "running", "waiting")

    def __init__(self, recent: int) -> None:
        self.waiting: dict[int, StoreJob] = {}
        self.running: dict[int, StoreJob] = {}
        self.recent: deque[StoreJob] = deque(maxlen=recent)
        self.counts: dict[str, int] = dict.fromkeys(_STATES, 0)


def _count_key(state: str) -> str:
    return "waiting" if state == "queued" else state


class FollowModel:
    """The bounded model of a store (see the module docstring); no I/O. ``version`` grows
    with every change applied."""

    def __init__(self, *, recent: int = RECENT, runs_per_ws: int = RUNS_PER_WS, runs_total: int = RUNS_TOTAL,
                 ledger_kept: int = LEDGER_KEPT, own_session: str | None = None) -> None:
        self.recent_limit = recent
        self.runs_per_ws = runs_per_ws
        self.runs_total = runs_total
        self.ledger_kept = ledger_kept
        self.own_session = own_session
        self.version = 0
        self._clear()

    def _clear(self) -> None:
        self._queues: dict[str, _Queue] = {q: _Queue(self.recent_limit) for q in QUEUE_NAMES}
        self._live: dict[int, StoreJob] = {}
        self._done: OrderedDict[int, None] = OrderedDict()
        self._watermark = 0
        self._lanes: dict[str, LaneRow] = {}
        self._runs: dict[str, deque[StoreJob]] = {}
        self._runs_order: deque[tuple[str, int]] = deque()
        self._going: dict[str, dict[int, StoreJob]] = {}
        self._overlap: dict[str, frozenset[int]] = {}
        self._peak: dict[str, int] = {}
        self._busy: dict[str, tuple[str, ...]] = {}
        self._sessions: dict[str, str] = {}
        self._ledger: deque[LedgerEntry] = deque(maxlen=self.ledger_kept)
        self._ledger_total = 0
        self._ledger_max = 0
        self._by_writer: dict[str, int] = {}
        self._wss: set[str] = set()
        # views kept while what they show did not change
        self._ws_view: tuple[str, ...] = ()
        self._sched_view: tuple[LaneView, ...] | None = None
        self._holders_view: Mapping[str, LaneHolder] | None = None
        self._hist_views: dict[str, tuple[RunSpan, ...]] = {}
        self._ws_spans: dict[str, dict[int, tuple[StoreJob, bool, RunSpan]]] = {}  # kept runs' spans
        self._lane_parts: dict[str, tuple[LaneRow, LaneView, str, LaneHolder]] = {}  # per scheduled lane
        self._going_views: dict[str, tuple[RunSpan, ...]] = {}
        self._history_map: Mapping | None = None
        self._running_map: Mapping | None = None
        self._jobviews: dict[int, tuple[StoreJob, JobView]] = {}
        self._ledger_view: LedgerView | None = None

    # -- applying what the store says -----------------------------------------------------
    def reset(self, full: FullRead) -> None:
        """Start again from a full read."""
        self._clear()
        self._watermark = full.max_job_id
        for q, state, n in full.counts:
            self._queue(q).counts[_count_key(state)] += n
        for job in full.recent:
            self._finished(job)
        for job in full.live:
            self._place(job)
        for lane in full.lanes:
            if lane.name == SCHEDULED:      # (the only lanes shown: the feed's others are not read)
                self._lanes[f"{lane.name}:{lane.workspace}"] = lane
            self._wss.add(lane.workspace)
        for b in full.busy:
            self._busy[b.workspace] = (b.reason,)
            self._wss.add(b.workspace)
        self._ledger_total = full.ledger_total
        self._ledger_max = full.ledger_max_id
        self._ledger.extend(full.ledger)
        self._by_writer = dict(full.by_writer)
        self.set_sessions(full.sessions)
        for ws in list(self._runs) + list(self._going):
            self._judge(ws)
        self.version += 1

    def apply_jobs(self, ids: Iterable[int], rows: Iterable[StoreJob]) -> None:
        """The jobs ``ids`` changed; ``rows`` are those that still exist."""
        found = {job.id: job for job in rows}
        touched: set[str] = set()

        def order(jid: int) -> tuple:   # live ones by id, then the finished by their end
            job = found.get(jid)
            return (1, job.ended or 0.0, jid) if job is not None and job.terminal else (0, 0.0, jid)

        for jid in sorted(ids, key=order):
            job = found.get(jid)
            prev = self._live.get(jid)
            if job is None:                     # deleted (a reset store)
                if prev is not None:
                    self._unplace(prev)
                    self._queue(prev.queue).counts[_count_key(prev.state)] -= 1
                    touched.add(prev.workspace)
                continue
            if prev is None:
                if job.terminal and (jid in self._done or jid <= self._watermark):
                    continue                    # finished before the full read counted it
                self._queue(job.queue).counts[_count_key(job.state)] += 1
            else:
                if prev.state != job.state or prev.queue != job.queue:
                    self._queue(prev.queue).counts[_count_key(prev.state)] -= 1
                    self._queue(job.queue).counts[_count_key(job.state)] += 1
                    self._unplace(prev)
                touched.add(prev.workspace)
            if job.terminal:
                self._live.pop(jid, None)
                self._finished(job)
            else:
                self._place(job)
            touched.add(job.workspace)
        for ws in touched:
            self._judge(ws)
        self.version += 1

    def apply_lanes(self, keys: Iterable[str], rows: Iterable[LaneRow]) -> None:
        found = {f"{r.name}:{r.workspace}": r for r in rows}
        for key in keys:
            row = found.get(key)
            if row is None:
                self._lanes.pop(key, None)
            else:
                self._lanes[key] = row
                self._wss.add(row.workspace)
        self._sched_view = self._holders_view = None
        self.version += 1

    def apply_busy(self, workspaces: Iterable[str], rows: Iterable[BusyRow]) -> None:
        found = {r.workspace: r for r in rows}
        for ws in workspaces:
            row = found.get(ws)
            if row is None:
                self._busy.pop(ws, None)
            else:
                self._busy[ws] = (row.reason,)
                self._wss.add(ws)
        self.version += 1

    def apply_ledger(self, rows: Iterable[LedgerEntry]) -> None:
        for entry in sorted(rows, key=lambda e: e.id):
            if entry.id <= self._ledger_max:
                continue                        # already counted by the full read
            self._ledger_max = entry.id
            self._ledger_total += 1
            self._by_writer[entry.writer] = self._by_writer.get(entry.writer, 0) + 1
            self._ledger.append(entry)
        self._ledger_view = None
        self.version += 1

    def set_sessions(self, rows: Iterable) -> None:
        """Who is connected (rows with ``session`` and ``name``); a change bumps ``version``."""
        names = {r.session: r.name for r in rows if r.session != self.own_session}
        if names != self._sessions:
            self._sessions = names
            self._holders_view = None
            self.version += 1

    # -- bookkeeping ----------------------------------------------------------------------------
    def _queue(self, name: str) -> _Queue:
        q = self._queues.get(name)
        if q is None:
            q = self._queues[name] = _Queue(self.recent_limit)
        return q

    def _place(self, job: StoreJob) -> None:
        """A live job (queued or running) as the store has it now."""
        self._live[job.id] = job
        q = self._queue(job.queue)
        self._wss.add(job.workspace)
        if job.state == "queued":
            q.waiting[job.id] = job
        else:
            q.running[job.id] = job
            if job.started is not None:
                self._going.setdefault(job.workspace, {})[job.id] = job
                self._going_views.pop(job.workspace, None)
                self._running_map = None

    def _unplace(self, job: StoreJob) -> None:
        q = self._queue(job.queue)
        q.waiting.pop(job.id, None)
        q.running.pop(job.id, None)
        going = self._going.get(job.workspace)
        if going is not None and going.pop(job.id, None) is not None:
            if not going:
                del self._going[job.workspace]
            self._going_views.pop(job.workspace, None)
            self._running_map = None

    def _finished(self, job: StoreJob) -> None:
        self._queue(job.queue).recent.append(job)
        done = self._done
        done[job.id] = None
        if len(done) > DONE_IDS:
            done.popitem(last=False)
        self._wss.add(job.workspace)
        if job.started is None:
            return                              # never ran (cancelled or failed while queued)
        runs = self._runs.get(job.workspace)
        if runs is None:
            runs = self._runs[job.workspace] = deque(maxlen=self.runs_per_ws)
        runs.append(job)
        order = self._runs_order
        order.append((job.workspace, job.id))
        if len(order) > self.runs_total:
            ws, jid = order.popleft()
            old = self._runs.get(ws)
            if old and old[0].id == jid:
                old.popleft()
                if not old:
                    del self._runs[ws]
                self._judge(ws)
        self._hist_views.pop(job.workspace, None)
        self._history_map = None

    def _judge(self, ws: str) -> None:
        """Which kept runs of ``ws`` overlap another one, and the most at once."""
        spans = [(j.started, j.ended if j.ended is not None else float("inf"), j.id)
                 for j in (*self._runs.get(ws, ()), *self._going.get(ws, {}).values())
                 if j.started is not None]
        spans.sort()
        flagged: set[int] = set()
        peak = 0
        open_ends: list[tuple[float, int]] = []
        for start, end, jid in spans:
            open_ends = [(e, i) for e, i in open_ends if e > start]
            if open_ends:
                flagged.add(jid)
                flagged.update(i for _, i in open_ends)
            open_ends.append((end, jid))
            peak = max(peak, len(open_ends))
        flagged_f = frozenset(flagged)
        if self._overlap.get(ws, frozenset()) != flagged_f:
            self._hist_views.pop(ws, None)
            self._going_views.pop(ws, None)
            self._history_map = self._running_map = None
        if flagged_f:
            self._overlap[ws] = flagged_f
        else:
            self._overlap.pop(ws, None)
        if peak:
            self._peak[ws] = peak
        else:
            self._peak.pop(ws, None)

    # -- reading -------------------------------------------------------------------------------
    def agent_of(self, session: str) -> str:
        return self._sessions.get(session) or session_name(session)

    def _span(self, job: StoreJob, ended: float) -> RunSpan:
        return RunSpan(job.id, job.queue, job.run_id, job.started, ended, job.state, job.owner,
                       job.id in self._overlap.get(job.workspace, ()))

    def _history(self) -> Mapping[str, tuple[RunSpan, ...]]:
        h = self._history_map
        if h is None:
            views = self._hist_views
            out = {}
            for ws in sorted(self._runs):
                t = views.get(ws)
                if t is None:
                    t = views[ws] = self._finished_spans(ws)
                out[ws] = t
            for ws in [ws for ws in self._ws_spans if ws not in self._runs]:
                del self._ws_spans[ws]
            h = self._history_map = MappingProxyType(out)
        return h

    def _finished_spans(self, ws: str) -> tuple[RunSpan, ...]:
        """The kept runs of ``ws`` as spans; a run's span is made again only when its row or
        its overlap flag changed (a new run of a workspace with 50 kept made all 50 again)."""
        old = self._ws_spans.get(ws, {})
        flagged = self._overlap.get(ws, ())
        new: dict[int, tuple[StoreJob, bool, RunSpan]] = {}
        spans = []
        for j in self._runs[ws]:
            c = old.get(j.id)
            flag = j.id in flagged
            if c is None or c[0] is not j or c[1] != flag:
                c = (j, flag, self._span(j, j.ended if j.ended is not None else j.started))
            new[j.id] = c
            spans.append(c[2])
        self._ws_spans[ws] = new
        return tuple(spans)

    def _running(self) -> Mapping[str, tuple[RunSpan, ...]]:
        r = self._running_map
        if r is None:
            views = self._going_views
            out = {}
            for ws in sorted(self._going):
                t = views.get(ws)
                if t is None:
                    t = views[ws] = tuple(self._span(j, float("inf")) for j in self._going[ws].values())
                out[ws] = t
            r = self._running_map = MappingProxyType(out)
        return r

    def _scheduled(self) -> tuple[tuple[LaneView, ...], Mapping[str, LaneHolder]]:
        if self._sched_view is None or self._holders_view is None:
            # each lane's view and holder made again only when its row or its agent's name changed
            old = self._lane_parts
            parts = {}
            for key, r in self._lanes.items():
                if r.name != SCHEDULED:
                    continue
                agent = self.agent_of(r.session)
                c = old.get(key)
                if c is None or c[0] is not r or c[2] != agent:
                    c = (r, LaneView(lanes=r.name, workspace=r.workspace, owner=r.owner, epoch=r.epoch,
                                     claimed_at=r.claimed_at, stop_requested=r.stop_requested,
                                     stop_reason=r.stop_reason),
                         agent, LaneHolder(agent=agent, session=r.session, lease_until=r.lease_until))
                parts[key] = c
            self._lane_parts = parts
            ordered = sorted(parts.values(), key=lambda c: c[0].workspace)
            self._sched_view = tuple(c[1] for c in ordered)
            self._holders_view = MappingProxyType({c[0].workspace: c[3] for c in ordered})
        return self._sched_view, self._holders_view

    def _view(self, job: StoreJob, used: dict) -> JobView:
        c = self._jobviews.get(job.id)
        if c is None or c[0] is not job:
            c = (job, job_view(job))
        used[job.id] = c
        return c[1]

    def _queue_view(self, name: str, q: _Queue, limit: int | None, used: dict) -> QueueView:
        n = q.counts
        counts = {"submitted": sum(n.values()), **n}
        waiting, running, recent = q.waiting.values(), q.running.values(), q.recent
        if limit is not None:
            waiting, running = islice(waiting, limit), islice(running, limit)
            recent = list(recent)[-limit:] if limit else ()
        v = self._view
        return QueueView(name=name, waiting=tuple(v(j, used) for j in waiting),
                         running=tuple(v(j, used) for j in running),
                         recent=tuple(v(j, used) for j in recent), lanes=(),
                         counts=MappingProxyType(counts))

    def workspaces(self) -> tuple[str, ...]:
        if len(self._ws_view) != len(self._wss):
            self._ws_view = tuple(sorted(self._wss))
        return self._ws_view

    def snapshot(self, now: float, limit: int | None = None) -> Snapshot:
        """The store as the Lanes tab draws it (see the module docstring), seen at ``now``
        (store clock); ``limit`` jobs per list at most (counts stay complete)."""
        used: dict[int, tuple[StoreJob, JobView]] = {}
        queues = {name: self._queue_view(name, q, limit, used) for name, q in self._queues.items()}
        self._jobviews = used
        scheduled, holders = self._scheduled()
        finished = sum(q.counts[s] for q in self._queues.values() for s in _TERMINAL)
        submitted = sum(sum(q.counts.values()) for q in self._queues.values())
        return Snapshot(
            at=now, scheduled=scheduled, queues=MappingProxyType(queues),
            occupancy=MappingProxyType(dict(self._busy)), history=self._history(), holds=(),
            pending_failures=0,
            counts=Counts(stale_releases=0, stale_writes=self._ledger_total, failed_saves=0, unsaved_finals=0,
                          revoked=0, subscriber_errors=0, jobs_submitted=submitted, jobs_finished=finished),
            workspaces=self.workspaces(), running=self._running(), holders=holders,
            overlaps=sum(len(v) for v in self._overlap.values()),
            max_at_once=max(self._peak.values(), default=0),
            agents=tuple(sorted(set(self._sessions.values()))))

    def ledger(self) -> LedgerView:
        v = self._ledger_view
        if v is None:
            v = self._ledger_view = LedgerView(
                total=self._ledger_total,
                by_writer=tuple(sorted(self._by_writer.items(), key=lambda kv: (-kv[1], kv[0]))),
                rows=tuple(reversed(self._ledger)))
        return v

    def live_jobs(self) -> int:
        return len(self._live)


class Follower:
    """Follows the store ``url_text`` (see the module docstring). ``on_change()`` is called
    after every change applied and when the connection is lost or back.

    ``connect()`` opens it (:class:`StoreError` for a bad URL, a missing file, an
    unreachable server, a store of another version, ``memory:``); ``run()`` follows until
    cancelled, across losses; ``close()`` lets go. ``snapshot()``, ``ledger()`` and
    ``clock()`` are synchronous (the last state applied)."""

    def __init__(self, url_text: str, *, on_change: Callable[[], None] | None = None,
                 retry_s: float = RETRY_S, sessions_s: float = SESSIONS_S, wait_s: float = WAIT_S,
                 gap_s: float = GAP_S, **model) -> None:
        self.url = parse(url_text)
        if self.url.engine == "memory":
            raise StoreError("memory: is a window's own simulation, not a store to follow: pick "
                             "'this window (simulated)', or a sqlite:/// or postgresql:// URL")
        self.on_change = on_change
        self.retry_s = retry_s
        self.sessions_s = sessions_s
        self.wait_s = wait_s
        self.gap_s = gap_s
        self.model = FollowModel(**model)
        self.store = None
        self._feed = None
        self._file_id: tuple[int, int] | None = None
        self._offset = 0.0                 # store clock - time.time()
        self._sessions_at = 0.0
        self.connected = False
        self.problem: str | None = None    # why the store is not followed now
        self.full_reads = 0
        self.changes_applied = 0

    def __repr__(self) -> str:
        return f"Follower({self.url.redacted()!r})"

    # -- reading ---------------------------------------------------------------------------------
    def clock(self) -> float:
        """The store clock now, as last measured (seconds since the Unix epoch)."""
        return time.time() + self._offset

    def snapshot(self, limit: int | None = None) -> Snapshot:
        return self.model.snapshot(self.clock(), limit)

    def ledger(self) -> LedgerView:
        return self.model.ledger()

    # -- connection --------------------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the session and the feed, read the store once. Refused: StoreError."""
        from lanemon.store.sql import open_sql_store
        from lanemon.store.sql.feed import open_feed

        await self._let_go()
        self._file_id = self._stat()
        store = await open_sql_store(self.url, create=False, name=FOLLOW_NAME)
        try:
            feed = await open_feed(self.url)
        except BaseException:
            await store.close()
            raise
        self.store, self._feed = store, feed
        self.model.own_session = store.session
        try:
            await self._apply(await feed.wait(0.0))
        except BaseException:
            await self._let_go()
            raise
        self.connected = True
        self.problem = None
        self._tell()

    def _stat(self) -> tuple[int, int] | None:
        if self.url.engine != "sqlite":
            return None
        try:
            st = os.stat(self.url.path)
        except OSError:
            raise StoreError(f"sqlite store {self.url.path} does not exist (no such file)") from None
        return st.st_dev, st.st_ino

    async def _let_go(self) -> None:
        store, feed, self.store, self._feed = self.store, self._feed, None, None
        self.connected = False
        with contextlib.suppress(Exception):
            if feed is not None:
                await feed.close()
        with contextlib.suppress(Exception):
            if store is not None:
                await store.close()

    async def close(self) -> None:
        await self._let_go()

    def _tell(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # -- following -----------------------------------------------------------------------------------
    async def run(self) -> None:
        """Follow until cancelled: apply the feed's changes, read the sessions every
        ``sessions_s``; a lost store is said (``problem``) and tried again every ``retry_s``."""
        try:
            while True:
                if not self.connected:
                    try:
                        await self.connect()
                    except (StoreError, OSError) as exc:
                        self._lost(str(exc))
                        await asyncio.sleep(self.retry_s)
                    continue
                try:
                    await self.step()
                except (StoreError, OSError) as exc:
                    await self._let_go()
                    self._lost(str(exc))
        finally:
            await self._let_go()

    def _lost(self, why: str) -> None:
        if why != self.problem or self.connected:
            self.problem = why
            self.connected = False
            self._tell()

    async def step(self) -> None:
        """One feed wait and what it brought (StoreError when the store is lost)."""
        feed = self._feed
        changes = await feed.wait(self.wait_s)
        if self._file_id is not None and self._stat() != self._file_id:
            raise StoreError(f"sqlite store {self.url.path} was replaced")
        error = getattr(feed, "last_error", None)
        if error:
            raise StoreError(error)
        await self._apply(changes)
        if time.monotonic() - self._sessions_at >= self.sessions_s:
            await self._read_sessions()
        if changes and self.gap_s > 0:
            await asyncio.sleep(self.gap_s)

    async def _apply(self, changes: list[tuple[str, str]] | None) -> None:
        backend = self.store.backend
        model = self.model
        if changes is None:
            full = await reads.full_read(backend, recent=model.recent_limit, ledger=model.ledger_kept)
            self._offset = full.now - time.time()
            model.reset(full)
            self._sessions_at = time.monotonic()
            self.full_reads += 1
            self._tell()
            return
        if not changes:
            return
        jobs, ledger, lanes, busy = [], [], [], []
        for table, key in changes:
            if table == "jobs":
                jobs.append(int(key))
            elif table == "ledger":
                ledger.append(int(key))
            elif table == "lanes":
                if key.startswith(_SCHEDULED_KEY):  # (the queues' lanes are not shown)
                    lanes.append(key)
            elif table == "occupancy":
                busy.append(key)
        if not (jobs or lanes or busy or ledger):
            return
        # every kind in one read (one round trip on PostgreSQL)
        got = await reads.changed(backend, jobs=jobs, lanes=lanes, busy=busy, ledger=ledger)
        if jobs:
            self._offset = got.now - time.time()
            model.apply_jobs(jobs, got.jobs)
        if lanes:
            model.apply_lanes(lanes, got.lanes)
        if busy:
            model.apply_busy(busy, got.busy)
        if ledger:
            model.apply_ledger(got.ledger)
        if jobs or lanes or busy or ledger:
            self.changes_applied += len(changes)
            self._tell()

    async def _read_sessions(self) -> None:
        store = self.store
        self._sessions_at = time.monotonic()
        get = getattr(store, "sessions", None)
        rows = await get() if get is not None else await reads.sessions(store.backend)
        before = self.model.version
        self.model.set_sessions(rows)
        if self.model.version != before:
            self._tell()

    # -- acting on the store ---------------------------------------------------------------------
    async def submit(self, specs) -> list[int]:
        """Add queued jobs to the store (agents take them); StoreError when not following."""
        store = self.store
        if store is None or not self.connected:
            raise StoreError(f"not following {self.url.redacted()} now: {self.problem or 'not connected'}")
        return await store.submit(list(specs))
