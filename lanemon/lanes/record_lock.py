"""Per-reservation record lock: FIFO per key, independent across keys.

:class:`RecordLock` serialises the short *record changes* of one reservation
(claim, cancel, final save) without making unrelated reservations wait.

Guarantees
----------
* **Mutual exclusion per key.**  At most one holder of ``hold(key)`` at a time
  for each key.
* **FIFO per key.**  Holders of one key enter in the order in which they called
  ``acquire``/entered ``hold``.  On release the lock is *handed over* directly
  to the oldest waiter, so a newcomer can never barge ahead of a waiter.
* **Independence.**  Different keys never wait for each other; an uncontended
  acquire completes without suspending.
* **No residue.**  A key with no holder and no waiter has no entry:
  ``len(lock) == 0`` when nothing is held.  IDs do not accumulate.
* **Failures do not break the chain.**  ``hold`` releases on any exit,
  including an exception raised by the change; the next waiter then runs.
  A waiter cancelled while waiting leaves the queue; a waiter cancelled after
  the lock was handed to it passes the lock on to the next waiter.

Refused
-------
* ``release(key)`` of a key that is not held raises ``RuntimeError`` (a bug in
  the caller, not a race to be tolerated).

The lock is meant for short record changes only.  Long work (a dispatch) must
run *outside* it, so that reading or changing a reservation never waits for a
running program.  Single event loop; not thread-safe.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable

__all__ = ["RecordLock"]


class _Hold:
    __slots__ = ("_lock", "_key")

    def __init__(self, lock: RecordLock, key: Hashable) -> None:
        self._lock = lock
        self._key = key

    async def __aenter__(self) -> None:
        lock = self._lock
        key = self._key
        if not lock.try_acquire(key):  # else: taken at once, no suspension, no future
            await lock.acquire(key)
        return None

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self._lock.release(self._key)


class RecordLock:
    """FIFO async lock per key; see the module docstring."""

    def __init__(self) -> None:
        # key -> waiters (futures) behind the current holder.  The presence of
        # the key means "held".
        self._entries: dict[Hashable, deque[asyncio.Future[None]]] = {}
        self.acquisitions = 0
        self.contended = 0

    def hold(self, key: Hashable) -> _Hold:
        """``async with lock.hold(key):`` - one change to ``key``'s record."""
        return _Hold(self, key)

    def try_acquire(self, key: Hashable) -> bool:
        """Take ``key`` now if nobody holds it or waits for it; else ``False``."""
        if key in self._entries:
            return False
        self._entries[key] = deque()
        self.acquisitions += 1
        return True

    async def acquire(self, key: Hashable) -> None:
        """Hold ``key``: at once if nobody holds it, else after every earlier caller (FIFO).

        Guaranteed: a caller cancelled while it waits does not hold the key afterwards, and a
        hand-over that raced with its cancellation is passed on to the next waiter (the key is
        never left held by nobody)."""
        waiters = self._entries.get(key)
        if waiters is None:
            self._entries[key] = deque()
            self.acquisitions += 1
            return
        self.contended += 1
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                # Ownership was handed to us just before the cancellation.
                self.release(key)
            else:
                try:
                    waiters.remove(fut)
                except ValueError:
                    pass
            raise
        self.acquisitions += 1

    def release(self, key: Hashable) -> None:
        """Let ``key`` go: to its oldest waiter still waiting (the key stays held), else free.
        Refused: a key nobody holds (``RuntimeError``)."""
        waiters = self._entries.get(key)
        if waiters is None:
            raise RuntimeError(f"record lock for {key!r} is not held")
        while waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # hand over: the key stays held
                return
        del self._entries[key]

    def locked(self, key: Hashable) -> bool:
        """Is ``key`` held now?"""
        return key in self._entries

    def waiting(self, key: Hashable) -> int:
        """How many callers wait for ``key`` now (a hand-over done but not yet run counts not)."""
        waiters = self._entries.get(key)
        return 0 if waiters is None else sum(1 for f in waiters if not f.done())

    def __len__(self) -> int:
        """Number of keys currently held (held keys have an entry)."""
        return len(self._entries)
