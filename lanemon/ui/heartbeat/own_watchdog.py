"""The window's own watchdog: what blocked the window's loop, named on its heartbeat chart.

``OwnWatchdog`` runs ``lanemon.probe.watchdog.Watchdog`` (the same watchdog a
probed program runs) on the GUI thread's stack: the heartbeat calls its cheap,
thread-safe ``beat()`` at every tick (``Heartbeat.set_beat``); when the loop is
late by more than ``block_ms`` the watchdog thread samples the GUI thread's
stack until the loop comes back, then calls ``on_block`` on ITS thread. That
call only stamps the arrival time (``time.perf_counter``, the chart's clock)
and emits ``blocked`` (an ``OwnBlock``): a signal emitted off the GUI thread
reaches the GUI thread's slots queued, so the chart reads it on its own thread,
after the stall.

``start()`` / ``stop()``: ``stop`` ends the watchdog thread (joined) and
unhooks the heartbeat; both may be called more than once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from lanemon.ui.heartbeat.timer import Heartbeat
from lanemon.ui.programs.where import culprit

DEFAULT_BLOCK_MS = 50


@dataclass(frozen=True)
class OwnBlock:
    """A stall of the window's own loop, as the chart draws it (times on ``perf_counter``)."""

    t_start: float
    duration_ms: float
    culprit: str | None       # the function the time went to (``where.culprit``)
    task: str | None
    folded: tuple             # ((frames, count), ...) innermost first
    samples: int


def _task_of(loop: asyncio.AbstractEventLoop | None):
    """The name of the task running on ``loop`` when a stall is noticed, read from the watchdog
    thread (one dict lookup under the GIL, as ``lanemon.probe`` does); ``None`` when none runs
    (a Qt slot, a plain callback) or the window has no asyncio loop."""
    def task_of() -> str | None:
        if loop is None:
            return None
        task = asyncio.current_task(loop)
        return None if task is None else task.get_name()
    return task_of


class OwnWatchdog(QObject):
    blocked = Signal(object)    # an OwnBlock, delivered on the GUI thread

    def __init__(self, heartbeat: Heartbeat, block_ms: int = DEFAULT_BLOCK_MS,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._heartbeat = heartbeat
        self._block_ms = block_ms
        self._dog = None
        self._thread_id = 0
        self._task_of = _task_of(None)
        self.blocks_seen = 0        # written on the watchdog thread, read anywhere (an int)

    @property
    def running(self) -> bool:
        return self._dog is not None

    def start(self) -> None:
        """Watch the calling thread (the GUI thread) from now on."""
        if self._dog is not None:
            return
        from lanemon.probe.watchdog import Watchdog

        self._thread_id = threading.get_ident()
        try:
            self._task_of = _task_of(asyncio.get_running_loop())
        except RuntimeError:
            self._task_of = _task_of(None)
        self._dog = Watchdog(self._thread_id, self._block_ms, self._on_block,
                             period_ms=self._heartbeat.period_ms, task_of=self._task_of)
        self._dog.start()
        self._heartbeat.set_beat(self._dog.beat)

    def period_changed(self) -> None:
        """The heartbeat's period changed: watch with the new one (a beat is late by more
        than ``block_ms`` after its period). A stall in progress is not reported."""
        if self._dog is None:
            return
        from lanemon.probe.watchdog import Watchdog

        old = self._dog
        self._heartbeat.set_beat(None)
        old.stop()
        self._dog = Watchdog(self._thread_id, self._block_ms, self._on_block,
                             period_ms=self._heartbeat.period_ms, task_of=self._task_of)
        self._dog.start()
        self._heartbeat.set_beat(self._dog.beat)

    def stop(self) -> None:
        """Unhook the heartbeat and end the watchdog thread; no ``blocked`` is emitted after."""
        dog, self._dog = self._dog, None
        if dog is None:
            return
        self._heartbeat.set_beat(None)
        dog.stop()

    def _on_block(self, block) -> None:
        """On the watchdog thread: stamp and hand over (queued) to the GUI thread."""
        arrived = time.perf_counter()
        folded = tuple((tuple(frames), int(count)) for frames, count in block.folded)
        start = arrived - float(block.ago_ms) / 1000.0      # ago_ms: since the beat was due
        self.blocks_seen += 1
        self.blocked.emit(OwnBlock(start, float(block.duration_ms), culprit(folded), block.task,
                                   folded, int(block.samples)))


__all__ = ["DEFAULT_BLOCK_MS", "OwnBlock", "OwnWatchdog"]
