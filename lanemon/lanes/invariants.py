"""An event-driven checker of the scheduler's invariants (tests and bench).

:class:`InvariantChecker` subscribes to a :class:`Scheduler`'s events and
checks, as changes happen:

* never more than one run per workspace at once, across both queues (from
  ``started`` to ``finished``);
* jobs of one workspace start in the order they entered their queues (the
  order of ``saved`` events with state ``queued``), across both queues;
* a started job's record is written (``running``, then its final state) only
  while its run still holds the workspace's scheduled lane at the epoch it
  started with: a write that got past the fence (a stale write) is caught;
* a started job's lanes are released only after its final record is saved:
  when ``finished`` arrives, exactly one terminal record was written for it
  (the store's ``saved`` events), in the state the event says;
* a job whose final record could not be written (an ``unsaved`` event) ends
  ``failed`` - never with an outcome the store does not show;
* every job finishes exactly once; a terminal record is written at most once
  per job; no record is written for a job that already finished.

A ``reset`` event (``Scheduler.reset``) starts the figures again; a job still live
then is a violation.

``check()`` (call it when the scheduler is idle) adds the end-state checks:
every job seen finished; no run active; no lane held; no record-lock entry,
waiting or live job left.  ``violations`` lists the problems found (at most
``max_violations``); ``check()`` returns it.

Bounded memory
--------------
The checker keeps state only for live jobs (seen ``queued`` and not yet
``finished``) and for workspaces that have a live job; jobs live in the
scheduler when the checker subscribes are adopted from a snapshot.  Of
finished jobs it keeps only the IDs of the last ``keep_finished`` (default
:data:`KEEP_FINISHED_IDS`), to name a second ``finished`` precisely.
Forgetting a finished job weakens no check: a job that is not live can
neither start, be written nor finish without that being reported (as
"not live"), whether or not its ID is still in the window.
"""

from __future__ import annotations

from collections import deque

from .events import Event
from .records import TERMINAL, State

__all__ = ["InvariantChecker", "KEEP_FINISHED_IDS"]

#: finished job IDs an :class:`InvariantChecker` remembers by default
KEEP_FINISHED_IDS = 1_000

_TERMINAL_VALUES = frozenset(s.value for s in TERMINAL)
_QUEUED = State.QUEUED.value
_RUNNING = State.RUNNING.value
_FAILED = State.FAILED.value

# a live job: [seq, workspace, started epoch (None: not started), terminal writes,
#              last written state, unsaved]; a job that only has its ``queued`` record
# (waiting, nothing else seen) is its seq alone, an int: 99,999 waiting jobs of a burst
# kept a 6-list each (~120 bytes, 2 blocks); the list is made on its next event
_SEQ, _WS, _EPOCH, _TWRITES, _LAST, _UNSAVED = range(6)


class InvariantChecker:
    def __init__(self, scheduler, *, max_violations: int = 50,
                 keep_finished: int = KEEP_FINISHED_IDS) -> None:
        if type(keep_finished) is not int or keep_finished < 0:
            raise ValueError(f"keep_finished must be an int >= 0, not {keep_finished!r}")
        self.scheduler = scheduler
        self.violations: list[str] = []
        self.max_violations = max_violations
        self.keep_finished = keep_finished
        self.active: dict[str, int] = {}   # workspace -> runs now (only while > 0)
        self.max_active = 0
        self.runs = 0
        self.jobs_seen = 0
        self.jobs_finished = 0
        self._jobs: dict[int, list | int] = {}  # live job -> its state (see _SEQ...)
        self._ws: dict[str, list] = {}         # workspace with live jobs -> [live, last started seq]
        self._done: deque[int] = deque(maxlen=keep_finished)  # the last finished IDs
        self._seq = 0
        self._holder = scheduler.scheduled_lanes.holder
        self._handlers = {"saved": self._on_saved, "started": self._on_started,
                          "finished": self._on_finished, "unsaved": self._on_unsaved,
                          "reset": self._on_reset}
        self._adopt(scheduler.snapshot())
        self.unsubscribe = scheduler.subscribe(self.on_event)

    def _adopt(self, snap) -> None:
        """Jobs already live when the checker starts: known, of unknown order."""
        for qv in snap.queues.values():
            for j in (*qv.running, *qv.waiting):
                started = j.phase != "waiting"
                writes = 1 if j.state in _TERMINAL_VALUES else 0
                self._jobs[j.id] = [0, j.workspace, j.epoch if started else None, writes,
                                    j.state, False]
                w = self._ws.get(j.workspace)
                if w is None:
                    self._ws[j.workspace] = [1, 0]
                else:
                    w[0] += 1
                if started:
                    self.active[j.workspace] = self.active.get(j.workspace, 0) + 1

    def _bad(self, text: str) -> None:
        if len(self.violations) < self.max_violations:
            self.violations.append(text)

    def stats(self) -> dict[str, int]:
        """Sizes of what the checker keeps: ``live`` jobs, ``workspaces`` with a
        live job, ``active`` runs' workspaces, ``finished_ids`` remembered."""
        return {"live": len(self._jobs), "workspaces": len(self._ws),
                "active": len(self.active), "finished_ids": len(self._done),
                "keep_finished": self.keep_finished}

    def on_event(self, ev: Event) -> None:
        handler = self._handlers.get(ev.kind)
        if handler is not None:
            handler(ev)

    def _not_live(self, jid: int, what: str) -> None:
        when = "after it finished" if jid in self._done else "but it is not live"
        self._bad(f"job {jid}: {what} {when}")

    def _on_saved(self, ev: Event) -> None:
        jid = ev.job_id
        state = ev.state
        if state == _QUEUED:  # a new job, entering its queue now
            if jid in self._jobs:
                self._bad(f"job {jid}: a second queued record")
                return
            self._seq += 1
            self.jobs_seen += 1
            ws = ev.workspace
            self._jobs[jid] = self._seq      # (waiting: its seq only, see _SEQ)
            w = self._ws.get(ws)
            if w is None:
                self._ws[ws] = [1, 0]
            else:
                w[0] += 1
            return
        info = self._jobs.get(jid)
        if info is None:
            self._not_live(jid, f"{state} record written")
            return
        if type(info) is int:          # (waiting until now: its full state, see _SEQ)
            info = self._jobs[jid] = [info, ev.workspace, None, 0, _QUEUED, False]
        if state in _TERMINAL_VALUES:
            n = info[_TWRITES] = info[_TWRITES] + 1
            if n > 1:
                self._bad(f"job {jid}: terminal record written {n} times")
        epoch = info[_EPOCH]
        if epoch is not None and (state == _RUNNING or info[_LAST] == _RUNNING):
            # written by its run: only while the run holds its lane (the fence)
            lane = self._holder(info[_WS])
            if lane is None or lane.epoch != epoch:
                self._bad(f"job {jid}: {state} record written while its run (epoch {epoch}) "
                          f"no longer holds {info[_WS]}'s lane (a stale write got through)")
        info[_LAST] = state

    def _on_started(self, ev: Event) -> None:
        jid = ev.job_id
        ws = ev.workspace
        info = self._jobs.get(jid)
        if info is None:
            self._not_live(jid, "started")
            return
        if type(info) is int:          # (waiting until now: its full state, see _SEQ)
            info = self._jobs[jid] = [info, ws, None, 0, _QUEUED, False]
        info[_EPOCH] = ev.detail
        n = self.active[ws] = self.active.get(ws, 0) + 1
        if n > self.max_active:
            self.max_active = n
        if n > 1:
            self._bad(f"workspace {ws}: {n} runs at once (job {jid})")
        w = self._ws[ws]
        seq = info[_SEQ]
        if w[1] > seq:
            self._bad(f"workspace {ws}: job {jid} started after a later job")
        else:
            w[1] = seq
        self.runs += 1

    def _on_unsaved(self, ev: Event) -> None:
        info = self._jobs.get(ev.job_id)
        if info is None:
            self._not_live(ev.job_id, "reported unsaved")
        else:
            if type(info) is int:      # (waiting until now: its full state, see _SEQ)
                info = self._jobs[ev.job_id] = [info, ev.workspace, None, 0, _QUEUED, False]
            info[_UNSAVED] = True

    def _on_finished(self, ev: Event) -> None:
        jid = ev.job_id
        state = ev.state
        info = self._jobs.pop(jid, None)
        if type(info) is int:          # finished with nothing seen after its queued record
            info = [info, ev.workspace, None, 0, _QUEUED, False]
        if info is None:
            if jid in self._done:
                self._bad(f"job {jid}: finished more than once")
            else:
                self._bad(f"job {jid}: finished but it is not live")
            return
        self.jobs_finished += 1
        self._done.append(jid)
        if state not in _TERMINAL_VALUES:
            self._bad(f"job {jid}: finished in non-terminal state {state}")
        ws = ev.workspace
        started = info[_EPOCH] is not None
        if started:
            if not ev.detail:
                self._bad(f"job {jid}: started but finished as never started")
            n = self.active.get(ws, 0) - 1
            if n < 0:
                self._bad(f"workspace {ws}: more releases than starts")
            if n > 0:
                self.active[ws] = n
            else:
                self.active.pop(ws, None)
        if info[_UNSAVED]:
            if state != _FAILED:
                self._bad(f"job {jid}: finished {state} but its final record was not saved "
                          f"(the store still says {info[_LAST]})")
        else:
            stored = info[_LAST]  # the last record written (the store's own saved events)
            if info[_TWRITES] != 1 or stored not in _TERMINAL_VALUES:
                self._bad(f"job {jid}: lanes released before its final record was saved"
                          if started else f"job {jid}: finished without a terminal record")
            elif stored != state:
                self._bad(f"job {jid}: finished {state} but its record says {stored}")
        w = self._ws[ws]
        if w[0] > 1:
            w[0] -= 1
        else:
            del self._ws[ws]

    def _on_reset(self, _ev: Event) -> None:
        """The scheduler was reset (every job it had ended, its history forgotten): the
        figures start again (``max_active``, ``runs``, ``jobs_seen``, ``jobs_finished``,
        the finished IDs); ``violations`` found before stay reported."""
        self.max_active = self.runs = self.jobs_seen = self.jobs_finished = 0
        self._done = deque(maxlen=self.keep_finished)
        # new dicts: one keeps the table of the most entries it ever held
        self._jobs = dict(self._jobs)
        self._ws = dict(self._ws)
        self.active = dict(self.active)
        if self._jobs:
            self._bad(f"reset with {len(self._jobs)} jobs still live, e.g. {sorted(self._jobs)[:5]}")

    def check(self) -> list[str]:
        s = self.scheduler
        for problem in s.idle_clean():
            self._bad(problem)
        if self.active:
            self._bad(f"runs still active: {dict(list(self.active.items())[:5])}")
        if self._jobs:
            self._bad(f"{len(self._jobs)} jobs not finished, e.g. {sorted(self._jobs)[:5]}")
        return self.violations
