"""The replay screenshot, reproducibly: ``python -m lanemon.ui.tools.shoot_replay out.png``.

Opens the window (1280×800 unless ``--size``; offscreen unless a platform is set), records
a live short-lock counters session with File → Record (``ReplayMode.start_recording``)
until the board has shown a double assignment and a few more seconds have passed, stops
the recording, opens it with File → Open recording (``open_recording``), jumps to its
first double assignment from the moments list and saves the window. ``--presenter``:
in presenter mode. The recording goes to a temporary folder (removed after) unless
``--keep FILE`` says where to keep it.
"""

from __future__ import annotations

import argparse
import sys


async def scenario(win, out: str, record_s: float, presenter: bool, recording: str) -> None:
    import asyncio

    from lanemon.ui.tools.testing import wait_until

    m = win.controller.machine  # the start-up measurements stall the loop a little: let them pass
    await wait_until(lambda: m.warm_roundtrip_ms is not None or m.errors, 60)
    if presenter:
        win.talk.set_presenter(True)
    win.show_view("counters")
    view = win.views["counters"]
    view.form.set_strategy("short_lock")
    mode = win.replay
    assert mode.start_recording(recording), win.statusBar().currentMessage()
    assert view.start(), view.message.text()
    await wait_until(lambda: view.sim is not None and view.sim.snapshot().tallies.double_assignments > 0, 60)
    await asyncio.sleep(record_s)
    path = mode.stop_recording()
    assert mode.open_recording(path), mode.error_box.text() if mode.error_box else "not opened"
    row = next(i for i, mo in enumerate(mode.replay.moments()) if mo.kind == "double assignment")
    mode.panel.set_current_moment(row)
    mode.jump_to_moment(row)
    await wait_until(lambda: view.grid.highlighted and view.last_snapshot is not None, 10)
    await asyncio.sleep(0.3)
    from lanemon.ui.shell.exports import save_png

    image = save_png(win, out)
    print(f"recording {path}: {len(mode.replay):,} events, {len(mode.replay.moments()):,} moments; "
          f"at {mode.panel.position.text()}; screenshot {out} ({image.width()}×{image.height()})")


def shoot(out: str, record_s: float = 3.0, presenter: bool = False, size=(1280, 800),
          keep: str | None = None) -> int:
    import os
    import tempfile

    from lanemon.ui.tools.testing import shoot_window

    with tempfile.TemporaryDirectory(prefix="lanemon-shoot-") as tmp:
        recording = keep or os.path.join(tmp, "replay.jsonl.gz")
        return shoot_window(lambda win: scenario(win, out, record_s, presenter, recording), size=size)


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lanemon.ui.tools.shoot_replay", description=__doc__.splitlines()[0])
    p.add_argument("out", help="PNG file to write")
    p.add_argument("--keep", metavar="FILE", help="keep the recording in this file")
    p.add_argument("--record", type=float, default=3.0, help="seconds recorded after the first double (default 3)")
    p.add_argument("--presenter", action="store_true", help="in presenter mode")
    p.add_argument("--size", default="1280x800", help="window size WxH (default 1280x800)")
    args = p.parse_args(argv)
    w, h = (int(x) for x in args.size.lower().split("x"))
    return shoot(args.out, args.record, args.presenter, (w, h), args.keep)


if __name__ == "__main__":
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    sys.exit(cli())
