"""Conformance of every store engine to the lanes and records seam.

``ENGINES`` lists engine factories (only the in-memory engine today; the next
issue adds SQLite and PostgreSQL).  Each test states one semantic of
:mod:`lanemon.store.lanes` / :mod:`lanemon.store.records` and runs against
every engine, through the operations' awaitable forms and their now forms.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import pytest_asyncio
from engines import LanesOverMemory, open_test_store

import lanemon
from lanemon.lanes import (
    EventHub,
    GatedWork,
    InvalidTransition,
    InvariantChecker,
    Reservation,
    Scheduler,
    SimulatedWork,
    StaleWrite,
    State,
)
from lanemon.store.lanes import LaneStore, WouldBlock
from lanemon.store.memory import MemoryRecords, memory_lanes
from lanemon.store.records import ReservationStore

pytestmark = pytest.mark.asyncio


class Engine(NamedTuple):
    lanes: Callable[..., Any]    # a LanesFactory
    records: Callable[..., Any]  # a RecordsFactory


def memory_engine() -> Engine:
    return Engine(memory_lanes, MemoryRecords)


ENGINES = ["memory", "sqlite", "postgresql"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _lanes(engine: Engine, name: str = "t", emit=None):
    return engine.lanes(name, clock=Clock(), emit=emit)


def _records(engine: Engine, events: EventHub | None = None, keep_finished: int | None = None):
    return engine.records(events=events or EventHub(), keep_finished=keep_finished)


async def claim(lanes, ws: str, owner: str, awaited: bool):
    return await lanes.aclaim(ws, owner) if awaited else lanes.claim(ws, owner)


async def release(lanes, token, awaited: bool) -> bool:
    return await lanes.arelease(token) if awaited else lanes.release(token)


async def save_now_or_awaited(store, record: Reservation, fence=()) -> None:
    """The immediate save, or the awaitable one where the engine cannot answer now
    (``save_nowait`` returned False having done nothing)."""
    if not store.save_nowait(record, fence=fence):
        await store.save(record, fence=fence)


def _rec(id: int, state: State = State.QUEUED, ws: str = "A", **changes) -> Reservation:
    return Reservation(id=id, workspace=ws, queue="reservations", state=state,
                       created_at=1.0, updated_at=1.0, **changes)


@pytest_asyncio.fixture(params=ENGINES)
async def engine(request):
    """Each engine, on a fresh store (SQLite: a file in the test's folder;
    PostgreSQL: a fresh database of the throwaway cluster)."""
    if request.param == "memory":
        yield memory_engine()
        return
    if request.param == "postgresql" and getattr(request.node, "callspec", None) is not None \
            and request.node.callspec.params.get("awaited") is False:
        pytest.skip("PostgreSQL answers no operation now (the immediate forms raise WouldBlock: "
                    "tests/test_store_postgres.py)")
    store = await open_test_store(request, request.param)
    try:
        yield Engine(store.lanes, store.records)
    finally:
        await store.close()


@pytest.fixture(params=[False, True], ids=["now", "awaited"])
def awaited(request) -> bool:
    return request.param


async def test_engines_implement_the_protocols(engine):
    assert isinstance(_lanes(engine), LaneStore)
    assert isinstance(_records(engine), ReservationStore)


async def test_a_claim_is_exclusive_per_workspace(engine, awaited):
    lanes = _lanes(engine)
    a = await claim(lanes, "A", "q#1", awaited)
    assert a is not None and (a.workspace, a.owner) == ("A", "q#1")
    assert await claim(lanes, "A", "q#2", awaited) is None  # held: refused, not queued
    assert lanes.holder("A") == a and "A" in lanes and not lanes.is_free("A")
    b = await claim(lanes, "B", "q#3", awaited)
    assert b is not None and len(lanes) == 2  # other workspaces are independent
    assert await release(lanes, a, awaited) is True
    assert lanes.is_free("A") and lanes.holder("A") is None
    c = await claim(lanes, "A", "q#2", awaited)
    assert c is not None and lanes.holder("A") == c
    assert sorted(lanes) == ["A", "B"] and [v.owner for v in lanes.views()] == ["q#2", "q#3"]


async def test_the_epoch_comes_from_the_engine_and_strictly_increases(engine, awaited):
    lanes = _lanes(engine)
    assert lanes.epoch == 0
    seen = []
    for i in range(6):
        ws = "AB"[i % 2]
        t = await claim(lanes, ws, f"q#{i}", awaited)
        seen.append(t.epoch)
        assert lanes.epoch == t.epoch
        if i % 3 == 2:
            await lanes.arevoke(ws) if awaited else lanes.revoke(ws)
        else:
            await release(lanes, t, awaited)
    assert all(b > a for a, b in zip(seen, seen[1:])) and seen[0] > 0
    # a refused claim hands out no epoch
    held = await claim(lanes, "C", "q#9", awaited)
    assert await claim(lanes, "C", "q#10", awaited) is None and lanes.epoch == held.epoch


async def test_a_stale_or_repeated_release_changes_nothing_and_never_raises(engine, awaited):
    lanes = _lanes(engine)
    other = _lanes(engine, "other")
    old = await claim(lanes, "A", "q#1", awaited)
    assert await release(lanes, old, awaited) is True
    new = await claim(lanes, "A", "q#2", awaited)
    foreign = await claim(other, "A", "q#3", awaited)
    before = lanes.views()
    for token in (old, old, foreign, "not a token", object()):
        assert await release(lanes, token, awaited) is False
    assert await release(lanes, None, awaited) is False  # nothing was claimed: not counted
    assert lanes.holder("A") == new and lanes.views() == before
    assert lanes.stale_releases == 5
    # a revoked owner's late release does not clear the next owner's lane
    assert (await lanes.arevoke("A") if awaited else lanes.revoke("A")) == new
    newest = await claim(lanes, "A", "q#4", awaited)
    assert await release(lanes, new, awaited) is False and lanes.holder("A") == newest
    assert lanes.revoked == 1 and lanes.stale_releases == 6


async def test_a_stop_request_belongs_to_one_ownership(engine, awaited):
    lanes = _lanes(engine)
    assert (await lanes.arequest_stop("A") if awaited else lanes.request_stop("A")) is False
    t = await claim(lanes, "A", "q#1", awaited)
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    lanes.add_stop_waiter(t, fut)
    assert not lanes.stop_requested(t) and not fut.done()
    assert (await lanes.arequest_stop("A", "why") if awaited
            else lanes.request_stop("A", "why")) is True
    assert lanes.stop_requested(t) and fut.done()
    assert lanes.views()[0].stop_requested and lanes.views()[0].stop_reason == "why"
    await release(lanes, t, awaited)
    t2 = await claim(lanes, "A", "q#2", awaited)
    assert not lanes.stop_requested(t2)  # never leaks into the next owner
    assert lanes.stop_requested(t)      # an owner that lost its lane must stop


async def test_a_fenced_write_is_refused_after_revoke_and_counted(engine, awaited):
    lanes = _lanes(engine)
    events = EventHub()
    seen = []
    events.subscribe(seen.append)
    store = _records(engine, events)
    await store.save(_rec(1))
    t = await claim(lanes, "A", "q#1", awaited)
    await lanes.arevoke("A") if awaited else lanes.revoke("A")
    running = _rec(1, State.RUNNING, run_id="run-1", epoch=t.epoch)
    with pytest.raises(StaleWrite):
        await store.save(running, fence=(t,))
    with pytest.raises(StaleWrite):
        await save_now_or_awaited(store, running, fence=(t,))
    assert store.stale_writes == 2
    assert (await store.load(1)).state is State.QUEUED and store.get(1).state is State.QUEUED
    assert [ev.kind for ev in seen] == ["saved", "stale_write", "stale_write"]
    # a current token lets the same write through
    t2 = await claim(lanes, "A", "q#2", awaited)
    await store.save(running._replace(epoch=t2.epoch), fence=(t2,))
    assert store.get(1).state is State.RUNNING and store.stale_writes == 2


async def test_terminal_records_are_never_overwritten(engine):
    store = _records(engine)
    with pytest.raises(InvalidTransition):
        await store.save(_rec(1, State.RUNNING))  # a new record must be queued
    assert await store.load(1) is None
    await store.save(_rec(1))
    await store.save(_rec(1, State.RUNNING))
    await store.save(_rec(1, State.SUCCEEDED, error=None))
    for state in (State.FAILED, State.CANCELLED, State.RUNNING, State.QUEUED, State.SUCCEEDED):
        with pytest.raises(InvalidTransition):
            await store.save(_rec(1, state, error="late"))
    assert store.get(1) == _rec(1, State.SUCCEEDED) and store.invalid_transitions == 6
    await store.save(_rec(2))
    await store.save(_rec(2, State.CANCELLED))  # queued -> cancelled is terminal too
    with pytest.raises(InvalidTransition):
        await save_now_or_awaited(store, _rec(2, State.RUNNING))
    assert store.get(2).state is State.CANCELLED


async def test_the_final_save_is_fenced(engine, awaited):
    lanes = _lanes(engine)
    store = _records(engine)
    await store.save(_rec(1))
    t = await claim(lanes, "A", "q#1", awaited)
    await store.save(_rec(1, State.RUNNING, epoch=t.epoch), fence=(t,))
    await lanes.arevoke("A") if awaited else lanes.revoke("A")
    with pytest.raises(StaleWrite):
        await store.save(_rec(1, State.SUCCEEDED, epoch=t.epoch), fence=(t,))
    assert store.get(1).state is State.RUNNING and store.stale_writes == 1
    # the same final save by the current owner goes through, once
    await store.save(_rec(2))
    t2 = await claim(lanes, "B", "q#2", awaited)
    await store.save(_rec(2, State.RUNNING, ws="B"), fence=(t2,))
    await store.save(_rec(2, State.FAILED, ws="B", error="x"), fence=(t2,))
    assert store.get(2).state is State.FAILED


async def test_a_scheduler_keeps_its_state_in_the_engine_it_is_given(engine):
    """The scheduler makes every lane store through the given factory and
    writes every record to the given store (the seam is the only way in)."""
    made = []

    def lanes(name, *, clock, emit):
        made.append(name)
        return engine.lanes(name, clock=clock, emit=emit)

    events = EventHub()
    store = _records(engine, events)
    s = Scheduler(lanes=lanes, store=store, events=events)
    assert made == ["scheduled", "reservations", "cafe"]
    assert s.store is store
    chk = InvariantChecker(s)
    a = await s.submit("reservations", "A", SimulatedWork(0))
    b = await s.submit("cafe", "A", SimulatedWork(0))
    await s.join()
    assert chk.check() == []
    assert store.get(a).state is State.SUCCEEDED and store.get(b).state is State.SUCCEEDED
    assert store.get(b).epoch > store.get(a).epoch  # the engine's epochs, fencing both runs
    await s.aclose()


# -- the memory engine ----------------------------------------------------------------

def _done_without_suspending(coro) -> Any:
    """Run ``coro`` one step: it must finish there (no await that suspends)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise AssertionError("the memory engine suspended")


async def test_the_memory_engine_completes_every_operation_without_suspending():
    lanes = memory_lanes("m", clock=Clock(), emit=None)
    store = MemoryRecords(events=EventHub())
    t = _done_without_suspending(lanes.aclaim("A", "q#1"))
    assert t is not None and lanes.holder("A") == t
    assert _done_without_suspending(lanes.arequest_stop("A")) is True
    assert _done_without_suspending(lanes.arelease(t)) is True
    t = _done_without_suspending(lanes.aclaim("A", "q#2"))
    assert _done_without_suspending(lanes.arevoke("A")) == t
    assert _done_without_suspending(store.save(_rec(1))) == _rec(1)
    assert _done_without_suspending(store.load(1)) == _rec(1)


# -- an engine whose operations must wait -------------------------------------------

class WaitingLanes(LanesOverMemory):
    """Memory lanes whose release and stop request cannot complete now (they
    raise WouldBlock) and complete, after a loop turn, through their awaitable
    forms: the scheduler's fallback to the awaitable form, exercised."""

    def __init__(self, name: str, *, clock, emit) -> None:
        super().__init__(name, clock=clock, emit=emit)
        self.awaited: list[str] = []

    def release(self, token):
        raise WouldBlock

    def request_stop(self, workspace, reason=None):
        raise WouldBlock

    async def arelease(self, token):
        await asyncio.sleep(0)
        self.awaited.append("release")
        return self.inner.release(token)

    async def arequest_stop(self, workspace, reason=None):
        await asyncio.sleep(0)
        self.awaited.append("request_stop")
        return self.inner.request_stop(workspace, reason)


async def test_the_scheduler_awaits_an_engine_that_cannot_release_now():
    made: list[WaitingLanes] = []

    def lanes(name, *, clock, emit):
        made.append(WaitingLanes(name, clock=clock, emit=emit))
        return made[-1]

    s = Scheduler(lanes=lanes)
    chk = InvariantChecker(s)
    ids = [await s.submit("reservations" if i % 2 else "cafe", f"ws{i % 3}", SimulatedWork(0))
           for i in range(12)]
    await s.join()
    assert chk.check() == [] and chk.max_active == 1
    assert all(s.store.get(i).state is State.SUCCEEDED for i in ids)
    assert sum(m.awaited.count("release") for m in made) == 2 * len(ids)
    # a cancel of a running job asks its lanes to stop through the awaitable form
    gate = GatedWork()
    jid = await s.submit("cafe", "ws0", gate)
    while s.job(jid).phase != "running":
        await asyncio.sleep(0)
    assert await s.cancel(jid) == "stop_requested"
    gate.open()
    await s.join()
    assert s.store.get(jid).state in (State.CANCELLED, State.SUCCEEDED)
    assert sum(m.awaited.count("request_stop") for m in made) == 2
    assert chk.check() == []
    await s.aclose()


async def test_the_scheduler_names_only_the_seam_never_the_memory_classes():
    src = Path(lanemon.__file__).parent / "lanes" / "queues.py"
    tree = ast.parse(src.read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
              for a in n.names}
    assert not names & {"ProjectLanes", "RecordStore"}
    # the memory engine is only the default, imported when none is given
    top_level = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert "lanemon.store.memory" not in top_level


async def test_a_stop_from_the_window_reaches_an_engine_that_cannot_answer_now():
    """``Scheduler.request_stop`` (the window's Stop, synchronous) on an engine
    whose stop request must be awaited: it answers True at once for a held
    lane, the request lands through ``arequest_stop`` and the run stops."""
    made: list[WaitingLanes] = []

    def lanes(name, *, clock, emit):
        made.append(WaitingLanes(name, clock=clock, emit=emit))
        return made[-1]

    s = Scheduler(lanes=lanes)
    gate = GatedWork()
    jid = await s.submit("cafe", "ws0", gate)
    while s.job(jid).phase != "running":
        await asyncio.sleep(0)
    assert s.request_stop("nobody") is False
    assert s.request_stop("ws0", "from the window") is True
    while not any("request_stop" in m.awaited for m in made):
        await asyncio.sleep(0)
    assert made[0].name == "scheduled" and made[0].inner.views()[0].stop_reason == "from the window"
    gate.open()
    await s.join()
    assert s.store.get(jid).state in (State.CANCELLED, State.SUCCEEDED, State.FAILED)
    await s.aclose()
