"""The probe in real programs (subprocesses): what a listener hears, clean exits, and the CLI."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lanemon.probe.wire import Block, Summary, decode, encode

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

VICTIM = textwrap.dedent('''
    import asyncio, socket, sys, time
    import lanemon.probe

    def crunch_numbers():
        end = time.perf_counter() + 0.2
        n = 0
        while time.perf_counter() < end:
            n += 1
        return n

    async def blocker():
        crunch_numbers()

    async def main(port):
        probe = lanemon.probe.start(name="victim", address=f"127.0.0.1:{port}")
        await asyncio.sleep(0.5)
        await asyncio.create_task(blocker(), name="the-blocker")
        await asyncio.sleep(0.5)
        await probe.stop()
        print("last_seq", probe.last_seq, "errors", probe.send_errors, flush=True)
        await asyncio.sleep(0.3)          # the loop runs on after stop(): nothing may be sent now
        end = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        end.sendto(b"END", ("127.0.0.1", port))
        end.close()

    asyncio.run(main(int(sys.argv[1])))
''')


@pytest.fixture
def inbox():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    yield sock
    sock.close()


def receive_until(sock, done, timeout=60.0) -> list[bytes]:
    """Datagrams until ``done(datagrams)`` is true (or the timeout: the test then fails on its asserts)."""
    got: list[bytes] = []
    end = time.monotonic() + timeout
    while not done(got) and time.monotonic() < end:
        try:
            got.append(sock.recv(65536))
        except TimeoutError:
            pass
    return got


def _run_until_end(inbox, script):
    """Run ``script`` (it sends to ``inbox``'s port, then an END marker) to its end:
    (process, datagrams up to END, stdout, stderr); the process is gone afterwards."""
    port = inbox.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(script), str(port)], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        got = receive_until(inbox, lambda g: b"END" in g)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, got, out, err


def test_a_real_program_blocked_in_a_named_function(inbox, tmp_path):
    script = tmp_path / "victim.py"
    script.write_text(VICTIM)
    proc, got, out, err = _run_until_end(inbox, script)
    assert proc.returncode == 0, err
    assert got and got[-1] == b"END", "the END marker came last: nothing was sent after stop()"
    inbox.settimeout(0.01)
    with pytest.raises(TimeoutError):
        inbox.recv(65536)                    # and nothing after it either (the program has exited)
    items = [decode(d) for d in got[:-1]]
    last_seq = int(out.split()[1])
    assert [i.seq for i in items] == list(range(last_seq + 1))
    assert out.split()[3] == "0"
    summaries = [i for i in items if isinstance(i, Summary)]
    blocks = [i for i in items if isinstance(i, Block)]
    assert len(summaries) >= 3 and all(s.name == "victim" and s.pid == proc.pid for s in summaries)
    assert any(s.max >= 150 for s in summaries)             # the stall shows in the lag too
    (block,) = blocks
    assert 180 <= block.duration_ms <= 400
    assert block.task == "the-blocker"
    assert any(f.endswith(" crunch_numbers") for f in block.stack)
    top_frames, top_count = block.folded[0]
    assert top_frames[0].endswith(" crunch_numbers") and top_count >= block.samples / 2
    assert all(f.startswith(str(script)) for f in top_frames[:2])


def test_under_uvloop_when_it_is_installed(inbox, tmp_path):
    pytest.importorskip("uvloop")  # in the test extra (not on Windows: none there); the probe needs only call_later
    script = tmp_path / "victim_uv.py"
    script.write_text(VICTIM.replace("asyncio.run(main(", "import uvloop; uvloop.run(main("))
    proc, got, out, err = _run_until_end(inbox, script)
    assert proc.returncode == 0, err
    (block,) = [i for i in map(decode, got[:-1]) if isinstance(i, Block)]
    assert 180 <= block.duration_ms <= 400 and block.task == "the-blocker"
    assert block.folded[0][0][0].endswith(" crunch_numbers")


def test_a_program_that_never_stops_its_probe_still_exits(tmp_path, inbox):
    script = tmp_path / "forgetful.py"
    script.write_text(textwrap.dedent('''
        import asyncio, sys, threading, time
        import lanemon.probe

        async def main(port):
            lanemon.probe.start(address=f"127.0.0.1:{port}", block_ms=20)
            await asyncio.sleep(0.1)
            time.sleep(0.1)
            await asyncio.sleep(0.1)
            print(sorted(t.name for t in threading.enumerate()), flush=True)

        asyncio.run(main(int(sys.argv[1])))
        time.sleep(0.2)   # the loop is closed and the watchdog thread still there: no error, an exit
    '''))
    result = subprocess.run([sys.executable, str(script), str(inbox.getsockname()[1])], env=ENV,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "lanemon-watchdog" in result.stdout
    assert result.stderr == ""


def test_importing_the_probe_loads_no_qt_numpy_or_qasync():
    code = ("import sys, lanemon.probe, lanemon.probe.book, lanemon.probe.listen, lanemon.probe.demo; "
            "print([m for m in sys.modules if m.split('.')[0] in ('PySide6', 'numpy', 'qasync', 'shiboken6', "
            "'pyqtgraph')])")
    result = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_cli_listen_prints_json_lines_and_counts_garbage(inbox):
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "probe", "listen", "--json", "--seconds", "3",
                             "--address", "127.0.0.1:0"], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
        assert first.startswith("listening on 127.0.0.1:"), first
        port = int(first.rsplit(":", 1)[1])
        summary = Summary(period_ms=10, ticks=9, p50=0.4, p99=1.2, max=1.3, window_ms=100, name="x", pid=5,
                          host="h", seq=0)
        block = Block(duration_ms=210.0, ago_ms=215.0, task=None, stack=("f.py:1 spin",),
                      folded=((("f.py:1 spin",), 40),), samples=40, name="x", pid=5, host="h", seq=1)
        for data in (encode(summary), b"{garbage", encode(block), b"x" * 40000):
            inbox.sendto(data, ("127.0.0.1", port))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [d["kind"] for d in lines] == ["summary", "block"]
    assert lines[1]["folded"] == [[["f.py:1 spin"], 40]] and lines[1]["duration_ms"] == 210.0
    assert "received 2, dropped: not_json 1, too_big 1" in err


def test_cli_listen_refuses_a_taken_port_in_one_line(inbox):
    port = inbox.getsockname()[1]
    result = subprocess.run([sys.executable, "-m", "lanemon", "probe", "listen", "--address", f"127.0.0.1:{port}",
                             "--seconds", "1"], env=ENV, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith(f"lanemon: error: cannot listen on 127.0.0.1:{port}")
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_demo_blocks_in_its_named_functions(inbox):
    port = inbox.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "probe", "demo", "--seconds", "2.4", "--every", "0.5",
                             "--address", f"127.0.0.1:{port}"], env=ENV, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        got = receive_until(inbox, lambda g: proc.poll() is not None)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    blocks = [i for i in map(decode, got) if isinstance(i, Block)]
    culprits = {b.folded[0][0][0].rsplit(" ", 1)[1] for b in blocks}
    culprits |= {f.rsplit(" ", 1)[1] for b in blocks for f in b.folded[0][0]}
    assert {"hash_a_lot", "sleep_in_loop", "read_file_sync"} <= culprits
    assert all(150 <= b.duration_ms <= 400 for b in blocks)
