"""Sliced runs: same answer as whole, and a real yield between slices."""

import asyncio

import pytest

from lanemon.work import (
    SliceStopped,
    calibrate_async,
    hash_range,
    iterations_for_ms,
    run_sliced,
    run_sliced_budget,
)


@pytest.mark.parametrize("total", [0, 1, 999, 1000, 1001, 123_457])
@pytest.mark.parametrize("size", [1_000, 7_919, 50_000])
def test_sliced_by_size_equals_whole(total, size):
    res = asyncio.run(run_sliced(total, size))
    assert res.result == hash_range(0, total)
    assert res.slices == -(-total // size)


@pytest.mark.parametrize("total", [0, 1, 5_000, 300_001])
@pytest.mark.parametrize("budget", [0.5, 2.0])
def test_sliced_by_budget_equals_whole(total, budget):
    res = asyncio.run(run_sliced_budget(total, budget))
    assert res.result == hash_range(0, total)
    if total:
        assert res.slices >= 1


def test_budget_adapts_to_smaller_slices_for_a_smaller_budget():
    total = 400_000
    coarse = asyncio.run(run_sliced_budget(total, 8.0))
    fine = asyncio.run(run_sliced_budget(total, 0.5))
    # Same machine, same run: 16x less time per slice gives many more slices.
    assert fine.slices > 3 * coarse.slices


@pytest.mark.parametrize("form", ["size", "budget"])
def test_due_timers_run_between_every_two_slices(form):
    """A timer that is always due runs at every slice boundary."""
    boundaries_seen = []
    progress = {"done": 0}

    async def main():
        loop = asyncio.get_running_loop()
        running = True

        def tick():
            boundaries_seen.append(progress["done"])
            if running:
                loop.call_soon(tick)

        def on_slice(done, total):
            progress["done"] = done

        loop.call_soon(tick)
        if form == "size":
            res = await run_sliced(200_000, 10_000, on_slice=on_slice)
        else:
            res = await run_sliced_budget(200_000, 0.3, on_slice=on_slice)
        running = False
        return res

    res = asyncio.run(main())
    assert res.slices >= 5
    # Every slice's end was observed by the ticker before the next slice ran.
    ends = sorted(set(boundaries_seen))
    assert len([e for e in ends if 0 < e < 200_000]) >= res.slices - 1


def test_timer_due_during_a_slice_waits_one_slice_not_two():
    """The yield goes behind timers already due (asyncio.sleep(0) would not)."""
    order = []

    async def main():
        loop = asyncio.get_running_loop()

        def on_slice(done, total):
            order.append(("slice", done))
            if done == 10_000:  # make a timer fall due during the next slice
                loop.call_at(loop.time(), lambda: order.append(("timer", None)))

        await run_sliced(40_000, 10_000, on_slice=on_slice)

    asyncio.run(main())
    timer_at = order.index(("timer", None))
    assert order[timer_at - 1] == ("slice", 10_000)


def test_should_stop_stops_between_slices():
    calls = {"n": 0}

    def should_stop():
        calls["n"] += 1
        return calls["n"] > 3

    with pytest.raises(SliceStopped):
        asyncio.run(run_sliced(100_000, 1_000, should_stop=should_stop))


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "8", True])
def test_budget_refuses_bad_slice_ms(bad):
    with pytest.raises(ValueError):
        asyncio.run(run_sliced_budget(1000, bad))


def test_calibration_gives_a_rate_and_iterations():
    rate = asyncio.run(calibrate_async(samples=3, slice_ms=1.0))
    assert rate > 0
    assert iterations_for_ms(10) >= iterations_for_ms(1) >= 1


def test_a_slice_budget_above_a_second_is_refused_before_any_work():
    """``slice_ms=1e306`` overflowed the slice size (``int(inf)``) after the run had begun."""
    import asyncio

    import pytest

    from lanemon.work.slicing import MAX_SLICE_MS, run_sliced_budget

    for bad in (MAX_SLICE_MS * 1.001, 1e306):
        with pytest.raises(ValueError, match="at most"):
            asyncio.run(run_sliced_budget(1_000, bad))
    from lanemon.work import hash_range

    assert asyncio.run(run_sliced_budget(10_000, MAX_SLICE_MS)).result == hash_range(0, 10_000)
