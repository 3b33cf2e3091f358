"""``lanemon bench probe`` runs end to end (shortened) and reports every figure with its goal."""

from __future__ import annotations

from lanemon.bench import probe as bench_probe


def test_bench_probe_runs_and_reports(monkeypatch):
    monkeypatch.setattr(bench_probe, "ROUNDS", 1)
    monkeypatch.setattr(bench_probe, "ROUND_S", 0.1)
    monkeypatch.setattr(bench_probe, "BLOCKS", 2)
    lines = []
    figures = bench_probe.run(lines.append)
    assert figures["blocks"] == 2 and figures["blocks_reported"] == 2
    assert len(figures["block_durations_ms"]) == 2
    assert len(figures["lag_rounds_with"]) == len(figures["lag_rounds_without"]) == 1
    text = "\n".join(lines)
    for word in ("loop lag p99", "probe CPU", "blocks of 200 ms", "goal"):
        assert word in text
