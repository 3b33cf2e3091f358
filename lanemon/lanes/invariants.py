"""An event-driven checker of the scheduler's invariants (tests and bench).

:class:`InvariantChecker` subscribes to a :class:`Scheduler`'s events and
checks, as changes happen:

* never more than one run per workspace at once, across both queues (from
  ``started`` to ``finished``);
* jobs of one workspace start in the order they entered their queues (the
  order of ``saved`` events with state ``queued``), across both queues;
* a started job's lanes are released only after its final record is saved
  (when ``finished`` arrives the stored record is already terminal, unless
  the final write itself could not be made and was counted);
* a terminal record is written at most once per job.

``check()`` (call it when the scheduler is idle) adds the end-state checks:
every submitted job finished exactly once and its stored record is terminal;
no lane is held; no record-lock entry, waiting or live job is left.
``violations`` lists every problem found; ``check()`` returns it.
"""

from __future__ import annotations

from .events import Event
from .records import TERMINAL

__all__ = ["InvariantChecker"]

_TERMINAL_VALUES = frozenset(s.value for s in TERMINAL)


class InvariantChecker:
    def __init__(self, scheduler, *, max_violations: int = 50) -> None:
        self.scheduler = scheduler
        self.violations: list[str] = []
        self.max_violations = max_violations
        self.active: dict[str, int] = {}
        self.max_active = 0
        self.last_started: dict[str, int] = {}
        self.started: set[int] = set()
        self.finished: dict[int, int] = {}
        self.terminal_writes: dict[int, int] = {}
        self.submitted: set[int] = set()
        self.seq: dict[int, int] = {}
        self.runs = 0
        self._handlers = {"saved": self._on_saved, "started": self._on_started,
                          "finished": self._on_finished}
        self.unsubscribe = scheduler.subscribe(self.on_event)

    def _bad(self, text: str) -> None:
        if len(self.violations) < self.max_violations:
            self.violations.append(text)

    def on_event(self, ev: Event) -> None:
        handler = self._handlers.get(ev[0])
        if handler is not None:
            handler(ev)

    def _on_saved(self, ev: Event) -> None:
        if ev.state == "queued":  # a new job, entering its queue now
            self.submitted.add(ev.job_id)
            self.seq[ev.job_id] = len(self.seq) + 1
        elif ev.state in _TERMINAL_VALUES:
            tw = self.terminal_writes
            n = tw[ev.job_id] = tw.get(ev.job_id, 0) + 1
            if n > 1:
                self._bad(f"job {ev.job_id}: terminal record written {n} times")

    def _on_started(self, ev: Event) -> None:
        ws = ev.workspace
        n = self.active[ws] = self.active.get(ws, 0) + 1
        if n > self.max_active:
            self.max_active = n
            if n > 1:
                self._bad(f"workspace {ws}: {n} runs at once (job {ev.job_id})")
        seq = self.seq.get(ev.job_id, 0)
        if self.last_started.get(ws, 0) > seq:
            self._bad(f"workspace {ws}: job {ev.job_id} started after a later job")
        self.last_started[ws] = seq
        self.started.add(ev.job_id)
        self.runs += 1

    def _on_finished(self, ev: Event) -> None:
        jid = ev.job_id
        n = self.finished[jid] = self.finished.get(jid, 0) + 1
        if n > 1:
            self._bad(f"job {jid}: finished {n} times")
        if ev.state not in _TERMINAL_VALUES:
            self._bad(f"job {jid}: finished in non-terminal state {ev.state}")
        if jid in self.started:
            if not ev.detail:
                self._bad(f"job {jid}: started but finished as never started")
            ws = ev.workspace
            n = self.active.get(ws, 0) - 1
            if n < 0:
                self._bad(f"workspace {ws}: more releases than starts")
            if n > 0:
                self.active[ws] = n
            else:
                self.active.pop(ws, None)
            rec = self.scheduler.store.get(jid)
            if (rec is None or rec.state not in _TERMINAL_VALUES) \
                    and not self.scheduler.unsaved_finals:
                self._bad(f"job {jid}: lanes released before its final record was saved")

    def check(self) -> list[str]:
        s = self.scheduler
        for problem in s.idle_clean():
            self._bad(problem)
        if self.active:
            self._bad(f"runs still active: {dict(list(self.active.items())[:5])}")
        missing = [j for j in self.submitted if self.finished.get(j) != 1]
        if missing:
            self._bad(f"{len(missing)} jobs not finished exactly once, e.g. {sorted(missing)[:5]}")
        if not s.unsaved_finals:
            not_terminal = [j for j in self.submitted
                            if (r := s.store.get(j)) is None or r.state not in TERMINAL]
            if not_terminal:
                self._bad(f"{len(not_terminal)} stored records not terminal, "
                          f"e.g. {sorted(not_terminal)[:5]}")
            bad_writes = [j for j in self.submitted if self.terminal_writes.get(j) != 1]
            if bad_writes:
                self._bad(f"{len(bad_writes)} jobs without exactly one terminal write, "
                          f"e.g. {sorted(bad_writes)[:5]}")
        return self.violations
