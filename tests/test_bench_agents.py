"""``lanemon bench agents`` in its smallest configuration: one agent process on SQLite, a
small store followed by the window (figures and verdicts printed; no timing asserted)."""

from __future__ import annotations

import re

from lanemon import bench
from lanemon.bench._common import child_processes
from lanemon.cli import main


def test_agents_bench_is_in_all_and_takes_no_store_option(capsys):
    assert "agents" in bench.available() and "agents" in bench.in_all()
    assert main(["bench", "agents", "--store", "sqlite:///tmp/x.db"]) == 2
    assert "--store is for the store benchmark only" in capsys.readouterr().err


def test_smallest_agents_bench_runs_real_agents_and_says_each_goal():
    from lanemon.bench import agents

    lines: list[str] = []
    figures = bench.run("agents", lines.append, agents=(1, 2), jobs=24, window_jobs=300, segments=2,
                        segment_s=0.3, record_s=0.3, postgresql=False, warmup=12)
    text = "\n".join(lines)

    assert set(figures) == {"sqlite", "goals"}
    assert [g["name"] for g in figures["goals"]] == [
        "agents sqlite: most runs of one workspace at once",
        "agents sqlite: window following vs idle beside the agents", "agents sqlite: refresh per frame following",
        "agents sqlite: jobs/s with more agents vs fewest"]
    assert figures["goals"][0]["met"] is True
    rows = figures["sqlite"]["throughput"]
    assert set(rows) == {"1", "2"}
    for n, row in rows.items():
        # every job ran once (the 12 warming up the agents too), by the agents started, never
        # two of one workspace at once; the figure is the 24 after the warm-up
        assert row["agents"] == int(n) and row["by_state"] == {"succeeded": 36}
        assert row["jobs"] == 24 and row["warmup"] == 12
        assert row["most_at_once"] == 1 and 1 <= row["owners"] <= int(n)
        assert row["jobs_per_s"] > 0 and row["seconds"] > 0
        # (every agent may adopt a job; all but the one that runs it drop it)
        assert row["adopted"] - row["taken_elsewhere"] >= 24
    assert text.count("must be 1 -> held") == 2 * agents.ROUNDS           # every row of every round
    for row in rows.values():       # the figure is the median round, each round's figure beside it
        assert len(row["rounds"]) == agents.ROUNDS
        assert row["jobs_per_s"] == sorted(row["rounds"])[(agents.ROUNDS - 1) // 2]
        assert f"median {row['jobs_per_s']:8,.0f} jobs/s over {agents.ROUNDS} rounds" in text
    # (reserved: each job adopted by one agent, none dropped as run elsewhere)
    assert all(row["adopted"] == 36 and row["taken_elsewhere"] == 0 for row in rows.values())
    assert text.count("(24 jobs in ") == 2 * agents.ROUNDS and "s after 12 warming up; all 36:" in text
    scaling = figures["sqlite"]["scaling"]
    assert set(scaling["ratios"]) == {"2"}
    assert scaling["ratios"]["2"] == round(rows["2"]["jobs_per_s"] / rows["1"]["jobs_per_s"], 2)
    assert f"goal: does not fall (each >= x0.9) -> {'meets goal' if scaling['goal_met'] else 'MISSES goal'}" in text
    assert figures["goals"][3]["met"] is scaling["goal_met"]     # the same goal as a record
    window = figures["sqlite"]["window"]
    assert window["jobs_in_store"] == 300 and window["agents"] == agents.WINDOW_AGENTS
    assert 0 < window["jobs_run"] <= 300
    for key in ("heartbeat_idle_p99_ms", "heartbeat_follow_p99_ms", "refresh_per_frame_ms"):
        assert 0 < window[key] < 10_000, (key, window[key])   # measured: a real lag, a real frame
    assert abs(window["heartbeat_follow_minus_idle_ms"]
               - (window["heartbeat_follow_p99_ms"] - window["heartbeat_idle_p99_ms"])) <= 0.002
    # the pooled figure and each alternation's own difference, with how many were within the goal
    diffs = window["heartbeat_alternations_ms"]
    assert len(diffs) == 2 and window["heartbeat_agreed"] == sum(d <= agents.GOAL_HEARTBEAT_MS for d in diffs)
    assert figures["goals"][1]["agreed"] == window["heartbeat_agreed"] and figures["goals"][1]["alternations"] == 2
    assert re.search(r"each alternation: [+-]\d+\.\d\d [+-]\d+\.\d\d ms \(" + str(window["heartbeat_agreed"])
                     + r"/2 within the goal\)", text)
    # each goal beside the figure it is compared with, with an honest verdict either way
    met = {True: "meets goal", False: "MISSES goal"}
    assert f"goal <= +1 ms -> {met[window['heartbeat_goal_met']]}" in text
    assert f"goal <= 4 ms -> {met[window['refresh_goal_met']]}" in text
    assert "the tab saw 300 jobs" in text
    # the window part's agents run at a lower priority (other hosts in a real deployment), said so,
    # with the window's own loop CPU idle and following beside the heartbeat
    assert window["agents_nice"] == agents.WINDOW_NICE == 19
    assert f"the agents at nice {agents.WINDOW_NICE}" in text
    assert "the window's loop CPU: idle" in text
    assert 0 < window["loop_cpu_idle_ms_per_s"] <= 1000 and 0 < window["loop_cpu_follow_ms_per_s"] <= 1000
    assert not [c for c in child_processes() if " agent " in c[1]], "an agent process was left behind"
