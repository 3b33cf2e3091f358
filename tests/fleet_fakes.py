"""Stand-ins for the Processes tab's tests until ``lanemon agent`` and ``SqlStore.sessions()``
(issue 15's contracts 1, 2, 4) are in this tree: a churn worker as the agent command, and
session rows read straight from an SQLite store's ``sessions`` table (no ``info`` yet)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from dataclasses import dataclass, field

from lanemon.agents.fleet import AgentSpec


@dataclass(frozen=True)
class FakeSessionRow:
    """Contract 2's ``SessionRow``: session, pid, host, name, started, last_seen, info."""

    session: str
    pid: int
    host: str
    name: str
    started: float
    last_seen: float
    info: dict = field(default_factory=dict)


def churn_command(seconds: float = 600, workspaces: str = "w0,w1,w2", hold: float = 0.2):
    """An agent command: ``python -m lanemon.store.churn`` on the agent's store and name (a real
    process with a store session; SIGTERM stops it cleanly, exit 0)."""
    def build(spec: AgentSpec) -> list[str]:
        return [sys.executable, "-m", "lanemon.store.churn", "--store", spec.store_url, "--workspaces", workspaces,
                "--seconds", str(seconds), "--hold", str(hold), "--name", spec.name]
    return build


def sleeper_command(ignore_term: bool = False):
    """An agent command that sleeps until told: SIGTERM ends it with status 0 (or is ignored)."""
    handler = "signal.SIG_IGN" if ignore_term else "lambda *a: sys.exit(0)"
    code = (f"import signal, sys, time\nsignal.signal(signal.SIGTERM, {handler})\nprint('up', flush=True)\n"
            "while True: time.sleep(0.05)")

    def build(spec: AgentSpec) -> list[str]:
        return [sys.executable, "-c", code, spec.name]
    return build


def new_sqlite_store(folder) -> tuple[str, str]:
    """A new SQLite store in ``folder``: (its URL, its file)."""
    from lanemon.store import open_store

    path = str(folder / "agents.db")
    url = "sqlite:///" + path.lstrip("/")

    async def make() -> None:
        store = await open_store(url, create=True, name="test")
        await store.close()
    asyncio.run(make())          # (call it outside an event loop)
    return url, path


def read_sessions(path: str) -> list[FakeSessionRow]:
    db = sqlite3.connect(path, timeout=10)
    try:
        return [FakeSessionRow(*row) for row in
                db.execute("SELECT session, pid, host, name, started, last_seen FROM sessions")]
    finally:
        db.close()


class SqliteSessions:
    """A session source for ``SessionWatch``: the rows of an SQLite store's ``sessions`` table
    (what ``SqlStore.sessions()`` will read), ``info`` given per name by the test."""

    def __init__(self, path: str, info: dict[str, dict] | None = None) -> None:
        self.path = path
        self.info = info or {}
        self.closed = False

    async def sessions(self) -> list[FakeSessionRow]:
        rows = read_sessions(self.path)
        return [FakeSessionRow(r.session, r.pid, r.host, r.name, r.started, r.last_seen,
                               dict(self.info.get(r.name, {}))) for r in rows]

    async def close(self) -> None:
        self.closed = True


class FakeSessions:
    """A session source whose rows the test sets (``rows``); ``fail`` makes the next reads raise."""

    def __init__(self, rows=(), fail: str | None = None) -> None:
        self.rows = list(rows)
        self.fail = fail
        self.closed = False

    async def sessions(self):
        if self.fail:
            raise ConnectionError(self.fail)
        return list(self.rows)

    async def close(self) -> None:
        self.closed = True
