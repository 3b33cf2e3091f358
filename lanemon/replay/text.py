"""Recorded events in plain words, and the notable moments among them (shared by the
recorder, which lists the moments as it writes, and the replay)."""

from __future__ import annotations

DOUBLE_ASSIGNMENT = "double assignment"
REFUSED_WRITE = "refused write"
STALE_RELEASE = "stale release"
OVERLAPPING_RUNS = "overlapping runs"
LONG_STALL = "long stall"
MOMENT_KINDS = (DOUBLE_ASSIGNMENT, REFUSED_WRITE, STALE_RELEASE, OVERLAPPING_RUNS, LONG_STALL)
LONG_STALL_MS = 100.0  # a heartbeat tick at least this late is a "long stall" moment

# the event kinds that are moments by themselves (overlapping runs follow from started/finished)
MOMENT_OF = {
    ("counters", "double_assignment"): DOUBLE_ASSIGNMENT,
    ("counters", "finalize_refused"): REFUSED_WRITE,
    ("counters", "release_refused"): STALE_RELEASE,
    ("lanes", "stale_write"): REFUSED_WRITE,
    ("lanes", "stale_release"): STALE_RELEASE,
}


class Overlaps:
    """Follows lanes ``started`` / ``finished`` events: a job that starts while another
    job of its workspace runs is an overlapping run (``started`` returns the sentence)."""

    def __init__(self) -> None:
        self._running: dict[str, set] = {}

    def started(self, workspace: str, job_id) -> str | None:
        jobs = self._running.setdefault(workspace, set())
        title = None
        if jobs:
            others = ", ".join(str(x) for x in sorted(jobs, key=str))
            title = f"job {job_id} of {workspace} started while job {others} of it ran"
        jobs.add(job_id)
        return title

    def finished(self, workspace: str, job_id) -> None:
        self._running.get(workspace, set()).discard(job_id)


def stall_title(lag_ms: float) -> str:
    return f"the window's loop stalled {lag_ms:.0f} ms"


def clock_text(t: float) -> str:
    """Seconds as m:ss.sss (``10:03.215``): races are milliseconds apart."""
    minutes, seconds = divmod(t, 60)
    return f"{int(minutes)}:{seconds:06.3f}"


def counters_text(kind: str, fields: list) -> str:
    """A counters event in plain words (counters numbered from 1, as the window does)."""
    counter, owner, customer, epoch, detail = fields
    n = None if counter is None else counter + 1
    who = owner or "a staff member"
    texts = {
        "claimed": f"{who} claimed counter {n} for {customer} (token {epoch})",
        "claim_refused": f"{who} could not claim counter {n} for {customer}: {detail}",
        "finalized": f"{who} seated {customer} at counter {n} (claim {epoch} finalized)",
        "finalize_refused": f"{who}'s claim {epoch} on counter {n} was refused at finalize: {detail}",
        "released": f"{who} released the claim on counter {n}",
        "release_refused": f"a release of claim {epoch} on counter {n} was refused ({detail})",
        "assigned": f"{who} seated {customer} at counter {n}",
        "double_assignment": f"{who} seated {customer} at counter {n}: double assignment ({detail})",
        "vacated": f"{customer} left counter {n}",
        "expired": f"{who}'s claim on counter {n} for {customer} ran out",
        "arrived": f"{customer} arrived",
        "turned_away": f"{customer} was turned away ({detail})",
        "served": f"{customer} was served at counter {n} by {who} ({detail})",
        "retry": f"{who} gave {customer} back to the queue ({detail})",
        "abandoned": f"{who} walked away from {customer} ({detail})",
        "returned": f"{who} came back to {customer}",
        "lock_acquired": f"{who} took the lock",
        "finished": f"the run ended ({detail})",
    }
    return texts.get(kind, f"{kind}: counter {n}, {owner}, {customer} {detail}".strip())


def lanes_text(kind: str, fields: list) -> str:
    """A lanes event in plain words."""
    workspace, queue, job_id, state, detail = fields
    job = f"job {job_id}" if job_id is not None else "a job"
    where = f" of {workspace}" if workspace else ""
    inq = f" in the {queue} queue" if queue else ""
    extra = f" ({detail})" if detail not in (None, "") else ""
    texts = {
        "saved": f"{job}{where} saved as {state}{inq}",
        "started": f"{job}{where} started{inq}",
        "placed": f"{job}{where} placed: {detail}",
        "save_held": f"the save of {job}{where} is held open{extra}",
        "save_failed": f"the save of {job}{where} failed{extra}",
        "stale_write": f"a write of {job}{where} was refused: its token is no longer current{extra}",
        "stop_requested": f"{job}{where} was asked to stop{extra}",
        "stale_release": f"a late release{where} was refused{extra}",
        "revoked": f"the lane{where} was revoked{extra}",
        "cancel": f"cancel of {job}{where}{extra}",
        "unsaved": f"the final record of {job}{where} could not be written{extra}",
        "finished": f"{job}{where} finished as {state}{inq}",
        "occupancy": f"{workspace} is {'busy' if detail else 'free'} outside the queues",
    }
    return texts.get(kind, f"{kind}: {job}{where}{inq}{extra}")
