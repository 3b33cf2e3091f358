"""The Recorder (skeleton)."""

from __future__ import annotations


class Recorder:
    def __init__(self, path: str, *, sources_info: dict) -> None:
        self.path = path
        self.events_written = 0
        raise NotImplementedError

    def attach_counters(self, sim) -> None:
        raise NotImplementedError

    def attach_lanes(self, scheduler) -> None:
        raise NotImplementedError

    def heartbeat(self, t: float, lag_ms: float) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
