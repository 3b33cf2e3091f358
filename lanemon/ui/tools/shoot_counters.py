"""The counters screenshot, reproducibly: ``python -m lanemon.ui.tools.shoot_counters out.png``.

Opens the window at 1280×800 (offscreen unless a platform is set) on the
Counters tab, runs "compare all three" (the table), then a live short-lock
run at the default settings until a double assignment is on the board
(red), and saves the window. ``--live-only`` skips the comparison.
"""

from __future__ import annotations

import argparse
import sys


async def scenario(win, out: str, settle_s: float, compare: bool) -> None:
    import asyncio

    from lanemon.ui.tools.testing import wait_until

    m = win.controller.machine  # the start-up measurements stall the loop a little: let them pass
    await wait_until(lambda: m.warm_roundtrip_ms is not None or m.errors, 60)
    win.show_view("counters")
    view = win.views["counters"]
    view.form.set_strategy("short_lock")
    if compare:
        task = view.compare_all()
        await wait_until(lambda: task.done(), 60)
    assert view.start(), view.message.text()
    await asyncio.sleep(settle_s)  # staff busy, claims and the lock visible
    # then the first frame that shows a double assignment and a staff member waiting for the lock
    await wait_until(lambda: view.last_snapshot is not None
                     and sum(v.conflict for v in view.last_snapshot.counters) >= 1
                     and view.grid.cells and any(c.kind == "double" for c in view.grid.cells), 60)
    await asyncio.sleep(0.05)
    print(f"window {win.width()}×{win.height()}, view {view.width()}×{view.height()}, needs {view.minimumSizeHint()}")
    from lanemon.ui.shell.exports import save_png

    image = save_png(win, out)
    print(f"screenshot written to {out} ({image.width()}×{image.height()}); frames {view.grid_frames}, "
          f"slowest tick {max(view.frame_costs_ms, default=0.0):.2f} ms")


def shoot(out: str, settle_s: float = 3.0, compare: bool = True) -> int:
    from lanemon.ui.tools.testing import shoot_window

    return shoot_window(lambda win: scenario(win, out, settle_s, compare), size=(1280, 800))


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lanemon.ui.tools.shoot_counters", description=__doc__.splitlines()[0])
    p.add_argument("out", help="PNG file to write")
    p.add_argument("--settle", type=float, default=3.0, help="seconds of live run before the shot (default 3)")
    p.add_argument("--live-only", action="store_true", help="skip the compare table")
    args = p.parse_args(argv)
    return shoot(args.out, args.settle, not args.live_only)


if __name__ == "__main__":
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    sys.exit(cli())
