"""A store owner in its own process, for the tests that kill or pause one.

``python tests/store_owner.py URL WORKSPACE JOB_ID``: opens a session on the
store (``open_sql_store``), claims lane ``scheduled:WORKSPACE``, saves job
JOB_ID as running under that lane, prints ``claimed EPOCH SESSION`` and waits
for a line on stdin (its event loop does not run meanwhile: no lease renewal).
``save`` makes it write the job's final state, fenced by its lane, and print
``saved`` or ``stale``; then it closes the session and exits.
"""

from __future__ import annotations

import asyncio
import sys
import time

from lanemon.lanes import StaleWrite, State
from lanemon.store import url as store_url
from lanemon.store.sql import open_sql_store


async def main(url: str, workspace: str, job_id: int) -> None:
    store = await open_sql_store(store_url.parse(url), name="owner")
    lanes = store.lanes("scheduled", clock=time.monotonic, emit=None)
    records = store.records()
    token = await lanes.aclaim(workspace, "owner#1")
    if token is None:
        print("refused", flush=True)
        return
    queued = await records.load(job_id)
    running = queued._replace(state=State.RUNNING, run_id=f"run-{token.epoch}", attempts=queued.attempts + 1,
                              epoch=token.epoch)
    await records.save(running, fence=(token,))
    print(f"claimed {token.epoch} {store.session}", flush=True)
    command = sys.stdin.readline().strip()
    if command == "save":
        try:
            await records.save(running._replace(state=State.SUCCEEDED), fence=(token,))
            print("saved", flush=True)
        except StaleWrite:
            print("stale", flush=True)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
