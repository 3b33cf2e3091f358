"""What a store's dump says about the agents that worked it (Qt-free, numpy-free).

``audit(dump)`` reads a dump (``SqlStore.dump()`` or ``lanemon store dump
--json``: the same keys) and returns an :class:`Audit` of facts; the window,
the bench and the tests read the same facts:

* ``overlaps`` -- pairs of runs of one workspace whose store intervals
  ``[start, end)`` intersect (:func:`overlapping_runs`; a run still going
  lasts until the dump's ``now``). Store lanes never allow one; ``--lanes
  local`` does (the seed's design scaled out);
* ``most_at_once`` -- the most runs of one workspace going at one instant
  (1 when nothing overlaps, 0 when nothing ran);
* ``duplicate_epochs`` -- epochs granted twice (never: the store's counter);
* ``double_grants`` -- two ownerships of one (lane, workspace) at once in
  ``lane_history`` (never: the claim rule);
* ``not_terminal`` -- jobs not in a terminal state (at the end of a test:
  none; a job is one row, so it cannot hold two terminal states);
* ``ledger_problems`` -- refused writes that were not stale: an entry whose
  epoch was still the lane's current one when refused, or whose ownership had
  not ended before the refusal;
* ``by_state``, ``ledger`` (rows), ``owner_died``.

``problems(local=False)`` words every broken rule as one line each (overlaps
are allowed with ``local=True``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Audit", "TERMINAL", "audit", "most_at_once", "overlapping_runs"]

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class Audit:
    jobs: int
    by_state: dict[str, int]
    overlaps: list[tuple[str, int, int]]          # (workspace, job id, job id)
    most_at_once: int
    duplicate_epochs: list[int]
    double_grants: list[tuple]  # (lane, workspace, epoch, next epoch, its ended_at, next's claimed_at)
    not_terminal: list[int]
    ledger: int
    ledger_problems: list[dict[str, Any]] = field(default_factory=list)
    owner_died: int = 0

    def problems(self, *, local: bool = False) -> list[str]:
        """Every broken rule, one line each (``local``: overlapping runs are allowed)."""
        out = []
        if self.overlaps and not local:
            ws, a, b = self.overlaps[0]
            out.append(f"{len(self.overlaps)} overlapping runs of one workspace (first: {ws}, jobs {a} and {b})")
        if self.duplicate_epochs:
            out.append(f"epochs granted twice: {self.duplicate_epochs[:5]}")
        if self.double_grants:
            out.append(f"a lane held by two owners at once (lane, workspace, epoch, next epoch, its "
                       f"ended_at, the next's claimed_at): {self.double_grants[:3]}")
        if self.not_terminal:
            out.append(f"{len(self.not_terminal)} jobs not terminal: {self.not_terminal[:10]}")
        if self.ledger_problems:
            out.append(f"{len(self.ledger_problems)} ledger rows of a write that was not stale: "
                       f"{self.ledger_problems[:2]}")
        return out


def _spans(jobs: Iterable[dict[str, Any]], now: float) -> dict[str, list[tuple[float, float, int]]]:
    by_ws: dict[str, list[tuple[float, float, int]]] = {}
    for job in jobs:
        start = job.get("start")
        if start is None:
            continue
        end = job.get("end")
        by_ws.setdefault(job["workspace"], []).append((start, now if end is None else end, job["id"]))
    for spans in by_ws.values():
        spans.sort()
    return by_ws


def overlapping_runs(jobs: Iterable[dict[str, Any]], now: float = math.inf) -> list[tuple[str, int, int]]:
    """Pairs of runs of one workspace whose ``[start, end)`` intersect (a run with no
    ``end`` yet lasts until ``now``), as (workspace, earlier job id, later job id), in
    workspace and start order. O(n log n + pairs)."""
    out = []
    for ws, spans in sorted(_spans(jobs, now).items()):
        going: list[tuple[float, int]] = []  # (end, id) of runs that started before this one
        for start, end, jid in spans:
            going = [(e, i) for e, i in going if e > start]
            out.extend((ws, i, jid) for _, i in going)
            going.append((end, jid))
    return out


def most_at_once(jobs: Iterable[dict[str, Any]], now: float = math.inf) -> int:
    """The most runs of one workspace going at one instant (0: nothing ran)."""
    best = 0
    for spans in _spans(jobs, now).values():
        edges = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans])
        going = 0
        for _, step in edges:  # (an end sorts before a start at the same instant: [start, end))
            going += step
            best = max(best, going)
    return best


def audit(dump: dict[str, Any]) -> Audit:
    """The facts of ``dump`` (see the module docstring)."""
    jobs = dump["jobs"]
    now = dump.get("now", math.inf)
    by_state: dict[str, int] = {}
    for job in jobs:
        by_state[job["state"]] = by_state.get(job["state"], 0) + 1
    history = dump.get("history", [])
    seen: set[int] = set()
    dupes = []
    for h in history:
        if h["epoch"] in seen:
            dupes.append(h["epoch"])
        seen.add(h["epoch"])
    by_lane: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for h in history:
        by_lane.setdefault((h["lane"], h["workspace"]), []).append(h)
    double = []
    for (lane, ws), spans in by_lane.items():
        spans.sort(key=lambda h: h["epoch"])
        for a, b in zip(spans, spans[1:]):
            if a["ended_at"] is None or a["ended_at"] > b["claimed_at"]:
                double.append((lane, ws, a["epoch"], b["epoch"], a["ended_at"], b["claimed_at"]))
    epochs = {h["epoch"]: h for h in history}
    ledger_problems = []
    for entry in dump.get("ledger", []):
        h = epochs.get(entry["epoch_held"])
        if entry["epoch_current"] == entry["epoch_held"]:
            ledger_problems.append(entry)
        elif h is not None and (h["lane"], h["workspace"]) == (entry["lane"], entry["workspace"]) and (
                h["ended_at"] is None or h["ended_at"] > entry["at"]):
            ledger_problems.append(entry)
    return Audit(
        jobs=len(jobs), by_state=by_state, overlaps=overlapping_runs(jobs, now),
        most_at_once=most_at_once(jobs, now), duplicate_epochs=dupes, double_grants=double,
        not_terminal=[j["id"] for j in jobs if j["state"] not in TERMINAL], ledger=len(dump.get("ledger", [])),
        ledger_problems=ledger_problems,
        owner_died=sum(1 for j in jobs if j["state"] == "failed" and j.get("error") == "owner died"))
