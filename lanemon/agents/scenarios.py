"""The four scenarios of real contention, as scripts over agent processes and a store (Qt-free).

A :class:`ScenarioRun` runs one scenario (:data:`SCENARIOS`: ``overlap``,
``pause``, ``kill``, ``counters``) with real ``lanemon agent`` processes
started through a :class:`~lanemon.agents.fleet.Fleet` (the window's: they
are listed in its Processes tab) on one store, and its own store session to
submit jobs and read what happened. While it runs, :meth:`ScenarioRun.status`
says, in a :class:`ScenarioStatus`: the step it is at (what is happening now),
what to look at on screen, and the live figures read from the store that prove
it; at the end, ``state`` is ``proved`` (with ``proof``: one line of the
figures that prove it) or ``failed`` (with ``error``: what was not reached
or what went wrong).

The store: the URL given, or (``store_url=None``) a **throwaway SQLite store**
in a new temporary folder, removed by :meth:`ScenarioRun.aclose` (the status
says so: ``throwaway``). ``pause`` and ``kill`` give their agents the URL with
a short lease (``?lease=`` :data:`PAUSE_LEASE_S`, replacing any lease the URL
had): a lease belongs to the session that takes it, so the window and the
other agents keep theirs.

The scenarios (each figure is read from the store: ``SqlStore.dump`` and
:func:`lanemon.agents.audit.audit`; the counters' ``board_*`` counts):

* ``overlap`` -- two agents with ``--lanes local`` take jobs over a few
  workspaces: runs of one workspace overlap (``overlaps`` > 0, drawn red on the
  Lanes timeline and counted in its top line). Then "switch to store lanes":
  both are stopped (SIGTERM, waited for), two with store lanes take the same
  jobs again: zero **new** overlaps (no overlapping pair includes a job of the
  second round).
* ``pause`` -- two agents with store lanes; a long job; the agent running it
  is paused (SIGSTOP) until its lane expired and the other agent runs the job
  under a new epoch; then it is resumed (SIGCONT): its late write is refused by
  the fence and is a ledger row (writer, job, state, epoch held vs current,
  when). A pause that falls inside one of the agent's SQLite write
  transactions (it would keep the file's lock: no lease ends that) is undone
  and tried again.
* ``kill`` -- two agents with store lanes; a long job; the agent running it is
  killed (SIGKILL) mid-job; its lanes come free by the dead-owner rule (the
  lease, or on PostgreSQL its session's lock), the job is re-queued and run by
  the other agent, or ends ``failed`` "owner died" (its attempts used up);
  nothing stays claimed (no lane row of the killed agent, none held at the end).
* ``counters`` -- three staff agents per strategy, one strategy after the
  other (``short``, ``long``, ``claim``), each measured over
  ``counters_window_s`` from the store's counts: double assignments (short: >
  0, for real, counted by the store -- the round goes on until there is one;
  long and claim: 0) and seated per second (claim beside long: the compare).

Stopping: when the script ends (proved, failed, or its task cancelled) every
agent it started is stopped (SIGTERM, SIGKILL after the fleet's grace) and
waited for; :meth:`ScenarioRun.aclose` does the same, then closes its store
session and removes a throwaway store's folder. A finished scenario keeps its
store (to be looked at) until ``aclose``. Agents are only ever started through the fleet,
so a window's close (``Fleet.aclose``) stops them too: no orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from lanemon.agents.audit import TERMINAL, overlapping_runs
from lanemon.agents.fleet import AgentSpec, Fleet, FleetError
from lanemon.store.sql.backend import JobSpec
from lanemon.store.url import StoreError, parse

__all__ = ["Figure", "SCENARIOS", "ScenarioOptions", "ScenarioRun", "ScenarioStatus", "with_lease"]

#: the lease of the pause and kill scenarios' agents, seconds
PAUSE_LEASE_S = 2.0
#: how often the store is read while a scenario waits for something
POLL_S = 0.25
#: the longest wait for one condition (agents starting on a loaded machine, a lease, a job)
WAIT_S = 120.0
#: staff members per agent and counters of the board in the counters scenario
STAFF_PER_AGENT = 2
BOARD_COUNTERS = 8
STRATEGY_ORDER = ("short", "long", "claim")


@dataclass(frozen=True)
class ScenarioOptions:
    """Sizes of a scenario (the defaults are for the window; tests take shorter ones)."""

    lease_s: float = PAUSE_LEASE_S       # pause, kill: the agents' lease
    long_job_s: float = 10.0             # pause, kill: the job that is running when it happens
    workspaces: int = 3                  # overlap: workspaces ...
    jobs_per_ws: int = 4                 # ... and jobs of each (both queues)
    job_s: float = 0.8                   # overlap: seconds of each job
    counters_window_s: float = 8.0       # counters: seconds each strategy is measured
    counters_agents: int = 3
    wait_s: float = WAIT_S


@dataclass(frozen=True)
class Figure:
    """One live figure: its name, its value as shown, and ``tone`` ("ok", "bad" or "")."""

    name: str
    value: str
    tone: str = ""


@dataclass(frozen=True)
class ScenarioStatus:
    """Where a scenario is. ``state``: "starting", "running", "proved", "failed" or
    "stopped"; ``step`` of ``steps`` with its ``caption`` (what is happening now) and
    ``look`` (what to look at, and where); ``figures`` (live, from the store);
    ``proof`` (proved: the figures that prove it), ``error`` (failed: why); ``store``
    (the redacted URL) and ``throwaway`` (a temporary SQLite store, removed at the end);
    ``version`` grows with every change."""

    key: str
    title: str
    state: str
    step: int
    steps: int
    caption: str
    look: str
    figures: tuple[Figure, ...]
    proof: str | None
    error: str | None
    store: str
    throwaway: bool
    agents: tuple[str, ...]
    version: int

    @property
    def over(self) -> bool:
        return self.state in ("proved", "failed", "stopped")


@dataclass(frozen=True)
class _Scenario:
    key: str
    title: str
    steps: int
    summary: str


SCENARIOS: dict[str, _Scenario] = {s.key: s for s in (
    _Scenario("overlap", "Overlap: local lanes, then store lanes", 4,
              "two agents with their own in-memory lanes run one workspace twice at once (red "
              "overlaps); two with the store's lanes never do"),
    _Scenario("pause", "Pause past the lease: the zombie write", 5,
              "an agent paused longer than its lease loses its lane to a new epoch; resumed, its "
              "late save is refused by the fence and lands in the ledger"),
    _Scenario("kill", "Kill mid-job: the dead-owner rule", 4,
              "an agent killed mid-job: its lane comes free with its lease, its job is re-queued "
              "and run by another (or ends 'owner died'); nothing stays claimed"),
    _Scenario("counters", "Counters across processes", 4,
              "staff agents in separate processes: short lock double-assigns for real, long lock "
              "serialises, claim gives no double and more seated per second"),
)}


def with_lease(url: str, lease_s: float) -> str:
    """``url`` with its ``lease`` option set to ``lease_s`` (any other option kept)."""
    parts = urlsplit(url)
    options = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "lease"]
    options.append(("lease", f"{lease_s:g}"))
    if parts.scheme.lower() == "sqlite" and not parts.netloc:
        path, _, _ = url.partition("?")
        return f"{path}?{urlencode(options)}"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(options), parts.fragment))


_RUNS = itertools.count(1)


class _Failed(Exception):
    """The scenario cannot reach its proof: one line for the screen."""


class ScenarioRun:
    """One run of a scenario (see the module docstring). ``run()`` is its task (it never
    raises but ``CancelledError``); ``aclose()`` stops what it started and cleans up."""

    def __init__(self, key: str, fleet: Fleet, store_url: str | None = None, *,
                 options: ScenarioOptions | None = None, opener: Callable[..., Any] | None = None) -> None:
        if key not in SCENARIOS:
            raise ValueError(f"no scenario {key!r}: one of {', '.join(SCENARIOS)}")
        self.key = key
        self.scenario = SCENARIOS[key]
        self.fleet = fleet
        self.options = options or ScenarioOptions()
        self._folder: str | None = None
        if store_url is None:
            self._folder = tempfile.mkdtemp(prefix="lanemon-scenario-")
            store_url = "sqlite:///" + str(Path(self._folder) / "scenario.db").lstrip("/")
        parse(store_url)                       # (a bad URL is refused here: StoreError)
        self.url = store_url
        self._opener = opener
        self._store = None
        self._agents: list[str] = []
        self._state = "starting"
        self._step = 0
        self._caption = "starting…"
        self._look = ""
        self._figures: tuple[Figure, ...] = ()
        self._proof: str | None = None
        self._error: str | None = None
        self._version = 0
        self._closed = False
        self.result: dict[str, Any] = {}     # the figures of the proof, by name (tests, the report)
        self._tag = f"r{next(_RUNS)}"      # agents are named r<n>-<what>: short, unique in this process
        #: set once the store is ready (opened, its schema made, the board ensured) and the first
        #: step said: a window may follow the store from then on
        self.ready = asyncio.Event()

    # --- what is shown ------------------------------------------------------------------------
    @property
    def throwaway(self) -> bool:
        return self._folder is not None

    @property
    def folder(self) -> str | None:
        """The throwaway store's temporary folder (``None``: a store that was given)."""
        return self._folder

    def status(self) -> ScenarioStatus:
        s = self.scenario
        return ScenarioStatus(self.key, s.title, self._state, self._step, s.steps, self._caption, self._look,
                              self._figures, self._proof, self._error, parse(self.url).redacted(), self.throwaway,
                              tuple(self._agents), self._version)

    def _say(self, step: int, caption: str, look: str) -> None:
        self._step, self._caption, self._look = step, caption, look
        self._state = "running"
        self._version += 1
        self.ready.set()

    def _show(self, figures: Iterable[Figure]) -> None:
        figures = tuple(figures)
        if figures != self._figures:
            self._figures = figures
            self._version += 1

    # --- the run --------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            self._store = await self._open()
            await getattr(self, f"_{self.key}")()
        except asyncio.CancelledError:
            if self._state not in ("proved", "failed"):
                self._state = "stopped"
                self._caption = "stopped"
                self._version += 1
            raise
        except (_Failed, StoreError, FleetError) as exc:
            self._fail(str(exc))
        except Exception as exc:   # (said on screen, never lost)
            self._fail(f"{type(exc).__name__}: {exc}")
        finally:
            await self._stop_agents()

    def _fail(self, why: str) -> None:
        self._state = "failed"
        self._error = why
        self._version += 1

    def _prove(self, proof: str) -> None:
        self._state = "proved"
        self._proof = proof
        self._version += 1

    async def _open(self):
        if self._opener is not None:
            return await self._opener(self.url)
        from lanemon.store.sql import open_sql_store
        return await open_sql_store(parse(self.url), create=True, name="lanemon-scenario")

    async def aclose(self) -> None:
        """Stop every agent this run started (and wait until each exited), close its store
        session, remove a throwaway store. Idempotent; never raises."""
        if self._closed:
            return
        self._closed = True
        await self._stop_agents()
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):
                await store.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        if self._state in ("starting", "running"):
            self._state = "stopped"
            self._caption = "stopped"
        self._version += 1

    # --- agents -----------------------------------------------------------------------------------
    def _start(self, label: str, url: str, **spec: Any) -> str:
        name = f"{self._tag}-{label}"
        self.fleet.start(AgentSpec(url, name, **spec))
        self._agents.append(name)
        self._version += 1
        return name

    def _alive(self, name: str) -> bool:
        a = self.fleet.agent(name)
        return a is not None and a.alive

    async def _stop_agents(self, names: Iterable[str] | None = None) -> None:
        names = [n for n in (self._agents if names is None else names) if self._alive(n)]
        for n in names:
            self.fleet.stop(n)
        while True:     # (the fleet reaps each one on its own thread)
            if not any(self._alive(n) for n in names):
                return
            await asyncio.sleep(0.05)

    def _check_alive(self, names: Iterable[str]) -> None:
        for n in names:
            a = self.fleet.agent(n)
            if a is not None and not a.alive:
                raise _Failed(f"agent {n} {a.state}" + (f": {a.last_line}" if a.last_line else ""))

    async def _until(self, what: str, predicate: Callable[[dict], Any], *, agents: Iterable[str] = (),
                     figures: Callable[[dict], Iterable[Figure]] | None = None) -> Any:
        """Read the store every ``POLL_S`` until ``predicate(dump)`` is truthy (its value);
        ``figures(dump)`` shown at each read. ``_Failed`` after ``wait_s`` or when one of
        ``agents`` exited."""
        agents = list(agents)
        deadline = time.monotonic() + self.options.wait_s
        while True:
            dump = await self._store.dump()
            if figures is not None:
                self._show(figures(dump))
            value = predicate(dump)
            if value:
                return value
            self._check_alive(agents)
            if time.monotonic() > deadline:
                raise _Failed(f"not reached within {self.options.wait_s:g} s: {what}")
            await asyncio.sleep(POLL_S)

    async def _registered(self, names: list[str]) -> None:
        await self._until("the agents open their store sessions",
                          lambda d: set(names) <= {s["name"] for s in d["sessions"]}, agents=names)

    # --- overlap ----------------------------------------------------------------------------------
    def _overlap_jobs(self) -> list[JobSpec]:
        o = self.options
        queues = ("reservations", "cafe")
        return [JobSpec(workspace=f"ws-{w + 1}", queue=queues[j % 2], seconds=o.job_s)
                for j in range(o.jobs_per_ws) for w in range(o.workspaces)]

    async def _overlap(self) -> None:
        self._say(1, "Starting two agents with LOCAL lanes (--lanes local): each keeps its own in-memory "
                     "lanes, as the seed's design scaled out by mistake.",
                  "Processes tab: two agents, role 'lanes · local lanes'.")
        local = [self._start(f"local-{k}", self.url, lanes="local") for k in (1, 2)]
        await self._registered(local)
        first = await self._store.submit(self._overlap_jobs())
        first_set = set(first)
        self._say(2, f"Both agents take the same {len(first)} jobs over {self.options.workspaces} workspaces: "
                     "each one's own lanes let it run a workspace while the other runs it too.",
                  "Lanes tab: red bars on the timeline are runs of one workspace at the same time; "
                  "the top line counts them ('overlapping runs').")

        def round_one(d):
            jobs = [j for j in d["jobs"] if j["id"] in first_set]
            pairs = overlapping_runs(jobs, d["now"])
            done = sum(1 for j in jobs if j["state"] in TERMINAL)
            return pairs, done, jobs

        def figs1(d):
            pairs, done, _ = round_one(d)
            return (Figure("overlapping runs (local lanes)", str(_runs_in(pairs)), "bad" if pairs else ""),
                    Figure("jobs done", f"{done}/{len(first)}"))
        pairs = await self._until(
            "overlapping runs with local lanes, every job done",
            lambda d: (lambda p, done, _j: p if p and done == len(first) else None)(*round_one(d)),
            agents=local, figures=figs1)
        overlapped = _runs_in(pairs)
        self.result.update(local_overlaps=overlapped, local_pairs=len(pairs))
        self._say(3, f"{overlapped} runs overlapped another run of their workspace with local lanes. Switching "
                     "to STORE lanes: the two local "
                     "agents are stopped (SIGTERM), two agents with the store's lanes start and get the "
                     "same jobs again.",
                  "Processes tab: the local agents exit 0, two 'store lanes' agents start.")
        await self._stop_agents(local)
        store = [self._start(f"store-{k}", self.url, lanes="store") for k in (1, 2)]
        await self._registered(store)
        second = await self._store.submit(self._overlap_jobs())
        second_set = set(second)
        self._say(4, f"Two agents with store lanes take the same {len(second)} jobs: a workspace's lane is "
                     "the store's, one holder at a time.",
                  "Lanes tab: new bars are not red; the top line's 'overlapping runs' stays at "
                  f"{overlapped} (those of the local round).")

        def round_two(d):
            jobs = [j for j in d["jobs"] if j["id"] in first_set or j["id"] in second_set]
            new = [p for p in overlapping_runs(jobs, d["now"]) if p[1] in second_set or p[2] in second_set]
            done = sum(1 for j in jobs if j["id"] in second_set and j["state"] in TERMINAL)
            return new, done

        def figs2(d):
            new, done = round_two(d)
            return (Figure("overlapping runs (local lanes)", str(overlapped), "bad"),
                    Figure("new overlaps (store lanes)", str(_runs_in(new)), "bad" if new else "ok"),
                    Figure("jobs done (store lanes)", f"{done}/{len(second)}"))
        await self._until("every job of the store-lanes round done",
                          lambda d: round_two(d)[1] == len(second), agents=store, figures=figs2)
        new, _ = round_two(await self._store.dump())
        self.result["new_overlaps"] = len(new)
        await self._stop_agents(store)
        if new:
            raise _Failed(f"{len(new)} overlapping runs with store lanes (first: {new[0]})")
        self._prove(f"local lanes: {overlapped} overlapping runs ({len(pairs)} pairs); store lanes: 0 new "
                    f"overlaps over {len(second)} jobs")

    # --- pause ------------------------------------------------------------------------------------
    def _running_of(self, names: list[str], ids: set[int]):
        def find(d):
            lanes = {(lane["workspace"], lane["epoch"]) for lane in d["lanes"] if lane["lane"] == "scheduled"}
            for j in d["jobs"]:
                if j["id"] in ids and j["state"] == "running" and j["owner"] in names \
                        and (j["workspace"], j["epoch"]) in lanes:
                    return j["owner"], j["id"], j["epoch"]
            return None
        return find

    async def _writable(self) -> bool:
        """False when a stopped agent holds SQLite's write lock (a SIGSTOP inside one of its
        transactions: no lease ends that)."""
        try:
            await asyncio.wait_for(self._store.backend.renew(), 8)
        except (TimeoutError, StoreError):
            return False
        return True

    async def _two_on_a_long_job(self) -> tuple[list[str], set[int]]:
        o = self.options
        url = with_lease(self.url, o.lease_s)
        self._say(1, f"Starting two agents with store lanes and a {o.lease_s:g} s lease "
                     f"({parse(url).redacted()}).",
                  "Processes tab: two agents, 'lanes · store lanes'; their heartbeats renew the lease.")
        agents = [self._start(f"{k}", url, lanes="store") for k in ("a", "b")]
        await self._registered(agents)
        return agents, set()

    async def _long_job(self, ids: set[int]) -> int:
        (jid,) = await self._store.submit([JobSpec(workspace="ws-long", queue="reservations",
                                                   seconds=self.options.long_job_s)])
        ids.add(jid)
        return jid

    async def _catch_running(self, agents: list[str], ids: set[int], sig: str) -> tuple[str, int, int]:
        """An agent running one of our long jobs under its current lane, caught by ``sig``
        ("pause": SIGSTOP, checked outside a write transaction; "kill": SIGKILL)."""
        for _ in range(20):
            d = await self._store.dump()
            if all(j["state"] in TERMINAL for j in d["jobs"] if j["id"] in ids):
                await self._long_job(ids)     # (the last one ended before it was caught: another)
            owner, jid, epoch = await self._until("an agent runs the long job", self._running_of(agents, ids),
                                                  agents=agents, figures=lambda d: ())
            if sig == "kill":
                self.fleet.kill(owner)
                return owner, jid, epoch
            self.fleet.pause(owner)
            if self._running_of([owner], {jid})(await self._store.dump()) == (owner, jid, epoch) \
                    and await self._writable():
                return owner, jid, epoch
            self.fleet.resume(owner)       # caught between operations no more: try again
            await asyncio.sleep(POLL_S)
        raise _Failed("could not pause an agent outside its store writes")

    @staticmethod
    def _job(d: dict, jid: int) -> dict:
        return next(j for j in d["jobs"] if j["id"] == jid)

    @staticmethod
    def _lane(d: dict, ws: str) -> dict | None:
        return next((lane for lane in d["lanes"] if lane["lane"] == "scheduled" and lane["workspace"] == ws), None)

    async def _pause(self) -> None:
        o = self.options
        agents, ids = await self._two_on_a_long_job()
        jid = await self._long_job(ids)
        self._say(2, f"A {o.long_job_s:g} s job (#{jid}) on workspace ws-long: the agent that takes it holds "
                     "its lanes under an epoch (the fencing token).",
                  "Lanes tab: the workspace's lane, its agent and epoch; the job running.")
        owner, jid, epoch = await self._catch_running(agents, ids, "pause")
        other = next(a for a in agents if a != owner)
        paused_at = time.monotonic()
        held = {lane["lane"]: lane["epoch"] for lane in (await self._store.dump())["lanes"] if _held_by(lane, owner)}
        self.result.update(paused=owner, job=jid, epoch_held=epoch, lanes_held=held)
        self._say(3, f"{owner} is PAUSED (SIGSTOP) holding job #{jid} under epoch {epoch}. It cannot renew its "
                     f"{o.lease_s:g} s lease: the store expires it, re-queues the job, and {other} runs it "
                     "under a new epoch.",
                  f"Processes tab: {owner} paused, its heartbeat ageing. Lanes tab: ws-long's lane passes "
                  f"to {other} with a higher epoch.")

        def taken(d):
            job = self._job(d, jid)
            ended = next((h for h in d["history"] if h["epoch"] == epoch), {}).get("ended_at") is not None
            return job if ended and job["epoch"] not in (None, epoch) and job["state"] == "running" else None

        def figs(d):
            job = self._job(d, jid)
            lane = self._lane(d, "ws-long")
            return (Figure("paused", f"{owner} for {time.monotonic() - paused_at:.1f} s", "bad"),
                    Figure("epoch held", str(epoch)),
                    Figure("lane now", "free" if lane is None else f"epoch {lane['epoch']} · {_agent_of(lane)}",
                           "ok" if lane is not None and lane["epoch"] > epoch else ""),
                    Figure(f"job #{jid}", f"{job['state']} · {job['owner'] or '–'}"),
                    Figure("refused writes (ledger)", str(len(d["ledger"])), "bad" if d["ledger"] else ""))
        job = await self._until(f"{owner}'s lane expires and {other} runs job #{jid}", taken,
                                agents=[other], figures=figs)
        self.result["epoch_taken"] = job["epoch"]
        self.fleet.resume(owner)
        self._say(4, f"{owner} is RESUMED (SIGCONT). It does not know it lost its lane: when its job ends it "
                     f"saves it with epoch {epoch}; the store's fence refuses the write (epoch {job['epoch']} "
                     "is current) and records it in the ledger.",
                  "Lanes tab: 'Refused writes' shows the row (writer, job, write, epoch held vs now); the top "
                  "line counts it.")

        def refused(d):
            return next((e for e in d["ledger"] if e["writer"] == owner and e["job"] == jid), None)
        row = await self._until(f"the resumed {owner}'s late write is refused", refused, agents=agents,
                                figures=figs)
        self.result.update(ledger=row)
        now = "free" if row["epoch_current"] is None else str(row["epoch_current"])
        self._say(5, f"Refused: {owner} wrote job #{jid} '{row['state']}' holding epoch {row['epoch_held']} of "
                     f"lane {row['lane']} · {row['workspace']}; that lane's epoch was {now}. {other} finishes the "
                     "job.",
                  "Lanes tab: the ledger row; the job ends once, by " + other + ".")

        def ledger_figs(d):
            job = self._job(d, jid)
            return (Figure("ledger row", f"{row['writer']} · job #{jid} · {row['state']}", "bad"),
                    Figure("lane", f"{row['lane']} · {row['workspace']}"),
                    Figure("epoch held", str(row["epoch_held"]), "bad"),
                    Figure("epoch now", now, "ok"),
                    Figure("refused writes (ledger)", str(len(d["ledger"])), "bad"),
                    Figure(f"job #{jid}", f"{job['state']} · {job['owner'] or '–'}",
                           "ok" if job["state"] in TERMINAL else ""))
        job = await self._until(f"job #{jid} ends", lambda d: (j := self._job(d, jid))["state"] in TERMINAL and j,
                                agents=[other], figures=ledger_figs)
        self.result["final"] = job
        self._prove(f"{owner}'s write of job #{jid} refused: epoch held {row['epoch_held']}, current {now}; "
                    f"job #{jid} {job['state']} by {job['owner']}")

    # --- kill -------------------------------------------------------------------------------------
    async def _kill(self) -> None:
        o = self.options
        agents, ids = await self._two_on_a_long_job()
        jid = await self._long_job(ids)
        self._say(2, f"A {o.long_job_s:g} s job (#{jid}) on workspace ws-long: the agent that takes it holds "
                     "its lanes under an epoch.",
                  "Lanes tab: the workspace's lane, its agent and epoch; the job running.")
        owner, jid, epoch = await self._catch_running(agents, ids, "kill")
        other = next(a for a in agents if a != owner)
        killed_at = time.monotonic()
        self.result.update(killed=owner, job=jid, epoch_held=epoch)
        self._say(3, f"{owner} is KILLED (SIGKILL) mid-job (#{jid}, epoch {epoch}): no final save, no "
                     "release. Its lanes come free by the dead-owner rule (the lease runs out; on PostgreSQL "
                     "its session's lock goes at once); the store re-queues the job (or ends it 'owner died').",
                  f"Processes tab: {owner} 'exited -9'. Lanes tab: ws-long's lane freed, then taken by {other}.")

        def figs(d):
            job = self._job(d, jid)
            held = [lane for lane in d["lanes"] if _held_by(lane, owner) or lane["epoch"] == epoch]
            h = next((h for h in d["history"] if h["epoch"] == epoch), {})
            return (Figure("killed", f"{owner} {time.monotonic() - killed_at:.1f} s ago", "bad"),
                    Figure(f"epoch {epoch}", h.get("end_reason") or "still held", "ok" if h.get("end_reason") else ""),
                    Figure(f"lanes of {owner}", str(len(held)), "bad" if held else "ok"),
                    Figure(f"job #{jid}", f"{job['state']} · attempts {job['attempts']} · {job['owner'] or '–'}",
                           "ok" if job["state"] in TERMINAL else ""),
                    Figure("lanes held by the agents", str(sum(1 for lane in d["lanes"]
                                                               if _held_by(lane, *agents)))))

        def ended(d):
            job = self._job(d, jid)
            if job["state"] not in TERMINAL:
                return None
            h = next((h for h in d["history"] if h["epoch"] == epoch), {})
            return job if h.get("ended_at") is not None else None
        job = await self._until(f"{owner}'s lane comes free and job #{jid} ends", ended, agents=[other],
                                figures=figs)
        self._say(4, f"Job #{jid} {job['state']}" + (f" ({job['error']})" if job["error"] else f" by {job['owner']}")
                  + ". Waiting until no lane is held.", "Lanes tab: no lane held, the job once in the finished list.")
        d = await self._until("no lane of the scenario's agents held",
                              lambda d: d if not any(_held_by(lane, *agents) for lane in d["lanes"]) else None,
                              agents=[other], figures=figs)
        reason = next(h for h in d["history"] if h["epoch"] == epoch)["end_reason"]
        self.result.update(final=job, end_reason=reason,
                           lanes_left=sum(1 for lane in d["lanes"] if _held_by(lane, *agents)))
        how = "owner died" if job["error"] == "owner died" else f"re-queued and run by {job['owner']}"
        self._prove(f"{owner} killed mid-job: its lane (epoch {epoch}) {reason}; job #{jid} {job['state']} "
                    f"({how}, attempts {job['attempts']}); 0 lanes held")

    # --- counters ---------------------------------------------------------------------------------
    async def _board(self):
        claims = self._store.claims(counters=BOARD_COUNTERS)
        await claims.refresh()
        return claims

    async def _counters(self) -> None:
        o = self.options
        claims = await self._board()
        rows: dict[str, dict[str, float]] = {}
        labels = {"short": "short lock", "long": "long lock", "claim": "claim"}

        def table() -> list[Figure]:
            out = []
            for s in STRATEGY_ORDER:
                r = rows.get(s)
                if r is None:
                    continue
                doubles = int(r["doubles"])
                out.append(Figure(labels[s], f"{doubles} doubles · {r['seated']:.0f} seated · "
                                             f"{r['per_s']:.1f}/s" + ("" if r.get("done") else " (measuring)"),
                                  "bad" if doubles else "ok"))
            return out

        for i, strategy in enumerate(STRATEGY_ORDER):
            what = {"short": "the lock covers only the choice: two agents choose the same free counter while "
                             "the first still guides, both seat (a double assignment)",
                    "long": "the lock covers choose + guide + assign: one assignment at a time store-wide",
                    "claim": "claim, guide, finalize: a claimed counter is no one else's; agents work in "
                             "parallel"}[strategy]
            self._say(i + 1, f"{labels[strategy].capitalize()}: {o.counters_agents} staff agents "
                             f"({STAFF_PER_AGENT} staff each) on {BOARD_COUNTERS} counters; {what}.",
                      "Counters tab: red counters are double assigned; the figures under the headline are "
                      "the store's counts.")
            names = [self._start(f"{strategy}-{k}", self.url, role="staff", strategy=strategy, seed=k,
                                 extra=("--staff", str(STAFF_PER_AGENT), "--counters", str(BOARD_COUNTERS)))
                     for k in range(1, o.counters_agents + 1)]
            await self._registered(names)
            await claims.refresh()
            base = claims.counts()
            t0 = time.monotonic()
            deadline = t0 + o.wait_s
            while True:
                await asyncio.sleep(POLL_S)
                self._check_alive(names)
                await claims.refresh()
                c = claims.counts()
                elapsed = time.monotonic() - t0
                seated = (c.assigned + c.finalized) - (base.assigned + base.finalized)
                doubles = c.double_assignments - base.double_assignments
                rows[strategy] = {"doubles": doubles, "seated": seated, "per_s": seated / elapsed if elapsed else 0.0}
                self._show(table())
                if elapsed >= o.counters_window_s and (strategy != "short" or doubles > 0):
                    break
                if time.monotonic() > deadline:
                    raise _Failed(f"no double assignment with the short lock within {o.wait_s:g} s")
            rows[strategy]["done"] = 1
            self._show(table())
            await self._stop_agents(names)
        self.result.update({s: dict(r) for s, r in rows.items()})
        self._say(4, "The three compared, from the store's counts.",
                  "Counters tab: the board; here: doubles and seated per second of each strategy.")
        self._show(table())
        short, long_, claim = (rows[s] for s in STRATEGY_ORDER)
        if long_["doubles"] or claim["doubles"]:
            raise _Failed(f"double assignments with long lock ({long_['doubles']}) or claim ({claim['doubles']})")
        faster = "more" if claim["per_s"] > long_["per_s"] else "not more, this time,"
        self._prove(f"short lock {short['doubles']:.0f} doubles; long lock 0; claim 0, {faster} seated per second "
                    f"than long ({claim['per_s']:.1f}/s vs {long_['per_s']:.1f}/s)")


def _held_by(lane: dict, *names: str) -> bool:
    """Whether a lane row of a dump is held by a session named one of ``names``
    (a session id ends with ``:NAME``)."""
    session = lane.get("session") or ""
    return any(session.endswith(f":{n}") for n in names)


def _runs_in(pairs: Iterable[tuple[str, int, int]]) -> int:
    """How many runs (job ids) take part in ``pairs`` of overlapping runs: what the Lanes tab's
    top line counts as "overlapping runs"."""
    return len({jid for _ws, a, b in pairs for jid in (a, b)})


def _agent_of(lane: dict) -> str:
    """The name of the session holding a lane row of a dump (a session id ends with ``:NAME``)."""
    return (lane.get("session") or "").rsplit(":", 1)[-1] or str(lane.get("owner"))
