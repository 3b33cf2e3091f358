"""``lanemon bench replay`` runs end to end on a short recording (the figures are the
benchmark's business; here: it records, opens, seeks and prints each goal)."""

from lanemon import bench
from lanemon.bench import replay as replay_bench


def test_replay_bench_runs_and_prints_its_goals(monkeypatch):
    monkeypatch.setattr(replay_bench, "HOUR", 20.0)
    monkeypatch.setattr(replay_bench, "LIVE_SECONDS", 0.5)
    lines = []
    figures = bench.run("replay", lines.append)
    text = "\n".join(lines)
    assert figures["events"] > 2000 and figures["heartbeat_ticks"] >= 1900 and figures["lanes_jobs"] >= 39
    assert figures["size_mb"] > 0 and figures["live_bytes_per_event"] > 0
    for what in ("file size", "open + first frame", "seek to the end", "random positions", "live"):
        line = next(line for line in lines if what in line)
        assert "goal" in line and ("meets goal" in line or "MISSES goal" in line), line
    assert "replay" in bench.available() and "replay" not in bench.in_all()
    assert "moments list" in text
