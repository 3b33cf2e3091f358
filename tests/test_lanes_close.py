"""Scheduler.aclose(): prompt whatever is held or running, and honest at the end.

Each test runs ``aclose()`` as a task and drives the loop a bounded number of
steps (no wall-clock time): "it returned" is a condition, never a duration.
At the end every job's ``finished`` event must agree with its stored record,
or the job must have been announced ``unsaved`` and end ``failed`` - never a
``succeeded`` over a record that stays ``running``.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from test_lanes_queues import Clock

from lanemon.lanes import (
    GatedWork,
    InvariantChecker,
    Scheduler,
    SchedulerClosed,
    SimulatedWork,
    State,
)

pytestmark = pytest.mark.asyncio

STEPS = 2000  # loop steps a prompt aclose() needs at most here (it needs a few dozen)


def make(**kw) -> tuple[Scheduler, InvariantChecker, list]:
    s = Scheduler(clock=Clock(), **kw)
    events: list = []
    s.subscribe(events.append)
    return s, InvariantChecker(s), events


async def settle(n: int = 50) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def drive(task: asyncio.Task, steps: int = STEPS) -> bool:
    """Let the loop run until ``task`` is done, at most ``steps`` zero-sleeps."""
    for _ in range(steps):
        if task.done():
            return True
        await asyncio.sleep(0)
    return task.done()


def of(events, kind: str, jid: int) -> list:
    return [ev for ev in events if ev.kind == kind and ev.job_id == jid]


def assert_honest(s: Scheduler, events: list, jids) -> None:
    """Each job finished once; its finished state is its stored record's state,
    unless an ``unsaved`` event said why not, and then it is ``failed``; a
    started job's final record was saved before its lanes were released."""
    for jid in jids:
        fin = of(events, "finished", jid)
        assert len(fin) == 1, (jid, fin)
        rec = s.store.get(jid)
        unsaved = of(events, "unsaved", jid)
        if unsaved:
            assert fin[0].state == "failed", (jid, fin[0].state, rec.state)
            assert rec.state not in (State.SUCCEEDED, State.FAILED, State.CANCELLED)
            assert events.index(unsaved[0]) < events.index(fin[0])
        else:
            assert fin[0].state == rec.state, (jid, fin[0].state, rec.state)
            final = [ev for ev in of(events, "saved", jid) if ev.state == rec.state]
            assert final and events.index(final[0]) < events.index(fin[0])


async def test_aclose_returns_with_held_saves_and_a_long_job_and_says_how_each_ended():
    """The issue's hang: a held final save and a long running job; aclose()
    waited forever on the hold. Now every hold is released, the held save
    completes with its real outcome, running work ends cancelled with the
    reason, queued jobs are cancelled, and lanes go only after final saves."""
    s, chk, events = make()
    done_work = GatedWork()
    a = await s.submit("reservations", "A", done_work)          # work ends, save held
    s.hold_save(id=a, terminal=True)
    long = await s.submit("cafe", "B", SimulatedWork(60.0))      # the 60 s job
    s.hold_save(id=long, terminal=True)                          # its save held too
    behind = await s.submit("cafe", "A")                         # waits behind A's save
    s.hold_save(state="running", workspace="C")
    starting = await s.submit("reservations", "C", GatedWork())  # stuck in its running save
    await done_work.started.wait()
    done_work.open()
    await settle()
    assert s.job(a).save_held and s.job(a).phase == "saving"
    assert s.job(long).phase == "running" and s.job(starting).phase == "starting"
    assert s.job(behind).phase == "waiting"

    closing = asyncio.ensure_future(s.aclose())
    assert await drive(closing), "aclose() did not return"
    closing.result()

    assert s.store.get(a).state is State.SUCCEEDED        # the held save went through
    rec = s.store.get(long)
    assert rec.state is State.CANCELLED and rec.error == "task cancelled (scheduler closed)"
    rec = s.store.get(behind)
    assert rec.state is State.CANCELLED and rec.error == "cancelled while queued (scheduler closed)"
    rec = s.store.get(starting)
    assert rec.state is State.CANCELLED and rec.error == "task cancelled before it ran"
    assert_honest(s, events, (a, long, behind, starting))
    assert not [ev for ev in events if ev.kind == "unsaved"]
    assert s.idle_clean() == [] and s.store.holds() == () and s.snapshot().holds == ()
    assert chk.check() == [] and s.counts().unsaved_finals == 0
    # closed: no new job; a new hold holds nothing
    with pytest.raises(SchedulerClosed):
        await s.submit("cafe", "D")
    assert s.hold_save(id=999).released and s.store.holds() == ()
    await s.aclose()  # again: harmless


async def test_a_final_save_interrupted_at_close_is_recorded_as_unsaved_never_as_success():
    """A store that never answers a final save (a before_write hook that never
    returns) keeps aclose() waiting; its caller gives up (cancels it). The job's
    work had succeeded, but its record stays ``running``: it must end
    ``failed`` with the reason, announced ``unsaved`` - not ``succeeded``."""
    s, chk, events = make()
    never = asyncio.Event()
    stuck = asyncio.Event()

    async def before_write(rec) -> None:
        if rec.workspace == "A" and rec.state is State.SUCCEEDED:
            stuck.set()
            await never.wait()

    s.store.before_write = before_write
    w = GatedWork()
    a = await s.submit("reservations", "A", w)
    b = await s.submit("cafe", "B", GatedWork())
    await w.started.wait()
    w.open()
    await stuck.wait()
    closing = asyncio.ensure_future(s.aclose())
    await drive(closing, 200)
    if not closing.done():  # it waits on the store, as documented: give up
        closing.cancel()
    assert await drive(closing), "aclose() did not end after it was cancelled"

    fin = of(events, "finished", a)
    assert [ev.state for ev in fin] == ["failed"]
    assert s.store.get(a).state is State.RUNNING
    view = s.job(a)
    assert view.state == "running" and view.outcome == "failed" and view.phase == "done"
    assert view.error.startswith("final record not saved:") and "outcome was succeeded" in view.error
    assert [ev.detail for ev in of(events, "unsaved", a)] == [view.error]
    assert s.counts().unsaved_finals == 1
    assert_honest(s, events, (a, b))
    assert chk.check() == []


async def test_saves_failing_during_close_do_not_hang_and_are_recorded():
    """The cancellation of a queued job and every attempt at a running job's
    final save fail while closing: aclose() still returns, no job is left
    live, and the records that could not be written are said."""
    s, chk, events = make()
    w = GatedWork()
    a = await s.submit("reservations", "A", w)
    queued = await s.submit("cafe", "A")
    await w.started.wait()
    s.fail_next_save(id=queued, state="cancelled", error="disk full")
    for _ in range(4):  # the final save and its three attempts to record the failure
        s.fail_next_save(id=a, terminal=True, error="disk full")
    closing = asyncio.ensure_future(s.aclose())
    assert await drive(closing), "aclose() did not return"
    closing.result()

    assert s.idle_clean() == []
    assert s.store.get(queued).state is State.QUEUED
    assert s.store.get(a).state is State.RUNNING
    for jid in (queued, a):
        view = s.job(jid)
        assert view.phase == "done" and view.outcome == "failed"
        assert view.error.startswith("final record not saved:") and "disk full" in view.error
    assert s.counts().unsaved_finals == 2
    assert_honest(s, events, (a, queued))
    assert chk.check() == []


async def test_a_failing_project_available_breaks_no_release_and_is_said():
    """A predicate that raises counts as "not available" for that look: the
    finishing job still ends cleanly (join() returns), the error is counted and
    announced, and a later kick() starts the waiting job."""
    fail = {"on": False}

    def available(ws: str) -> bool:
        if fail["on"]:
            fail["on"] = False
            raise RuntimeError("registry down")
        return True

    s, chk, events = make(project_available=available)
    loop_errors: list = []
    asyncio.get_running_loop().set_exception_handler(lambda _l, ctx: loop_errors.append(ctx))
    w = GatedWork()
    a = await s.submit("reservations", "A", w)
    b = await s.submit("cafe", "A")
    await w.started.wait()
    fail["on"] = True
    w.open()
    await settle()
    assert s.job(a).phase == "done" and s.job(b).phase == "waiting"
    assert s.counts().available_errors == 1
    [ev] = [ev for ev in events if ev.kind == "available_failed"]
    assert ev.workspace == "A" and ev.job_id == b and "registry down" in ev.detail
    s.kick()
    joined = asyncio.ensure_future(s.join())
    assert await drive(joined)
    assert s.store.get(b).state is State.SUCCEEDED
    assert chk.check() == [] and loop_errors == []


async def test_a_submit_whose_queued_save_completes_during_close_is_cancelled():
    s, chk, events = make()
    hold = s.hold_save(state="queued")
    sub = asyncio.ensure_future(s.submit("cafe", "A"))
    await hold.wait_engaged()
    closing = asyncio.ensure_future(s.aclose())
    assert await drive(closing) and await drive(sub)
    jid = sub.result()
    rec = s.store.get(jid)
    assert rec.state is State.CANCELLED and "scheduler closed" in rec.error
    assert s.idle_clean() == [] and chk.check() == []
    assert_honest(s, events, (jid,))


async def test_close_at_seeded_random_moments_is_prompt_and_honest():
    """Many seeded programs of submits, holds (final, running, cancelled
    saves), cancels, failing saves and loop steps, each closed at a random
    moment (sometimes by a caller that gives up and closes again): aclose()
    returns within the step budget and every job's end agrees with its record
    (or was said unsaved and is failed)."""
    for seed in range(150):
        rng = random.Random(seed)
        s, chk, events = make()
        gates: list[GatedWork] = []
        subs: list[asyncio.Task] = []
        cancels: list[asyncio.Task] = []   # kept: a task nobody references can be collected
        for _ in range(rng.randrange(3, 15)):
            r = rng.random()
            ws = rng.choice("ABC")
            if r < 0.45:
                g = GatedWork()
                gates.append(g)
                subs.append(asyncio.ensure_future(
                    s.submit(rng.choice(("reservations", "cafe")), ws,
                             g if rng.random() < 0.6 else SimulatedWork(0))))
            elif r < 0.65:
                s.hold_save(**rng.choice([dict(terminal=True), dict(state="running"),
                                          dict(state="cancelled"), dict(workspace=ws)]))
            elif r < 0.72:
                s.fail_next_save(state=rng.choice(("running", "succeeded", "cancelled")))
            elif r < 0.82 and subs:
                t = rng.choice(subs)
                if t.done() and t.exception() is None:
                    cancels.append(asyncio.ensure_future(s.cancel(t.result())))
            elif r < 0.9 and gates:
                rng.choice(gates).open()
            else:
                await settle(rng.randrange(1, 6))
        closing = asyncio.ensure_future(s.aclose())
        if rng.random() < 0.3:  # an impatient caller gives up after a few steps, then closes again
            await settle(rng.randrange(4))
            closing.cancel()
            assert await drive(closing), f"seed {seed}: aclose() did not end when cancelled"
            closing = asyncio.ensure_future(s.aclose())
        assert await drive(closing), f"seed {seed}: aclose() did not return"
        closing.result()
        await settle(5)
        jids = [t.result() for t in subs if t.done() and not t.cancelled() and t.exception() is None]
        assert s.idle_clean() == [], f"seed {seed}: {s.idle_clean()}"
        assert_honest(s, events, jids)
        assert chk.check() == [], f"seed {seed}: {chk.violations}"
