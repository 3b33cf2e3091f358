"""An agent follows the store's change feed only while one of its jobs waits on a lane
held elsewhere (``lanemon.agents.agent._follow_lanes``): counted with a fake scheduler and
a counting feed opener, no store and no timing."""

from __future__ import annotations

import asyncio

import pytest

from lanemon.agents import agent as agent_mod

pytestmark = pytest.mark.asyncio


class _Lanes:
    name = "scheduled"

    def __contains__(self, workspace: object) -> bool:
        return False


class _Sched:
    def __init__(self) -> None:
        self.scheduled_lanes = _Lanes()
        self.on_others = False
        self.kicks: list[str | None] = []

    def waiting_on_others(self) -> bool:
        return self.on_others

    def kick(self, workspace: str | None = None) -> None:
        self.kicks.append(workspace)


class _Feed:
    def __init__(self) -> None:
        self.waits = 0
        self.closed = False
        self.last_error = None

    async def wait(self, timeout: float):  # noqa: ASYNC109
        self.waits += 1
        await asyncio.sleep(0.001)
        if self.waits == 1:
            return None                 # (a feed's first answer: read everything)
        return [("lanes", "scheduled:w1"), ("lanes", "reservations:w2"), ("jobs", "7")]

    async def close(self) -> None:
        self.closed = True


async def _until(predicate, what: str) -> None:
    for _ in range(20_000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never: {what}")


async def test_an_agent_opens_the_feed_only_while_a_job_waits_on_another_holder(monkeypatch):
    monkeypatch.setattr(agent_mod, "POLL_S", 0.001)
    monkeypatch.setattr(agent_mod, "RETRY_S", 0.02)
    sched = _Sched()
    feeds: list[_Feed] = []

    async def opener(url):
        feeds.append(_Feed())
        return feeds[-1]

    task = asyncio.ensure_future(agent_mod._follow_lanes("sqlite:///x.db", sched, opener))
    try:
        # its jobs wait on nothing outside (or behind its own lanes): no feed, a look at all now and then
        await _until(lambda: sched.kicks.count(None) >= 3, "three looks at every waiting workspace")
        assert feeds == []
        assert set(sched.kicks) == {None}
        # a job waits on a lane held elsewhere: the feed opens, its news kicks that workspace
        sched.on_others = True
        await _until(lambda: "w1" in sched.kicks, "the feed's news of w1's scheduled lane")
        assert len(feeds) == 1 and "w2" not in sched.kicks     # (a queue lane's change is no news)
        # none does any more: the feed is closed after RETRY_S, and not opened again
        sched.on_others = False
        await _until(lambda: feeds[0].closed, "the feed closed")
        before = sched.kicks.count(None)
        await _until(lambda: sched.kicks.count(None) >= before + 3, "three more looks")
        assert len(feeds) == 1
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
