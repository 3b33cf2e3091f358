"""Lane engines for tests: the memory engine with some operations made to wait."""

from __future__ import annotations

from lanemon.store import url as store_url
from lanemon.store.memory import memory_lanes
from lanemon.store.sql import SqlStore, open_sql_store


async def open_test_store(request, engine: str, *, lease: float | None = None) -> SqlStore:
    """A fresh store of ``engine`` (``sqlite`` or ``postgresql``) for one test:
    an SQLite file in the test's tmp_path, or a fresh database of the
    throwaway PostgreSQL cluster (the ``postgres_url`` fixture: skipped where
    PostgreSQL cannot run, failed under ``LANEMON_REQUIRE_POSTGRES=1``)."""
    if engine == "sqlite":
        url = "sqlite:///" + str(request.getfixturevalue("tmp_path") / "store.db").lstrip("/")
    else:
        url = request.getfixturevalue("postgres_url")
    if lease is not None:
        url += f"?lease={lease}"
    return await open_sql_store(store_url.parse(url), create=True, name="test")


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
