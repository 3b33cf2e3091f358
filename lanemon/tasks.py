"""``cancel_and_wait``: the shutdown step every owner of asyncio tasks takes (Qt-free);
``sleep_until``: a deadline that has passed on return, also on qasync's loop;
``sigterm_interrupts``: SIGTERM ends a command as Ctrl+C does, its clean-up run.

The scheduler, the counters simulation, the run controller and the lanes view
each end their tasks the same way: cancel them all, then wait until every one
has finished its clean-up. The tasks' own errors and cancellations are not
raised here (they were the tasks' to report); a cancellation of the caller
while it waits is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another signal) inside ``sigterm_interrupts``: ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """In the block, SIGTERM is raised in the main thread as :class:`Terminated` (a
    ``KeyboardInterrupt``), as Ctrl+C is: every ``finally`` on the way out runs (the agents,
    the throwaway PostgreSQL, the worker processes a command started are stopped), where the
    default action killed the process at once. The handler before is back after the block.
    Main thread only (``signal.signal``'s rule)."""
    import signal

    def handler(signum, _frame) -> None:
        raise Terminated(signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


async def cancel_and_wait(tasks: Iterable[asyncio.Future]) -> None:
    """Cancel every one of ``tasks`` and return once all have finished (see the module
    docstring): their errors are not raised, the caller's own cancellation is."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def sleep_until(deadline: float, clock: Callable[[], float] = time.perf_counter) -> None:
    """Sleep until ``clock()`` reaches ``deadline`` (now, if it has).

    Guaranteed: on return ``clock() >= deadline``. ``asyncio.sleep`` alone does not promise
    that on qasync's loop: its ``call_later`` is a coarse Qt timer of whole milliseconds,
    which may fire up to 5 % early (measured: a 0.5 s sleep ended 25 ms early), so what is
    left is slept again. Not promised: how late it returns (a busy loop's lateness)."""
    # (a deadline, not a condition another task sets: no Event could end this sleep sooner)
    while (left := deadline - clock()) > 0:  # noqa: ASYNC110
        await asyncio.sleep(left)


def run_until_signalled(main):
    """``asyncio.run(main(stop))``, where SIGTERM and SIGINT set ``stop`` (an ``asyncio.Event``):
    the way the headless processes (``lanemon agent``, the churn and staff workers) end cleanly.

    Guaranteed: a signal before the loop runs, while it runs or after it closed never kills
    the process -- the handlers are Python-level ones installed before the run (asyncio's own
    go back to the default, death by the signal, when ``asyncio.run`` ends), and once the run
    is over the two signals are ignored for good (a Python handler is reset to the default when
    the interpreter shuts down; an ignored signal stays ignored). Returns what ``main`` returned;
    its exceptions are raised."""
    import signal

    wakes: list = []   # the running loop's stop.set, while there is one

    def on_signal(_sig, _frame) -> None:
        for wake in wakes:
            try:
                wake()
            except RuntimeError:  # the loop is closed: nothing left to stop
                pass

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    async def go():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        wakes.append(lambda: loop.call_soon_threadsafe(stop.set))
        return await main(stop)

    try:
        return asyncio.run(go())
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
