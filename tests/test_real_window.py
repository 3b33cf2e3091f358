"""The real window on a real X server (Xvfb, Qt's xcb platform), driven as a user would.

Starts its own Xvfb on a free display, starts the installed ``lanemon`` command,
waits for the window, focuses it and types "2" (a sliced run), waits for the
run to finish, presses Ctrl+Shift+S (a screenshot), then Ctrl+Q. The process
must exit 0 with no traceback, and leave no process behind: every process it
started inherits a marker in its environment, and none may carry it after the
exit.

Without Xvfb or xdotool the test is skipped, unless ``LANEMON_REQUIRE_XVFB=1``
(``.ci/run`` sets it): then it fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from procs import Lines, wait_until_none_left

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Xvfb and /proc: Linux only"),
              pytest.mark.timeout(180)]

REQUIRE = os.environ.get("LANEMON_REQUIRE_XVFB") == "1"
MARKER = "LANEMON_REAL_WINDOW_MARKER"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (apt-get install xvfb xdotool)"
        if REQUIRE:
            pytest.fail(message + " and LANEMON_REQUIRE_XVFB=1")
        pytest.skip(message)
    return path


def _lanemon() -> str:
    beside = Path(sys.executable).with_name("lanemon")
    path = str(beside) if beside.exists() else shutil.which("lanemon")
    if path is None:
        message = "the lanemon command is not installed (pip install .)"
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def display(tmp_path, request):
    """A fresh Xvfb (1280x800x24 unless the test asks for another size with
    ``@pytest.mark.parametrize("display", ["1024x768"], indirect=True)``; no TCP);
    its display name, e.g. ":3"."""
    size = getattr(request, "param", "1280x800")
    xvfb = _tool("Xvfb")
    _tool("xdotool")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen([xvfb, "-displayfd", str(write_fd), "-screen", "0", f"{size}x24",
                             "-nolisten", "tcp", "-noreset"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "xvfb.log", "wb"), start_new_session=True)
    os.close(write_fd)
    number = b""
    deadline = time.monotonic() + 30
    try:
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read_fd, 64) if ready else b""
            if not chunk:
                log = (tmp_path / "xvfb.log").read_text(errors="replace")
                raise AssertionError(f"Xvfb did not start (exit {proc.poll()}):\n{log}")
            number += chunk
    finally:
        os.close(read_fd)
    try:
        yield f":{int(number)}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _png_size(path: str) -> tuple[int, int]:
    with open(path, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def _session(display: str, tmp_path: Path):
    """A fresh home, screenshot folder and runtime dir; the window's environment (marked, so
    that every process it starts can be found); and ``xdo(...)``, xdotool on that display."""
    xdotool = _tool("xdotool")
    marker = uuid.uuid4().hex
    home, shots, runtime = tmp_path / "home", tmp_path / "shots", tmp_path / "runtime"
    for d in (home, shots, runtime):
        d.mkdir()
    runtime.chmod(0o700)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LANEMON_NO_SETTINGS", "QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update({
        "DISPLAY": display, "QT_QPA_PLATFORM": "xcb",
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_RUNTIME_DIR": str(runtime),
        "LANEMON_TRACE": "1", "LANEMON_SCREENSHOT_DIR": str(shots), MARKER: marker,
    })
    x_env = {**os.environ, "DISPLAY": display}

    def xdo(*args, timeout_s=30):
        done = subprocess.run([xdotool, *args], env=x_env, capture_output=True, text=True, timeout=timeout_s)
        assert done.returncode == 0, f"xdotool {' '.join(args)}: {done.stderr}"
        return done.stdout

    return marker, shots, env, xdo


@contextlib.contextmanager
def _lanemon_running(lanemon: str, env: dict, cwd: Path, args: tuple[str, ...] = ()):
    """The ``lanemon`` command (with ``args``) in its own session, with its output read line by
    line: ``(proc, out, err)``; killed (its whole session) if it is still running at the end."""
    proc = subprocess.Popen([lanemon, *args], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        yield proc, Lines(proc.stdout), Lines(proc.stderr)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_lanemon_command_in_a_real_x_window(display, tmp_path):
    lanemon = _lanemon()
    marker, shots, env, xdo = _session(display, tmp_path)

    with _lanemon_running(lanemon, env, tmp_path) as (proc, out, err):
        # the window: mapped and shown; then the keyboard focus, as a click would give it
        window = xdo("search", "--sync", "--onlyvisible", "--name", "^lanemon — ").split()[0]
        out.wait_for(r"^lanemon: shown$", 30)
        xdo("windowfocus", "--sync", window)

        xdo("key", "--clearmodifiers", "2")                      # a sliced run, by its shortcut
        out.wait_for(r"^lanemon: run #1 sliced done$", 90)

        xdo("key", "--clearmodifiers", "ctrl+shift+s")           # a screenshot of the window
        path = out.wait_for(r"^lanemon: screenshot (.+\.png)$", 30).group(1)

        xdo("key", "--clearmodifiers", "ctrl+q")                 # quit
        rc = proc.wait(60)
    stdout, stderr = out.rest(), err.rest()

    assert rc == 0, f"exit status {rc}; stderr:\n" + "\n".join(stderr)
    assert not any("Traceback" in line for line in stderr), "\n".join(stderr)
    assert Path(path).parent == shots and Path(path).exists()
    width, height = _png_size(path)
    assert 1000 <= width <= 1280 and 700 <= height <= 800, (width, height)
    assert (tmp_path / "home" / ".config" / "lanemon" / "lanemon.conf").exists()   # settings saved, in the temp home

    # nothing it started outlives it (multiprocessing's helpers leave when their parent has gone)
    left = wait_until_none_left(MARKER, marker, 20)
    assert left == [], f"processes left behind: {left}\nstdout: {stdout}"


@pytest.mark.parametrize("display", ["1024x768"], indirect=True)
def test_the_window_opens_within_a_1024x768_screen(display, tmp_path):
    """On a 1024x768 X screen the window opens inside it (it was 1280x800 whatever the
    screen), in presenter mode too: the screenshot of the whole window fits the screen."""
    lanemon = _lanemon()
    marker, shots, env, xdo = _session(display, tmp_path)

    with _lanemon_running(lanemon, env, tmp_path) as (proc, out, err):
        window = xdo("search", "--sync", "--onlyvisible", "--name", "^lanemon — ").split()[0]
        out.wait_for(r"^lanemon: shown$", 30)
        geometry = xdo("getwindowgeometry", "--shell", window)
        xdo("windowfocus", "--sync", window)
        xdo("key", "--clearmodifiers", "F5")                     # presenter mode
        xdo("key", "--clearmodifiers", "ctrl+shift+s")           # a screenshot of the window
        path = out.wait_for(r"^lanemon: screenshot (.+\.png)$", 30).group(1)
        xdo("key", "--clearmodifiers", "ctrl+q")
        rc = proc.wait(60)
    stdout, stderr = out.rest(), err.rest()

    assert rc == 0, f"exit status {rc}; stderr:\n" + "\n".join(stderr)
    place = dict(line.split("=", 1) for line in geometry.split())
    x, y, w, h = (int(place[k]) for k in ("X", "Y", "WIDTH", "HEIGHT"))
    assert 0 <= x and 0 <= y and x + w <= 1024 and y + h <= 768, geometry
    width, height = _png_size(path)
    assert width <= 1024 and height <= 768, (width, height)
    left = wait_until_none_left(MARKER, marker, 20)
    assert left == [], f"processes left behind: {left}\nstdout: {stdout}"


@pytest.mark.parametrize("display", ["1024x768"], indirect=True)
def test_the_example_talk_runs_from_pagedown_presses(display, tmp_path):
    """``lanemon --talk example.toml`` (the talk ``lanemon talk --example`` prints) on a
    1024x768 screen in presenter mode, walked with PageDown as a clicker sends it: the whole,
    sliced and worker runs of steps 2-4 end, step 6 adds its lanes jobs; a screenshot at
    steps 2 and 6, B blanks the screen, Ctrl+Q quits: exit 0, no process left."""
    lanemon = _lanemon()
    marker, shots, env, xdo = _session(display, tmp_path)
    example = tmp_path / "example.toml"
    printed = subprocess.run([lanemon, "talk", "--example"], env=env, capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    example.write_text(printed.stdout)

    with _lanemon_running(lanemon, env, tmp_path, ("--talk", str(example))) as (proc, out, err):
        window = xdo("search", "--sync", "--onlyvisible", "--name", "^lanemon — ").split()[0]
        out.wait_for(r"^lanemon: shown$", 30)
        out.wait_for(r"^lanemon: talk step 1/12 The heartbeat$", 30)
        xdo("windowfocus", "--sync", window)
        xdo("key", "--clearmodifiers", "F5")                     # presenter mode
        steps, paths = [], {}
        for n in range(2, 7):
            xdo("key", "--clearmodifiers", "Next")               # PageDown, as a clicker sends it
            steps.append(out.wait_for(rf"^lanemon: talk step {n}/12 (.+)$", 30).group(1))
            out.wait_for(rf"^lanemon: talk step {n} ready$", 90)
            if n in (2, 6):
                xdo("key", "--clearmodifiers", "ctrl+shift+s")   # a screenshot of this step
                before = "".join(f"(?!{re.escape(p)}$)" for p in paths.values())   # a new one
                paths[n] = out.wait_for(rf"^lanemon: screenshot {before}(.+\.png)$", 30).group(1)
        runs = [out.wait_for(rf"^lanemon: run #{i} (\w+) (\w+)$", 60).groups() for i in (1, 2, 3)]
        xdo("key", "--clearmodifiers", "b")                      # blank the screen
        out.wait_for(r"^lanemon: talk blank on$", 30)
        xdo("key", "--clearmodifiers", "ctrl+q")
        rc = proc.wait(60)
    stdout, stderr = out.rest(), err.rest()

    assert rc == 0, f"exit status {rc}; stderr:\n" + "\n".join(stderr)
    assert not any("Traceback" in line for line in stderr), "\n".join(stderr)
    assert steps == ["A CPU job blocks the loop", "Slice it", "Move it to a worker", "Where does a job belong?",
                     "Two queues, one lane"]
    assert runs == [("whole", "done"), ("sliced", "done"), ("warm", "done")]
    for n, path in paths.items():
        assert Path(path).parent == shots and Path(path).exists(), n
        width, height = _png_size(path)
        assert width <= 1024 and height <= 768, (n, width, height)
    left = wait_until_none_left(MARKER, marker, 20)
    assert left == [], f"processes left behind: {left}\nstdout: {stdout}"
