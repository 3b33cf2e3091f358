"""Driving the window from a script or a test, on a real qasync loop.

``run_window(scenario)`` runs ``app.main(window)`` exactly as the ``lanemon``
command does, and awaits ``scenario(window)`` beside it; then it closes the
window (as a user would) and waits for ``main`` to finish its shutdown. It
returns ``(exit code, scenario's value, loop errors)``; errors are the
contexts the loop's exception handler saw (expected: none).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import qasync


async def wait_until(predicate: Callable[[], object], timeout_s: float = 30.0, step_s: float = 0.01) -> None:
    """Yield to the loop until ``predicate()`` is true (``TimeoutError`` after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not reached within {timeout_s} s")
        await asyncio.sleep(step_s)


async def activated(win) -> None:
    """Until ``win`` is shown and the active window (shortcuts answer only there)."""
    from PySide6.QtWidgets import QApplication

    win.activateWindow()
    await wait_until(lambda: win.isVisible() and QApplication.activeWindow() is win, 10)


async def chart_focused(win) -> None:
    """Until ``win`` is shown and active and its chart holds the keyboard focus (as at
    start): keys sent to the focus widget then reach the window's shortcuts."""
    from PySide6.QtWidgets import QApplication

    await activated(win)
    win.chart.setFocus()
    await wait_until(lambda: QApplication.focusWidget() is win.chart, 10)


async def cold_run_in_flight(win, total: int = 2_000_000_000):
    """A cold worker run of minutes started from ``win`` (once its start-up measurement is
    done), returned when it can be cancelled and its worker process is up: its record."""
    from lanemon.work import worker_processes

    c = win.controller
    await wait_until(lambda: c.machine.warm_roundtrip_ms is not None or c.machine.errors, 60)
    rec = c.start_worker(total, "cold")
    await wait_until(lambda: win.runs_panel.cancel_btn.isEnabled(), 10)
    await wait_until(lambda: any(w.kind == "cold" for w in worker_processes()), 20)
    return rec


def keep_shot(png, name: str) -> None:
    """Copy the screenshot ``png`` to ``$LANEMON_SHOTS/name`` when that variable is set (the
    folder made if missing); nothing otherwise."""
    import os
    import shutil

    folder = os.environ.get("LANEMON_SHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        shutil.copy(png, os.path.join(folder, name))


class EventCount:
    """Counts the events of one type (a ``QEvent.Type``) that the objects it watches receive
    (``watch(obj)`` / ``unwatch(obj)``: an event filter that lets every event through)."""

    def __init__(self, kind) -> None:
        from PySide6.QtCore import QObject

        count = self

        class _Filter(QObject):
            def eventFilter(self, _obj, event):
                if event.type() == kind:
                    count.n += 1
                return False

        self.n = 0
        self._filter = _Filter()

    def watch(self, obj) -> None:
        obj.installEventFilter(self._filter)

    def unwatch(self, obj) -> None:
        obj.removeEventFilter(self._filter)


async def add_simulated_job(view, ws: str, queue: str, seconds: float, fails: bool = False) -> int:
    """Add a simulated job through the Lanes tab's form, as a user would; its job id.

    Waits until the scheduler has it; leaves "work fails" unticked afterwards."""
    c = view.controls
    c.fill_simulated(ws, queue, seconds, fails)
    before = view.scheduler.jobs_submitted
    c.add_button.click()
    await wait_until(lambda: view.scheduler.jobs_submitted > before, 10)
    c.fails.setChecked(False)
    return view.scheduler._next_id


def run_window(scenario: Callable[[object], Awaitable[object]], window=None, *, size=(1280, 800),
               store_url: str | None = None):
    """Run ``app.main`` on a qasync loop with ``scenario(window)`` beside it, then close the
    window; returns (exit status, the scenario's value, loop errors). ``store_url``: main
    makes the window itself, on that store (``lanemon --store URL``). A window that ends
    before the scenario with a non-zero exit (closed by a signal: 128 + n) or an error
    cancels it, its clean-up run, and raises (``RuntimeError``, or main's error)."""
    from lanemon.ui.shell.app import application, main
    from lanemon.ui.shell.main_window import MainWindow

    app = application()
    errors: list[dict] = []

    async def go():
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        if store_url is not None:
            before = set(app.topLevelWidgets())
            runner = asyncio.ensure_future(main(store_url=store_url))
            made: list = []

            def shown() -> bool:
                made[:] = [w for w in app.topLevelWidgets() if isinstance(w, MainWindow) and w not in before
                           and w.isVisible()]
                return bool(made) or runner.done()
            await wait_until(shown, 60)
            if runner.done():
                runner.result()  # (raises what main raised)
            win = made[0]
        else:
            win = window if window is not None else MainWindow()
            runner = asyncio.ensure_future(main(win))
        win.resize(*size)
        await asyncio.sleep(0)
        me = asyncio.current_task()
        running = [True]             # the scenario has not returned yet

        def window_ended(fut) -> None:
            # the window ended first, and not by a plain close (a signal: 128 + n; a failure):
            # the scenario (awaited below, its first step at once as before) is cancelled, so
            # its clean-up runs now (the agents or servers it started), not never
            if running[0] and (fut.cancelled() or fut.exception() is not None or fut.result() != 0):
                me.cancel()

        runner.add_done_callback(window_ended)
        try:
            value = await scenario(win)  # (one that closed the window itself goes on to its end)
        except asyncio.CancelledError:
            if runner.done():
                runner.result()      # (raises what main raised)
                raise RuntimeError(f"the window ended (exit {runner.result()}) before the scenario did") \
                    from None
            raise
        finally:
            running[0] = False
            win.close()
            rc = await runner
        return rc, value

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as r:
        rc, value = r.run(go())
    return rc, value, errors


def headless() -> None:
    """Qt's offscreen platform unless the caller chose one, and never the
    user's saved settings. Call before the QApplication exists."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("LANEMON_NO_SETTINGS", "1")


def shoot_window(scenario: Callable[[object], Awaitable[object]], size=(1280, 800)) -> int:
    """Run ``scenario`` in the window for a screenshot script; the exit status.

    Offscreen unless the caller chose a platform, and never the user's saved
    settings (geometry, theme); loop errors are printed and make it fail.
    """
    import sys

    headless()
    rc, _, errors = run_window(scenario, size=size)
    for ctx in errors:
        print(f"loop error: {ctx.get('message')}: {ctx.get('exception')!r}", file=sys.stderr)
    return rc or (1 if errors else 0)
