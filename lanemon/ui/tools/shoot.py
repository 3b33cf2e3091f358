"""The README screenshot, reproducibly: ``python -m lanemon.ui.tools.shoot out.png``.

Opens the window at 1280×800 (offscreen unless a platform is set), waits for
this machine's measurements, runs a whole, a sliced and a warm worker run of
the same job (about ``--ms`` of CPU, 450 by default, so the whole run's stall
is plain to see), and saves the window. ``--presenter`` shoots presenter mode
(``resources/presenter.png``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

# Nothing heavy at import time: a worker process started from here imports
# this module as its ``__main__`` (multiprocessing's spawn/forkserver rule).


async def scenario(win, out: str, job_ms: float, pause_s: float, presenter: bool = False) -> None:
    from lanemon.ui.tools.testing import wait_until

    if presenter:
        win.talk.set_presenter(True)

    c = win.controller
    panel = win.runs_panel
    await wait_until(lambda: c.machine.warm_roundtrip_ms is not None or c.machine.errors, 60)
    total = c.iterations_for_ms(job_ms)
    total = max(100_000, round(total, -5))
    panel.set_job(total, "iterations")
    panel.worker_kind.setCurrentText("warm")
    await asyncio.sleep(pause_s)
    for start in (panel.run_whole, panel.run_sliced, panel.run_worker):
        before = len(c.records)
        start()
        await wait_until(lambda before=before: len(c.records) > before and c.records[-1].status != "running", 120)
        await asyncio.sleep(pause_s)
    await asyncio.sleep(0.3)
    from lanemon.ui.shell.exports import save_png

    image = save_png(win, out)
    print(f"screenshot written to {out} ({image.width()}×{image.height()})")


def shoot(out: str, job_ms: float = 450.0, pause_s: float = 1.6, presenter: bool = False) -> int:
    from lanemon.ui.tools.testing import shoot_window

    return shoot_window(lambda win: scenario(win, out, job_ms, pause_s, presenter), size=(1280, 800))


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lanemon.ui.tools.shoot", description=__doc__.splitlines()[0])
    p.add_argument("out", help="PNG file to write")
    p.add_argument("--ms", type=float, default=450.0, help="CPU time of the job in ms (default 450)")
    p.add_argument("--presenter", action="store_true", help="presenter mode (large type, dark theme)")
    args = p.parse_args(argv)
    return shoot(args.out, args.ms, presenter=args.presenter)


if __name__ == "__main__":
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    sys.exit(cli())
