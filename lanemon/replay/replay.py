"""The Replay model (skeleton)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReplayEvent:
    index: int
    time: float
    source: str  # "counters" | "lanes"
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class Moment:
    index: int
    time: float
    kind: str  # "double assignment" | "refused write" | "stale release" | "overlapping runs" | "long stall"
    title: str


@dataclass(frozen=True, slots=True)
class Explanation:
    counter: int
    staff: tuple[str, str]
    indices: tuple[int, ...]
    lines: tuple[str, ...]


class Replay:
    def __init__(self, recording) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def seek(self, k: int) -> None:
        raise NotImplementedError

    @property
    def position(self) -> int:
        raise NotImplementedError

    def event(self, i: int) -> ReplayEvent:
        raise NotImplementedError

    def time_at(self, k: int) -> float:
        raise NotImplementedError

    def counters_snapshot(self):
        raise NotImplementedError

    def lanes_snapshot(self):
        raise NotImplementedError

    def heartbeat(self, t0: float, t1: float) -> tuple[list[float], list[float]]:
        raise NotImplementedError

    def moments(self) -> list[Moment]:
        raise NotImplementedError

    def explain(self, index: int) -> Explanation | None:
        raise NotImplementedError
