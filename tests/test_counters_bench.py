"""``lanemon bench counters``: the side-by-side table and its JSON figures."""

import json

import pytest

from lanemon.bench import counters as bench
from lanemon.counters import SimConfig, compare_async, run_virtual


def test_bench_prints_table_and_returns_json_ready_figures():
    lines = []
    figures = bench.run(lines.append)
    text = "\n".join(lines)
    for word in ("short lock", "long lock", "claim", "served", "double", "throughput",
                 "p99 wait", "lock wait", "seed 1", "8 staff", "24 counters", "300 customers",
                 "guide 200 ms", "claim / long lock throughput"):
        assert word in text
    json.dumps(figures)
    for section in ("no_faults", "faults"):
        s = figures[section]["strategies"]
        assert s["short_lock"]["double_assignments"] > 0
        assert s["long_lock"]["double_assignments"] == 0
        assert s["claim"]["double_assignments"] == 0
        assert figures[section]["claim_over_long_lock_throughput"] >= 3.0
    assert figures["faults"]["strategies"]["claim"]["claims_expired"] > 0


@pytest.mark.asyncio
async def test_compare_from_a_running_loop_goes_to_a_thread():
    config = SimConfig(customers=40)
    with pytest.raises(RuntimeError, match="own thread"):
        run_virtual(config)
    results = await compare_async(config)
    assert list(results) == ["short_lock", "long_lock", "claim"]
    assert all(t.served == 40 for t in results.values())
