"""The SQLite backend's checkpoints in a thread of their own (``sqlite._Checkpointer``)."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from procs import until

from lanemon.store.sql import sqlite
from lanemon.store.sql.sqlite import CHECKPOINT_EVERY, SqliteBackend

NAME = "lanemon-sqlite-checkpoints"


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == NAME]


async def _cycles(backend: SqliteBackend, n: int) -> None:
    for i in range(n):
        lane = await backend.claim_lane("scheduled", f"ws-{i % 7}", f"owner-{i}")
        assert lane is not None
        assert await backend.release_lane("scheduled", lane.workspace, lane.epoch)


@pytest.mark.asyncio
async def test_a_busy_store_checkpoints_in_its_thread_and_close_joins_it(tmp_path):
    before = _checkpoint_threads()
    backend = SqliteBackend(str(tmp_path / "store.db"), lease=30.0)
    await backend.open(create=True)
    try:
        await _cycles(backend, 3 * CHECKPOINT_EVERY)          # two commits a cycle
        until(lambda: backend.checkpoints[0] >= 1, "a checkpoint of the thread", 30)
        assert backend.checkpoints[1] == 0
        mine = [t for t in _checkpoint_threads() if t not in before]
        assert len(mine) == 1 and mine[0] is not threading.current_thread()
        # what it checkpointed is the store: a second connection reads every lane's history
        db = sqlite3.connect(str(tmp_path / "store.db"))
        try:
            assert db.execute("SELECT count(*) FROM lane_history").fetchone()[0] == 3 * CHECKPOINT_EVERY
        finally:
            db.close()
    finally:
        await backend.close()
    assert not mine[0].is_alive()
    assert backend.checkpoints == (0, 0)


@pytest.mark.asyncio
async def test_a_short_lived_store_starts_no_thread(tmp_path):
    before = set(_checkpoint_threads())
    backend = SqliteBackend(str(tmp_path / "store.db"), lease=30.0)
    await backend.open(create=True)
    try:
        await _cycles(backend, CHECKPOINT_EVERY // 4)
        assert set(_checkpoint_threads()) == before
    finally:
        await backend.close()


def test_a_checkpoint_that_cannot_run_is_counted_not_raised(tmp_path):
    checkpointer = sqlite._Checkpointer(str(tmp_path / "no such folder" / "store.db"))
    try:
        for _ in range(CHECKPOINT_EVERY):
            checkpointer.committed()
        until(lambda: checkpointer.failures == 1, "the failure counted", 30)
        assert "unable to open" in checkpointer.last_error
        assert checkpointer.runs == 0
    finally:
        checkpointer.close()
    checkpointer.close()                                      # idempotent
