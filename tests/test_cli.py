"""The lanemon command: output and exit codes (in-process and as a process)."""

import json
import subprocess
import sys

import pytest

from lanemon import __version__
from lanemon.cli import main
from lanemon.work import hash_range


def test_place_prints_word_then_reason(capsys):
    assert main(["place", "--cpu-ms", "80"]) == 0
    word, reason = capsys.readouterr().out.splitlines()
    assert word == "worker" and "threshold" in reason


def test_place_shared_state_and_threshold(capsys):
    assert main(["place", "--cpu-ms", "80", "--shared-state"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "slice"
    assert main(["place", "--cpu-ms", "80", "--threshold-ms", "100"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "slice"
    assert main(["place", "--cpu-ms", "0.5"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "loop"


@pytest.fixture
def no_work(monkeypatch):
    """Bad input is refused before any work: a measure or benchmark that starts fails the test."""
    import lanemon.bench
    import lanemon.work.report

    def started(*_args, **_kwargs):
        raise AssertionError("work started on bad input")

    monkeypatch.setattr(lanemon.work.report, "measure", started)
    monkeypatch.setattr(lanemon.bench, "run", started)


@pytest.mark.parametrize("argv", [
    ["place"],
    ["place", "--cpu-ms", "nan"],
    ["place", "--cpu-ms", "abc"],
    ["place", "--cpu-ms", "-1"],
    ["place", "--cpu-ms", "5", "--threshold-ms", "0"],
    ["measure", "--total", "-5"],
    ["measure", "--total", "ten"],
    ["measure", "--slice-size", "0"],
    ["measure", "--slice-ms", "0"],
    ["measure", "--slice-ms", "1e306"],          # the slice size overflowed after the whole run
    ["measure", "--slice-size", "10", "--slice-ms", "5"],
    ["measure", "--worker", "fork"],
    ["measure", "--out", "/no/such/folder/r.json"],
    ["bench", "nosuch"],
    ["frobnicate"],
    # a job of no iterations has no times to compare (the ratios were meaningless)
    ["measure", "--total", "0"],
    # above MAX_TOTAL: the whole run never ended in practice
    ["measure", "--total", "99999999999999999999999"],
    ["measure", "--total", "500_000_001"],
    # an empty output name was ignored after the whole run
    ["measure", "--out", ""],
    ["measure", "--out", "   "],
    ["bench", "lag", "--json", ""],
    ["--version", "extra"],
    ["--version", "measure"],
])
def test_bad_input_is_one_line_and_exit_2(argv, capsys, no_work):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lanemon: error:")


def test_version_as_a_process():
    out = subprocess.run([sys.executable, "-m", "lanemon", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"lanemon {__version__}"


def test_bad_input_as_a_process_has_no_traceback():
    out = subprocess.run([sys.executable, "-m", "lanemon", "place", "--cpu-ms", "x"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_measure_writes_report_and_summary(tmp_path):
    out_file = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "lanemon", "measure", "--total", "200000", "--slice-size", "20000",
         "--worker", "warm", "--out", str(out_file)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out_file.read_text())
    assert {r["result"] for r in report["runs"].values()} == {hash_range(0, 200_000)}
    assert report["runs"]["sliced"]["slices"] == 10
    assert "all three equal" in proc.stdout
    assert "whole:" in proc.stderr  # progress went to stderr


def test_window_without_a_display_is_one_line_not_an_abort():
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = subprocess.run([sys.executable, "-m", "lanemon"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("lanemon: error: no display") and out.stderr.count("\n") == 1


def test_the_largest_total_is_accepted(monkeypatch, capsys):
    """MAX_TOTAL itself is a valid size (the refusal is above it), shared with the window."""
    import lanemon.work.report
    from lanemon.ui.runs import panel as runs_panel
    from lanemon.work.runs import MAX_TOTAL

    class Accepted(Exception):
        """Stop here: the size got through to the measurement."""

    async def fake_measure(total, **_kwargs):
        raise Accepted(total)

    monkeypatch.setattr(lanemon.work.report, "measure", fake_measure)
    with pytest.raises(Accepted) as caught:
        main(["measure", "--total", str(MAX_TOTAL)])
    assert caught.value.args == (MAX_TOTAL,)
    assert runs_panel.MAX_TOTAL is MAX_TOTAL


def _full_disk(monkeypatch):
    """Every JSON write lanemon.files makes runs out of space half-way through."""
    import errno
    import os

    import lanemon.files

    class FullDisk:
        @staticmethod
        def dump(_data, fh, **_kwargs):
            fh.write('{"runs": {"whole": ')
            fh.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(lanemon.files, "json", FullDisk)


TINY = ["measure", "--total", "3000", "--slice-size", "1000", "--worker", "thread"]


def test_a_report_that_cannot_be_written_is_one_line_exit_2_and_nothing_half_written(tmp_path, monkeypatch, capsys):
    """Regression: a full disk at the end of measure was a traceback and exit 1."""
    target = tmp_path / "r.json"
    target.write_text("the older report\n")
    _full_disk(monkeypatch)
    assert main([*TINY, "--out", str(target)]) == 2
    out, err = capsys.readouterr()
    assert "all three equal" in out and str(hash_range(0, 3000)) in out   # the result is not lost
    assert "report written" not in out
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"lanemon: error: cannot write {target}: No space left on device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]     # no temporary file left
    assert target.read_text() == "the older report\n"                   # the older file intact


def test_a_folder_removed_during_the_run_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    import shutil

    import lanemon.work.report

    folder = tmp_path / "out"
    folder.mkdir()
    real = lanemon.work.report.measure

    async def measure_then_remove_the_folder(*args, **kwargs):
        report = await real(*args, **kwargs)
        shutil.rmtree(folder)
        return report

    monkeypatch.setattr(lanemon.work.report, "measure", measure_then_remove_the_folder)
    target = folder / "r.json"
    assert main([*TINY, "--out", str(target)]) == 2
    out, err = capsys.readouterr()
    assert "all three equal" in out
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"lanemon: error: cannot write {target}: No such file or directory"
    assert not folder.exists()


def test_bench_figures_that_cannot_be_written_are_one_line_exit_2(tmp_path, monkeypatch, capsys):
    import lanemon.bench

    def tiny_bench(name, out=print):
        out(f"{name}: 1.0 ms (a stand-in figure)")
        return {"ms": 1.0}

    monkeypatch.setattr(lanemon.bench, "run", tiny_bench)
    _full_disk(monkeypatch)
    target = tmp_path / "b.json"
    assert main(["bench", "lag", "--json", str(target)]) == 2
    out, err = capsys.readouterr()
    assert "lag: 1.0 ms" in out and "figures written" not in out
    assert err.strip().splitlines() == [f"lanemon: error: cannot write {target}: No space left on device"]
    assert list(tmp_path.iterdir()) == []


def test_version_alone_prints_the_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"lanemon {__version__}"


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` now (``lanemon.procs.children``, level by level)."""
    from lanemon.procs import children

    found, todo = [], [pid]
    while todo:
        kids = [kid for kid, _cmd in children(todo.pop())]
        found += kids
        todo += kids
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sigterm_stops_measure_as_ctrl_c_does_its_workers_with_it():
    """SIGTERM killed ``lanemon measure`` at once (its ``finally`` never ran: no worker shut
    down). It is now Ctrl+C's way out: the clean-up runs, one line says so, exit 128 + 15, no
    traceback, and nothing it started is left."""
    import signal

    from procs import until

    from lanemon.procs import alive

    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "measure", "--total", "40000000",
                             "--worker", "cold"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:                  # progress, one line at a time (not a terminal)
            seen.append(line)
            if line.startswith("worker: 40,000,000"):
                break
        below = _descendants(proc.pid)             # the forkserver and the busy cold worker
        proc.send_signal(signal.SIGTERM)
        err = "".join(seen) + proc.stderr.read()
        rc = proc.wait(60)
    finally:
        proc.kill()
    assert rc == 128 + signal.SIGTERM, err
    assert "lanemon: stopped by signal 15" in err and "Traceback" not in err
    assert below
    until(lambda: not [p for p in below if alive(p)], f"nothing {below} left that measure started", 20)
