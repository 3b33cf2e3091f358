"""``lanemon bench store``: lanes and jobs on a real store, one process and six.

Engines: SQLite in a new temporary file, always; PostgreSQL in a throwaway
cluster (:mod:`lanemon.store.throwaway`) where one can run here and the
PostgreSQL backend is installed; or the store given with ``--store URL``
instead of the throwaway one (the bench adds its jobs to that store).

The issue's **cycle** (one process, the goal): claim the ``scheduled`` lane of a
workspace, save one record fenced by that lane (a new queued job), release --
three operations of the store, all writes, through the seam's objects.

A **job cycle** is :mod:`lanemon.store.churn`'s: claim the ``scheduled`` lane of
a job's workspace, load the job, save it running, save it succeeded (both
fenced), release -- five operations of the store, four of them writes. Jobs
come from each worker in batches of :data:`~lanemon.store.churn.BATCH` (one
transaction each) over :data:`WORKSPACES` workspaces shared by every worker.

Per engine, measured in this run:

1. **one process**: cycles per second in this process for :data:`ONE_S`
   seconds (wall clock). Goals: SQLite >= 2,000, PostgreSQL >= 1,000. Then job
   cycles per second of one churn worker, for comparison.
2. **six processes contending** (job cycles) for :data:`CONTEND_S` seconds (``python -m
   lanemon.store.churn``, started together with ``--start-at`` after their
   start-up): cycles/s of all together, busy claims, stale releases and refused
   writes (each worker's and the store's counts), claim latency p50/p99 (every
   claim's round trip, busy ones included, all workers pooled), and the most
   owners one lane ever had at once, swept over the store's ``lane_history``
   (must be 1; the bench raises ``AssertionError`` otherwise).
3. **the window's heartbeat while it follows the change feed**: this process
   runs a qasync loop with the window's ``Heartbeat`` (precise Qt timer,
   period :data:`PERIOD_MS` ms) and, every :data:`FOLLOW_MS` ms (the window's
   frame), takes what the change feed has (``lanemon.store.sql.feed``: SQLite
   polls ``PRAGMA data_version``, PostgreSQL LISTENs) and reads what changed on
   a connection of its own, one query per table (the lanes; the changed jobs by
   id). Its p99
   lag over the churn is compared with the p99 of the same loop idle (no churn,
   no feed), and of the same loop under the same churn not following the feed,
   all in this run. Goal: within +1 ms of idle. The six workers of these two
   rounds (and, on PostgreSQL, the throwaway server's processes) run at nice
   :data:`CHURN_NICE`, as ``bench agents``' window part does: the goal is what
   following costs the loop, and with six busy processes at its priority on
   two cores the loop mostly waited for a core (the churn alone, not followed,
   put its p99 at +3.7 to +4.3 ms over idle on 2026-12-02, load ~2.5). Their
   contention figures (part 2: cycles/s, busy claims, claim latency) come from
   the first of them (niced workers get every core the loop leaves them).

The machine is shared: the six workers and this process share its cores, so
compare figures of one run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lanemon.bench._common import goal
from lanemon.stats import percentile

ONE_S = 3.0
PROCESSES = 6
CONTEND_S = 5.0
START_MARGIN_S = 3.0   # the workers' start-up before they begin together
IDLE_S = 3.0
WORKSPACES = tuple(f"ws{i}" for i in range(5))
PERIOD_MS = 2
FOLLOW_MS = 33
GOAL_CYCLES = {"sqlite": 2_000, "postgresql": 1_000}
GOAL_HEARTBEAT_MS = 1.0
#: the CPU priority of the heartbeat rounds' churn workers and (PostgreSQL) server processes
CHURN_NICE = 19


def run(out: Callable[[str], None], *, store: str | None = None) -> dict:
    from lanemon.store.url import parse

    out(f"store: a cycle = claim a workspace's 'scheduled' lane + one save fenced by it + release; a job "
        f"cycle = claim + load + save running + save succeeded + release (lanemon.store.churn, six processes); "
        f"{len(WORKSPACES)} workspaces; lease 10 s")
    figures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="lanemon-bench-store-") as tmp:
        engines: list[tuple[str, str]] = [("sqlite", "sqlite:///" + os.path.join(tmp, "bench.db").lstrip("/"))]
        cluster = None
        try:
            if store is not None:
                engines.append((parse(store).engine, store))
            else:
                cluster, why = _throwaway()
                if cluster is None:
                    out(f"postgresql: not measured ({why})")
                    figures["postgresql"] = {"skipped": why}
                else:
                    engines.append(("postgresql", cluster.create_database("lanemon_bench")))
            for engine, url in engines:
                key = engine if engine not in figures else f"{engine} (--store)"
                out(f"-- {key}: {parse(url).redacted()}")
                figures[key] = _engine(out, engine, url, Path(tmp) / key.split()[0],
                                       cluster if engine == "postgresql" and store is None else None)
        finally:
            if cluster is not None:
                cluster.stop()
    figures["goals"] = [g.as_dict() for g in _goals(figures)]
    return figures


def _goals(figures: dict) -> list:
    """The goals of each engine measured: the one-process cycle rate, most owners of one lane at
    once, the heartbeat following the feed under churn within its goal of the idle beside it."""
    from lanemon.bench.goals import Goal

    goals = []
    for key, f in figures.items():
        if "most_owners_at_once" not in f:
            continue
        if f.get("one_process_goal"):
            goals.append(Goal(f"store {key}: claim + fenced save + release, one process",
                              f["one_process_cycles_per_s"], f["one_process_goal"], unit="cycles/s", at_least=True))
        goals.append(Goal(f"store {key}: most owners of one lane at once", f["most_owners_at_once"], 1,
                          unit="owners"))
        if "heartbeat_follow_p99_ms" in f:
            goals.append(Goal(f"store {key}: heartbeat following feed under churn vs idle",
                              f["heartbeat_follow_p99_ms"], GOAL_HEARTBEAT_MS, floor=f["heartbeat_idle_p99_ms"]))
    return goals


def _throwaway():
    """A started throwaway PostgreSQL cluster, or (None, why not)."""
    if importlib.util.find_spec("lanemon.store.sql.postgres") is None:
        return None, "the PostgreSQL backend (lanemon.store.sql.postgres) is not installed"
    from lanemon.store.throwaway import ThrowawayCluster, available

    here = available()
    if not here:
        return None, f"no throwaway cluster here: {here.reason}"
    cluster = ThrowawayCluster()
    cluster.start()
    return cluster, ""


def _engine(out, engine: str, url: str, folder: Path, cluster=None) -> dict:
    from lanemon.store.churn import churn
    from lanemon.store.sql import open_sql_store
    from lanemon.store.url import parse

    folder.mkdir(parents=True, exist_ok=True)

    async def init() -> None:
        s = await open_sql_store(parse(url), create=True, name="bench")
        await s.close()

    asyncio.run(init())

    # 1. one process: the cycle (claim + one fenced save + release), then churn's whole job
    n, elapsed = asyncio.run(_claim_save_release(url, ONE_S))
    rate = n / elapsed
    want = GOAL_CYCLES.get(engine)
    out(f"one process, claim + fenced save + release: {rate:,.0f} cycles/s ({n:,} cycles in {elapsed:.1f} s; "
        f"{1000 / rate if rate else 0:.2f} ms per cycle)"
        + (f"   goal >= {want:,} -> {goal(rate >= want)}" if want else ""))
    one = asyncio.run(churn(url, seconds=ONE_S, workspaces=WORKSPACES, seed=1, name="bench-one"))
    job_rate = one.cycles / one.elapsed_s
    out(f"one process, a whole job (claim + load + save running + save succeeded + release): "
        f"{job_rate:,.0f} cycles/s ({1000 / job_rate if job_rate else 0:.2f} ms per cycle)")

    # 2. + 3. six processes, the heartbeat idle / under churn / following the feed
    lanes_max, contend, beats = _contended(out, engine, url, folder, cluster)
    return {
        "one_process_cycles_per_s": round(rate, 1),
        "one_process_job_cycles_per_s": round(job_rate, 1),
        "one_process_goal": want,
        "one_process_goal_met": None if want is None else rate >= want,
        **contend,
        "most_owners_at_once": lanes_max,
        **beats,
    }


async def _claim_save_release(url: str, seconds: float) -> tuple[int, float]:
    """Claim a workspace's ``scheduled`` lane, save one record fenced by it (a new
    queued job), release; as many times as ``seconds`` allow, through the seam's
    objects (the awaitable forms). Returns (cycles, elapsed seconds)."""
    from lanemon.lanes.records import Reservation, State
    from lanemon.store.sql import open_sql_store
    from lanemon.store.url import parse

    store = await open_sql_store(parse(url), name="bench-csr")
    try:
        lanes = store.lanes("scheduled", clock=time.monotonic, emit=None)
        records = store.records(keep_finished=0)
        base = 1_000_000_000 + int(time.time() * 1000) % 1_000_000 * 1000
        n = 0
        t0 = time.perf_counter()
        end = t0 + seconds
        while time.perf_counter() < end:
            ws = WORKSPACES[n % len(WORKSPACES)]
            token = await lanes.aclaim(ws, f"bench#{n}")
            if token is None:
                raise AssertionError(f"bench: {ws} is held by someone else")
            now = time.monotonic()
            await records.save(Reservation(id=base + n, workspace=ws, queue="reservations", state=State.QUEUED,
                                           created_at=now, updated_at=now, epoch=token.epoch), fence=(token,))
            await lanes.arelease(token)
            n += 1
        return n, time.perf_counter() - t0
    finally:
        await store.close()


def _contended(out, engine: str, url: str, folder: Path, cluster=None):
    import qasync

    from lanemon.ui.heartbeat.timer import Heartbeat, lag_stats
    from lanemon.ui.shell.app import application
    from lanemon.ui.tools.testing import headless

    headless()
    app = application()
    results: dict = {}

    async def scenario() -> None:
        beat = Heartbeat(PERIOD_MS)
        beat.start()
        try:
            await asyncio.sleep(0.5)
            t0 = time.perf_counter()
            await asyncio.sleep(IDLE_S)
            idle = lag_stats(beat.in_range(t0, time.perf_counter(), one_after=False))
            plain = await _churn_round(folder / "plain", url, beat, follow=None)
            follower = _Follower(url)
            followed = await _churn_round(folder / "followed", url, beat, follow=follower)
            results.update(idle=idle, plain=plain, followed=followed, follower=follower)
        finally:
            beat.stop()

    from lanemon.bench.agents import _server_nice

    niced = _server_nice(cluster, CHURN_NICE)
    try:
        with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
            runner.run(scenario())
    finally:
        _server_nice(cluster, 0)

    idle, plain, followed, follower = (results[k] for k in ("idle", "plain", "followed", "follower"))
    stats, lag = plain
    figures = _report_round(out, "six processes", stats, lag)
    dump = _dump(url)
    most = _most_owners(dump["history"])
    out(f"  store counts: stale releases {dump['stats']['stale_releases']}, refused writes "
        f"{dump['stats']['stale_writes']}, leases expired {dump['stats']['lease_expired']}; most owners of one "
        f"lane at once (lane_history sweep over every run above, {len(dump['history']):,} ownerships): "
        f"{most}   must be 1 -> {'held' if most == 1 else 'VIOLATED'}")
    figures["store_stale_releases"] = dump["stats"]["stale_releases"]
    figures["store_refused_writes"] = dump["stats"]["stale_writes"]
    out(f"heartbeat (period {PERIOD_MS} ms) p99: idle {idle.p99:.2f} ms; under the churn {lag.p99:.2f} ms (the "
        f"{PROCESSES} workers{f' and the PostgreSQL server ({niced} processes)' if niced else ''} at nice "
        f"{CHURN_NICE}, this loop at nice {os.getpriority(os.PRIO_PROCESS, 0)})")
    beats = {"heartbeat_idle_p99_ms": round(idle.p99, 3), "heartbeat_churn_p99_ms": round(lag.p99, 3)}
    fstats, flag = followed
    delta = flag.p99 - idle.p99
    out(f"  following the change feed under the churn: p99 {flag.p99:.2f} ms (max {flag.max:.1f} ms); "
        f"minus idle {delta:+.2f} ms   goal <= +{GOAL_HEARTBEAT_MS:g} ms -> {goal(delta <= GOAL_HEARTBEAT_MS)}; "
        f"minus the churn not followed {flag.p99 - lag.p99:+.2f} ms")
    steps, cpu = sorted(follower.step_ms), sorted(follower.step_cpu_ms)
    out(f"  the follower: {follower.polls:,} polls every {FOLLOW_MS} ms, {follower.rows:,} changed rows read, "
        f"{follower.snapshots} snapshots; loop time per poll-and-read p50 {percentile(steps, 50):.2f} ms, "
        f"p99 {percentile(steps, 99):.2f} ms, max {steps[-1] if steps else 0:.2f} ms (its CPU time p99 "
        f"{percentile(cpu, 99):.2f} ms: the rest is waiting for a core the {PROCESSES} workers share)")
    out(f"  (that churn: {fstats['cycles'] / CONTEND_S:,.0f} cycles/s)")
    beats.update(heartbeat_follow_p99_ms=round(flag.p99, 3), heartbeat_follow_minus_idle_ms=round(delta, 3),
                 heartbeat_goal_met=delta <= GOAL_HEARTBEAT_MS,
                 follow_cycles_per_s=round(fstats["cycles"] / CONTEND_S, 1),
                 follow_step_ms_p99=round(percentile(steps, 99), 3),
                 follow_step_cpu_ms_p99=round(percentile(cpu, 99), 3))
    if most != 1:
        raise AssertionError(f"store bench ({engine}): {most} owners of one lane at once")
    return most, figures, beats


async def _churn_round(folder: Path, url: str, beat, follow):
    """Six churn processes for CONTEND_S from a common start; the heartbeat's lags in that span."""
    start_at = time.time() + START_MARGIN_S
    procs = _spawn(folder, url, start_at)
    try:
        task = None if follow is None else asyncio.ensure_future(follow.run())
        await asyncio.sleep(max(0.0, start_at - time.time()))
        t0 = time.perf_counter()
        for _ in range(int((CONTEND_S + 60) / 0.05)):
            if all(p.poll() is not None for p in procs):
                break
            await asyncio.sleep(0.05)
        t1 = min(time.perf_counter(), t0 + CONTEND_S)
        if task is not None:
            follow.stop()
            await task
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    return _merged(folder, procs), _lags(beat, t0, t1)


def _spawn(folder: Path, url: str, start_at: float) -> list[subprocess.Popen]:
    import lanemon

    folder.mkdir(parents=True, exist_ok=True)
    root = str(Path(lanemon.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []
    try:
        for i in range(PROCESSES):
            with open(folder / f"{i}.err", "w") as err:
                procs.append(subprocess.Popen(
                    ["nice", "-n", str(CHURN_NICE),
                     sys.executable, "-m", "lanemon.store.churn", "--store", url, "--seconds", str(CONTEND_S),
                     "--workspaces", ",".join(WORKSPACES), "--seed", str(100 + i), "--name", f"bench-{i}",
                     "--stats", str(folder / f"{i}.json"), "--start-at", repr(start_at)],
                    stdout=subprocess.DEVNULL, stderr=err, env=env))
    except BaseException:        # (a start that failed, Ctrl+C, SIGTERM: the ones started go too)
        for p in procs:
            p.kill()
            p.wait()
        raise
    return procs


def _merged(folder: Path, procs: list[subprocess.Popen]) -> dict:
    failed = [i for i, p in enumerate(procs) if p.returncode != 0]
    if failed:
        raise RuntimeError(f"churn workers {failed} failed: {(folder / f'{failed[0]}.err').read_text()[-500:]}")
    merged = {"cycles": 0, "busy": 0, "stale_releases": 0, "refused_writes": 0, "errors": 0, "claim_ms": []}
    for i in range(len(procs)):
        s = json.loads((folder / f"{i}.json").read_text())
        for k in merged:
            merged[k] += s[k]
    return merged


def _lags(beat, t0: float, t1: float):
    from lanemon.ui.heartbeat.timer import lag_stats

    return lag_stats(beat.in_range(t0, t1, one_after=False))


def _report_round(out, label: str, stats: dict, lag) -> dict:
    ms = sorted(stats["claim_ms"])
    p50, p99 = percentile(ms, 50), percentile(ms, 99)
    rate = stats["cycles"] / CONTEND_S
    out(f"{label} contending for {CONTEND_S:g} s: {rate:,.0f} cycles/s ({stats['cycles']:,} cycles); "
        f"busy claims {stats['busy']:,}; stale releases {stats['stale_releases']}; refused writes "
        f"{stats['refused_writes']}; errors {stats['errors']}; claim latency p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"({len(ms):,} claims)")
    return {"contended_cycles_per_s": round(rate, 1), "contended_cycles": stats["cycles"],
            "busy_claims": stats["busy"], "stale_releases": stats["stale_releases"],
            "refused_writes": stats["refused_writes"], "errors": stats["errors"],
            "claim_ms_p50": round(p50, 3), "claim_ms_p99": round(p99, 3)}


def _dump(url: str) -> dict:
    from lanemon.store.sql import open_sql_store
    from lanemon.store.url import parse

    async def go():
        s = await open_sql_store(parse(url), name="bench-dump")
        try:
            return await s.dump()
        finally:
            await s.close()

    return asyncio.run(go())


def _most_owners(history: list[dict]) -> int:
    """The most ownerships of one (lane, workspace) open at one instant (an end at the
    instant of a claim counts as before it)."""
    events: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for h in history:
        spans = events.setdefault((h["lane"], h["workspace"]), [])
        spans.append((h["claimed_at"], 1))
        spans.append((float("inf") if h["ended_at"] is None else h["ended_at"], -1))
    most = 0
    for spans in events.values():
        spans.sort()  # at one instant, -1 (an end) sorts before +1 (a claim)
        held = 0
        for _, step in spans:
            held += step
            most = max(most, held)
    return most


class _Follower:
    """Follows a store's change feed as a window would: every FOLLOW_MS (a frame), take what
    the feed has (:func:`lanemon.store.sql.feed.open_feed`), then read what changed on a
    connection of its own, one query per table: the lanes when a lane changed, the changed
    jobs by id (the lanes only when the feed says to read a snapshot)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._stop = asyncio.Event()
        self.polls = 0
        self.rows = 0
        self.snapshots = 0
        self.step_ms: list[float] = []      # the loop time each poll-and-read took (wall clock)
        self.step_cpu_ms: list[float] = []  # ... and its CPU time (without being preempted)

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        from lanemon.store.sql.feed import open_feed
        from lanemon.store.url import parse

        url = parse(self._url)
        feed = await open_feed(url)
        reader = await _reader(url)
        try:
            while not self._stop.is_set():
                t0, c0 = time.perf_counter(), time.thread_time()
                await self._step(feed, reader)
                self.step_ms.append((time.perf_counter() - t0) * 1000.0)
                self.step_cpu_ms.append((time.thread_time() - c0) * 1000.0)
                try:
                    await asyncio.wait_for(self._stop.wait(), FOLLOW_MS / 1000)
                except TimeoutError:
                    pass
        finally:
            await feed.close()
            await reader.close()

    async def _step(self, feed, reader) -> None:
        changes = await feed.wait(0)
        self.polls += 1
        if changes is None:
            self.snapshots += 1
            self.rows += len(await reader.fetch(_LANES_SQL))
            return
        if any(table == "lanes" for table, _ in changes):
            self.rows += len(await reader.fetch(_LANES_SQL))
        jobs = [int(key) for table, key in changes if table == "jobs"]
        if jobs:
            self.rows += len(await reader.jobs(jobs))


_LANES_SQL = "SELECT name, workspace, owner, epoch, lease_until FROM lanes"
_JOBS_SQL = "SELECT id, workspace, queue, state, attempts, epoch, owner FROM jobs WHERE id "


async def _reader(url):
    if url.engine == "sqlite":
        return _SqliteReader(url.path)
    from lanemon.store.sql.postgres import connect

    return _PgReader(await connect(url))


class _SqliteReader:
    """Read-only reads of an SQLite store (complete without suspending)."""

    def __init__(self, path: str) -> None:
        import sqlite3

        from lanemon.store.sql.sqlite import read_only_uri

        self._db = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None)

    async def fetch(self, sql: str, params=()) -> list:
        return self._db.execute(sql, params).fetchall()

    async def jobs(self, ids: list[int]) -> list:
        rows = []
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            rows += self._db.execute(_JOBS_SQL + f"IN ({','.join('?' * len(part))})", part).fetchall()
        return rows

    async def close(self) -> None:
        self._db.close()


class _PgReader:
    """Reads of a PostgreSQL store on one autocommit connection (``search_path`` lanemon)."""

    def __init__(self, conn) -> None:
        self._conn = conn

    async def fetch(self, sql: str, params=None) -> list:
        cur = await self._conn.execute(sql, params)
        return await cur.fetchall()

    async def jobs(self, ids: list[int]) -> list:
        return await self.fetch(_JOBS_SQL + "= ANY(%s)", (ids,))

    async def close(self) -> None:
        await self._conn.close()
