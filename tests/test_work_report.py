"""Lag recorder and the seed-shaped report."""

import asyncio
import json
import time

import pytest

from lanemon.work import LagRecorder, hash_range, shutdown_workers, summarize
from lanemon.work.report import build_report, measure, summary


def test_a_200ms_block_shows_as_one_tick_at_least_190ms_late():
    async def main():
        async with LagRecorder(1.0) as rec:
            for _ in range(5):             # the recorder is ticking
                await rec.next_tick()
            before = len(rec.lags_ms)
            time.sleep(0.2)  # the block under test
        return rec, before

    rec, before = asyncio.run(main())
    stats = rec.stats()
    assert stats.max >= 190
    assert sum(1 for lag in rec.lags_ms if lag >= 100) == 1  # one late tick, no catch-up burst
    assert len(rec.lags_ms) > before and max(rec.lags_ms[before:]) >= 190   # the block's, after it


def test_summarize_nearest_rank():
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.samples, s.p50, s.max, s.late_ms) == (5, 3.0, 5.0, 15.0)
    assert summarize(list(range(1, 101))).p99 == 99
    assert summarize([]).samples == 0


def _entry(result, max_lag=10.0, work=100.0, **extra):
    return {"samples": 3, "p50": 1.0, "p99": 2.0, "max": max_lag, "workMs": work, "result": result, **extra}


def test_build_report_relations_and_rounding():
    rep = build_report(10, _entry(7, 300.0, 99.0), _entry(7, 7.0, 104.0, slices=13), _entry(7), 12.3456)
    assert rep["slicing"]["costRatio"] == round(104.0 / 99.0, 3)
    assert rep["slicing"]["tailRatio"] == round(300.0 / 7.0, 2)
    assert rep["slicing"]["sliceMs"] == round(104.0 / 13, 3)
    assert rep["worker"] == {"startupMs": 12.346}


def test_build_report_refuses_disagreeing_results():
    with pytest.raises(ValueError, match="disagree"):
        build_report(10, _entry(1), _entry(2, slices=1), _entry(1), 1.0)


def test_measure_writes_the_seed_schema():
    async def main():
        try:
            return await measure(300_000, slice_ms=2.0, worker="warm")
        finally:
            shutdown_workers()

    rep = asyncio.run(main())
    json.loads(json.dumps(rep))  # JSON-ready
    assert set(rep) == {"python", "total", "runs", "slicing", "worker"}
    assert set(rep["runs"]) == {"whole", "sliced", "worker"}
    keys = {"samples", "p50", "p99", "max", "workMs", "result"}
    assert set(rep["runs"]["whole"]) == keys
    assert set(rep["runs"]["worker"]) == keys
    assert set(rep["runs"]["sliced"]) == keys | {"slices"}
    assert set(rep["slicing"]) == {"costRatio", "tailRatio", "sliceMs"}
    assert set(rep["worker"]) == {"startupMs"}
    expected = hash_range(0, 300_000)
    assert all(rep["runs"][k]["result"] == expected for k in rep["runs"])
    sl, wh = rep["runs"]["sliced"], rep["runs"]["whole"]
    assert rep["slicing"]["costRatio"] == round(sl["workMs"] / wh["workMs"], 3)
    assert rep["slicing"]["sliceMs"] == round(sl["workMs"] / sl["slices"], 3)
    assert "all three equal" in summary(rep)
