"""``cancel_and_wait``: the shutdown step every owner of asyncio tasks takes (Qt-free).

The scheduler, the counters simulation, the run controller and the lanes view
each end their tasks the same way: cancel them all, then wait until every one
has finished its clean-up. The tasks' own errors and cancellations are not
raised here (they were the tasks' to report); a cancellation of the caller
while it waits is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


async def cancel_and_wait(tasks: Iterable[asyncio.Future]) -> None:
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
