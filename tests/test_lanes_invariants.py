"""The invariant checker keeps every check on for every job (issue 13, item 6).

A job whose final record could not be written (an ``unsaved`` final) excuses
itself only: the release-after-final-save check stays on for every other job.
(Before issue 20's rework the checker turned that check off for all jobs once
the scheduler had counted one unsaved final.)
"""

from __future__ import annotations

import pytest

from lanemon.lanes import GatedWork, InvariantChecker, Scheduler, State

pytestmark = pytest.mark.asyncio


async def _one_unsaved_final(s: Scheduler) -> int:
    """A real job whose final save and its three attempts to record the
    failure all fail: it ends failed, ``unsaved``, counted."""
    w = GatedWork()
    jid = await s.submit("reservations", "A", w)
    for _ in range(4):
        s.fail_next_save(id=jid, terminal=True, error="disk full")
    await w.started.wait()
    w.open()
    await s.join()
    assert s.store.get(jid).state is State.RUNNING and s.counts().unsaved_finals == 1
    return jid


async def test_an_unsaved_final_does_not_turn_off_the_release_check_for_other_jobs():
    s = Scheduler()
    chk = InvariantChecker(s)
    await _one_unsaved_final(s)
    assert chk.check() == []  # the unsaved job itself is honest: said, ended failed
    # A faulty scheduler (played through its event hub) releases job 99's lanes
    # with no terminal record written for it.
    emit = s.events.emit
    emit("saved", "B", "cafe", 99, State.QUEUED)
    emit("started", "B", "cafe", 99, None, 1_000)
    emit("finished", "B", "cafe", 99, State.SUCCEEDED, True)
    assert chk.violations == ["job 99: lanes released before its final record was saved"]


async def test_a_job_whose_final_save_succeeded_is_checked_against_what_was_written():
    s = Scheduler()
    chk = InvariantChecker(s)
    await _one_unsaved_final(s)
    emit = s.events.emit
    # job 98 wrote "failed" but says it finished "succeeded"
    emit("saved", "C", "cafe", 98, State.QUEUED)
    emit("saved", "C", "cafe", 98, State.FAILED)
    emit("finished", "C", "cafe", 98, State.SUCCEEDED, False)
    assert chk.violations == ["job 98: finished succeeded but its record says failed"]
