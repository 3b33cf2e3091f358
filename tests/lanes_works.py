"""The simulated work the lanes' seeded programs submit (tests/test_lanes_random.py,
test_lanes_gc.py, test_replay_lanes.py): one shape for all of them."""

from __future__ import annotations

import asyncio


class Steps:
    """Work that yields ``steps`` times, checking for a stop before and after each, and
    then fails if ``fail``; ``ran`` (a set), if given, gets the job's id when it starts."""

    def __init__(self, steps: int, fail: bool, ran: set[int] | None = None) -> None:
        self.steps = steps
        self.fail = fail
        self.ran = ran

    async def run(self, ctx) -> None:
        if self.ran is not None:
            self.ran.add(ctx.job_id)
        ctx.checkpoint()
        for _ in range(self.steps):
            await asyncio.sleep(0)
            ctx.checkpoint()
        if self.fail:
            raise RuntimeError("work failed")
