"""A lanemon window put in a hard state, then made to quit; run by tests/test_quit.py.

    python tests/quit_driver.py STATE WAY

STATE: ``idle``; ``busy`` (at once: a Lanes job whose final save is held, a
Counters compare of 1,000,000 customers, and a warm worker run whose process
is stopped with SIGSTOP: a hung worker); ``whole`` (a whole run of 2e9
iterations blocking the loop, minutes long). WAY: ``close`` (the window's
close, as its close button), ``ctrl-q`` (the key), or ``signal`` (the test
sends the signal after "ready").

The window runs in ``lanemon.ui.shell.app.main`` exactly as the ``lanemon`` command
runs it; the process exits with ``main``'s exit status. Printed on stdout:
``ready`` once the state is set up, ``worker PID`` for the stopped worker.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time


def _print(*parts) -> None:
    print(*parts, flush=True)


async def _busy(win) -> None:
    from lanemon.ui.tools.testing import add_simulated_job, wait_until
    from lanemon.work.workers import warm_pool

    # Lanes: a 60 s job, chosen, its final save held
    win.show_view("lanes")
    view = win.views["lanes"]
    job = await add_simulated_job(view, "ws-01", "reservations", 60)
    model = view.queue_models["reservations"]
    await wait_until(lambda: model.row_of(job) >= 0, 10)
    view.queue_tables["reservations"].setCurrentIndex(model.index(model.row_of(job), 0))
    view.controls.hold_button.click()
    # Counters: compare all three over a million customers
    win.show_view("counters")
    counters = win.views["counters"]
    counters.form.customers.setValue(1_000_000)
    counters.compare_btn.click()
    await wait_until(lambda: not counters.compare_btn.isEnabled(), 10)
    # Runs: a warm worker run whose process is then stopped (hung)
    win.show_view("runs")
    rec = win.controller.start_worker(2_000_000_000, "warm")
    assert rec is not None, "the worker run was refused"
    await wait_until(lambda: warm_pool().busy_pids(), 30)
    pid = warm_pool().busy_pids()[0]
    os.kill(pid, signal.SIGSTOP)
    _print("worker", pid)


def _say_when_whole_run_blocks() -> None:
    """From a thread: print "ready" once the loop thread computes the whole run."""
    from lanemon.work import _kernel, runs

    main_id = threading.main_thread().ident

    def watch() -> None:
        while True:
            frame = sys._current_frames().get(main_id)
            # hash_range called by the run dispatch: the whole run, not the start-up calibration
            if (frame is not None and frame.f_code is _kernel.hash_range.__code__
                    and frame.f_back is not None and frame.f_back.f_code is runs.run_job.__code__):
                _print("ready")
                return
            time.sleep(0.005)
    threading.Thread(target=watch, daemon=True).start()


async def drive(win, state: str, way: str) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from lanemon.ui.tools.testing import wait_until

    await wait_until(lambda: win.isVisible(), 30)
    if state == "busy":
        await _busy(win)
    if state == "whole":
        _say_when_whole_run_blocks()
        assert win.controller.start_whole(2_000_000_000) is not None
        return
    _print("ready")
    if way == "close":
        win.close()
    elif way == "ctrl-q":
        QTest.keyClick(win, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)


def run(state: str, way: str) -> int:
    import qasync

    from lanemon.ui.shell.app import application, main
    from lanemon.ui.shell.main_window import MainWindow

    app = application()

    async def go() -> int:
        win = MainWindow()
        driver = asyncio.ensure_future(drive(win, state, way))

        def failed(task: asyncio.Task) -> None:
            if not task.cancelled() and task.exception() is not None:
                _print("driver failed:", repr(task.exception()))
                win.close()
        driver.add_done_callback(failed)
        try:
            rc = await main(win)
        finally:
            if not driver.done():
                driver.cancel()
        return 3 if driver.done() and not driver.cancelled() and driver.exception() else rc

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
        return runner.run(go())


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2]))
