"""Starting and stopping the window.

``run_app()`` (the ``lanemon`` command) runs ``main()`` in
``asyncio.Runner(loop_factory=qasync.QEventLoop)`` (Python 3.11 has no
``loop_factory`` in ``asyncio.run``) and returns the exit code.

``main()`` shows the window and waits for it to close: ``closeEvent`` emits
``close_requested``, which sets an asyncio Event (the application does not
quit on its own when the last window closes). Then it cancels and gathers its
tasks, stops every worker process (``shutdown_workers``) and returns, all
while the loop still runs; nothing is awaited after the loop has quit.

Ways out, all through the same shutdown: the window's close button, Ctrl+Q
(File → Quit), and the signals SIGINT (Ctrl+C in a terminal), SIGTERM and
SIGHUP. A signal is caught by ``SignalDoor`` and closes the window as Ctrl+Q
does; the exit status is then 128 + the signal's number (130, 143, 129), 0
after a close by the user. A signal that arrives while a whole run blocks the
loop interrupts that run at once (the run is recorded "cancelled"): the loop
would otherwise answer only when the run ends. Further signals during the
shutdown are ignored: the shutdown is bounded (held saves are let go, runs and
compares cancelled, worker processes stopped).

Settings (``lanemon.ui.shell.settings``): restored before the window shows, saved
when it is closed. A settings file that cannot be written is said in the
window at start (status bar), and on stderr if the save at close fails.

The window shows the chart, the Runs tab, the menus and the status bar
first; right after its first paint the other tabs are added and the
background work starts (``MainWindow.install_views``, through
``first_paint.install``). Then the source text PySide's import hook made ``linecache``
keep goes (``heap.drop_caches``) and the objects that make the window (modules,
Qt wrappers, the plots: ~80,000) are moved out of the garbage collector's
way (``gc.freeze`` after one full collection): a full collection otherwise walks all of them,
~25 ms with the loop stopped, every time enough new objects have piled up.
``main`` unfreezes them when it returns.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import socket
import sys

import qasync
from PySide6.QtCore import QSocketNotifier
from PySide6.QtWidgets import QApplication

from lanemon import heap
from lanemon.ui.kit import theme
from lanemon.ui.shell import first_paint, settings
from lanemon.ui.shell.main_window import MainWindow
from lanemon.work import _kernel, shutdown_workers

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
_WHOLE_RUN_CODE = _kernel.hash_range.__code__


class SignalDoor:
    """SIGINT, SIGTERM and SIGHUP close the window, as Ctrl+Q does.

    Guaranteed: the first of these signals calls ``on_signal(signum)`` once,
    from the event loop (a socket pair is the signal module's wake-up file, so
    the loop wakes up even when no Python code runs); ``received`` is that
    signal's number. A whole run computing on the loop when the signal arrives
    is interrupted by ``CancelledError`` raised in it (its task is cancelled, as
    a cancel from the loop would do). ``on_received(signum)``, when given, is
    called at once, inside the signal handler (so it may only set flags): the
    window uses it to refuse a whole run that was about to block, since no
    later signal could interrupt it. Later signals are ignored. ``close()``
    puts back the previous handlers and wake-up file.
    Refused: other threads never run these handlers (Python runs signal
    handlers in the main thread), so a thread run is stopped by the shutdown.
    """

    def __init__(self, on_signal, on_received=None) -> None:
        self.received: int | None = None
        self._on_signal = on_signal
        self._on_received = on_received
        self._told = False
        self._read, self._write = socket.socketpair()
        for sock in (self._read, self._write):
            sock.setblocking(False)
        self._old_wakeup = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        self._notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._drain)
        self._old = {sig: signal.signal(sig, self._handler) for sig in SIGNALS}

    def _handler(self, signum, frame) -> None:
        if self.received is not None:
            return
        self.received = signum
        if self._on_received is not None:
            self._on_received(signum)
        if frame is not None and frame.f_code is _WHOLE_RUN_CODE and asyncio.current_task() is not None:
            raise asyncio.CancelledError(f"interrupted by signal {signal.Signals(signum).name}")

    def _drain(self) -> None:
        try:
            while self._read.recv(512):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        if self.received is not None and not self._told:
            self._told = True
            self._on_signal(self.received)

    def close(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        signal.set_wakeup_fd(self._old_wakeup)
        self._notifier.setEnabled(False)
        self._notifier.deleteLater()
        self._read.close()
        self._write.close()


def application(argv: list[str] | None = None) -> QApplication:
    """The QApplication, created once, themed, not quitting on last close."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv if argv is None else argv)
        app.setApplicationName("lanemon")
        app.setDesktopFileName("lanemon")   # matches the launcher entry (install-desktop)
        theme.apply_font_and_palette(app)     # the style sheet is the main window's (theme.apply)
    app.setQuitOnLastWindowClosed(False)
    return app


#: how often the window's scheduler on a shared store looks again at the workspaces
#: whose lanes other processes held (``Scheduler.retry_waiting``)
STORE_RETRY_S = 0.5


async def open_lanes_store(url_text: str):
    """``(store, problem)``: a session on the store ``url_text`` for the Lanes & queues
    tab, or ``(None, why not)`` -- one line without a password -- and the window runs its
    own simulation (``memory:`` is that simulation: ``(None, None)``)."""
    from lanemon.store import StoreError, open_store

    try:
        store = await open_store(url_text, create=True, name="lanemon-window")
    except StoreError as exc:
        return None, f"Store not opened: {exc}. This window runs its own simulation."
    if store.engine == "memory":
        await store.close()
        return None, None
    return store, None


def scheduler_on(store):
    """The Lanes & queues scheduler keeping its lanes and records in ``store``."""
    from lanemon.lanes import EventHub, Scheduler
    from lanemon.ui.lanes.view import WINDOW_BOUNDS

    hub = EventHub()
    records = store.records(events=hub, keep_finished=WINDOW_BOUNDS["keep_finished"], writer=store.session)
    return Scheduler(lanes=store.lanes, store=records, events=hub,
                     history_total=WINDOW_BOUNDS["history_total"])


async def main(window: MainWindow | None = None, store_url: str | None = None, talk=None,
               replay_path: str | None = None) -> int:
    """Show ``window`` (a new ``MainWindow`` by default) until it is closed.

    ``store_url`` (``lanemon --store URL``; only with a new window): the Lanes &
    queues tab keeps its lanes and records in that SQLite or PostgreSQL store,
    shared with other processes (its keeper renews the window's leases; waiting
    workspaces are looked at again every :data:`STORE_RETRY_S`); a store that
    cannot be opened is said in the window, which stays up on its own simulation.
    ``replay_path`` (``lanemon --replay FILE``): that recording is opened once the window
    shows (``window.replay.open_recording``; one that cannot be read is said in a message
    box and the window stays up, live).
    The store session is closed after the window's scheduler let go of its lanes.

    ``talk`` (``lanemon --talk FILE``: a checked ``lanemon.talk.Talk``): loaded at
    step 1 once the window is shown.

    Returns the exit status: 0 after a close by the user, 128 + the signal's
    number after a close by SIGINT, SIGTERM or SIGHUP (see the module docstring).
    """
    lanes_store, store_problem = (None, None)
    if window is None and store_url:
        lanes_store, store_problem = await open_lanes_store(store_url)
    if window is not None:
        win = window
    elif lanes_store is not None:
        scheduler = scheduler_on(lanes_store)
        win = MainWindow(lanes_scheduler=scheduler)
        win.show_store(lanes_store.url.redacted())
        win.processes_view.use_store(store_url, shown=lanes_store.url.redacted())
        lanes_store.start_keeper()
        retry = asyncio.ensure_future(scheduler.retry_waiting(STORE_RETRY_S))

        async def close_store() -> None:  # (after the views' shutdown: the scheduler is closed)
            retry.cancel()
            await asyncio.gather(retry, return_exceptions=True)
            await lanes_store.close()
        win.add_shutdown_hook(close_store)
    else:
        win = MainWindow(views_later=True)   # the other tabs after the first paint (below)
    closed = asyncio.Event()
    win.close_requested.connect(closed.set)
    door = SignalDoor(lambda signum: win.close(), on_received=lambda signum: win.controller.refuse_new_runs())
    try:   # (from here on, whatever fails, the finally below stops what was started)
        store = settings.open_store()
        settings.restore(win, store)
        problem = settings.unwritable(store)

        def freeze() -> None:
            """The window's objects out of the collector's way, once they are all there; first
            the source text PySide's import hook had cached goes (``heap.drop_caches``: ~18 MB)."""
            heap.drop_caches()
            gc.collect()
            gc.freeze()

        def after_first_paint() -> None:
            if not closed.is_set() and win.install_views():   # (a caller's window has its tabs)
                freeze()

        first_paint.install(win, then=after_first_paint)
        win.show()
        if talk is not None:
            win.after_views(lambda: win.talk_player.load(talk))   # its steps act on the tabs
        if problem:
            win.warn(f"Settings will not be kept: {problem}")
        if store_problem:
            win.warn(store_problem)
        win.start()      # (the worker start-up measurement and the probe listener: with the views)
        if replay_path:
            win.after_views(lambda: win.replay.open_recording(replay_path))   # it draws in the tabs
        if win.views_installed:
            freeze()         # (else after the first paint: above)
        await closed.wait()
        try:
            settings.save(win, store)
        except Exception as exc:  # never in the way of a clean shutdown
            print(f"lanemon: settings not saved: {exc}", file=sys.stderr)
    finally:
        try:
            await win.shutdown()
        finally:
            shutdown_workers()
            win.hide()
            gc.unfreeze()
            door.close()
    return 0 if door.received is None else 128 + door.received


def run_app(argv: list[str] | None = None, store_url: str | None = None, talk=None,
            replay_path: str | None = None) -> int:
    """Open the window (with ``talk`` loaded, or replaying ``replay_path``, if given); returns
    the exit code once it is closed."""
    app = application(argv)
    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
        return runner.run(main(store_url=store_url, talk=talk, replay_path=replay_path))
