"""RunController without the window: its history stays bounded, its refusals are said.

The heartbeat is a real one that is not started: runs then end without waiting
for a tick, and their lag figures are empty (these tests are about the records,
not the figures). Worker runs use the thread kind: no process is started.
"""

from __future__ import annotations

import asyncio

import pytest

from lanemon.ui.heartbeat.timer import Heartbeat
from lanemon.ui.runs.controller import MAX_RECORDS, RunController
from lanemon.ui.runs.model import RunsTableModel
from lanemon.work import hash_range


async def _done(rec, timeout_s: float = 30.0):
    assert rec is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while rec.running:
        assert loop.time() < deadline, "the run did not end"
        await asyncio.sleep(0.005)
    assert rec.status == "done", rec.error
    return rec


def test_the_default_history_bound_is_a_named_constant(qapp):
    assert RunController(Heartbeat()).max_records == MAX_RECORDS == 500
    with pytest.raises(ValueError):
        RunController(Heartbeat(), max_records=0)


def test_the_history_is_bounded_and_the_table_and_report_keep_working(qapp):
    """Regression: ``records`` grew by one per run for as long as the window was open."""
    total = 3_000
    c = RunController(Heartbeat(), max_records=5)
    c.machine.cold_startup_ms = 5.0          # the report needs this machine's start-up figure
    model = RunsTableModel(c.records)
    records = c.records

    async def main():
        first_whole = await _done(c.start_whole(total))
        sizes = []
        for i in range(12):                  # far more runs than the bound
            await _done(c.start_sliced(total + (i % 2), slice_size=500))
            sizes.append(len(c.records))
            model.refresh()
        await _done(c.start_sliced(total, slice_size=1_000))
        worker = await _done(c.start_worker(total, "thread"))
        model.refresh()
        return first_whole, worker, sizes

    first_whole, worker, sizes = asyncio.run(main())
    assert c.records is records                            # the table's list, trimmed in place
    assert max(sizes) <= 5 and len(c.records) == 5
    assert c.dropped == 15 - 5
    ids = [r.id for r in c.records]
    assert ids == sorted(ids) and ids[-1] == 15            # the newest kept, in order
    assert first_whole in c.records                        # the latest whole run is kept however old
    assert model.rowCount() == 5
    assert [model.record(i) for i in range(5)] == list(reversed(c.records))
    report = c.report()                                    # whole, the latest sliced and worker of one size
    assert report["total"] == total
    assert {r["result"] for r in report["runs"].values()} == {hash_range(0, total)}
    assert report["runs"]["worker"]["workMs"] == round(worker.work_ms, 3)


def test_a_start_refused_because_the_controller_is_closing_is_said(qapp):
    c = RunController(Heartbeat())
    said = []
    c.said.connect(lambda text, error: said.append((text, error)))

    async def main():
        await c.shutdown()
        return c.start_worker(1_000, "thread"), c.start_whole(1_000)

    assert asyncio.run(main()) == (None, None)
    assert c.records == []
    assert len(said) == 2 and all("closing" in text and error for text, error in said)


def test_a_whole_run_counts_from_when_it_blocks_the_others_from_their_start(qapp):
    """What the window records of each kind through the one dispatch (unchanged by it): a whole
    run's time starts after its announcement painted (``t_start`` moves to when it blocks); a
    sliced or worker run's ``t_start`` stays when it was started; ``work_ms`` spans t_start..t_end."""
    c = RunController(Heartbeat())

    async def main():
        out = []
        for start in (lambda: c.start_whole(20_000), lambda: c.start_sliced(20_000, slice_size=3_000),
                      lambda: c.start_worker(20_000, "thread")):
            rec = start()
            started = rec.t_start
            out.append((await _done(rec), started))
        return out

    (whole, whole_started), (sliced, sliced_started), (worker, worker_started) = asyncio.run(main())
    assert whole.t_start > whole_started
    assert (sliced.t_start, worker.t_start) == (sliced_started, worker_started)
    for rec in (whole, sliced, worker):
        assert rec.result == hash_range(0, 20_000) and rec.t_end > rec.t_start
        assert rec.work_ms == (rec.t_end - rec.t_start) * 1000.0
    assert (whole.slices, sliced.slices, worker.slices) == (None, 7, None)
    assert [rec.how for rec in (whole, sliced, worker)] == [
        "one piece, on the loop", "slices of 3,000", "thread worker"]


def test_a_whole_run_announced_before_the_close_never_blocks(qapp, monkeypatch):
    """Regression: a signal that arrived while a whole run waited for its banner to paint was
    spent (on the start-up calibration, say) and the run then blocked the loop for its whole
    length, with no later signal able to stop it. ``refuse_new_runs()`` is what the signal
    handler calls: the run ends cancelled before it blocks."""
    from lanemon.work import runs

    computed = []
    monkeypatch.setattr(runs, "hash_range", lambda lo, hi: computed.append(hi) or 0)
    c = RunController(Heartbeat())

    async def main():
        rec = c.start_whole(2_000_000_000)
        assert rec is not None
        await asyncio.sleep(0)                       # the run's task takes its first step
        assert c.banner                              # announced, in its paint pause
        c.refuse_new_runs()                          # the signal handler's call
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while rec.running:
            assert loop.time() < deadline, "the run did not end"
            await asyncio.sleep(0.005)
        return rec

    rec = asyncio.run(main())
    assert rec.status == "cancelled"
    assert computed == []                            # it never blocked the loop
    assert c.start_whole(1_000) is None              # and nothing new starts
