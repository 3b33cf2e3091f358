"""``lanemon agent`` (role ``lanes``): one instance of the app on a shared store (Qt-free).

An agent is what ``lanemon --store URL`` runs behind its Lanes & queues tab,
without the window: the real :class:`~lanemon.lanes.Scheduler` with both
reservation queues, its lanes and records in the store, taking the jobs that
others queued there (``lanemon store submit``, a window, other agents).

How it takes jobs
-----------------
* It **reserves** queued jobs of its queues in the store
  (``SqlStore.take_jobs(queues, limit)``: atomic -- SQLite an ``UPDATE ...
  RETURNING`` of the jobs a read picked, inside ``BEGIN IMMEDIATE``,
  PostgreSQL one statement with ``FOR UPDATE SKIP LOCKED`` -- that marks up to ``limit`` jobs no session holds, or whose
  reservation ran out, as this session's, lowest ids first, from its fair
  share of the workspaces: see ``SqlStore.take_jobs``). Two agents never
  reserve one job at once, so each job is adopted by one agent, not by all of
  them (with every agent adopting every queued job it saw, each job cost N-1
  refused ``running`` saves and jobs/s fell as agents were added). At most
  :data:`TAKE_BATCH` per statement, and no more while :data:`MAX_WAITING`
  reserved jobs wait here for their lanes; it asks again at once while a
  batch came back full and fewer than :data:`TAKE_BATCH` wait, and as soon as
  fewer do (a job started), else every :data:`POLL_S` (an idle agent's look
  takes no write lock on SQLite: a read first).
* Each job reserved enters its queue with ``Scheduler.adopt`` (no save: it is
  already stored); one it cannot adopt (still live here: re-queued by the
  store while its final save failed) is given back at once
  (``give_back_jobs(ids)``), or the keeper would renew its reservation and
  keep it from every agent. Its reservation lasts one lease of the store and the
  keeper renews it with the lanes while the job is ``queued``; it ends when
  the job is saved (``running``). **A reservation decides nothing about
  running**: the job's ``running`` save still goes through the store's
  transition rule (``queued`` -> ``running`` once) and, with store lanes, its
  lane fence. So a job whose reservation ran out (its agent paused or dead)
  and was taken by another is still run once: a refused running save drops it
  quietly here (counted ``taken_elsewhere``: no terminal write, no
  ``failed``). A job never runs twice.
* An agent that dies (SIGKILL) leaves its reservations to run out (one
  lease, store clock; on PostgreSQL the keeper's reap ends those of a session
  whose lock is free at once); then the others take those jobs.
* A lane another process gives back is announced by the store's **change
  feed** (:mod:`lanemon.store.sql.feed`): the agent looks again at that
  workspace only (``Scheduler.kick(workspace)``; changes of its ``scheduled``
  lane: a queue lane's claim given back at once is no news), and at every waiting
  workspace each :data:`RETRY_S` and whenever the feed was lost (a lease that
  ran out changes no row until a keeper reaps it). The feed is open only
  while a job here waits on a lane held elsewhere (``Scheduler.waiting_on_others``,
  looked at every :data:`POLL_S` in this process; closed after :data:`RETRY_S`
  without one): every change of the store reaches every open feed, and since
  ``take_jobs`` leaves the workspaces whose lane another session holds, such waits are rare. Looking at every waiting
  workspace 50 times a second instead -- one claim, a write, per workspace
  held elsewhere -- burnt a core per agent with a few hundred jobs waiting.
* The work comes from the stored spec: ``cpu_ms`` > 0 -> a CPU job
  (:class:`~lanemon.lanes.work.CpuWork`, placed by ``lanemon.work.place()``:
  on the loop, sliced, or in the worker pool); else ``seconds`` of
  :class:`~lanemon.lanes.work.SimulatedWork`, failing at its end when ``fail``.
* Records are written with the agent's NAME as writer: a job's ``owner`` in
  the store, a refused write's ``writer`` in the ledger.

Lanes: ``store`` or ``local``
-----------------------------
``--lanes store`` (default): the lanes are the store's (claimed, leased and
fenced there): one workspace never runs in two agents at once.
``--lanes local`` reproduces the seed's design scaled out by mistake: each
agent has its own in-memory lanes (the in-process Map) and its record writes
are not fenced (``store.records(fenced=False)``); and it reserves nothing: it
**polls** every queued job of its queues (``SqlStore.queued_jobs``, a read,
with a cursor in id order that wraps to 0 when a page comes back short) and
adopts each one, as every copy of the seed did. A job still runs once (the
transition rule: the others' running saves are refused, ``taken_elsewhere``),
but two jobs of one workspace run at once in two agents: the overlaps the
window draws in red (with reservations, one agent would take a workspace's
whole backlog and run it in order: the flaw would hide). With local lanes no store lane is held,
so nothing expires when an agent dies: a killed local agent's running job
stays ``running`` in the store (the seed's flaw; store lanes have no such
hole).

Who is running
--------------
The agent's store session is named NAME (default ``agent-<pid>``). Its
``sessions.info`` says ``{"role": "lanes", "lanes": "store"|"local", "queues":
[...], "strategy": null, "jobs_running", "jobs_waiting", "lanes_held",
"finished", "taken_elsewhere", "store": "ok"|"lost"}``, refreshed after every
poll and written with each keeper renew (which also sets ``last_seen``, the
heartbeat). ``lanes_held`` counts the lane rows this agent holds (two per
running job: its queue's and the shared ``scheduled`` one; 0 with local lanes
in the store, the in-memory ones are counted).

Stopping (SIGTERM / SIGINT, or ``stop`` set)
--------------------------------------------
1. it stops taking jobs: no job is adopted any more;
2. its waiting (adopted, not started) jobs are let go and its reservations
   given back (``give_back_jobs``; closing the session gives back any left):
   nothing else is written, they stay ``queued`` in the store and another
   agent takes them at once;
3. its running jobs finish and save their final state (fenced), for up to
   ``grace`` seconds (:data:`GRACE_S`); those still running then are
   cancelled through ``Scheduler.aclose``: they end ``cancelled`` ("task
   cancelled (agent stopped)"), saved before their lanes are released;
4. every lane is released, the worker pool stopped, the session closed;
   exit status 0.
Nothing is lost: every job the agent took is either terminal in the store,
or still ``queued`` there. (A SIGKILL skips all this: its lanes expire with
their lease, and the store re-queues its running job or ends it ``owner
died``: the dead-owner rule of :mod:`lanemon.store.sql.backend`.)

Losing the store
----------------
When a poll fails, or any other operation of its session failed since the
last poll (``backend.errors``: a claim, a save or the keeper's renew that met
the broken connection first; connection refused, server restarted, SQLite
busy past its timeout), the agent **stops taking jobs**: it says so in one line on stderr
(``store lost: ...; not taking jobs, retrying``), lets its waiting jobs go
(they stay queued in the store; its reservations are given back as soon as
the store answers again, or run out), and polls again with a back-off (from
:data:`BACKOFF_MIN_S` doubling to :data:`BACKOFF_MAX_S`, seeded jitter); the
first poll that works again says ``store back after N s``. A failure within
:data:`RELAPSE_S` of coming back (a pooled connection broken by the same
outage, met later) is that outage again: it stops the taking of jobs as any
loss does, but is not said or counted again. Its running jobs go
on; their saves are fenced by the store, so a write is accepted only under a
current epoch: a lane lost meanwhile (lease expired while the connection was
down) gets its write refused and in the ledger. A final save that fails while
the lane is still current is recorded by the scheduler as ``failed`` ("final
save failed: ...", fenced) once the store answers again; one that cannot be
written at all ends the job locally as an unsaved final, and the store
re-queues the job (its lane expires, or its release finds it still running:
the dead-owner rule). The pool's and the keeper's own reconnection messages
are silenced by ``lanemon agent`` (the agent says it once). Claims that fail leave
their job waiting (``Scheduler`` "Claims that fail"); the keeper counts its
own errors (``SqlStore.keeper_errors``) and, on PostgreSQL, takes the
session's lock again on reconnection.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from lanemon.lanes import QUEUE_NAMES, EventHub, Scheduler
from lanemon.lanes.work import CpuWork, SimulatedWork
from lanemon.store.sql.backend import JobSpec
from lanemon.store.url import StoreError, parse

__all__ = ["AgentStats", "BACKOFF_MAX_S", "BACKOFF_MIN_S", "GIVE_BACK_S", "GRACE_S", "LANES_MODES", "MAX_WAITING",
           "POLL_S", "RETRY_S", "TAKE_BATCH", "run_agent", "work_for"]

#: adopted (reserved) jobs one agent holds waiting for their lanes, at most
MAX_WAITING = 256
#: jobs one agent reserves in one statement, at most
TAKE_BATCH = 32
#: seconds a stopping agent waits for the store to take its reservations back
GIVE_BACK_S = 2.0
#: seconds between polls of an agent that found nothing new
POLL_S = 0.05
#: seconds between looks at waiting workspaces (another process's release is not announced)
RETRY_S = 1.0
#: seconds a stopping agent lets its running jobs finish before cancelling them
GRACE_S = 5.0
#: the back-off between polls of a lost store
BACKOFF_MIN_S = 0.1
BACKOFF_MAX_S = 5.0
#: seconds after the store came back in which a new failure is the same outage (not said again)
RELAPSE_S = 5.0
#: job ids kept in ``AgentStats.finished`` (the count goes on beyond)
KEEP_IDS = 100_000
LANES_MODES = ("store", "local")


@dataclass
class AgentStats:
    """What one agent did (``--stats FILE`` writes it as JSON at exit)."""

    name: str
    session: str = ""
    pid: int = 0
    lanes: str = "store"
    adopted: int = 0                 # jobs taken into its queues
    finished: list[int] = field(default_factory=list)   # jobs it ran and saved terminal (first KEEP_IDS)
    finished_count: int = 0
    unsaved: list[int] = field(default_factory=list)    # jobs it ran whose final save the store refused
    taken_elsewhere: int = 0         # adopted jobs the store gave to another (or let go)
    claim_errors: int = 0
    unsaved_finals: int = 0
    stale_writes: int = 0            # its writes the store refused (fence)
    store_lost: int = 0              # times the store was lost
    store_errors: int = 0            # operations of its session that failed (backend.errors)
    lost_s: float = 0.0              # seconds without the store, in all
    cancelled_at_stop: int = 0       # running jobs cancelled after the grace
    ended_by: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def work_for(spec: JobSpec) -> Any:
    """The work a stored job asks for: a CPU job of ``cpu_ms`` (placed by
    ``place()``), else ``seconds`` of simulated work (failing when ``fail``)."""
    if spec.cpu_ms > 0:
        return CpuWork(spec.cpu_ms)
    return SimulatedWork(max(0.0, spec.seconds), fail="simulated failure" if spec.fail else None)


def _say(name: str, text: str) -> None:
    print(f"lanemon agent {name}: {text}", file=sys.stderr, flush=True)


async def run_agent(store_url: str, *, name: str | None = None, queues: Iterable[str] = QUEUE_NAMES,
                    lanes: str = "store", seed: int = 0, stop: asyncio.Event | None = None,
                    grace: float = GRACE_S, stats_path: str | None = None,
                    say: Callable[[str, str], None] = _say) -> AgentStats:
    """Run one agent on ``store_url`` until ``stop`` is set (see the module docstring);
    return what it did. Raises :class:`StoreError` (one line) when the store cannot be
    opened and ``ValueError`` on bad arguments, before doing anything."""
    from lanemon.store.sql import open_sql_store

    queues = list(queues)
    if not queues or any(q not in QUEUE_NAMES for q in queues) or len(set(queues)) != len(queues):
        raise ValueError(f"queues must be some of {', '.join(QUEUE_NAMES)}, each once: not {queues}")
    if lanes not in LANES_MODES:
        raise ValueError(f"lanes must be one of {', '.join(LANES_MODES)}, not {lanes!r}")
    url = parse(store_url)
    if url.engine == "memory":
        raise StoreError("memory: lives inside one process: an agent needs a shared store "
                         "(sqlite:///path/file.db or postgresql://...)")
    name = name or f"agent-{os.getpid()}"
    stop = stop or asyncio.Event()
    stats = AgentStats(name=name, pid=os.getpid(), lanes=lanes)
    agent = _Agent(name, queues, lanes, seed, stats, say)
    store = await open_sql_store(url, name=name, info=agent.info(None))
    stats.session = store.session
    say(name, f"on {url.redacted()} as session {store.session} (pid {os.getpid()}): role lanes, "
              f"lanes {lanes}, queues {','.join(queues)}")
    try:
        await agent.run(store, stop, grace)
    finally:
        try:
            await store.close()
        finally:
            if stats_path is not None:
                from lanemon.files import write_json
                write_json(stats_path, stats.to_json())
    say(name, f"stopped ({stats.ended_by}): ran {stats.finished_count} jobs, {stats.taken_elsewhere} taken "
              f"elsewhere, {stats.cancelled_at_stop} cancelled at stop, store lost {stats.store_lost} times")
    return stats


class _Agent:
    def __init__(self, name: str, queues: list[str], lanes: str, seed: int, stats: AgentStats,
                 say: Callable[[str, str], None]) -> None:
        self._name = name
        self._queues = queues
        self._lanes = lanes
        self._rng = random.Random(seed)
        self._stats = stats
        self._say = say
        self._sched: Scheduler | None = None
        self._store_ok = True
        self._info: dict[str, Any] | None = None
        self._unsaved: set[int] = set()  # jobs whose final record was not written (till their "finished")
        self._moved = asyncio.Event()    # a job started or was dropped since the last look

    def info(self, sched: Scheduler | None) -> dict[str, Any]:
        """The session's ``info`` now (see "Who is running")."""
        running = waiting = held = 0
        if sched is not None:
            for q in sched.queues.values():
                running += len(q.running_ids())
                held += len(q.lanes)
            waiting = sched.adopted_waiting()
            held += len(sched.scheduled_lanes)
        return {"role": "lanes", "lanes": self._lanes, "queues": self._queues, "strategy": None,
                "jobs_running": running, "jobs_waiting": waiting, "lanes_held": held,
                "finished": self._stats.finished_count, "taken_elsewhere": self._stats.taken_elsewhere,
                "store": "ok" if self._store_ok else "lost"}

    def _publish(self, store) -> None:
        sched = self._sched
        stats = self._stats
        stats.taken_elsewhere = sched.taken_elsewhere
        stats.claim_errors = sched.claim_errors
        stats.unsaved_finals = sched.unsaved_finals
        stats.stale_writes = sched.store.stale_writes
        stats.store_errors = store.backend.errors
        info = self.info(sched)
        if info != self._info:
            self._info = info
            store.set_info(info)

    def _on_event(self, ev) -> None:
        kind = ev.kind
        if kind == "started" or kind == "taken_elsewhere":
            self._moved.set()                   # (a reserved job may have left the waiting ones)
        if kind == "finished":
            stats = self._stats
            if ev.job_id in self._unsaved:  # its end is not in the store (e.g. a refused late save)
                self._unsaved.discard(ev.job_id)
                if len(stats.unsaved) < KEEP_IDS:
                    stats.unsaved.append(ev.job_id)
                return
            stats.finished_count += 1
            if len(stats.finished) < KEEP_IDS:
                stats.finished.append(ev.job_id)
        elif kind == "unsaved":
            self._unsaved.add(ev.job_id)
        elif kind == "adopted":
            self._stats.adopted += 1

    def _scheduler(self, store) -> Scheduler:
        hub = EventHub()
        if self._lanes == "local":
            from lanemon.store.memory import memory_lanes
            records = store.records(events=hub, keep_finished=1000, writer=self._name, fenced=False)
            return Scheduler(lanes=memory_lanes, store=records, events=hub, history_total=1000)
        records = store.records(events=hub, keep_finished=1000, writer=self._name)
        return Scheduler(lanes=store.lanes, store=records, events=hub, history_total=1000)

    async def run(self, store, stop: asyncio.Event, grace: float) -> None:
        sched = self._sched = self._scheduler(store)
        sched.subscribe(self._on_event)
        store.start_keeper()
        retry = asyncio.ensure_future(_follow_lanes(store.url, sched)) if self._lanes == "store" else None
        stats = self._stats
        try:
            await self._poll(store, stop)
            stats.ended_by = "stop"
        finally:
            # 1-2: no more adopting; waiting jobs stay queued in the store for others, free at once
            sched.let_go_adopted("agent stopping")
            await self._give_back(store)
            # 3: running jobs finish (for up to ``grace`` seconds), then aclose cancels the rest
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(sched.join()), grace)
            before = sched.jobs_finished
            running = sum(len(q.running_ids()) for q in sched.queues.values())
            await sched.aclose("agent stopped")
            stats.cancelled_at_stop = min(running, sched.jobs_finished - before)
            if retry is not None:
                retry.cancel()
                await asyncio.gather(retry, return_exceptions=True)
            self._publish(store)
            if "lanemon.work.workers" in sys.modules:  # a CPU job ran here: stop the pool
                from lanemon.work.workers import shutdown_workers
                await asyncio.to_thread(shutdown_workers)

    async def _give_back(self, store) -> None:
        """Give back this session's reservations (a failure, or no answer within
        :data:`GIVE_BACK_S`, leaves them to run out: a stop is not held up by a lost store)."""
        with contextlib.suppress(StoreError, TimeoutError):
            await asyncio.wait_for(store.give_back_jobs(), GIVE_BACK_S)

    async def _poll(self, store, stop: asyncio.Event) -> None:
        sched = self._sched
        stats = self._stats
        backoff = BACKOFF_MIN_S
        lost_at = 0.0
        backend = store.backend
        errors = backend.errors
        relapse_until = 0.0
        quiet = False
        local = self._lanes == "local"
        cursor = 0      # (local lanes: where the look at every queued job goes on)
        while not stop.is_set():
            waiting = sched.adopted_waiting()
            room = MAX_WAITING - waiting if local else min(MAX_WAITING - waiting, TAKE_BATCH)
            page = ()
            found = 0
            # any operation of this session that failed since the last look (a claim, a save, the
            # keeper's renew: whichever met the broken connection first) is a lost store too:
            # a poll alone can wait out a short outage inside the pool and never fail
            failed = None if backend.errors == errors else backend.last_error
            errors = backend.errors
            if room > 0 or failed is not None:
                try:
                    if failed is not None:
                        raise StoreError(failed)
                    if local:   # the seed's design: every agent adopts every queued job it sees
                        page = await store.queued_jobs(self._queues, cursor, room)
                    else:
                        if not self._store_ok:  # (back: what it reserved before the loss is free again)
                            await store.give_back_jobs()
                        page = await store.take_jobs(self._queues, room)
                except StoreError as exc:
                    errors = backend.errors
                    if self._store_ok:
                        self._store_ok = False
                        # (a failure soon after coming back -- a pooled connection broken by the
                        # same outage, met later -- is that outage again: not said twice)
                        quiet = time.monotonic() < relapse_until
                        if not quiet:
                            stats.store_lost += 1
                            lost_at = time.monotonic()
                            self._say(self._name, f"store lost: {exc}; not taking jobs, retrying")
                        sched.let_go_adopted("store lost")
                        self._publish(store)
                    await _wait(stop, backoff * self._rng.uniform(0.8, 1.2))
                    backoff = min(BACKOFF_MAX_S, backoff * 2)
                    continue
                if not self._store_ok:
                    self._store_ok = True
                    backoff = BACKOFF_MIN_S
                    if not quiet:
                        away = time.monotonic() - lost_at
                        stats.lost_s += away
                        self._say(self._name, f"store back after {away:.1f} s: taking jobs again")
                    relapse_until = time.monotonic() + RELAPSE_S
                refused = []
                for job in page:
                    if not (sched.closed or stop.is_set()) and sched.adopt(job.record.queue, job.record,
                                                                           work_for(job.spec)):
                        found += 1
                    else:
                        refused.append(job.record.id)
                if refused and not local:
                    # a reservation not adopted goes back at once: the keeper renews every
                    # reservation of the session, so one kept unknowingly (a job still live here,
                    # re-queued by the store while its final save failed) would stay out of
                    # everyone's reach (a stopping agent gives back all of them anyway)
                    with contextlib.suppress(StoreError):
                        await store.give_back_jobs(refused)
                if local:
                    cursor = page[-1].record.id if page and len(page) == room else 0
            self._publish(store)
            if local:
                if room <= 0 or cursor == 0 and not found:
                    await _wait(stop, POLL_S)
                else:
                    await asyncio.sleep(0)
            elif room > 0 and len(page) < room:
                await _wait(stop, POLL_S)       # the store had no more free jobs
            elif room <= 0 or waiting >= TAKE_BATCH:
                await self._rest(stop)          # enough wait here: until fewer do, or POLL_S
            else:
                await asyncio.sleep(0)

    async def _rest(self, stop: asyncio.Event) -> None:
        """Up to :data:`POLL_S`, or until a job started (or was dropped) and fewer than
        :data:`TAKE_BATCH` reserved jobs wait here (an agent that runs jobs fast takes more
        at once, instead of every POLL_S: 32 zero-time jobs take far less than 50 ms)."""
        deadline = time.monotonic() + POLL_S
        moved = self._moved
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            moved.clear()
            waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(moved.wait())]
            try:
                await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
            if moved.is_set() and self._sched.adopted_waiting() < TAKE_BATCH:
                return


async def _follow_lanes(url, sched: Scheduler, opener: Callable[[Any], Awaitable[Any]] | None = None) -> None:
    """Look again at a waiting workspace when the store's change feed says one of its lanes
    changed; at all of them every :data:`RETRY_S`, and when the feed is lost or cannot be
    opened (until cancelled). The feed is open only while a job here waits on another
    holder (``Scheduler.waiting_on_others``: looked at every :data:`POLL_S`, in this process),
    and is closed once none has for :data:`RETRY_S`: every change of the store reaches every
    open feed (with 8 agents listening, 55 notifications per job, the server's CPU per job
    nearly doubled), and a job waiting behind this agent's own running job is started by its
    own release, not by news. ``opener``: the feed's maker (``open_feed``; tests count it)."""
    if opener is None:
        from lanemon.store.sql.feed import open_feed as opener

    # only the shared scheduled lane's changes: a queue lane is claimed and given back at once
    # when the scheduled one is held elsewhere, and following those kicked the other agents into
    # the same claim-and-give-back, forever (60,000 claims for 40 jobs, leases starved)
    scheduled = getattr(sched.scheduled_lanes, "name", "scheduled")
    feed = None
    every = time.monotonic() + RETRY_S
    quiet_since: float | None = None    # since when no job here waits on another (feed open)
    try:
        while True:
            if feed is None:
                if not sched.waiting_on_others():
                    await asyncio.sleep(POLL_S)
                    if time.monotonic() >= every:
                        every = time.monotonic() + RETRY_S
                        sched.kick()
                    continue
                try:
                    feed = await opener(url)
                except StoreError:
                    await asyncio.sleep(RETRY_S)
                    sched.kick()
                    continue
                quiet_since = None
            try:
                changes = await feed.wait(RETRY_S)
            except StoreError:
                changes = None
            if changes is None or getattr(feed, "last_error", None):
                sched.kick()        # (the first answer, a lost feed: everything again)
                if changes is None and getattr(feed, "last_error", None):
                    with contextlib.suppress(Exception):
                        await feed.close()
                    feed = None
                continue
            for table, key in changes:
                lane, _, workspace = key.partition(":")     # ("lane:workspace")
                if table == "lanes" and lane == scheduled:
                    sched.kick(workspace)
            now = time.monotonic()
            if now >= every:
                every = now + RETRY_S
                sched.kick()
            if sched.waiting_on_others():
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= RETRY_S:
                feed, closing = None, feed
                with contextlib.suppress(Exception):
                    await closing.close()
    finally:
        if feed is not None:
            with contextlib.suppress(Exception):
                await feed.close()


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
