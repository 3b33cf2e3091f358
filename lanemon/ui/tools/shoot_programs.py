"""Two probed programs in the window, reproducibly: ``python -m lanemon.ui.tools.shoot_programs out.png``.

Opens the window (1280×800; ``--presenter``: presenter mode at 1024×768),
listening on a free port; starts two small asyncio programs with
``lanemon.probe`` sending to it ("orders" blocks its loop in
``crunch_numbers``, pure CPU, "billing" in ``load_catalog``, a ``time.sleep``
and a JSON parse, each every few seconds); waits ``--seconds`` while their
lines and blocks come in, picks billing's newest block in the Programs tab, saves
the window, then ends both programs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys

# Nothing heavy at import time: a worker process started from here imports
# this module as its ``__main__`` (multiprocessing's spawn/forkserver rule).

PROGRAM = '''
import asyncio, json, sys, time
import lanemon.probe

def crunch_numbers(ms):
    end = time.perf_counter() + ms / 1000
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n

def parse(text):
    return json.loads(text)

def load_catalog(ms):
    time.sleep(ms / 2000)
    text = json.dumps([{"sku": i, "name": "item %d" % i} for i in range(20000)])
    end = time.perf_counter() + ms / 2000
    while time.perf_counter() < end:
        parse(text)

async def main(name, address, every_s, ms):
    loop = asyncio.get_running_loop()
    done = loop.run_in_executor(None, sys.stdin.read)
    block = crunch_numbers if name == "orders" else load_catalog
    async with lanemon.probe.watch(name=name, address=address):
        while not done.done():
            await asyncio.wait([done], timeout=every_s)
            if not done.done():
                block(ms)

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])))
'''

PROGRAMS = (("orders", 2.2, 180.0), ("billing", 3.1, 260.0))


async def scenario(win, out: str, seconds: float, presenter: bool) -> None:
    from lanemon.ui.tools.testing import wait_until

    if presenter:
        win.talk.set_presenter(True)
    view = win.programs_view
    await wait_until(lambda: view.bound is not None or view.listen_error is not None, 10)
    if view.bound is None:
        raise RuntimeError(view.listen_error)
    procs = _start_programs(view.bound)
    try:
        win.show_view("programs")
        await asyncio.sleep(seconds)
        view.refresh_now()
        t = view.blocks_table
        rows = [r for r in range(t.rowCount()) if t.item(r, 3).text() == "load_catalog"]
        if rows or t.rowCount():
            t.selectRow(rows[0] if rows else 0)     # billing's: a stack through the json module
        await asyncio.sleep(0.3)
        from lanemon.ui.shell.exports import save_png

        image = save_png(win, out)
        print(f"screenshot written to {out} ({image.width()}×{image.height()})")
    finally:
        _end_programs(procs)


def _start_programs(address: str) -> list[subprocess.Popen]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return [subprocess.Popen([sys.executable, "-c", PROGRAM, name, address, str(every), str(ms)],
                             stdin=subprocess.PIPE, env=env) for name, every, ms in PROGRAMS]


def _end_programs(procs: list[subprocess.Popen]) -> None:
    """Close their stdin (they stop their probe and exit), kill any that has not after 20 s."""
    for p in procs:
        p.stdin.close()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def shoot(out: str, seconds: float = 9.0, presenter: bool = False) -> int:
    from lanemon.ui.tools.testing import shoot_window

    os.environ.setdefault("LANEMON_PROBE_ADDRESS", "127.0.0.1:0")   # any free port: not the user's 47200
    size = (1024, 768) if presenter else (1280, 800)
    return shoot_window(lambda win: scenario(win, out, seconds, presenter), size=size)


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lanemon.ui.tools.shoot_programs",
                                description=__doc__.splitlines()[0])
    p.add_argument("out", help="PNG file to write")
    p.add_argument("--seconds", type=float, default=9.0, help="how long the programs run first (default 9)")
    p.add_argument("--presenter", action="store_true", help="presenter mode at 1024x768")
    args = p.parse_args(argv)
    return shoot(args.out, args.seconds, args.presenter)


if __name__ == "__main__":
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    sys.exit(cli())
