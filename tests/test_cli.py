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
    ["measure", "--slice-size", "10", "--slice-ms", "5"],
    ["measure", "--worker", "fork"],
    ["measure", "--out", "/no/such/folder/r.json"],
    ["bench", "nosuch"],
    ["frobnicate"],
])
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
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
