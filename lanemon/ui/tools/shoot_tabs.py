"""Every tab at one screen size, reproducibly: ``python -m lanemon.ui.tools.shoot_tabs DIR``.

Opens the window at ``--size`` (1024x768 by default: a projector), in presenter
mode unless ``--normal``, offscreen unless a platform is set; runs a whole, a
sliced and a warm worker run of ~300 ms of CPU, then shows each tab with
something in it (a lanes burst over six workspaces and a held final save, the
counters under the short lock) and saves ``DIR/WxH-TAB.png`` for every tab
through the window's own screenshot action (so each shot's stall is labelled
"screenshot" on the chart, as a user's would be).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

# Nothing heavy at import time: a worker process started from here imports
# this module as its ``__main__`` (multiprocessing's spawn/forkserver rule).


async def scenario(win, out_dir: str, tag: str, presenter: bool) -> list[str]:
    from lanemon.ui.tools.testing import add_simulated_job, wait_until

    written = []

    def shot(key: str) -> None:
        path = os.path.join(out_dir, f"{tag}-{key}.png")
        if win.talk.save_screenshot(path) is None:
            raise RuntimeError(f"screenshot {path} not written")
        written.append(path)

    if presenter:
        win.talk.set_presenter(True)
    c = win.controller
    panel = win.runs_panel
    await wait_until(lambda: c.machine.warm_roundtrip_ms is not None or c.machine.errors, 60)
    panel.set_job(max(100_000, round(c.iterations_for_ms(300), -5)), "iterations")
    panel.worker_kind.setCurrentText("warm")
    await asyncio.sleep(1.0)
    for start in (panel.run_whole, panel.run_sliced, panel.run_worker):
        before = len(c.records)
        start()
        await wait_until(lambda before=before: len(c.records) > before and c.records[-1].status != "running", 120)
        await asyncio.sleep(1.0)
    shot("runs")
    win.show_view("placement")
    await asyncio.sleep(0.5)
    shot("placement")
    win.show_view("lanes")
    view = win.views["lanes"]
    controls = view.controls
    controls.length.setValue(1.5)
    controls.burst_jobs.setValue(24)
    controls.burst_ws.setValue(6)
    controls.burst_button.click()
    await asyncio.sleep(1.0)
    held = await add_simulated_job(view, "ws-02", "reservations", 1.0)
    controls.set_job(held)
    controls.hold_button.click()
    await asyncio.sleep(3.0)
    shot("lanes")
    win.show_view("counters")
    counters = win.views["counters"]
    counters.form.set_strategy("short_lock")
    if not counters.start():
        raise RuntimeError(counters.message.text())
    await asyncio.sleep(3.0)
    shot("counters")
    for key in [k for k in win.views if k not in ("runs", "placement", "lanes", "counters")]:
        win.show_view(key)
        await asyncio.sleep(0.7)
        shot(key)
    for path in written:
        print(f"screenshot written to {path}")
    return written


def shoot(out_dir: str, size: tuple[int, int] = (1024, 768), presenter: bool = True) -> int:
    from lanemon.ui.tools.testing import shoot_window

    os.makedirs(out_dir, exist_ok=True)
    tag = f"{size[0]}x{size[1]}" + ("" if presenter else "-normal")
    return shoot_window(lambda win: scenario(win, out_dir, tag, presenter), size=size)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT, e.g. 1024x768") from None
    if w < 640 or h < 480:
        raise argparse.ArgumentTypeError(f"{text}: at least 640x480")
    return w, h


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lanemon.ui.tools.shoot_tabs", description=__doc__.splitlines()[0])
    p.add_argument("out_dir", help="folder for the PNG files (made if missing)")
    p.add_argument("--size", type=_size, default=(1024, 768), help="window size WIDTHxHEIGHT (default 1024x768)")
    p.add_argument("--normal", action="store_true", help="normal mode instead of presenter mode")
    args = p.parse_args(argv)
    return shoot(args.out_dir, args.size, presenter=not args.normal)


if __name__ == "__main__":
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    sys.exit(cli())
