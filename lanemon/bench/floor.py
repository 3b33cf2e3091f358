"""The floor a window benchmark is judged against: a bare qasync loop, measured alongside.

``BareLoop`` starts a child process (``python -m lanemon.bench.floor``) that
runs the window's own ``Heartbeat`` (a re-armed single-shot ``Qt.PreciseTimer``
QTimer, same period) on a qasync loop over a ``QApplication`` with no window,
nothing else. ``record(seconds)`` asks the child for one segment and **blocks
the caller's thread until the segment is done**: called from the window's
loop, the window does nothing meanwhile (no frame, no tick; the benches also
stop its watchdog thread: ``lanemon.bench._window.floor_segment``), so the
bare loop runs as if the window were not there, on the machine as it is at
that moment. The segment starts after ``settle_s`` (the child's first ticks,
and anything the caller's process was finishing, are not counted).

Alternating ``record`` with the window's own segments (``goals.alternate``)
gives the window's figure minus the machine's own noise, measured the same
minute. Between segments the child waits on its pipe and its heartbeat is
stopped: it takes no CPU while the window is measured.

``BareLoop(period, busy_ms=x)`` is a control, not a floor: the same bare loop
plus one repeating ``Qt.PreciseTimer`` at ``BUSY_FPS`` (the chart's frame rate)
whose slot busy-waits ``x`` ms and draws nothing. It shows what any periodic
work of that length costs this heartbeat, with no window, no paint and no
Python beyond the busy wait: a tick due while a slot runs waits for its end.
(Before the heartbeat's on-time wake, ``lanemon.ui.heartbeat.timer``, Qt's
sleeps rounded up to whole milliseconds also made the tick after each slot
late, with nothing running at its due time: the control was then +0.4-0.7 ms
over the floor, +0.3-0.4 ms with it.) Guaranteed: the busy timer runs only
while a segment is recorded.

Refused: ``record`` after ``close`` or when the child died (``RuntimeError``
with the child's last words); ``busy_ms`` below 0 or not finite (``ValueError``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

SETTLE_S = 0.3
BUSY_FPS = 30        # the control's busy timer: the heartbeat chart's frame rate


class BareLoop:
    """A child process with a bare qasync loop and the window's heartbeat (see the module)."""

    def __init__(self, period_ms: int = 10, settle_s: float = SETTLE_S, busy_ms: float = 0.0) -> None:
        if not (math.isfinite(busy_ms) and busy_ms >= 0):
            raise ValueError(f"busy_ms must be a finite number >= 0, got {busy_ms!r}")
        env = dict(os.environ)
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
        env["LANEMON_NO_SETTINGS"] = "1"
        self.period_ms = period_ms
        self.busy_ms = busy_ms
        self.busy_runs = 0             # the busy slots the last segment ran (0 without busy_ms)
        self._settle_s = settle_s
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "lanemon.bench.floor", str(period_ms), repr(float(busy_ms))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            self._expect("ready")
        except BaseException:        # (it said something else, Ctrl+C, SIGTERM: it goes now)
            self._proc.kill()
            self._proc.wait()
            raise

    def _ended(self) -> RuntimeError:
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        err = self._proc.stderr.read().strip()[-400:]
        return RuntimeError(f"the bare-loop floor process ended (exit {self._proc.returncode}): {err}")

    def _expect(self, what: str) -> str:
        line = self._proc.stdout.readline()
        if not line:
            raise self._ended()
        if what and not line.startswith(what):
            raise RuntimeError(f"the bare-loop floor process said {line.strip()[:200]!r}, expected {what!r}")
        return line

    def record(self, seconds: float) -> list[float]:
        """Lags (ms) of the bare loop's heartbeat over ``seconds``, after ``settle_s``;
        the calling thread waits meanwhile."""
        if self._proc.stdin is None or self._proc.stdin.closed:
            raise RuntimeError("the bare-loop floor process is closed")
        if not seconds > 0:
            raise ValueError(f"seconds must be more than 0, got {seconds!r}")
        try:
            self._proc.stdin.write(f"{self._settle_s} {seconds}\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise self._ended() from None
        got = json.loads(self._expect("{"))
        self.busy_runs = int(got["busy"])
        return got["lags"]

    def close(self) -> None:
        """Ends the child (it exits when its pipe closes); waits for it."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:       # it ended already (the buffer could not be written)
                pass
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            stream.close()

    def __enter__(self) -> BareLoop:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _serve(period_ms: int, busy_ms: float = 0.0) -> None:
    """The child: answer each ``settle seconds`` line with the lags of one segment (with
    ``busy_ms``, the busy timer runs during the segment: see the module)."""
    from lanemon.ui import steady_process_settings

    steady_process_settings()
    import asyncio
    import time

    import qasync
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from lanemon.ui.heartbeat.timer import Heartbeat

    app = QApplication([sys.argv[0]])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    beat = Heartbeat(period_ms)
    busy = QTimer()
    busy.setTimerType(Qt.TimerType.PreciseTimer)
    busy.setInterval(int(1000 / BUSY_FPS))
    busy_s = busy_ms / 1000.0

    runs = [0]

    def spin() -> None:
        runs[0] += 1
        end = time.perf_counter() + busy_s
        while time.perf_counter() < end:
            pass

    busy.timeout.connect(spin)

    async def segment(settle_s: float, seconds: float) -> list[float]:
        beat.start()
        runs[0] = 0
        if busy_ms > 0:
            busy.start()
        try:
            await asyncio.sleep(settle_s)
            t0 = time.perf_counter()
            await asyncio.sleep(seconds)
            return beat.in_range(t0, time.perf_counter(), one_after=False).tolist()
        finally:
            busy.stop()
            beat.stop()

    print("ready", flush=True)
    for line in sys.stdin:
        settle_s, seconds = (float(v) for v in line.split())
        lags = loop.run_until_complete(segment(settle_s, seconds))
        print(json.dumps({"lags": [round(v, 4) for v in lags], "busy": runs[0]}), flush=True)
    loop.close()


if __name__ == "__main__":
    _serve(int(sys.argv[1]) if len(sys.argv) > 1 else 10, float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
