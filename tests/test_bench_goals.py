"""The goal records and the alternation statistics every same-run floor is judged by."""

import pytest

from lanemon.bench.goals import Goal, alternate, goals_of, summary_lines


def test_goal_with_a_floor_judges_the_difference():
    g = Goal("idle p99 vs bare loop", figure=1.2, goal=0.3, floor=1.0)
    assert g.judged == pytest.approx(0.2) and g.met
    assert not Goal("idle p99 vs bare loop", figure=1.31, goal=0.3, floor=1.0).met
    d = g.as_dict()
    assert {k: d[k] for k in ("name", "figure", "floor", "goal", "met")} == {
        "name": "idle p99 vs bare loop", "figure": 1.2, "floor": 1.0, "goal": 0.3, "met": True}
    assert "floor 1.000 ms, +0.20" in g.line() and g.line().endswith("-> met")


def test_goal_without_a_floor_and_at_least():
    assert Goal("refresh per frame", 2.9, 3.0).met
    assert not Goal("refresh per frame", 3.1, 3.0).met
    rate = Goal("jobs/s", 14_999.0, 15_000.0, unit="jobs/s", at_least=True)
    assert not rate.met and rate.as_dict()["floor"] is None
    assert Goal("jobs/s", 15_000.0, 15_000.0, unit="jobs/s", at_least=True).met
    assert rate.bound_text() == ">= 15,000 jobs/s"
    assert "MISSED" in rate.line()


def test_a_nan_figure_never_meets_a_goal():
    assert not Goal("chart frame", float("nan"), 0.5).met
    assert not Goal("rate", float("nan"), 1.0, at_least=True).met


def test_alternate_pools_each_side_and_counts_the_alternations_that_agreed():
    # three alternations: the figure is 0.1, 0.5 and 2.0 ms above its floor (p99 of 1 sample = it)
    alt = alternate([([1.1], [1.0]), ([1.5], [1.0]), ([3.0], [1.0])])
    assert alt.differences == pytest.approx((0.1, 0.5, 2.0))
    assert alt.within(0.3) == 1 and alt.within(1.0) == 2
    assert alt.figure.samples == 3 and alt.floor.samples == 3
    assert alt.over == pytest.approx(3.0 - 1.0)          # pooled p99s: nearest rank of 3 is the max
    g = alt.goal("x", 0.3)
    assert (g.agreed, g.alternations, g.met) == (1, 3, False)
    assert "(1/3 alternations agreed)" in g.line()


def test_alternate_refuses_nothing_to_judge():
    with pytest.raises(ValueError, match="no alternation"):
        alternate([])
    with pytest.raises(ValueError, match="alternation 2 has no floor sample"):
        alternate([([1.0], [1.0]), ([1.0], [])])


def test_summary_table_lists_every_goal_of_every_bench():
    figures = {"lag": {"goals": [Goal("idle", 1.2, 0.3, floor=1.0, agreed=4, alternations=6).as_dict()]},
               "sched": {"goals": [Goal("jobs/s", 20_000.0, 15_000.0, unit="jobs/s", at_least=True).as_dict()]},
               "worker": {"goalMet": True}}
    lines = summary_lines(figures)
    assert len(lines) == 4                   # header, two goals, the count
    assert lines[1].startswith("lag") and "4/6" in lines[1] and lines[1].endswith("met")
    assert lines[2].startswith("sched") and ">= 15,000 jobs/s" in lines[2]
    assert lines[-1] == "2 of 2 goals met"
    assert goals_of({"goals": "not a list"}) == [] and summary_lines({"worker": {}}) == []


def test_bench_all_prints_the_table_and_writes_every_goal_to_the_json(monkeypatch, capsys, tmp_path):
    import json

    from lanemon import bench
    from lanemon.cli import main

    def fake(name, out, **options):
        if name == "lag":
            return {"goals": [Goal("idle p99 vs bare loop", 1.5, 0.3, floor=1.0, agreed=2, alternations=6).as_dict()]}
        return {}
    monkeypatch.setattr(bench, "run", fake)
    target = tmp_path / "out.json"
    assert main(["bench", "all", "--json", str(target)]) == 0
    text = capsys.readouterr().out
    assert "== goals (each judged against what was measured in the same run) ==" in text
    assert "0 of 1 goals met" in text
    written = json.loads(target.read_text())
    assert written["goals"] == [dict(Goal("idle p99 vs bare loop", 1.5, 0.3, floor=1.0, agreed=2,
                                          alternations=6).as_dict(), bench="lag")]
    assert written["goals"][0]["met"] is False and "lag" in written


def test_the_store_and_agents_benches_give_a_record_per_goal_and_engine():
    from lanemon.bench import agents, store

    figures = {"sqlite": {"one_process_cycles_per_s": 2500.0, "one_process_goal": 2000, "most_owners_at_once": 1,
                          "heartbeat_idle_p99_ms": 2.0, "heartbeat_follow_p99_ms": 3.5},
               "postgresql": {"skipped": "no cluster"}}
    goals = store._goals(figures)
    assert [(g.name, g.met) for g in goals] == [
        ("store sqlite: claim + fenced save + release, one process", True),
        ("store sqlite: most owners of one lane at once", True),
        ("store sqlite: heartbeat following feed under churn vs idle", False)]
    assert goals[2].floor == 2.0 and goals[2].judged == 1.5

    figures = {"sqlite": {"throughput": {"1": {"most_at_once": 1}, "2": {"most_at_once": 2}},
                          "window": {"heartbeat_idle_p99_ms": 4.0, "heartbeat_follow_p99_ms": 4.5,
                                     "refresh_per_frame_ms": 5.0}}}
    goals = agents._goals(figures)
    assert [(g.name, g.figure, g.met) for g in goals] == [
        ("agents sqlite: most runs of one workspace at once", 2, False),
        ("agents sqlite: window following vs idle beside the agents", 4.5, True),
        ("agents sqlite: refresh per frame following", 5.0, False)]


def test_bench_slice_gives_its_two_goals_with_the_runs_that_agreed():
    from lanemon.bench import slice as bench_slice

    lines: list[str] = []
    figures = bench_slice.run(lines.append, job_ms=20.0, repeat=2)
    at8 = figures["budgets"]["8"]
    assert len(at8["costRatioPairs"]) == 2 and len(at8["maxLagRunsMs"]) == 2
    assert at8["costRatio"] == pytest.approx(sum(at8["costRatioPairs"]) / 2, abs=2e-3)   # the median of two
    assert at8["longestSliceCpuMs"] > 0 and at8["idleMaxLagMs"] is not None
    names = [g["name"] for g in figures["goals"]]
    assert names == ["sliced at 8 ms: costRatio (CPU, median of pairs)", "sliced at 8 ms: max lag (median of runs)"]
    assert all(g["alternations"] == 2 for g in figures["goals"])
    assert any(line.startswith("goal: sliced at 8 ms: max lag") for line in lines)
