"""Starting and stopping the window.

``run_app()`` (the ``lanemon`` command) runs ``main()`` in
``asyncio.Runner(loop_factory=qasync.QEventLoop)`` (Python 3.11 has no
``loop_factory`` in ``asyncio.run``) and returns the exit code.

``main()`` shows the window and waits for it to close: ``closeEvent`` emits
``close_requested``, which sets an asyncio Event (the application does not
quit on its own when the last window closes). Then it cancels and gathers its
tasks, stops every worker process (``shutdown_workers``) and returns, all
while the loop still runs; nothing is awaited after the loop has quit.

Settings (``lanemon.ui.settings``): restored before the window shows, saved
when it is closed.

Once the window is up, the objects that make it (modules, Qt wrappers, the
plots: ~80,000) are moved out of the garbage collector's way (``gc.freeze``
after one full collection): a full collection otherwise walks all of them,
~25 ms with the loop stopped, every time enough new objects have piled up.
``main`` unfreezes them when it returns.
"""

from __future__ import annotations

import asyncio
import gc
import sys

import qasync
from PySide6.QtWidgets import QApplication

from lanemon.ui import first_paint, settings, theme
from lanemon.ui.main_window import MainWindow
from lanemon.work import shutdown_workers


def application(argv: list[str] | None = None) -> QApplication:
    """The QApplication, created once, themed, not quitting on last close."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv if argv is None else argv)
        app.setApplicationName("lanemon")
        app.setDesktopFileName("lanemon")   # matches the launcher entry (install-desktop)
        theme.apply(app)
    app.setQuitOnLastWindowClosed(False)
    return app


async def main(window: MainWindow | None = None) -> int:
    """Show ``window`` (a new ``MainWindow`` by default) until it is closed."""
    win = window if window is not None else MainWindow()
    closed = asyncio.Event()
    win.close_requested.connect(closed.set)
    store = settings.open_store()
    settings.restore(win, store)
    first_paint.install(win)
    win.show()
    win.start()
    gc.collect()
    gc.freeze()
    try:
        await closed.wait()
        try:
            settings.save(win, store)
        except Exception as exc:  # never in the way of a clean shutdown
            print(f"lanemon: settings not saved: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        try:
            await win.shutdown()
        finally:
            shutdown_workers()
            win.hide()
            gc.unfreeze()
    return 0


def run_app(argv: list[str] | None = None) -> int:
    """Open the window; returns the exit code once it is closed."""
    app = application(argv)
    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
        return runner.run(main())
