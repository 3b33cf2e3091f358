"""Workers: same answer in another process or thread; concurrency; failures."""

import asyncio
import os
import signal
import threading

import pytest
from procs import gone, release, until

from lanemon.work import (
    WorkerDied,
    hash_range,
    live_worker_pids,
    run_in_worker,
    shutdown_workers,
    spawn_cost_ms,
    start_method,
    warm_pool,
    warm_roundtrip_ms,
)
from lanemon.work.workers import worker_call

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def no_workers_left_behind():
    yield
    pids = live_worker_pids()
    shutdown_workers()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert live_worker_pids() == []


def test_start_method_is_explicit_and_never_fork():
    assert start_method() in ("forkserver", "spawn")


@pytest.mark.parametrize("kind", ["cold", "warm", "thread"])
@pytest.mark.parametrize("total", [0, 1, 12_345, 250_000])
def test_worker_result_equals_hash_range(kind, total):
    assert asyncio.run(run_in_worker(total, kind)) == hash_range(0, total)


@pytest.mark.parametrize("kind", ["cold", "warm", "thread"])
def test_two_concurrent_calls_both_work(kind):
    async def main():
        return await asyncio.gather(run_in_worker(100_000, kind), run_in_worker(200_000, kind))

    assert asyncio.run(main()) == [hash_range(0, 100_000), hash_range(0, 200_000)]


def test_more_concurrent_calls_than_warm_workers_queue_and_complete():
    async def main():
        pool = warm_pool()
        totals = [10_000 * (i + 1) for i in range(pool.size * 3)]
        results = await asyncio.gather(*(run_in_worker(t, "warm") for t in totals))
        return totals, results

    totals, results = asyncio.run(main())
    assert results == [hash_range(0, t) for t in totals]


def test_warm_pool_is_reused_no_new_process_on_the_second_call():
    async def main():
        pool = await warm_pool().astart()
        before = sorted(pool.pids())
        first = await worker_call("pid", "warm")
        await run_in_worker(50_000, "warm")
        second = await worker_call("pid", "warm")
        return before, first, second, sorted(pool.pids())

    before, first, second, after = asyncio.run(main())
    assert len(before) >= 2
    assert first in before and second in before
    assert after == before


def test_cold_worker_is_a_new_process_each_run():
    async def main():
        return [await worker_call("pid", "cold") for _ in range(2)]

    a, b = asyncio.run(main())
    assert a != b and os.getpid() not in (a, b)


@pytest.mark.parametrize("kind", ["cold", "warm"])
def test_worker_process_imports_neither_qt_nor_numpy(kind):
    import numpy  # noqa: F401
    import PySide6.QtCore  # noqa: F401  the parent has Qt loaded; the worker must not

    assert asyncio.run(worker_call("modules", kind)) == []


def test_killed_warm_worker_raises_and_the_pool_recovers():
    async def main():
        pool = warm_pool()
        job = asyncio.ensure_future(run_in_worker(10**10, "warm"))  # would run for minutes
        await _until(pool.busy_pids)
        victim = pool.busy_pids()[0]
        os.kill(victim, signal.SIGKILL)
        with pytest.raises(WorkerDied, match=str(victim)):
            await asyncio.wait_for(job, 20)
        after = await run_in_worker(30_000, "warm")
        await pool.astart()  # the replacement started in the background
        return victim, pool, after

    victim, pool, after = asyncio.run(main())
    assert after == hash_range(0, 30_000)
    assert victim not in pool.pids()
    assert len(pool.pids()) == pool.size


def test_killed_cold_worker_raises_not_hangs():
    from lanemon.work import workers

    async def main():
        job = asyncio.ensure_future(run_in_worker(10**10, "cold"))
        def cold():
            return [p for p in workers._live if p.name == "lanemon-cold" and p.is_alive()]

        await _until(cold)
        proc = cold()[0]
        os.kill(proc.pid, signal.SIGKILL)
        with pytest.raises(WorkerDied):
            await asyncio.wait_for(job, 20)

    asyncio.run(main())


def _thread_jobs() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lanemon-thread-job"]


@pytest.mark.parametrize("kind", ["cold", "warm", "thread"])
def test_cancelling_a_run_stops_its_work(kind):
    async def main():
        before = set(live_worker_pids())
        job = asyncio.ensure_future(run_in_worker(10**10, kind))
        if kind == "thread":                       # the run is under way: then cancel it
            await _until(_thread_jobs)
        elif kind == "warm":
            await _until(warm_pool().busy_pids)
        else:
            await _until(lambda: set(live_worker_pids()) - before)
        working = set(live_worker_pids()) - before if kind == "cold" else set(warm_pool().busy_pids())
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        if kind == "thread":                       # its work stops (at its next checkpoint)
            await _until(lambda: not _thread_jobs())
        else:                                      # its process is stopped
            await _until(lambda: not working & set(live_worker_pids()))
        # The pool (if any) still serves.
        return await run_in_worker(1_000, "warm" if kind == "warm" else kind)

    assert asyncio.run(main()) == hash_range(0, 1_000)


def test_starting_workers_does_not_block_the_loop():
    """Process starts run in a helper thread: the loop keeps ticking meanwhile."""
    from lanemon.work.lag import LagRecorder

    async def main():
        shutdown_workers()  # also stops the forkserver: the next start is the slow one
        async with LagRecorder(1.0) as rec:
            t0 = asyncio.get_running_loop().time()
            await asyncio.gather(warm_pool().astart(), run_in_worker(0, "cold"))
            took_ms = (asyncio.get_running_loop().time() - t0) * 1000
        return took_ms, rec

    took_ms, rec = asyncio.run(main())
    # Relative, same run: the loop's longest stall is a small part of the start-up.
    assert rec.stats().max < max(took_ms / 3, 5.0), (rec.stats(), took_ms)
    assert rec.stats().samples >= 3


def test_bad_kind_and_total_are_refused():
    with pytest.raises(ValueError, match="unknown worker kind"):
        asyncio.run(run_in_worker(10, "fork"))
    with pytest.raises(ValueError):
        asyncio.run(run_in_worker(-1, "warm"))
    with pytest.raises(TypeError):
        asyncio.run(run_in_worker(1.5, "warm"))


def test_startup_costs_are_measured():
    async def main():
        return await spawn_cost_ms(repeat=1), await warm_roundtrip_ms(repeat=2)

    cold, warm = asyncio.run(main())
    assert cold > 0 and warm > 0
    # A pre-started worker is cheaper than starting one (same run, wide margin).
    assert warm < cold


async def _until(predicate, timeout_s: float = 20.0) -> None:
    """Yield to the loop until ``predicate()`` holds (``TimeoutError`` after ``timeout_s``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"condition not reached within {timeout_s} s")
        await asyncio.sleep(0.01)


def test_a_warm_worker_that_dies_while_idle_is_replaced_without_waiting_for_a_call():
    """Regression: the pool showed 1 live + 1 dead worker until the next call found the corpse."""
    async def main():
        pool = await warm_pool().astart()
        victim = pool.pids()[0]
        try:
            os.kill(victim, signal.SIGKILL)
            # no call: the pool must notice on its own
            await _until(lambda: victim not in pool.pids() and len(pool.pids()) == pool.size)
            return victim, sorted(pool.pids()), pool.size, len(pool._all)
        finally:
            release(victim)

    victim, pids, size, known = asyncio.run(main())
    assert victim not in pids and len(pids) == size == known


async def _hung_warm_run():
    """A long warm run whose worker is then stopped (SIGSTOP): the pool, the run, the worker's pid.
    The caller resumes and kills the worker in a ``finally`` (``release``)."""
    pool = await warm_pool().astart()
    job = asyncio.ensure_future(run_in_worker(10**10, "warm"))
    await _until(lambda: pool.busy_pids())
    victim = pool.busy_pids()[0]
    os.kill(victim, signal.SIGSTOP)
    return pool, job, victim


def test_cancelling_a_run_on_a_stopped_warm_worker_kills_it_and_the_pool_replaces_it_at_once():
    """A hung worker (SIGSTOP) is stopped by a cancel; the replacement starts without a call."""
    async def main():
        pool, job, victim = await _hung_warm_run()
        try:
            job.cancel()
            with pytest.raises(asyncio.CancelledError):
                await job
            await _until(lambda: gone(victim) and len(pool.pids()) == pool.size)
            replaced = sorted(pool.pids())
            after = await run_in_worker(40_000, "warm")
            return victim, replaced, pool.size, after
        finally:
            release(victim)

    victim, replaced, size, after = asyncio.run(main())
    assert victim not in replaced and len(replaced) == size
    assert after == hash_range(0, 40_000)


def test_a_timeout_around_a_stopped_worker_stops_it_and_further_runs_work():
    async def main():
        pool, job, victim = await _hung_warm_run()
        try:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await job
            await _until(lambda: gone(victim))
            return victim, await asyncio.gather(*(run_in_worker(t, "warm") for t in (1_000, 2_000, 3_000)))
        finally:
            release(victim)

    victim, results = asyncio.run(main())
    assert results == [hash_range(0, t) for t in (1_000, 2_000, 3_000)]


@pytest.mark.parametrize("kind", ["cold", "warm"])
def test_worker_process_runs_below_the_loop_that_started_it(kind):
    from lanemon.work import _kernel

    mine = os.getpriority(os.PRIO_PROCESS, 0)
    got = asyncio.run(worker_call("priority", kind))
    assert got == min(19, mine + _kernel.WORKER_NICE) and got > mine or mine == 19


DRIVER = """
import asyncio, sys
from lanemon.work import live_worker_pids, run_in_worker, warm_pool

async def main():
    busy = [asyncio.ensure_future(run_in_worker(4_000_000_000, kind)) for kind in ("warm", "cold")]
    while len(warm_pool().busy_pids()) < 1 or len(live_worker_pids()) < 2:
        await asyncio.sleep(0.01)
    print(" ".join(map(str, live_worker_pids())), flush=True)
    await asyncio.gather(*busy)

if __name__ == "__main__":
    asyncio.run(main())
"""


def test_busy_workers_end_when_what_started_them_is_killed(tmp_path):
    """A window or an agent killed with SIGKILL runs no clean-up: its busy workers (a warm one
    and a cold one, minutes of work each) went on computing for nobody, the forkserver with
    them. Each worker watches its owner now and exits when it has gone."""
    import subprocess
    import sys

    from lanemon.procs import alive

    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    driver = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env,
                              cwd=root)
    pids: list[int] = []
    try:
        pids = [int(p) for p in driver.stdout.readline().split()]
        assert len(pids) >= 2 and all(alive(p) for p in pids)
        driver.kill()
        driver.wait(10)
        until(lambda: not [p for p in pids if alive(p)], f"workers {pids} gone after their owner was killed", 20)
    finally:
        driver.kill()
        for p in pids:
            release(p)
