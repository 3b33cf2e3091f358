"""Follow a store's counter board from the window: read it when the change feed says it changed.

``BoardFollower(url)`` is what the Counters tab shows in store mode
(``CountersView.set_source(follower)``). Qt-free: it runs on the running
asyncio loop (the window's qasync loop), as one task (``start()``), and the
view reads ``state()`` when it draws.

Guaranteed:

* **Reads follow the feed, never the frame rate.** The task waits on the
  store's change feed (:mod:`lanemon.store.sql.feed`) and re-reads the board
  (one board operation, :mod:`lanemon.store.sql.board`: every row and the
  store-wide ``board_*`` counts) only when a ``board`` change arrived, or when
  the feed says to start from a snapshot (its first answer; a lost LISTEN
  connection; an SQLite reader that fell behind). Changes that arrive while a
  read runs are folded into the next one. The lock holder (the staff agents'
  store lock, the lane ``LOCK_LANE`` / ``LOCK_WORKSPACE``) is read when that
  lane changed; the agents (``SqlStore.sessions()``, where the store has it:
  name and ``info``'s strategy) at most every :data:`SESSIONS_EVERY_S` while
  the board changes. A claim whose TTL ran out shows free without a read:
  ``state()`` judges every claim at the store clock now, by the board's rule
  (expiry is passive; its count, ``board_expired``, grows when an agent's
  next operation notices it).
* ``state()`` is synchronous and cheap (no I/O): a :class:`BoardState` built
  from the last read, its counters judged at the store clock as estimated
  now (a claim's TTL counts down between reads); ``version`` grows with every
  read, so a view repaints only when it changed (or a countdown runs).
* ``on_change`` callbacks run after each read (on the loop): a view marks
  itself dirty there.
* A store that cannot be opened or read does not end the task: ``state()``
  says why (``error``; a store without a counter board yet says so,
  ``error`` starting with "no counter board"), and it tries again every
  :data:`RETRY_S`. ``aclose()`` ends the task, the feed and the session; it is
  idempotent.

The follower opens one store session (named ``NAME``, ``lanemon-window``: the
store's ``sessions`` lists it like any process; its ``info`` says role
``window`` where the store keeps one). It never ensures or resizes the board:
it shows the board the agents made, whatever its size.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields

from lanemon.agents.staff import LOCK_LANE, LOCK_WORKSPACE, set_info
from lanemon.store.claims import ClaimCounts, CounterView
from lanemon.store.sql.board import BoardReply, PgBoard, SqliteBoard
from lanemon.store.sql.claims import counter_view
from lanemon.store.url import StoreError, parse

__all__ = ["BoardFollower", "BoardState", "NAME", "RATE_WINDOW_S", "RETRY_S",
           "SESSIONS_EVERY_S"]

log = logging.getLogger(__name__)

NAME = "lanemon-window"
#: how long one wait on the feed lasts (the task then looks at its own timers)
WAIT_S = 0.25
#: a store that could not be opened or read is tried again after this long
RETRY_S = 2.0
#: the agents' sessions are re-read at most this often (they are not in the change feed)
SESSIONS_EVERY_S = 2.0
#: customers seated per second are counted over this many recent seconds
RATE_WINDOW_S = 5.0

_LOCK_KEY = f"{LOCK_LANE}:{LOCK_WORKSPACE}"
_ZERO = ClaimCounts(**{f.name: 0 for f in fields(ClaimCounts)})


@dataclass(frozen=True, slots=True)
class Agent:
    """A process on the store, as its session says (``strategy`` None when it does not say)."""

    name: str
    role: str | None
    strategy: str | None


@dataclass(frozen=True, slots=True)
class BoardState:
    """The store's board as last read (see the module docstring)."""

    url: str                           # the store, password-free
    version: int                       # reads so far (0: nothing read yet)
    counters: tuple[CounterView, ...]  # in counter order, judged at the store clock now
    seated_by: tuple[tuple[str, ...], ...]   # per counter: who seated each of its customers
    claim_ttls: tuple[float | None, ...]     # per counter: the TTL its claim on record was given
    counts: ClaimCounts                # store-wide running totals (``board_*``)
    lock_holder: str | None            # the staff member holding the store lock, if any
    agents: tuple[Agent, ...]          # sessions on the store (empty where it does not list them)
    seated_per_s: float                # assigned + finalized per second over RATE_WINDOW_S
    error: str | None                  # why the last open or read failed (None: it worked)
    read_at: float                     # time.monotonic() of the last read (0: none)

    @property
    def seated(self) -> int:
        """Customers seated so far, store-wide (blind assigns, doubles included, and finalized claims)."""
        return self.counts.assigned + self.counts.finalized


class BoardFollower:
    """See the module docstring."""

    def __init__(self, url: str, *, name: str = NAME) -> None:
        self._url = parse(url)
        self.url = self._url.redacted()
        self._name = name
        self._task: asyncio.Task | None = None
        self._closed = False
        self._callbacks: list[Callable[[], None]] = []
        self._reply: BoardReply | None = None
        self._base = 0.0                 # store clock (no skew) minus time.monotonic(), from the last reply
        self._lock_holder: str | None = None
        self._agents: tuple[Agent, ...] = ()
        self._sessions_at = float("-inf")
        self._seated: deque[tuple[float, int]] = deque()   # (monotonic, seated) of recent reads
        self._version = 0
        self._error: str | None = None
        self._read_at = 0.0
        self.reads = 0                   # board reads made (for tests: they follow the feed)
        self.waits = 0                   # waits on the feed that ended

    # -- life ----------------------------------------------------------------------------
    def start(self) -> asyncio.Task:
        """Start following on the running loop (idempotent while it runs)."""
        if self._closed:
            raise RuntimeError("this follower was closed; make a new one")
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._follow(), name="lanemon-board-follow")
        return self._task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def aclose(self) -> None:
        """Stop following; the feed and the session are closed when this returns."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` after each read; returns ``unsubscribe`` (harmless twice)."""
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)
        return unsubscribe

    # -- reading ---------------------------------------------------------------------------
    def state(self) -> BoardState:
        reply = self._reply
        now_mono = time.monotonic()
        if reply is None:
            counters: tuple[CounterView, ...] = ()
            seated_by: tuple[tuple[str, ...], ...] = ()
            ttls: tuple[float | None, ...] = ()
            counts = _ZERO
        else:
            now = self._base + now_mono + reply.skew
            counters = tuple(counter_view(row, now) for row in reply.board)
            seated_by = tuple(row.seated_by for row in reply.board)
            ttls = tuple(None if row.epoch is None else row.expires_at - row.claimed_at for row in reply.board)
            counts = ClaimCounts(**{f.name: reply.stats.get("board_" + f.name, 0) for f in fields(ClaimCounts)})
        return BoardState(url=self.url, version=self._version, counters=counters, seated_by=seated_by,
                          claim_ttls=ttls, counts=counts, lock_holder=self._lock_holder, agents=self._agents,
                          seated_per_s=self._rate(now_mono), error=self._error, read_at=self._read_at)

    def _rate(self, now: float) -> float:
        seen = self._seated
        if len(seen) < 1:
            return 0.0
        start = now - RATE_WINDOW_S
        base_t, base_v = seen[0]
        for t, v in seen:
            if t > start:
                break
            base_t, base_v = t, v
        span = now - base_t
        return (seen[-1][1] - base_v) / span if span > 0 else 0.0

    # -- the task --------------------------------------------------------------------------
    async def _follow(self) -> None:
        from lanemon.store.sql import open_sql_store
        from lanemon.store.sql.feed import open_feed

        while True:
            store = feed = None
            try:
                store = await open_sql_store(self._url, name=self._name)
                await set_info(store, {"role": "window", "lanes": "store", "queues": [], "strategy": None,
                                        "jobs_running": 0, "lanes_held": 0})
                feed = await open_feed(self._url)
                await self._watch(store, feed)
            except asyncio.CancelledError:
                raise
            except (StoreError, OSError) as exc:
                self._failed(str(exc))
            except Exception as exc:  # a bug must not end the window's follower silently
                log.exception("board follower failed")
                self._failed(f"{type(exc).__name__}: {exc}")
            finally:
                if feed is not None:
                    with contextlib.suppress(Exception):
                        await feed.close()
                if store is not None:
                    with contextlib.suppress(Exception):
                        await store.close()
            await asyncio.sleep(RETRY_S)

    async def _watch(self, store, feed) -> None:
        from lanemon.store.sql.sqlite import SqliteBackend

        backend = store.backend
        board = SqliteBoard(backend) if isinstance(backend, SqliteBackend) else PgBoard(backend)
        lock_due = True
        board_due = True
        while True:
            if board_due:
                await self._read(store, board, lock_due)
                board_due = lock_due = False
            changes = await feed.wait(WAIT_S)
            self.waits += 1
            if changes is None:
                board_due = lock_due = True
                continue
            for table, key in changes:
                if table == "board":
                    board_due = True
                elif table == "lanes" and key == _LOCK_KEY:
                    lock_due = board_due = True

    async def _read(self, store, board, lock_due: bool) -> None:
        try:
            reply = await board.snapshot()
        except StoreError as exc:
            text = str(exc)
            if "no such table" in text or "does not exist" in text:
                self._failed("no counter board in this store yet (start a staff agent: "
                             "lanemon agent --role staff)")
                return
            raise
        if lock_due:
            rows = await store.backend.lane_rows()
            self._lock_holder = next((r.owner for r in rows
                                      if r.name == LOCK_LANE and r.workspace == LOCK_WORKSPACE), None)
        now = time.monotonic()
        if now - self._sessions_at >= SESSIONS_EVERY_S:
            self._sessions_at = now
            self._agents = await _agents(store)
        self._reply = reply
        self._base = reply.now - reply.skew - reply.mono
        self._error = None
        self._read_at = now
        seated = reply.stats.get("board_assigned", 0) + reply.stats.get("board_finalized", 0)
        self._seated.append((now, seated))
        while len(self._seated) > 2 and self._seated[1][0] <= now - RATE_WINDOW_S:
            self._seated.popleft()
        self.reads += 1
        self._changed()

    def _failed(self, text: str) -> None:
        self._error = text
        self._changed()

    def _changed(self) -> None:
        self._version += 1
        for callback in list(self._callbacks):
            try:
                callback()
            except Exception:
                log.exception("board follower callback failed")


async def _agents(store) -> tuple[Agent, ...]:
    """The sessions on the store (``SqlStore.sessions()``, where it exists), this one left out."""
    sessions = getattr(store, "sessions", None)
    if sessions is None:
        return ()
    rows = await sessions()
    found = []
    for row in rows:
        if row.session == store.session:
            continue
        info = row.info if isinstance(row.info, dict) else {}
        found.append(Agent(name=row.name, role=info.get("role"), strategy=info.get("strategy")))
    return tuple(found)

