"""Screenshots of the example talk: ``python -m lanemon.ui.tools.shoot_talk OUT_DIR``.

Opens the window (offscreen unless a platform is set) at 1024x768 in presenter mode,
loads the example talk and walks it with the player's own ``next`` (as PageDown
does), saving ``step-N.png`` for the steps asked (default 2 and 6) once each step's
actions are done.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys


async def scenario(win, out: str, steps: list[int], presenter: bool) -> None:
    from lanemon.talk import EXAMPLE, parse
    from lanemon.ui.shell.exports import save_png
    from lanemon.ui.tools.testing import wait_until

    if presenter:
        win.talk.set_presenter(True)
    player = win.talk_player
    player.load(parse(EXAMPLE, "example"))
    await wait_until(lambda: win.controller.iterations_for_ms(1.0) is not None, 30)
    for n in range(1, max(steps) + 1):
        await wait_until(lambda: not player.busy, 60)
        if n in steps:
            await asyncio.sleep(1.5)     # the chart and the tab catch up
            path = os.path.join(out, f"step-{n}.png")
            image = save_png(win, path)
            print(f"{path} ({image.width()}x{image.height()})")
        if n < max(steps):
            player.next()


def cli(argv: list[str] | None = None) -> int:
    from lanemon.ui.tools.testing import shoot_window

    p = argparse.ArgumentParser(prog="python -m lanemon.ui.tools.shoot_talk", description=__doc__.splitlines()[0])
    p.add_argument("out", help="folder for the PNGs")
    p.add_argument("--steps", default="2,6", help="steps to save, e.g. 2,6")
    p.add_argument("--size", default="1024x768", help="window size, e.g. 1920x1080")
    p.add_argument("--normal", action="store_true", help="outside presenter mode")
    args = p.parse_args(argv)
    steps = sorted({int(s) for s in args.steps.split(",")})
    w, h = (int(v) for v in args.size.split("x"))
    os.makedirs(args.out, exist_ok=True)
    return shoot_window(lambda win: scenario(win, args.out, steps, not args.normal), size=(w, h))


if __name__ == "__main__":
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    sys.exit(cli())
