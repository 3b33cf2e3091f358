"""The lanes' job lifecycle makes no reference cycle, and ``gc_pace.bulk`` keeps a burst's
objects out of the collector's full passes without keeping them alive.

Why it matters: a burst's objects are frozen (``lanemon.gc_pace``); a cycle through a
frozen object would never be collected. So every way a job ends (succeeded, its work
failed, its final save failed, cancelled, stopped, behind a held save, beside a workspace
busy outside) is run with the collector held, and a collection afterwards must find no
garbage at all.
"""

from __future__ import annotations

import asyncio
import gc
import random
import weakref

import pytest
from lanes_works import Steps

from lanemon import gc_pace
from lanemon.lanes import Scheduler


@pytest.fixture
def held_collector():
    # garbage made before the test is not the test's: collect until a pass finds none (an
    # earlier window test's qasync loop is a cycle, and only once it is collected does the
    # class qasync made for it, `_make_signaller`'s, become garbage in turn)
    while gc.collect():
        pass
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()


@pytest.mark.parametrize("seed", range(6))
def test_no_job_ending_leaves_a_reference_cycle(held_collector, seed):
    rng = random.Random(seed)

    async def main() -> dict:
        s = Scheduler()
        ids: list[int] = []
        cancels = []
        for _ in range(600):
            ws = f"ws-{rng.randrange(20):02d}"
            ids.append(await s.submit(rng.choice(["reservations", "cafe"]), ws,
                                      Steps(rng.randrange(4), rng.random() < 0.15)))
            roll = rng.random()
            if roll < 0.04:
                hold = s.hold_save(state=rng.choice(["succeeded", "running"]))
                asyncio.get_running_loop().call_later(0.002, hold.release)
            elif roll < 0.08:
                s.fail_next_save(state=rng.choice(["succeeded", "running", "failed"]))
            elif roll < 0.12:
                cancels.append(asyncio.ensure_future(s.cancel(rng.choice(ids))))
            elif roll < 0.15:
                s.request_stop(ws)
            elif roll < 0.17:
                s.mark_busy(ws, "outside")
                asyncio.get_running_loop().call_later(0.001, s.clear_busy, ws)
            if rng.random() < 0.2:
                await asyncio.sleep(0)
        for _ in range(5000):
            if not s.stats()["live"]:
                break
            await asyncio.sleep(0.001)
        await asyncio.gather(*cancels)
        stats = s.stats()
        # (collected while the scheduler and the loop live: their own structures are not jobs)
        found = gc.collect()
        kinds = sorted({type(o).__name__ for o in gc.garbage})
        await s.aclose("test over")
        return stats, found, kinds

    stats, found, kinds = asyncio.run(main())
    assert stats["live"] == 0 and stats["records"] == 600, stats
    assert found == 0, f"{found} objects in reference cycles: {kinds}"


def test_a_bulk_freezes_what_it_made_and_frees_it_when_it_dies():
    class Thing:
        pass

    gc.enable()
    before = gc.get_freeze_count()
    try:
        with gc_pace.bulk() as outer:
            assert not gc.isenabled()
            kept = [Thing() for _ in range(1000)]
            outer.chunk_done()
            with gc_pace.bulk():              # nested: the outer one holds and restores
                more = [Thing() for _ in range(1000)]
            assert not gc.isenabled()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + 2000
        dead = []
        probe = weakref.ref(kept[0], lambda _ref: dead.append(True))
        del kept, more                        # frozen objects die by their reference counts
        assert dead == [True] and probe() is None
    finally:
        gc.unfreeze()


def test_no_full_pass_while_a_burst_is_paced(monkeypatch):
    """While a burst's jobs live (here ``LIVE_MIN`` lowered to 100 and a 600-job burst of
    50 ms runs over 60 workspaces), the collector's automatic passes are held and only the
    pacer's young passes run: a callback on ``gc.callbacks`` sees no generation 1 or 2 pass
    although the test makes up to 300,000 containers once the burst is submitted (with the automatic passes on,
    as before ``gc_pace.paced``, they trigger several). Once the jobs drained, the passes
    are back on."""
    import qasync
    from PySide6.QtWidgets import QApplication

    from lanemon.ui.lanes.view import LanesView

    monkeypatch.setattr(gc_pace, "LIVE_MIN", 100)
    app = QApplication.instance() or QApplication([])
    seen: list[tuple[int, int]] = []          # (generation, live jobs) of each pass
    view = LanesView(Scheduler())
    s = view.scheduler

    def on_gc(phase, info):
        if phase == "start":
            seen.append((info["generation"], s.live_jobs))

    async def main():
        c = view.controls
        c.length.setValue(0.05)
        c.burst_jobs.setValue(600)
        c.burst_ws.setValue(60)
        await view.add_burst()                # submitted (the bulk is over); the jobs run
        junk = []
        while s.live_jobs >= 100 and len(junk) < 60:   # containers made while the jobs live
            junk.append([[i] for i in range(5000)])
            await asyncio.sleep(0.001)
        await s.join()
        for _ in range(100):
            if view.pacer is None or not view.pacer.active:
                break
            await asyncio.sleep(0.01)
        return len(junk)

    was = gc.isenabled()
    gc.enable()
    gc.callbacks.append(on_gc)
    try:
        with qasync.QEventLoop(app) as loop:
            made = loop.run_until_complete(main())
        enabled_after = gc.isenabled()
    finally:
        gc.callbacks.remove(on_gc)
        gc.unfreeze()
        if not was:
            gc.disable()
    assert made >= 10 and view.pacer is not None and view.pacer.steps > 0
    while_live = [(g, live) for g, live in seen if live >= 100]
    assert while_live and all(g == 0 for g, _ in while_live), while_live
    assert enabled_after and not view.pacer.active


def test_the_pacer_shortens_its_step_after_long_passes(monkeypatch):
    """A young pass walks what was made since the last: after a pass longer than
    ``PASS_S`` the step halves, down to ``MIN_STEP_S`` (here every pass counts as long)."""
    monkeypatch.setattr(gc_pace, "PASS_S", -1.0)

    async def main():
        p = gc_pace.paced(lambda: 10_000)
        steps = []
        for _ in range(200):
            await asyncio.sleep(0.002)
            if not steps or steps[-1] != p.step_s:
                steps.append(p.step_s)
            if p.step_s == gc_pace.MIN_STEP_S:
                break
        p.close()
        return steps, p.active

    try:
        steps, active = asyncio.run(main())
    finally:
        gc.unfreeze()
    assert steps[0] == gc_pace.STEP_S and steps[-1] == gc_pace.MIN_STEP_S
    assert all(b == max(gc_pace.MIN_STEP_S, a / 2) for a, b in zip(steps, steps[1:]))
    assert not active and gc.isenabled()
