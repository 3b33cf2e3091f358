"""A worker that churns a SQL store: claim a lane, run a job, release (Qt-free, numpy-free).

Used by the multi-process test (``tests/test_store_processes.py``) and by
``lanemon bench store``, in this process (:func:`churn`) or in another one::

    python -m lanemon.store.churn --store URL (--seconds S | --cycles N)
        (--jobs FILE | --workspaces A,B,C) [--seed N] [--hold S] [--name NAME] [--stats FILE]
        [--start-at UNIX_TIME]
    python -m lanemon.store.churn --store URL --counters N (--seconds S | --cycles N) [--ttl S] ...

The second form churns the store's counter board instead (:func:`churn_counters`).

One **cycle** is what the scheduler does for one job, each step one operation
of the store (:mod:`lanemon.store.sql.backend`):

1. pick a job (seeded random choice among the jobs this worker still has);
2. claim the ``scheduled`` lane of its workspace (``store.lanes("scheduled")``);
   a lane held by another owner is a **busy** claim: pick again (after a short
   back-off when every pick in a row was busy);
3. load the job under the lane; one that is not ``queued`` is released and
   skipped (a terminal one is dropped from this worker's jobs);
4. save it ``running`` (fenced by the token: ``attempts + 1``,
   ``epoch = token.epoch``, a new ``run_id``), wait ``hold_s`` (the window in
   which a test kills or stops the worker "mid-save"; a stop request cuts it
   short), save it ``succeeded`` (fenced);
5. release the lane -- always, in ``finally``, whatever happened above.

A refused write (:class:`~lanemon.lanes.records.StaleWrite`: the lane was
expired or revoked under us) is counted and the job kept: the store re-queued
it and someone runs it again. A release the store refuses is counted as stale.

Jobs come either from the parent (``jobs``: ``(id, workspace)`` pairs it added
with ``SqlStore.submit``; several workers share them; a worker first reads a
picked job without the lane and drops it once it is terminal, and it ends when
all of them are) or from the worker itself (``workspaces``: it adds batches of
:data:`BATCH` queued jobs over those workspaces whenever it has none left).

The worker ends at the first of: ``seconds`` elapsed, ``cycles`` completed,
every shared job terminal, ``stop`` set (SIGTERM/SIGINT in ``__main__``: the
current cycle is finished first, exit status 0). Its session's keeper renews
its leases while its loop runs; a process stopped (SIGSTOP) longer than the
lease loses its lane and its late writes are refused by the store.

Returned (and written as JSON to ``stats_path``): :class:`ChurnStats`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from lanemon.lanes.records import InvalidTransition, Reservation, StaleWrite, State
from lanemon.store.sql import open_sql_store
from lanemon.store.sql.backend import JobSpec
from lanemon.store.url import StoreError, parse
from lanemon.tasks import run_until_signalled

__all__ = ["BATCH", "ChurnStats", "LANE", "QUEUE", "churn", "churn_counters", "main", "read_jobs", "write_jobs"]

#: the lane every cycle claims (the scheduler's per-workspace run lane)
LANE = "scheduled"
#: the queue of the jobs a worker adds itself
QUEUE = "reservations"
#: jobs a self-fed worker adds in one transaction
BATCH = 256
#: consecutive busy claims (per workspace) before a short back-off
_BUSY_ROUND = 1
_BACKOFF_S = 0.001


@dataclass
class ChurnStats:
    """What one worker did (``claim_ms``: every claim attempt's round trip, busy ones included)."""

    name: str
    session: str = ""
    pid: int = 0
    cycles: int = 0                    # jobs run to their final save
    busy: int = 0                      # claims refused: the lane had another owner
    skipped: int = 0                   # jobs found not queued under the lane
    stale_releases: int = 0            # releases the store refused (the lane was no longer ours)
    refused_writes: int = 0            # saves the store refused (StaleWrite)
    invalid: int = 0                   # saves refused as invalid transitions (none expected)
    errors: int = 0                    # store operations that failed (StoreError)
    last_error: str | None = None
    finished: list[int] = field(default_factory=list)   # jobs this worker saved terminal
    claim_ms: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0
    ended_by: str = ""                 # seconds | cycles | jobs done | stop
    # counters mode (churn_counters)
    finalized: int = 0                 # claims finalized: the customer seated
    finalize_refused: int = 0          # finalizes the store refused (expired or stale token)
    crowded: int = 0                   # finalized, yet the board showed another customer on the counter
    vacate_failed: int = 0             # own customer not found seated when leaving

    def to_json(self) -> dict:
        return asdict(self)


async def _end(store, stats: ChurnStats, t0: float, stats_path: str | None) -> None:
    """A worker's run is over (``t0``: when its first cycle began): its time, the session
    closed, its counts written to ``stats_path`` (when given)."""
    stats.elapsed_s = time.monotonic() - t0
    await store.close()
    if stats_path is not None:
        from lanemon.files import write_json
        write_json(stats_path, stats.to_json())


async def churn(store_url: str, *, seconds: float | None = None, cycles: int | None = None,
                jobs: Iterable[tuple[int, str]] | None = None, workspaces: Sequence[str] = (),
                seed: int = 0, hold_s: float = 0.0, name: str = "churn",
                stop: asyncio.Event | None = None, stats_path: str | None = None,
                started: asyncio.Event | None = None, start_at: float | None = None) -> ChurnStats:
    """Run cycles on the store ``store_url`` (see the module docstring) and return the counts.

    Exactly one of ``jobs`` / ``workspaces`` says where jobs come from; at least
    one of ``seconds`` / ``cycles`` / ``jobs`` bounds the run. ``started`` is set
    once the session is open; ``start_at`` (``time.time()`` seconds) delays the
    first cycle until then, so that workers started together begin together
    (``seconds`` and ``elapsed_s`` count from the first cycle). Raises
    :class:`StoreError` when the store cannot be opened; a failing operation
    later is counted (``errors``) and the run goes on.
    """
    if (jobs is None) == (not workspaces):
        raise ValueError("give either jobs (shared, from the parent) or workspaces (self-fed)")
    if jobs is None and seconds is None and cycles is None:
        raise ValueError("a self-fed worker needs seconds or cycles")
    url = parse(store_url)
    stop = stop or asyncio.Event()
    stats = ChurnStats(name=name, pid=os.getpid())
    store = await open_sql_store(url, name=name)
    stats.session = store.session
    t0 = time.monotonic()
    try:
        store.start_keeper()
        if started is not None:
            started.set()
        if start_at is not None and start_at > time.time():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), start_at - time.time())
        t0 = time.monotonic()
        worker = _Worker(store, stats, jobs=jobs, workspaces=workspaces, seed=seed, hold_s=hold_s,
                         stop=stop)
        stats.ended_by = await worker.run(None if seconds is None else t0 + seconds, cycles)
    finally:
        await _end(store, stats, t0, stats_path)
    return stats


class _Worker:
    def __init__(self, store, stats: ChurnStats, *, jobs, workspaces, seed: int, hold_s: float,
                 stop: asyncio.Event) -> None:
        self._store = store
        self._stats = stats
        self._shared = jobs is not None
        self._pending: list[tuple[int, str]] = list(jobs) if jobs is not None else []
        self._workspaces = list(workspaces)
        self._rng = random.Random(seed)
        self._hold_s = hold_s
        self._stop = stop
        self._lanes = store.lanes(LANE, clock=time.time, emit=None)
        self._records = store.records(keep_finished=0)
        distinct = {ws for _, ws in self._pending} | set(self._workspaces)
        self._busy_limit = max(1, len(distinct)) * _BUSY_ROUND

    async def run(self, deadline: float | None, cycles: int | None) -> str:
        stats = self._stats
        busy_streak = 0
        while True:
            if self._stop.is_set():
                return "stop"
            if deadline is not None and time.monotonic() >= deadline:
                return "seconds"
            if cycles is not None and stats.cycles >= cycles:
                return "cycles"
            if not self._pending:
                if self._shared:
                    return "jobs done"
                await self._add_batch()
                continue
            index = self._rng.randrange(len(self._pending))
            outcome = await self._cycle(index)
            if outcome == "busy":
                busy_streak += 1
                if busy_streak >= self._busy_limit:
                    busy_streak = 0
                    await asyncio.sleep(self._rng.uniform(0, 2 * _BACKOFF_S))
            else:
                busy_streak = 0
                if outcome == "error":
                    await asyncio.sleep(self._rng.uniform(0, 20 * _BACKOFF_S))

    async def _add_batch(self) -> None:
        specs = [JobSpec(workspace=self._workspaces[i % len(self._workspaces)], queue=QUEUE)
                 for i in range(BATCH)]
        try:
            ids = await self._store.submit(specs)
        except StoreError as exc:
            self._error(exc)
            await asyncio.sleep(20 * _BACKOFF_S)
            return
        self._pending.extend(zip(ids, (s.workspace for s in specs)))

    def _drop(self, index: int) -> None:
        pending = self._pending
        pending[index] = pending[-1]
        pending.pop()

    def _error(self, exc: Exception) -> None:
        self._stats.errors += 1
        self._stats.last_error = str(exc)

    async def _cycle(self, index: int) -> str:
        """One pick: "busy", "skipped", "dropped", "refused", "error" or "done"."""
        stats = self._stats
        job_id, workspace = self._pending[index]
        try:
            if self._shared:  # seen terminal already? (a read, without the lane)
                seen = await self._records.load(job_id)
                if seen is None or seen.state.terminal:
                    self._drop(index)
                    return "dropped"
                if seen.state is not State.QUEUED:
                    return "busy"  # running under another owner's lane
            t0 = time.perf_counter()
            token = await self._lanes.aclaim(workspace, stats.name)
            stats.claim_ms.append((time.perf_counter() - t0) * 1000.0)
        except StoreError as exc:
            self._error(exc)
            return "error"
        if token is None:
            stats.busy += 1
            return "busy"
        try:
            return await self._run_job(index, job_id, token)
        except StoreError as exc:
            self._error(exc)
            return "error"
        finally:
            if not await self._lanes.arelease(token):
                stats.stale_releases += 1

    async def _run_job(self, index: int, job_id: int, token) -> str:
        stats = self._stats
        record: Reservation | None = await self._records.load(job_id)
        if record is None or record.state is not State.QUEUED:
            stats.skipped += 1
            if record is None or record.state.terminal:
                self._drop(index)
            return "skipped"
        now = time.time()
        running = record._replace(state=State.RUNNING, run_id=f"{stats.name}-{stats.pid}-{stats.cycles}",
                                  attempts=record.attempts + 1, epoch=token.epoch, error=None,
                                  started_at=now, updated_at=now)
        try:
            await self._records.save(running, fence=(token,))
            if self._hold_s > 0:  # "mid-save": the job is running, the lane held
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self._hold_s)
            now = time.time()
            await self._records.save(running._replace(state=State.SUCCEEDED, finished_at=now, updated_at=now),
                                     fence=(token,))
        except StaleWrite:
            stats.refused_writes += 1
            return "refused"
        except InvalidTransition:
            stats.invalid += 1
            return "refused"
        stats.cycles += 1
        stats.finished.append(job_id)
        self._drop(index)
        return "done"


async def churn_counters(store_url: str, *, counters: int, seconds: float | None = None,
                         cycles: int | None = None, seed: int = 0, hold_s: float = 0.0, ttl: float = 1.0,
                         name: str = "churn", stop: asyncio.Event | None = None,
                         stats_path: str | None = None) -> ChurnStats:
    """Claim, finalize and vacate counters of the store's board (``counters`` of them).

    One cycle: read the assignable counters, claim one (seeded choice; owner
    ``name``, a new customer, ``ttl``), wait ``hold_s`` (the "mid-claim" window),
    finalize; on ``OK`` check the board of the store's reply holds exactly this
    customer on that counter (``crowded`` otherwise), then vacate it (``vacate_failed``
    when it was not seated); a refused finalize (expired or stale token) is
    counted and the claim released (a refused release is counted as stale).
    Ends as :func:`churn` does (``seconds``, ``cycles``, ``stop``).
    """
    if seconds is None and cycles is None:
        raise ValueError("a counters worker needs seconds or cycles")
    stop = stop or asyncio.Event()
    stats = ChurnStats(name=name, pid=os.getpid())
    store = await open_sql_store(parse(store_url), name=name)
    stats.session = store.session
    rng = random.Random(seed)
    t0 = time.monotonic()
    try:
        board = store.claims(counters=counters, default_ttl=ttl)
        deadline = None if seconds is None else t0 + seconds
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline) \
                and (cycles is None or stats.cycles < cycles):
            try:
                await _counter_cycle(board, stats, rng, hold_s, ttl, stop)
            except StoreError as exc:
                stats.errors += 1
                stats.last_error = str(exc)
                await asyncio.sleep(rng.uniform(0, 20 * _BACKOFF_S))
        stats.ended_by = "stop" if stop.is_set() else "cycles" if cycles is not None and \
            stats.cycles >= cycles else "seconds"
    finally:
        await _end(store, stats, t0, stats_path)
    return stats


async def _counter_cycle(board, stats: ChurnStats, rng: random.Random, hold_s: float, ttl: float,
                         stop: asyncio.Event) -> None:
    free = await board.assignable()
    if not free:
        stats.busy += 1
        await asyncio.sleep(rng.uniform(0, 2 * _BACKOFF_S))
        return
    counter = rng.choice(free)
    customer = f"{stats.name}-{stats.pid}-{stats.cycles}-{stats.busy}"
    t0 = time.perf_counter()
    claim = await board.claim(counter, stats.name, customer, ttl)
    stats.claim_ms.append((time.perf_counter() - t0) * 1000.0)
    if claim is None:
        stats.busy += 1
        return
    if hold_s > 0:  # "mid-claim": claimed, not finalized
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), hold_s)
    outcome = await board.finalize(claim)
    if not outcome:
        stats.finalize_refused += 1
        stats.refused_writes += 1
        if not await board.release(claim):
            stats.stale_releases += 1
        return
    stats.finalized += 1
    seated = board.views()[counter].customers
    if seated != (customer,):
        stats.crowded += 1
    if not await board.vacate(counter, customer):
        stats.vacate_failed += 1
    stats.cycles += 1


# -- files shared with a parent --------------------------------------------------------

def write_jobs(path: str, jobs: Iterable[tuple[int, str]]) -> None:
    """Write ``(id, workspace)`` pairs for ``--jobs``."""
    from lanemon.files import write_json
    write_json(path, [[int(i), str(ws)] for i, ws in jobs])


def read_jobs(path: str) -> list[tuple[int, str]]:
    with open(path) as fh:
        return [(int(i), str(ws)) for i, ws in json.load(fh)]


# -- the process entry ------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lanemon.store.churn",
                                description="claim, run and release jobs on a SQL store until told to stop")
    p.add_argument("--store", default=None,
                   help="the store URL (sqlite:///... or postgresql://...; default: $LANEMON_STORE)")
    p.add_argument("--seconds", type=float, help="stop after this long")
    p.add_argument("--cycles", type=int, help="stop after this many jobs run")
    p.add_argument("--jobs", help="a JSON file of [id, workspace] pairs to run (shared with other workers)")
    p.add_argument("--workspaces", help="comma-separated workspaces to add own jobs to")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hold", type=float, default=0.0, help="seconds between the running and the final save")
    p.add_argument("--name", default="churn")
    p.add_argument("--stats", help="write the counts as JSON to this file on exit")
    p.add_argument("--start-at", type=float, help="begin at this time.time() (after opening the store)")
    p.add_argument("--counters", type=int, help="claim counters of a board of this many instead of lanes")
    p.add_argument("--ttl", type=float, default=1.0, help="counters: each claim's TTL in seconds")
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m lanemon.store.churn``: exit 0 when done or stopped by SIGTERM/SIGINT
    (after the current cycle; a signal that lands after the work ended, while the process
    exits, is ignored), 2 with one line on a store that cannot be opened or none given
    (``--store``, else ``$LANEMON_STORE`` as ``lanemon store`` and ``lanemon agent``)."""
    from lanemon.store.cli import ENV_STORE

    parser = _parser()
    args = parser.parse_args(argv)
    if args.store is None:
        args.store = os.environ.get(ENV_STORE, "").strip() or None
        if args.store is None:
            parser.error(f"no store given: pass --store URL or set {ENV_STORE}")
    jobs = read_jobs(args.jobs) if args.jobs else None
    workspaces = [w for w in (args.workspaces or "").split(",") if w]

    async def go(stop: asyncio.Event) -> ChurnStats:
        if args.counters is not None:
            return await churn_counters(args.store, counters=args.counters, seconds=args.seconds,
                                        cycles=args.cycles, seed=args.seed, hold_s=args.hold, ttl=args.ttl,
                                        name=args.name, stop=stop, stats_path=args.stats)
        return await churn(args.store, seconds=args.seconds, cycles=args.cycles, jobs=jobs,
                           workspaces=workspaces, seed=args.seed, hold_s=args.hold, name=args.name,
                           stop=stop, stats_path=args.stats, start_at=args.start_at)

    try:
        run_until_signalled(go)    # (SIGTERM/SIGINT: the current cycle is finished first)
    except (StoreError, ValueError) as exc:
        print(f"lanemon churn: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
