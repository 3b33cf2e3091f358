"""``lanemon bench soak``: its arithmetic on known numbers, its place in the command, and a
few seconds of it driving the real window (structure only: no figure is asserted)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from procs import gone

from lanemon import bench
from lanemon.bench import soak
from lanemon.cli import main

# --- arithmetic -----------------------------------------------------------------------------------

def test_slope_of_known_series():
    xs = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert soak.slope(xs, [3 + 0.5 * x for x in xs]) == pytest.approx(0.5)
    assert soak.slope(xs, [7.0] * 5) == pytest.approx(0.0)
    assert soak.slope(xs, [10 - 2 * x for x in xs]) == pytest.approx(-2.0)
    # off a line, by hand: x 0..3 (mean 1.5), y 1, 4, 4, 7 (mean 4): sum dx*dy 9 / sum dx^2 5
    assert soak.slope([0, 1, 2, 3], [1, 4, 4, 7]) == pytest.approx(1.8)
    assert soak.slope([5.0], [1.0]) is None                      # one point: no slope
    assert soak.slope([2.0, 2.0], [1.0, 3.0]) is None            # one x: no slope
    with pytest.raises(ValueError):
        soak.slope([1.0, 2.0], [1.0])


@pytest.mark.parametrize("minutes, bucket_s, buckets", [
    (10, 60.0, 10), (6, 60.0, 6), (7.5, 60.0, 8), (2, 20.0, 6), (1, 10.0, 6), (0.1, 1.0, 6),
])
def test_buckets_are_a_minute_or_a_sixth(minutes, bucket_s, buckets):
    assert soak.bucket_seconds(minutes) == pytest.approx(bucket_s)
    assert soak.bucket_count(minutes) == buckets


def test_halves_give_the_odd_bucket_to_the_second():
    assert soak.halves(10) == (range(5), range(5, 10))
    assert soak.halves(7) == (range(3), range(3, 7))


def test_whole_runs_and_the_tick_after_are_left_out():
    t = np.array([1.0, 2.0, 3.0, 4.5, 5.0, 6.0, 7.0])
    # a run over [3.2, 4.2]: no tick inside, the one at 4.5 measured it; a sample over
    # [6.5, 6.6]: the tick at 7.0 after it
    mask = soak.excluded(t, [(3.2, 4.2), (6.5, 6.6)])
    assert mask.tolist() == [False, False, False, True, False, False, True]
    # ticks inside an interval go too; an interval after the last tick leaves nothing out
    assert soak.excluded(t, [(1.5, 3.0)]).tolist() == [False, True, True, True, False, False, False]
    assert not soak.excluded(t, [(8.0, 9.0)]).any()


def _bucket(i, rss_mb, objects, p99, stall, minutes=1.0):
    return soak.Bucket(i * minutes * 60, (i + 1) * minutes * 60, 6000, int(rss_mb * soak.MB), objects,
                       p99, stall, 30)


def test_summary_slopes_and_goals_from_known_buckets():
    # first half: RSS +1 MB/min, second half: +0.1 MB/min; p99 flat then rising 0.5 ms/min
    rss = [100, 101, 102, 103, 104, 104.1, 104.2, 104.3, 104.4, 104.5]
    objects = [1000, 2000, 3000, 4000, 5000, 5000, 5000, 5000, 5000, 5000]
    p99 = [2.0] * 5 + [2.0, 2.5, 3.0, 3.5, 4.0]
    stall = [30, 40, 250, 30, 30, 30, 30, 30, 30, 30]
    buckets = [_bucket(i, rss[i], objects[i], p99[i], stall[i]) for i in range(10)]
    s = soak.summarize(buckets)
    first, second = s["first"], s["second"]
    assert first["buckets"] == [1, 2, 3, 4, 5] and second["buckets"] == [6, 7, 8, 9, 10]
    assert first["rssMbPerMin"] == pytest.approx(1.0)
    assert second["rssMbPerMin"] == pytest.approx(0.1)
    assert first["gcObjectsPerMin"] == pytest.approx(1000) and second["gcObjectsPerMin"] == pytest.approx(0)
    assert first["p99MsPerMin"] == pytest.approx(0.0) and second["p99MsPerMin"] == pytest.approx(0.5)
    assert first["longestStallMs"] == 250 and second["longestStallMs"] == 30
    g = s["goals"]
    assert g["rssSlopeSecondHalf"]["met"] is True                     # 0.1 <= 0.2
    assert g["p99RiseSecondHalf"]["value"] == pytest.approx(2.5)      # 0.5 ms/min over 5 min
    assert g["p99RiseSecondHalf"]["met"] is False
    assert g["longestStallOutsideWholeRuns"] == {"value": 250, "goal": 100.0, "met": False}


def test_every_cycle_holds_every_kind_in_order():
    import random

    script = soak.plan(60.0, 1.0, random.Random(3))
    assert len(script) == 60
    assert [at for at, _ in script] == sorted(at for at, _ in script)
    n = len(soak.KINDS)
    for c in range(len(script) // n):
        cycle = [k for _, k in script[c * n:(c + 1) * n]]
        assert sorted(cycle) == sorted(soak.KINDS)
        for first, later in soak.ORDER:
            assert cycle.index(first) < cycle.index(later)
    # however short, one whole cycle is planned
    assert sorted(k for _, k in soak.plan(1.0, 2.0, random.Random(3))) == sorted(soak.KINDS)


# --- the command ------------------------------------------------------------------------------------

def test_all_leaves_soak_out_and_minutes_is_soak_only(monkeypatch, capsys):
    assert "soak" in bench.available() and "soak" not in bench.in_all()
    assert set(bench.in_all()) == set(bench.available()) - {"soak", "replay"}  # replay: minutes too
    ran = []
    monkeypatch.setattr(bench, "run", lambda name, out, **options: ran.append((name, options)) or {})
    assert main(["bench"]) == 0
    assert [name for name, _ in ran] == bench.in_all()
    ran.clear()
    assert main(["bench", "soak", "--minutes", "0.5"]) == 0
    assert ran == [("soak", {"minutes": 0.5})]
    ran.clear()
    assert main(["bench", "soak"]) == 0
    assert ran == [("soak", {})]                # the module's default (10 minutes)
    ran.clear()
    capsys.readouterr()
    for argv in (["bench", "ui", "--minutes", "1"], ["bench", "--minutes", "1"],
                 ["bench", "soak", "--minutes", "0"], ["bench", "soak", "--minutes", "-1"],
                 ["bench", "soak", "--minutes", "nan"], ["bench", "soak", "--minutes", "ten"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("lanemon: error:"), argv
    assert ran == []


# --- a few seconds of it ----------------------------------------------------------------------------

def test_a_short_soak_drives_every_kind_and_leaves_nothing_behind(tmp_path):
    """The command as a user runs it, in its own process (presenter mode restyles the whole
    application: a test process would keep that look for the tests after it)."""
    import json
    import subprocess
    import sys

    import lanemon

    out_file = tmp_path / "soak.json"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LANEMON_NO_SETTINGS="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(lanemon.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "lanemon", "bench", "soak", "--minutes", "0.1",
                           "--json", str(out_file)],              # 6 s: buckets of 1 s
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    figures = json.loads(out_file.read_text())["soak"]
    lines = proc.stdout.splitlines()
    text = proc.stdout

    assert figures["bucketS"] == pytest.approx(1.0)
    assert "6 buckets of 1 s" in text
    buckets = figures["buckets"]
    assert len(buckets) == 6
    keys = {"t0Min", "t1Min", "ticks", "rssMb", "gcObjects", "p99Ms", "longestStallMs", "actions",
            "wholeRuns", "wholeRunLongestStallMs", "sampleMs", "longestStallAfter",
            "longestStallOutsideThreadRunsMs"}
    for before, b in zip([None, *buckets], buckets):
        assert set(b) == keys
        assert b["t1Min"] > b["t0Min"] >= (before["t1Min"] if before else 0.0)
        assert b["t1Min"] - b["t0Min"] >= 0.5 / 60 - 2e-4      # half a bucket at least (rounded)
        assert b["ticks"] > 0 and b["gcObjects"] > 0          # the heartbeat ticked in every bucket
        assert b["p99Ms"] <= b["longestStallMs"]
        assert b["longestStallOutsideThreadRunsMs"] <= b["longestStallMs"]   # fewer ticks: never longer
        if sys.platform.startswith("linux"):
            assert b["rssMb"] > 0
    # every kind ran, each action counted once in a bucket
    assert set(figures["actions"]) == set(soak.KINDS)
    assert all(n >= 1 for n in figures["actions"].values()), figures["actions"]
    assert sum(b["actions"] for b in buckets) == sum(figures["actions"].values())
    assert sum(b["ticks"] for b in buckets) > 0
    assert sum(b["wholeRuns"] for b in buckets) == figures["actions"]["whole"]
    # the halves and the goals are there, printed with the goal and a verdict beside each figure
    assert figures["firstHalf"]["buckets"] == [1, 2, 3] and figures["secondHalf"]["buckets"] == [4, 5, 6]
    assert figures["secondHalf"]["p99MsPerMin"] is not None
    if sys.platform.startswith("linux"):
        assert figures["secondHalf"]["rssMbPerMin"] is not None
    assert set(figures["goals"]) == {"rssSlopeSecondHalf", "p99RiseSecondHalf", "longestStallOutsideWholeRuns"}
    verdicts = [ln for ln in lines if "(goal" in ln]
    assert len(verdicts) == 3
    assert all(ln.endswith(("-> meets goal", "-> MISSES goal", "-> n/a")) for ln in verdicts), verdicts
    assert "first half (buckets 1-3" in text and "second half (buckets 4-6" in text
    # the CSV and the PNG were asked for and written into the soak's folder (gone now)
    assert {"Export heartbeat", "Export chart"} <= set(figures["saveDialogs"])
    assert {"lanemon-heartbeat.csv", "lanemon-heartbeat.png"} <= set(figures["files"])
    assert figures["holds"]["set"] >= 1
    # quit: nothing left running, inside the process before it ended and after it
    assert figures["workerPidsLeft"] == [] and figures["childrenLeft"] == []
    assert figures["workerPidsSeen"], "the warm pool should have been running"
    assert all(gone(pid) for pid in figures["workerPidsSeen"])
