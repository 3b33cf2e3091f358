"""The lanes & queues screenshot, reproducibly: ``python -m lanemon.ui.tools.shoot_lanes out.png``.

Opens the window at 1280×800 (offscreen unless a platform is set), shows the
"Lanes & queues" tab and drives it through its own controls, as a person
would: jobs in both queues over several workspaces, one whose work fails, one
whose final save fails, a burst, a workspace marked busy outside, and a held
final save in ws-02 with ws-02's cafe job queued behind it while the other
workspaces go on. Then it saves the window.
"""

from __future__ import annotations

import argparse
import asyncio
import sys


async def scenario(win, out: str, splitter: tuple[int, int] | None) -> None:
    from lanemon.ui.tools.testing import add_simulated_job, wait_until

    win.show_view("lanes")
    view = win.views["lanes"]
    if splitter is not None:
        win.centralWidget().setSizes(list(splitter))
    c = view.controls
    s = view.scheduler
    pause = asyncio.sleep
    # an earlier wave: two short jobs in each of ws-01 … ws-06
    c.length.setValue(1.5)
    c.burst_jobs.setValue(12)
    c.burst_ws.setValue(6)
    c.burst_button.click()
    await pause(4.5)
    # a first wave over six workspaces, both queues
    for ws, q, d in [("ws-01", "reservations", 3.0), ("ws-03", "cafe", 2.5),
                     ("ws-04", "reservations", 1.5), ("ws-05", "cafe", 3.5),
                     ("ws-06", "reservations", 2.0), ("ws-01", "cafe", 2.0)]:
        await add_simulated_job(view, ws, q, d)
        await pause(0.25)
    await add_simulated_job(view, "ws-04", "cafe", 1.2, fails=True)           # its work fails
    await pause(1.0)
    # ws-02: a reservation whose final save will be held, and a cafe job behind it
    held = await add_simulated_job(view, "ws-02", "reservations", 1.5)
    c.set_job(held)
    c.hold_button.click()
    await add_simulated_job(view, "ws-02", "cafe", 2.0)
    # ws-05: the next save of its next job fails
    failing = await add_simulated_job(view, "ws-05", "reservations", 1.0)
    c.set_job(failing)
    c.fail_button.click()
    await pause(1.2)
    # a burst in the cafe queue over ws-01 … ws-06
    c.queue_box.setCurrentText("cafe")
    c.length.setValue(1.0)
    c.burst_jobs.setValue(12)
    c.burst_ws.setValue(6)
    c.burst_button.click()
    # ws-06 busy outside, with a job waiting for it
    await pause(0.6)
    c.set_workspace("ws-06")
    c.busy_button.click()
    await add_simulated_job(view, "ws-06", "reservations", 1.0)
    await wait_until(lambda: (j := s.job(held)) is not None and j.save_held, 20)
    await pause(2.5)
    c.set_job(held)
    c.set_workspace("ws-02")
    c.say(f"Holding job #{held}'s final save: ws-02 stays claimed; its cafe job waits, "
          "the other workspaces go on.")
    view.refresh_now()
    await pause(0.1)
    from lanemon.ui.shell.exports import save_png

    image = save_png(win, out)
    print(f"screenshot written to {out} ({image.width()}×{image.height()})")
    costs = sorted(view.frame_costs_ms)
    if costs:
        print(f"refresh cost: median {costs[len(costs) // 2]:.2f} ms, max {costs[-1]:.2f} ms "
              f"over {len(costs)} frames")


def shoot(out: str, splitter: tuple[int, int] | None = (215, 545)) -> int:
    from lanemon.ui.tools.testing import shoot_window

    return shoot_window(lambda win: scenario(win, out, splitter), size=(1280, 800))


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lanemon.ui.tools.shoot_lanes",
                                description=__doc__.splitlines()[0])
    p.add_argument("out", help="PNG file to write")
    args = p.parse_args(argv)
    return shoot(args.out)


if __name__ == "__main__":
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    sys.exit(cli())
