"""Recording and replay (lanemon.replay), Qt-free.

The must-have: a seeded counters simulation, recorded, replays *exactly* -- the
``Snapshot`` rebuilt at every position k equals the live ``Simulation.snapshot()`` taken
inside the callback of event k (every field: counters, staff, tallies, times). Then the
notable moments and the story of a double assignment on the seed-001 (short lock) run,
the bad-input errors, and a real process SIGKILLed while it records.
"""

import asyncio
import dataclasses
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from lanemon.counters import SimConfig, Simulation, run_in_virtual_time
from lanemon.replay import FORMAT, VERSION, Recorder, RecordingError, Replay, open_recording

# The seed-001 story: staff choose a counter under a lock, then guide and seat without one
SEED_001 = SimConfig(strategy="short_lock", customers=300, time_limit=3600.0)


def record(path, config: SimConfig, *, compress: bool = True, keyframe_every: int | None = None, heartbeat=None):
    """Run ``config`` on virtual time with a recorder attached; returns the live snapshot
    after every event (index 0: before any) and the live events."""
    sim = Simulation(config)
    often = {} if keyframe_every is None else {"keyframe_every": keyframe_every, "keyframe_ratio": 0}
    rec = Recorder(str(path), sources_info={"test": "counters"}, clock=sim.clock.now, compress=compress, **often)
    rec.attach_counters(sim)
    live = [sim.snapshot()]
    events = []

    def seen(event):
        events.append(event)
        live.append(sim.snapshot())
        if heartbeat is not None:
            heartbeat(rec, event)

    sim.subscribe(seen)  # after the recorder: it sees the same state
    run_in_virtual_time(sim.run())
    rec.close()
    assert rec.error is None and rec.events_written == len(events)
    return live, events


def differences(a, b) -> list[str]:
    return [f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)]


@pytest.mark.parametrize("config", [
    SEED_001,
    SimConfig(strategy="claim", customers=300, abandon_rate=0.1, time_limit=3600.0, seed=7),
    SimConfig(strategy="long_lock", customers=120, abandon_rate=0.1, time_limit=3600.0, seed=3),
    SimConfig(strategy="claim", customers=None, ttl=0.15, guide_time=0.2, time_limit=20.0, seed=5),
], ids=["seed001-short-lock", "claim-faults", "long-lock-faults", "claim-ttl-shorter-than-guide"])
def test_replay_equals_live_at_every_event(tmp_path, config):
    """Compared: the whole ``lanemon.counters.simulation.Snapshot`` (time, state, speed,
    every counter's view with ttl_left, every staff view with since, the lock holder,
    every tally, the config) after every one of the recorded events, stepping forward;
    then at random positions (seeks across keyframes, backwards too)."""
    live, events = record(tmp_path / "run.jsonl.gz", config, keyframe_every=200)
    replay = Replay(open_recording(str(tmp_path / "run.jsonl.gz")))
    assert len(replay) == len(events) > 200 and len(replay.recording.keyframes) > len(events) // 200
    for k in range(len(replay) + 1):
        replay.seek(k)
        got = replay.counters_snapshot()
        assert got == live[k], f"position {k}: {differences(got, live[k])} differ"
    rng = random.Random(1)
    for k in rng.sample(range(len(replay) + 1), 200):
        replay.seek(k)
        assert replay.counters_snapshot() == live[k], k
    for i in rng.sample(range(len(events)), 50):
        e, ev = replay.event(i), events[i]
        assert (e.index, e.source, e.kind, e.counter, e.staff, e.customer, e.source_time) == (
            i, "counters", ev.kind, ev.counter, ev.owner, ev.customer, ev.time)
        assert e.text


def test_uncompressed_recording_replays_the_same(tmp_path):
    path = tmp_path / "plain.jsonl"
    live, _ = record(path, SEED_001.replace(customers=60), compress=False)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == FORMAT and lines[-1].startswith('["E",')
    replay = Replay(open_recording(str(path)))
    for k in range(len(replay) + 1):
        replay.seek(k)
        assert replay.counters_snapshot() == live[k]


def test_header_names_seed_and_parameters(tmp_path):
    config = SEED_001.replace(customers=40, seed=11)
    record(tmp_path / "r.gz", config)
    rec = open_recording(str(tmp_path / "r.gz"))
    assert rec.header["format"] == FORMAT and rec.header["version"] == VERSION
    assert rec.header["sources"] == {"test": "counters"}
    assert rec.header["counters"] == config.as_dict() and rec.header["counters"]["seed"] == 11
    assert rec.warnings == []


# -- moments and the race explained (seed 001) -----------------------------------

@pytest.fixture(scope="module")
def seed001(tmp_path_factory):
    path = tmp_path_factory.mktemp("seed001") / "seed001.jsonl.gz"
    live, events = record(path, SEED_001)
    return Replay(open_recording(str(path))), live, events


def test_moments_list_every_double_assignment(seed001):
    replay, live, events = seed001
    doubles = [m for m in replay.moments() if m.kind == "double assignment"]
    expected = [i for i, e in enumerate(events) if e.kind == "double_assignment"]
    assert [m.index for m in doubles] == expected
    assert len(doubles) == live[-1].tallies.double_assignments > 0
    for m in doubles[:20]:
        assert m.position == m.index + 1 and m.time == events[m.index].time
        replay.seek(m.position)
        view = replay.counters_snapshot().counters[events[m.index].counter]
        assert view.conflict and len(view.customers) > 1


def test_explain_tells_both_chose_before_either_seated(seed001):
    replay, live, events = seed001
    first = next(m for m in replay.moments() if m.kind == "double assignment")
    double = events[first.index]
    story = replay.explain(first.index)
    # from the live run: who seated the customer already there, and when each chose it
    seat = max(i for i in range(first.index)
               if events[i].counter == double.counter and events[i].kind in ("assigned", "double_assignment"))
    first_staff = events[seat].owner
    assert story.counter == double.counter
    assert story.staff == (first_staff, double.owner) and first_staff != double.owner
    chose = {}
    for k in range(first.index + 1):
        for s in live[k].staff:
            if s.state == "guiding" and s.counter == double.counter and s.name in story.staff:
                chose.setdefault((s.name, s.since), k)
    # each chose it at the moment their staff view turned to guiding to that counter
    second_choice = max(since for name, since in chose if name == double.owner)
    assert second_choice < events[seat].time, "the second chose before the first had seated"
    n = double.counter + 1
    assert any(line.endswith(f"{first_staff} chose counter {n}") for line in story.lines)
    assert any(f"{double.owner} chose counter {n} ({first_staff} had not seated anyone there yet)" in line
               for line in story.lines)
    assert story.lines[-1].startswith(f"Both chose counter {n} before either")
    assert story.indices[-1] == first.index and seat in story.indices
    assert list(story.indices) == sorted(story.indices) and len(story.indices) == len(story.lines) - 1
    for i, line in zip(story.indices, story.lines, strict=False):  # each line's event shows it
        replay.seek(i + 1)
        name = line.split()[1]
        if " chose " in line:
            view = next(s for s in replay.counters_snapshot().staff if s.name == name)
            assert view.counter == double.counter and view.state in ("guiding", "away"), line
        else:
            assert events[i].owner == name and events[i].counter == double.counter, line


def test_explain_is_none_for_other_events(seed001):
    replay, _, events = seed001
    i = next(i for i, e in enumerate(events) if e.kind == "arrived")
    assert replay.explain(i) is None


def test_refused_writes_and_stale_releases_are_moments(tmp_path):
    config = SimConfig(strategy="claim", customers=200, abandon_rate=0.2, time_limit=3600.0, seed=4)
    live, events = record(tmp_path / "c.gz", config)
    replay = Replay(open_recording(str(tmp_path / "c.gz")))
    kinds = {"finalize_refused": "refused write", "release_refused": "stale release"}
    expected = [(i, kinds[e.kind]) for i, e in enumerate(events) if e.kind in kinds]
    assert expected, "the faults made no refused finalize"
    assert [(m.index, m.kind) for m in replay.moments()] == expected


def test_heartbeat_ticks_and_long_stalls(tmp_path):
    ticks = []

    def beat(rec, event):  # one tick per event, on the simulation's clock; every 500th a stall
        lag = 250.0 if len(ticks) % 500 == 499 else 0.5
        ticks.append((event.time, lag))
        rec.heartbeat(event.time, lag)

    live, events = record(tmp_path / "h.gz", SEED_001.replace(customers=150), heartbeat=beat)
    replay = Replay(open_recording(str(tmp_path / "h.gz")))
    times, lags = replay.heartbeat(-1.0, 1e9)
    assert len(times) == len(ticks)
    assert times == pytest.approx([t for t, _ in ticks], abs=1e-4) and lags == [lag for _, lag in ticks]
    t0, t1 = ticks[10][0], ticks[20][0]
    part, _ = replay.heartbeat(t0, t1)
    assert part == [t for t in times if t0 <= t <= t1]
    stalls = [m for m in replay.moments() if m.kind == "long stall"]
    assert [m.time for m in stalls] == pytest.approx([t for t, lag in ticks if lag >= 100], abs=1e-4)
    for m in stalls:
        assert 0 < m.position <= len(replay) and replay.time_at(m.position) <= m.time + 1e-3


# -- bad input ---------------------------------------------------------------------

def write_lines(path, lines, *, end="\n"):
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return str(path)


def plain_recording(tmp_path) -> list[str]:
    path = tmp_path / "good.jsonl"
    record(path, SEED_001.replace(customers=30), compress=False, keyframe_every=20)
    return path.read_text().splitlines()


def test_not_a_recording(tmp_path):
    for content, says in [("", "empty"), ("hello\nworld\n", "not a recording"),
                          ('{"format": "something-else", "version": 1}\n', "not a recording"),
                          ("[1, 2]\n", "not a recording")]:
        path = tmp_path / "x.txt"
        path.write_text(content)
        with pytest.raises(RecordingError) as err:
            open_recording(str(path))
        assert says in str(err.value) and str(err.value).startswith("x.txt")
    with pytest.raises(RecordingError, match="cannot read it"):
        open_recording(str(tmp_path / "missing.jsonl"))


def test_newer_version_is_refused_with_what_to_do(tmp_path):
    lines = plain_recording(tmp_path)
    header = json.loads(lines[0])
    header["version"] = VERSION + 1
    path = write_lines(tmp_path / "new.jsonl", [json.dumps(header)] + lines[1:])
    with pytest.raises(RecordingError) as err:
        open_recording(path)
    assert err.value.line == 1 and f"version {VERSION + 1}" in err.value.message
    assert "update lanemon" in str(err.value)


def test_malformed_line_names_its_number(tmp_path):
    lines = plain_recording(tmp_path)
    bad = lines[:6] + ["this is not json"] + lines[6:]
    with pytest.raises(RecordingError) as err:
        open_recording(write_lines(tmp_path / "bad.jsonl", bad))
    assert err.value.line == 7 and "bad.jsonl line 7: not a line of a recording" in str(err.value)
    for broken_keyframe in ('["K","x",0.0,{}]', '["K",]'):
        with pytest.raises(RecordingError) as err:
            open_recording(write_lines(tmp_path / "k.jsonl", lines[:6] + [broken_keyframe] + lines[6:]))
        assert err.value.line == 7, broken_keyframe
    # the right shape, but broken inside (after the third keyframe): found when the replay
    # first decodes that part; the replay stays where it was
    third = [i for i, line in enumerate(lines) if line.startswith('["K"')][2]
    at = third + 2
    broken = lines[:at] + ['["c",1.0,"arrived",null,null,"C1",null,"",{"y":[1,]}]'] + lines[at + 1:]
    replay = Replay(open_recording(write_lines(tmp_path / "broken.jsonl", broken)))
    replay.seek(5)
    shown = replay.counters_snapshot()
    with pytest.raises(RecordingError) as err:
        replay.seek(json.loads(lines[third])[1] + 3)
    assert err.value.line == at + 1 and "broken.jsonl" in str(err.value) and "malformed" in err.value.message
    assert replay.position == 5 and replay.counters_snapshot() == shown
    # well-formed JSON whose change of state names a counter the board does not have: the
    # replay fails partway through applying the block and still shows position 5
    bad_row = '["c",1.0,"arrived",null,null,"C1",null,"",{"c":[[99,"free",null,null,[],null,0,null,null]]}]'
    wrong = lines[:at] + [bad_row] + lines[at + 1:]
    replay = Replay(open_recording(write_lines(tmp_path / "wrong.jsonl", wrong)))
    replay.seek(5)
    with pytest.raises(RecordingError) as err:
        replay.seek(json.loads(lines[third])[1] + 3)
    assert err.value.line == at + 1 and "malformed change of state" in err.value.message
    assert replay.position == 5 and replay.counters_snapshot() == shown


def test_truncated_header_is_refused(tmp_path):
    lines = plain_recording(tmp_path)
    path = tmp_path / "cut.jsonl"
    path.write_text(lines[0][:30])
    with pytest.raises(RecordingError) as err:
        open_recording(str(path))
    assert err.value.line == 1


def test_cut_tail_opens_without_the_cut_line(tmp_path):
    lines = plain_recording(tmp_path)
    n = len(lines)
    cut = lines[: n // 2] + [lines[n // 2][:17]]
    rec = open_recording(write_lines(tmp_path / "cut.jsonl", cut, end=""))
    assert any("was cut short" in w for w in rec.warnings)
    assert any("not closed" in w for w in rec.warnings)
    complete_events = sum(1 for line in lines[1: n // 2] if line.startswith(('["c"', '["l"')))
    replay = Replay(rec)
    assert len(replay) == complete_events
    replay.seek(len(replay))
    assert replay.counters_snapshot() is not None


def test_compressed_recording_cut_anywhere_opens(tmp_path):
    path = tmp_path / "z.jsonl.gz"
    live, _ = record(path, SEED_001.replace(customers=80))
    data = path.read_bytes()
    assert gzip.decompress(data).startswith(b'{"format":"lanemon-recording"')
    cut = tmp_path / "zcut.jsonl.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    rec = open_recording(str(cut))
    assert any("not closed" in w for w in rec.warnings)
    replay = Replay(rec)
    assert 0 < len(replay) < len(live) - 1
    replay.seek(len(replay))
    assert replay.counters_snapshot() == live[len(replay)]


def test_positions_out_of_range_are_refused(seed001):
    replay = seed001[0]
    for bad in (-1, len(replay) + 1):
        with pytest.raises(IndexError):
            replay.seek(bad)
    with pytest.raises(TypeError):
        replay.seek(1.5)
    with pytest.raises(IndexError):
        replay.event(len(replay))


# -- a crash -------------------------------------------------------------------------

CHILD = r"""
import asyncio, sys
from lanemon.counters import SimConfig, Simulation
from lanemon.replay import Recorder

async def main():
    sim = Simulation(SimConfig(strategy="short_lock", customers=None, seed=1), speed=4.0)
    rec = Recorder(sys.argv[1], sources_info={"test": "crash"})
    rec.attach_counters(sim)
    sim.start()
    await asyncio.Event().wait()   # records until killed; never closes

if __name__ == "__main__":
    asyncio.run(main())
"""


def test_sigkill_mid_recording_leaves_a_readable_file(tmp_path):
    path = tmp_path / "crash.jsonl.gz"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, str(script), str(path)], env=env)
    try:
        deadline = time.monotonic() + 60
        events = 0
        while events < 300:  # the writer thread puts the lines on disk while the process runs
            assert child.poll() is None, "the recording process ended by itself"
            assert time.monotonic() < deadline, f"only {events} events reached the file in 60 s"
            time.sleep(0.1)
            try:
                events = len(Replay(open_recording(str(path))))
            except RecordingError:
                events = 0  # header not written yet
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    rec = open_recording(str(path))
    assert any("not closed" in w for w in rec.warnings)
    replay = Replay(rec)
    assert len(replay) >= 300
    replay.seek(len(replay))
    snap = replay.counters_snapshot()
    assert snap.state == "running" and snap.tallies.arrived > 0
    assert snap.tallies.double_assignments == sum(
        1 for i in range(len(replay)) if replay.event(i).kind == "double_assignment")


def test_index_and_whole_read_agree(tmp_path):
    """A closed recording opens through its index; the same file without its index and
    footer (as a crash leaves it) is read whole: same events, states, moments, ticks."""
    ticks = []

    def beat(rec, event):
        lag = 180.0 if len(ticks) % 300 == 150 else 1.0
        ticks.append(event.time)
        rec.heartbeat(event.time, lag)

    config = SimConfig(strategy="short_lock", customers=200, abandon_rate=0.1, time_limit=3600.0, seed=2)
    live, events = record(tmp_path / "a.jsonl.gz", config, heartbeat=beat)
    data = (tmp_path / "a.jsonl.gz").read_bytes()
    indexed = open_recording(str(tmp_path / "a.jsonl.gz"))
    assert indexed.moments is not None and indexed.warnings == []
    at = int(json.loads(gzip.decompress(data[-48:]))[1])
    (tmp_path / "b.jsonl.gz").write_bytes(data[:at])
    whole = open_recording(str(tmp_path / "b.jsonl.gz"))
    assert whole.moments is None and whole.closed  # the "E" line is there: only the index is gone
    a, b = Replay(indexed), Replay(whole)
    assert len(a) == len(b) == len(events)
    for k in range(0, len(a) + 1, 7):
        a.seek(k)
        b.seek(k)
        assert a.counters_snapshot() == b.counters_snapshot() == live[k]
    assert a.heartbeat(0, 1e9) == b.heartbeat(0, 1e9) and len(a.heartbeat(0, 1e9)[0]) == len(ticks)
    ma, mb = a.moments(), b.moments()
    assert [(m.index, m.kind, m.title, m.time) for m in ma if m.kind != "long stall"] == \
        [(m.index, m.kind, m.title, m.time) for m in mb if m.kind != "long stall"]
    stalls = [m for m in ma if m.kind == "long stall"]
    assert len(stalls) == len(ticks) // 300 + (len(ticks) % 300 > 150) > 0
    assert [m.time for m in stalls] == pytest.approx([m.time for m in mb if m.kind == "long stall"], abs=1e-4)


def test_replay_imports_no_qt_and_no_numpy():
    code = ("import sys, lanemon.replay, lanemon.replay.lanes_state; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'numpy', 'pyqtgraph', 'qasync')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "[]"


FULL_DISK = r"""
import json, resource, signal, sys
from lanemon.counters import SimConfig, Simulation, run_in_virtual_time
from lanemon.replay import Recorder

if __name__ == "__main__":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))
    sim = Simulation(SimConfig(strategy="short_lock", customers=400, time_limit=3600.0))
    rec = Recorder(sys.argv[1], sources_info={}, clock=sim.clock.now, compress=False)
    rec.attach_counters(sim)
    run_in_virtual_time(sim.run())
    rec.close()
    print(json.dumps({"error": rec.error, "events": rec.events_written}))
"""


def test_a_write_that_fails_stops_the_recording_and_keeps_what_was_written(tmp_path):
    """The file cannot grow past 30 kB (RLIMIT_FSIZE): the recorder says why it stopped,
    the run itself goes on, and what reached the file opens."""
    path = tmp_path / "full.jsonl"
    script = tmp_path / "full.py"
    script.write_text(FULL_DISK)
    out = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["error"].startswith(f"cannot write {path}: File too large")
    assert os.path.getsize(path) <= 30_000
    rec = open_recording(str(path))
    assert any("not closed" in w for w in rec.warnings)
    assert 0 < len(Replay(rec)) < result["events"]


@pytest.mark.parametrize("strategy", ["short_lock", "claim"])
def test_replay_equals_live_on_real_time(tmp_path, strategy):
    """On the real clock, time moves between the reads of one snapshot (its time, the
    counters' TTLs, the tallies' elapsed) and between two snapshots of one event: compared
    here is the snapshot the recorder took in each event's callback (kept on its way out of
    ``Simulation.snapshot``), which the replay must rebuild exactly."""
    path = tmp_path / "live.jsonl.gz"
    seen = []

    async def main():
        sim = Simulation(SimConfig(strategy=strategy, customers=150, abandon_rate=0.1, seed=9), speed=20.0)
        take = sim.snapshot

        def snapshot():
            snap = take()
            seen.append(snap)  # on return: an expired event noticed inside comes first, as recorded
            return snap

        sim.snapshot = snapshot
        rec = Recorder(str(path), sources_info={"test": "real time"}, keyframe_every=10**9)
        rec.attach_counters(sim)
        await sim.run()
        rec.close()
        assert rec.events_written == len(seen) - 1  # one snapshot per event, and the attach keyframe's

    asyncio.run(main())
    replay = Replay(open_recording(str(path)))
    assert len(replay) == len(seen) - 1 > 400
    assert seen[1].time != seen[1].tallies.elapsed or seen[2].time != seen[2].tallies.elapsed, \
        "the clock did not move within a snapshot: this test would show nothing"
    for k in range(len(replay) + 1):
        replay.seek(k)
        got = replay.counters_snapshot()
        assert got == seen[k], f"position {k}: {differences(got, seen[k])} differ"


def test_a_file_that_cannot_be_written_is_refused_at_once(tmp_path):
    with pytest.raises(OSError):
        Recorder(str(tmp_path / "no-such-folder" / "r.jsonl.gz"), sources_info={})
    if os.path.exists("/dev/full"):  # the header's write fails: no space left
        with pytest.raises(OSError):
            Recorder("/dev/full", sources_info={})
