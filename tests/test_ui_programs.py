"""The Programs tab, the probed programs on the heartbeat chart, and the window's own watchdog.

Offscreen, on a real qasync loop where the window runs. Probed programs are real asyncio
programs in subprocesses (``lanemon.probe`` sending to the window's port), or datagrams built
with ``lanemon.probe.wire.encode`` when only the view is under test. No timed asserts: every
wait is for a condition.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lanemon.probe import wire
from lanemon.probe.book import ProbeBook
from lanemon.ui.tools.testing import run_window, wait_until

ROOT = Path(__file__).resolve().parent.parent

APP = "/srv/shop/app.py"
LOOP = "/usr/lib/python3.11/asyncio/events.py:80 _run"


@pytest.fixture(autouse=True)
def _app(window_app):
    return window_app


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _summary(name, pid, seq, p99):
    return wire.encode(wire.Summary(period_ms=10, ticks=10, p50=p99 / 2, p99=p99, max=p99 * 1.5,
                                    window_ms=100, name=name, pid=pid, host="box", seq=seq))


def _block(name, pid, seq, folded, duration_ms=210.0, task="Task-7"):
    stack = folded[0][0]
    return wire.encode(wire.Block(duration_ms=duration_ms, ago_ms=duration_ms + 5, task=task, stack=stack,
                                  folded=folded, samples=sum(c for _f, c in folded), name=name, pid=pid,
                                  host="box", seq=seq))


def test_two_programs_are_two_rows_two_colours_and_a_block_says_where_its_time_went(qtbot):
    from lanemon.ui.programs.view import ProgramsView

    clock = Clock()
    book = ProbeBook(clock=clock)
    view = ProgramsView(book, clock=clock)
    qtbot.addWidget(view)
    view.resize(900, 600)
    folded = ((("/usr/lib/python3.11/json/decoder.py:353 JSONDecoder.raw_decode", f"{APP}:42 load_catalog",
                LOOP), 30),
              ((f"{APP}:60 price_all", LOOP), 10))
    for i in range(5):
        clock.t += 0.1
        assert book.feed(_summary("shop", 101, i, 3.0 + i), ("127.0.0.1", 5000))
        assert book.feed(_summary("cart", 202, i, 1.0), ("127.0.0.1", 5001))
    assert book.feed(_block("shop", 101, 5, folded), ("127.0.0.1", 5000))
    view.refresh_now()

    t = view.programs_table
    assert t.rowCount() == 2
    rows = [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(2)]
    assert rows[0][0].endswith("cart") and rows[0][1] == "202"            # sorted by name
    assert rows[1][0].endswith("shop") and rows[1][1] == "101"
    assert rows[1][4] == "7.0 ms" and rows[1][5] == "1"                    # p99 now, blocks / min
    colours = {t.item(r, 0).foreground().color().name() for r in range(2)}
    assert len(colours) == 2

    b = view.blocks_table
    assert b.rowCount() == 1
    assert b.item(0, 2).text() == "210 ms"
    assert b.item(0, 3).text() == "load_catalog"                           # the program's own frame
    assert b.item(0, 4).text() == "Task-7"
    assert view.where_rows() == []
    b.selectRow(0)                                                         # a click on the block
    rows = view.where_rows()
    assert rows[0][:3] == ("75%", "JSONDecoder.raw_decode", "json/decoder.py:353")
    assert rows[0][3] == "load_catalog"
    assert rows[1][:2] == ("25%", "price_all")
    assert "Task-7" in view.where_title.text() and "40 samples" in view.where_title.text()

    clock.t += 6.0                                                         # silent past stale_s
    view.refresh_now()
    assert "(stale)" in t.item(0, 0).text() and "(stale)" in t.item(1, 0).text()
    assert b.rowCount() == 1 and b.selectionModel().selectedRows()[0].row() == 0   # still chosen


PROGRAM = textwrap.dedent('''
    import asyncio
    import sys
    import time

    import lanemon.probe


    def crunch_numbers(ms):
        end = time.perf_counter() + ms / 1000
        n = 0
        while time.perf_counter() < end:
            n += 1
        return n


    async def main(name, address):
        loop = asyncio.get_running_loop()
        stdin_closed = loop.run_in_executor(None, sys.stdin.read)
        async with lanemon.probe.watch(name=name, address=address):
            while not stdin_closed.done():
                await asyncio.wait([stdin_closed], timeout=0.6)
                if not stdin_closed.done():
                    crunch_numbers(200)


    asyncio.run(main(sys.argv[1], sys.argv[2]))
''')


def _start_program(tmp_path: Path, name: str, address: str) -> subprocess.Popen:
    script = tmp_path / f"{name}.py"
    script.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, str(script), name, address], stdin=subprocess.PIPE, env=env)


def _end(procs: list[subprocess.Popen]) -> list[int]:
    codes = []
    for p in procs:
        try:
            p.stdin.close()
            codes.append(p.wait(timeout=30))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes.append(-9)
    return codes


def test_two_real_probed_programs_appear_as_rows_and_coloured_lines_with_their_blocks(qtbot, tmp_path):
    procs: list[subprocess.Popen] = []

    async def scenario(win):
        view = win.programs_view
        await wait_until(lambda: view.bound is not None, 10)
        for name in ("orders", "billing"):
            procs.append(_start_program(tmp_path, name, view.bound))
        book = view.book

        def both_blocked() -> bool:
            progs = book.programs()
            return len(progs) == 2 and all(book.blocks(p.key) for p in progs)

        await wait_until(both_blocked, 60)
        win.show_view("programs")
        await wait_until(lambda: view.programs_table.rowCount() == 2 and view.blocks_table.rowCount() >= 2, 10)
        overlay = win.chart.programs
        await wait_until(lambda: len(overlay.keys) == 2 and all(overlay.points(k) > 1 for k in overlay.keys), 10)
        view.blocks_table.selectRow(0)
        progs = book.programs()
        return ({p.name for p in progs}, {p.pid for p in progs} == {p.pid for p in procs},
                set(overlay.colors().values()), [text for text, _colour, _stale in overlay.legend()],
                [b for p in progs for b in book.blocks(p.key)], view.blocks_table.item(0, 3).text(),
                view.where_rows(), win.chart.legend.isVisible(), view)

    try:
        rc, value, errors = run_window(scenario)
    finally:
        codes = _end(procs)
    assert rc == 0 and errors == []
    names, pids_match, colours, labels, blocks, culprit_cell, where, legend_shown, view = value
    assert names == {"orders", "billing"} and pids_match
    assert len(colours) == 2
    assert [label.split(" · ")[0] for label in labels] == ["billing", "orders"]    # the chart's legend
    assert legend_shown
    for block in blocks:
        assert 150 <= block.duration_ms <= 400, block.duration_ms        # ~200 ms stalls, wide margin
    assert culprit_cell == "crunch_numbers"
    assert where[0][1] == "crunch_numbers"
    assert codes == [0, 0]                                                # the probes let them exit
    assert view.transport is None                                         # closed at shutdown: the port is free
    host, port = view.bound.rsplit(":", 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
        again.bind((host, int(port)))


def test_a_port_in_use_is_a_warning_and_the_window_stays_up(qtbot):
    from lanemon.ui.shell.main_window import MainWindow

    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    taken.bind(("127.0.0.1", 0))
    address = f"127.0.0.1:{taken.getsockname()[1]}"
    try:
        win = MainWindow(probe_address=address)

        async def scenario(win):
            await wait_until(lambda: win.warning.isVisible(), 10)
            ticks = win.heartbeat.count
            await wait_until(lambda: win.heartbeat.count > ticks + 5, 10)    # still running
            win.programs_view.refresh_now()
            return win.warning.text(), win.programs_view.head.text(), win.programs_view.transport

        rc, (warning, head, transport), errors = run_window(scenario, window=win)
    finally:
        taken.close()
    assert rc == 0 and errors == []
    assert "not listening" in warning and address in warning
    assert "not listening" in head
    assert transport is None


def test_a_whole_run_stalls_the_window_and_its_chart_names_hash_range(qtbot):
    async def scenario(win):
        c = win.controller
        # wait for the start-up measurements (starting processes stalls the loop a little)
        await wait_until(lambda: c.machine.warm_roundtrip_ms is not None or c.machine.errors, 60)
        assert win.own_watchdog.running
        rec = c.start_whole(c.iterations_for_ms(400))
        assert rec is not None
        await wait_until(lambda: rec.status != "running", 60)

        def in_run():
            # other stalls (start-up, a slow machine's first paint) may be on the chart too:
            # the run's own is the one that starts while it runs
            return [b for b in win.chart.own_blocks
                    if rec.t_start - 0.1 <= b.t_start <= rec.t_end and b.duration_ms >= 200]

        await wait_until(in_run, 10)
        await wait_until(lambda: any("hash_range" in t for t in win.chart.own_block_labels()), 10)
        block = max(in_run(), key=lambda b: b.duration_ms)
        return rec, block, win.chart.own_block_labels()

    rc, (rec, block, labels), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert rec.status == "done"
    assert block.culprit == "hash_range", (block.culprit, block.duration_ms, block.folded[:3])
    assert any(t.startswith("blocked ") and t.endswith("in hash_range") for t in labels)
