"""Lane engines for tests: the memory engine with some operations made to wait."""

from __future__ import annotations

from lanemon.store.memory import memory_lanes


class LanesOverMemory:
    """A lane store that delegates to the memory engine; subclasses override the
    operations that must wait (raise ``WouldBlock`` now, complete when awaited)."""

    def __init__(self, name: str, *, clock, emit) -> None:
        self.inner = memory_lanes(name, clock=clock, emit=emit)
        self.name = name

    def __getattr__(self, attr: str):
        return getattr(self.inner, attr)

    def __len__(self) -> int:
        return len(self.inner)

    def __contains__(self, workspace: object) -> bool:
        return workspace in self.inner

    def __iter__(self):
        return iter(self.inner)
