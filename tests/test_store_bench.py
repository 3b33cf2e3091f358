"""``lanemon bench store`` and the churn worker's own counts (one process, SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanemon import bench
from lanemon.bench.store import _most_owners
from lanemon.cli import main
from lanemon.store.churn import churn
from lanemon.store.sql import open_sql_store
from lanemon.store.url import parse


def _h(epoch, claimed, ended, ws="a", lane="scheduled"):
    return {"epoch": epoch, "lane": lane, "workspace": ws, "claimed_at": claimed, "ended_at": ended}


def test_most_owners_sweeps_each_lanes_history():
    one_after_another = [_h(1, 0.0, 1.0), _h(2, 1.0, 2.0), _h(3, 2.5, None)]  # an end at a claim's instant
    assert _most_owners(one_after_another) == 1
    assert _most_owners(one_after_another + [_h(4, 1.5, 1.6)]) == 2        # inside epoch 2's span
    assert _most_owners(one_after_another + [_h(4, 3.0, 4.0)]) == 2        # while epoch 3 is still open
    assert _most_owners(one_after_another + [_h(4, 0.5, 0.7, ws="b")]) == 1  # another workspace
    assert _most_owners(one_after_another + [_h(4, 0.5, 0.7, lane="cafe")]) == 1
    assert _most_owners([]) == 0


def test_store_bench_is_registered_and_store_option_is_its_own(capsys):
    assert "store" in bench.available() and "store" in bench.in_all()
    assert main(["bench", "sched", "--store", "sqlite:///tmp/x.db"]) == 2
    assert "--store is for the store benchmark only" in capsys.readouterr().err
    assert main(["bench", "store", "--store", "memory:"]) == 2
    assert "needs a sqlite:/// or postgresql:// store" in capsys.readouterr().err
    assert main(["bench", "store", "--store", "postgresql://u:secret@h:99999/d"]) == 2
    err = capsys.readouterr().err
    assert "secret" not in err and "not a valid PostgreSQL URL" in err


@pytest.mark.asyncio
async def test_a_self_fed_worker_runs_its_cycles_and_releases_every_lane(tmp_path):
    url = "sqlite:///" + str(tmp_path / "s.db").lstrip("/")
    store = await open_sql_store(parse(url), create=True)
    try:
        stats = await churn(url, cycles=40, workspaces=["a", "b"], seed=3, name="solo")
        dump = await store.dump()
    finally:
        await store.close()
    assert (stats.cycles, stats.ended_by, stats.busy, stats.refused_writes, stats.errors) == (40, "cycles", 0, 0, 0)
    assert len(stats.claim_ms) == 40 and stats.session.endswith(":solo")
    done = [j for j in dump["jobs"] if j["state"] == "succeeded"]
    assert sorted(j["id"] for j in done) == sorted(stats.finished)
    assert {j["owner"] for j in done} == {stats.session} and {j["attempts"] for j in done} == {1}
    assert dump["lanes"] == [] and len(dump["history"]) == 40
    assert {h["end_reason"] for h in dump["history"]} == {"released"}


@pytest.mark.asyncio
async def test_churn_refuses_an_unbounded_or_ambiguous_run(tmp_path):
    url = "sqlite:///" + str(tmp_path / "s.db").lstrip("/")
    with pytest.raises(ValueError, match="either jobs"):
        await churn(url, cycles=1, jobs=[(1, "a")], workspaces=["a"])
    with pytest.raises(ValueError, match="needs seconds or cycles"):
        await churn(url, workspaces=["a"])


def test_the_churn_worker_takes_its_store_from_lanemon_store_as_the_other_commands(tmp_path):
    """``python -m lanemon.store.churn`` without ``--store`` works on ``$LANEMON_STORE`` (the
    README's example exports it, then starts two), and says what is missing when neither is given."""
    import asyncio
    import json
    import os
    import subprocess
    import sys

    url = "sqlite:///" + str(tmp_path / "s.db").lstrip("/")

    async def init():
        await (await open_sql_store(parse(url), create=True)).close()

    asyncio.run(init())
    root = str(Path(__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if k != "LANEMON_STORE"}
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "lanemon.store.churn", "--workspaces", "a", "--cycles", "3",
           "--stats", str(tmp_path / "stats.json")]
    missing = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no store given: pass --store URL or set LANEMON_STORE" in missing.stderr
    assert not (tmp_path / "stats.json").exists()
    done = subprocess.run(cmd, env=dict(env, LANEMON_STORE=url), cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "stats.json").read_text())["cycles"] == 3


def test_the_heartbeat_rounds_churn_workers_run_at_a_lower_priority(tmp_path, monkeypatch):
    """The workers of the heartbeat rounds run at ``CHURN_NICE`` (the goal is what following the
    feed costs the loop, not the cores six workers at its priority take from it), and do their
    cycles there."""
    import asyncio
    import os
    import time

    from lanemon.bench import store as store_bench

    monkeypatch.setattr(store_bench, "PROCESSES", 2)
    monkeypatch.setattr(store_bench, "CONTEND_S", 1.0)
    url = "sqlite:///" + str(tmp_path / "s.db").lstrip("/")

    async def init() -> None:
        await (await open_sql_store(parse(url), create=True)).close()

    asyncio.run(init())
    procs = store_bench._spawn(tmp_path / "w", url, time.time() + 2.0)
    try:
        for p in procs:     # ``nice`` sets the priority, then becomes the worker (exec): wait for that.
            # While the kernel is still making ``nice`` itself (Popen returns once that exec is
            # past its point of no return, before the new image's arguments are set up), the
            # command line reads empty: it is not the worker yet either (CI read 0 there once)
            deadline = time.monotonic() + 30
            while Path(f"/proc/{p.pid}/cmdline").read_bytes().split(b"\0")[0] in (b"nice", b""):
                assert time.monotonic() < deadline and p.poll() is None
                time.sleep(0.01)
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert [os.getpriority(os.PRIO_PROCESS, p.pid) for p in procs] == [min(19, mine + store_bench.CHURN_NICE)] * 2
        assert [p.wait(timeout=60) for p in procs] == [0, 0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    merged = store_bench._merged(tmp_path / "w", procs)
    assert merged["cycles"] > 0 and merged["errors"] == 0
