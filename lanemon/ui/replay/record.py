"""File -> Record: what the window's views see, written to a recording as it happens.

``RecordingSession(window, path)`` opens a ``lanemon.replay.Recorder`` on ``path`` and
attaches what the window shows live:

- the Counters tab's simulation (``Recorder.attach_counters``), and each new one the tab
  makes while recording (a reset, a change of settings: ``CountersView.sim_changed``);
- the Lanes & queues tab's scheduler (``Recorder.attach_lanes``);
- the heartbeat: the ticks are read from the heartbeat's ring buffer a few times a
  second (``PUMP_MS``; the tick itself is never touched, so recording adds no work to
  it) and handed to ``Recorder.heartbeat(t, lag_ms)`` with ``t`` the tick's
  ``time.perf_counter()`` (the clock of ``time.monotonic`` on Linux).

``stop()`` hands over the ticks not yet written, detaches and closes the recorder (the
file is complete once it returns); a second call does nothing. The recorder flushes at
least once a second by itself, so a crash loses at most the last second.

Refused: a path the recorder cannot open -- ``OSError`` (or the recorder's own error)
from the constructor, nothing left attached.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer

PUMP_MS = 250   # heartbeat ticks handed to the recorder this often (the ring keeps 11 min)


class RecordingSession(QObject):
    """One recording of one window, from ``__init__`` to ``stop()`` (see the module docstring)."""

    def __init__(self, window, path: str) -> None:
        super().__init__(window)
        from lanemon.replay import Recorder

        self._window = window
        heartbeat = window.heartbeat
        counters = window.views.get("counters")
        lanes = window.views.get("lanes")
        info = {"app": "lanemon window", "heartbeat_period_ms": heartbeat.period_ms,
                "counters": counters is not None, "lanes": lanes is not None}
        self._recorder = Recorder(path, sources_info=info)
        self.path = str(getattr(self._recorder, "path", path))
        self.problem: str | None = None      # what could not be attached, said by the window
        self._counters = counters
        self._stopped = False
        missing = []
        if counters is not None:
            try:
                if counters.sim is not None:
                    self._recorder.attach_counters(counters.sim)
                counters.sim_changed.connect(self._new_sim)
            except Exception as exc:
                missing.append(f"counters not recorded ({exc})")
        if lanes is not None:
            try:
                self._recorder.attach_lanes(lanes.scheduler)
            except Exception as exc:
                missing.append(f"lanes not recorded ({type(exc).__name__}: {exc})")
        self.problem = "; ".join(missing) or None
        self._heartbeat = heartbeat
        self._seen = heartbeat.count
        self._pump = QTimer(self)
        self._pump.setInterval(PUMP_MS)
        self._pump.timeout.connect(self.pump)
        self._pump.start()

    @property
    def events_written(self) -> int:
        return self._recorder.events_written

    @property
    def error(self) -> str | None:
        """Why the recorder stopped writing (disk full, file removed), or None."""
        return getattr(self._recorder, "error", None)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _new_sim(self, sim) -> None:
        """The Counters tab made a new simulation: record it too (or say why not)."""
        if self._stopped:
            return
        try:
            self._recorder.attach_counters(sim)
        except Exception as exc:   # said in the window; the recording goes on with the rest
            self.problem = f"the new counters simulation is not recorded: {exc}"

    def pump(self) -> int:
        """Hand the heartbeat ticks since the last pump to the recorder; returns how many."""
        if self._stopped:
            return 0
        hb = self._heartbeat
        n = hb.count
        t, lag = hb.between(self._seen, n)
        self._seen = n
        shift = time.monotonic() - time.perf_counter()     # perf_counter -> monotonic
        beat = self._recorder.heartbeat
        for ti, li in zip((t + shift).tolist(), lag.tolist()):
            beat(ti, li)
        return len(t)

    def _detach(self) -> None:
        if self._counters is not None:
            try:
                self._counters.sim_changed.disconnect(self._new_sim)
            except (RuntimeError, TypeError):
                pass

    def stop(self) -> str:
        """Write what is left and close the file; returns its path. Idempotent."""
        if self._stopped:
            return self.path
        try:
            self.pump()
        finally:
            self._stopped = True
            self._pump.stop()
            self._detach()
            self._recorder.close()
        return self.path


__all__ = ["PUMP_MS", "RecordingSession"]
