"""SQL engines of the store seam: SQLite (one machine) and PostgreSQL (several hosts).

An opened :class:`SqlStore` is one **session**: one connection (SQLite) or
pool (PostgreSQL) of one process, with an id the store records as the owner
of every lane it claims. It makes the seam's objects, all on that session:

* ``store.lanes(name, clock=, emit=)`` -- a :class:`~lanemon.store.lanes.LanesFactory`;
* ``store.records(events=, keep_finished=, writer=, fenced=)`` -- a
  :class:`~lanemon.store.records.RecordsFactory` (``fenced=False``: writes are
  not fenced by lane tokens, for a scheduler on in-memory lanes; see
  :class:`~lanemon.store.sql.adapters.SqlRecords`);
* ``store.claims(counters=, clock=, default_ttl=, events=)`` -- a claim-store factory.

so ``Scheduler(lanes=store.lanes, store=store.records(events=hub,
keep_finished=None), events=hub)`` runs the scheduler on the store.

Leases: a lane is its owner's until ``lease_until`` (store clock). The
**keeper** (``start_keeper()``, a task on the running loop) renews this
session's lanes every third of the lease and reaps the lanes of others whose
lease ran out. A process that stops running its loop for longer than the lease
-- SIGSTOP, a long GC pause, a laptop lid -- loses its lanes to the next
claimer, and its late writes are refused by the fence. A session that never
starts its keeper keeps its lanes for one lease only.

Who is running: each session has a ``sessions`` row (pid, host, name,
started, last_seen, info). ``set_info(dict)`` keeps what the process says
about itself in memory; the keeper writes it with each renew, which also sets
``last_seen`` (the heartbeat); ``open_sql_store(..., info=)`` writes it at
open. ``await store.sessions()`` lists every session
(:class:`~lanemon.store.sql.backend.SessionRow`).

Reservations of queued jobs (``take_jobs``): several processes taking jobs
from one store each reserve their own, so they do not all go for the same ones;
the keeper renews them with the lanes (see :meth:`SqlStore.take_jobs`).

``close()`` stops the keeper, ends the session (its reservations given back)
and closes its connections; the lanes it still holds are left to their lease
(a closing scheduler releases them first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from lanemon.events import EventHub
from lanemon.store.sql.adapters import SqlLanes, SqlRecords
from lanemon.store.sql.backend import Backend, JobSpec, SessionRow, StoredJob
from lanemon.store.url import StoreError, StoreUrl

__all__ = ["SqlStore", "open_sql_store"]

log = logging.getLogger(__name__)


class SqlStore:
    """One session on a SQL store (see the module docstring)."""

    def __init__(self, url: StoreUrl, backend: Backend) -> None:
        self.url = url
        self.backend = backend
        self._keeper: asyncio.Task | None = None
        self.keeper_errors = 0
        self.last_keeper_error: str | None = None

    @property
    def session(self) -> str:
        return self.backend.session

    @property
    def engine(self) -> str:
        return self.url.engine

    def __repr__(self) -> str:
        return f"SqlStore({self.url.redacted()!r}, session={self.session!r})"

    # -- the seam's factories ---------------------------------------------------------
    def lanes(self, name: str, *, clock: Callable[[], float],
              emit: Callable[..., None] | None) -> SqlLanes:
        return SqlLanes(self.backend, name, clock=clock, emit=emit)

    def records(self, *, events: EventHub | None = None, keep_finished: int | None = None,
                writer: str = "", fenced: bool = True) -> SqlRecords:
        return SqlRecords(self.backend, events=events, keep_finished=keep_finished, writer=writer,
                          fenced=fenced)

    def claims(self, *, counters: int, clock: Callable[[], float] | None = None, default_ttl: float = 1.0,
               events: EventHub | None = None):
        from lanemon.store.sql.claims import SqlClaims
        return SqlClaims.create(self.backend, counters=counters, default_ttl=default_ttl, events=events,
                                clock=clock)

    # -- leases -------------------------------------------------------------------------
    def start_keeper(self) -> asyncio.Task:
        """Renew this session's leases and reap expired ones, every third of the lease."""
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.get_running_loop().create_task(self._keep(), name="lanemon-store-keeper")
        return self._keeper

    async def _keep(self) -> None:
        period = self.backend.lease / 3
        while True:
            try:
                await self.backend.renew()
                await self.backend.reap()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a lost connection: try again next period
                self.keeper_errors += 1
                self.last_keeper_error = str(exc)
                log.warning("store keeper: %s", exc)
            await asyncio.sleep(period)

    # -- who is running ------------------------------------------------------------------
    def set_info(self, info: dict[str, Any]) -> None:
        """What this session says about itself (a JSON object), written with the keeper's
        next renew (and each one after). ``TypeError``/``ValueError`` when not JSON."""
        self.backend.set_info(info)

    async def sessions(self) -> list[SessionRow]:
        """Every session of the store, oldest first (a dead SQLite process's row stays
        until a reaper finds it not renewed for ``STALE_SESSION_LEASES`` leases)."""
        return await self.backend.sessions()

    async def queued_jobs(self, queues: list[str], after_id: int = 0, limit: int = 256) -> list[StoredJob]:
        """Up to ``limit`` queued jobs of ``queues`` with ids above ``after_id``, in id order."""
        return await self.backend.queued_jobs(list(queues), after_id, limit)

    async def take_jobs(self, queues: list[str], limit: int = 32) -> list[StoredJob]:
        """**Reserve** up to ``limit`` queued jobs of ``queues`` for this session, in id order:
        jobs no session holds, or whose reservation ran out, from this session's **fair share**
        of the workspaces:

        - never a workspace whose lane another session holds (its jobs would wait for that lane;
          graphile-worker skips the jobs of a locked named queue the same way), nor one whose
          jobs another session reserved, unless this session uses it too (holds one of its
          lanes or reserved one of its jobs): two sessions taking jobs of one workspace wait
          on each other's lanes (with 8 agents 1.7 refused claims per job);
        - at most ``ceil(W / S)`` workspaces: W the workspaces with queued jobs at the head of
          ``queues`` (their first ``TAKE_HEAD`` queued jobs in id order, jobs beyond it are taken
          when they come to the head: a take's cost stays bounded, 1-4 ms however long the
          queues), S this session and the other live taking sessions (``info`` role ``lanes`` with store
          lanes, seen within ``STALE_SESSION_LEASES`` leases: ``lanemon agent`` registers so).
          This session's own workspaces count first, then the others by their lowest queued
          job. So the first agent to take does not reserve a job of every workspace and keep
          all the work; an agent over its share (more agents joined) takes no new jobs from
          its excess workspaces, which pass to the others once the jobs it holds there ran.
          Sessions that do not say they take (no such ``info``) are not counted: they share
          with nobody.

        Atomic: two sessions taking at once never get one job (PostgreSQL: one statement,
        each picked workspace locked through its first queued job's row; SQLite: a pick
        without the write lock, then under it the reservation of the picked jobs still free and
        of workspaces this session may still take from -- the lock, which every other process
        waits for, is held ~0.25 ms instead of the whole pick, 0.9-5 ms).
        A reservation lasts one lease (store clock), is
        renewed by the keeper while the job is still ``queued``, ends when the job is saved
        (``running`` or any other state), at ``give_back_jobs()`` and at ``close()``; a session
        that dies leaves its reservations to run out (on PostgreSQL, ``reap`` ends those of a
        session whose lock is free at once). A reservation decides nothing about running: the
        lanes and the transition rule (``queued -> running`` once) still do; it only keeps the
        other sessions from taking the same jobs."""
        return await self.backend.take_jobs(list(queues), limit)

    async def give_back_jobs(self, ids: Iterable[int] | None = None) -> int:
        """End every reservation of this session, or those of the jobs ``ids`` only (their jobs
        stay ``queued``, free for others); returns how many ended. A taker gives back the jobs
        of a take it could not adopt (one still live in it: re-queued by the store while its
        final save failed): the keeper renews every reservation of the session, so one kept
        unknowingly would keep its job from everyone."""
        return await self.backend.give_back_jobs(None if ids is None else [int(i) for i in ids])

    # -- outside occupancy (checked inside every claim, by the store) ----------------------
    async def mark_busy(self, workspace: str, reason: str = "outside") -> bool:
        """No lane of ``workspace`` is granted until ``clear_busy``; False if already busy."""
        return await self.backend.mark_busy(workspace, reason)

    async def clear_busy(self, workspace: str) -> bool:
        return await self.backend.clear_busy(workspace)

    # -- whole-store operations (the CLI) -------------------------------------------------
    async def submit(self, specs: list[JobSpec]) -> list[int]:
        """Add queued jobs; returns their ids (the store's)."""
        return await self.backend.add_jobs(specs)

    async def dump(self) -> dict[str, Any]:
        """Lanes, jobs, the refused-write ledger, the lane history and the counts."""
        return await self.backend.dump()

    async def reset(self) -> None:
        """Drop every lanemon table of the store (then ``init`` makes them again)."""
        await self.backend.reset()

    async def close(self) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        await self.backend.close()

    async def __aenter__(self) -> SqlStore:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


async def open_sql_store(url: StoreUrl, *, create: bool = False, name: str = "",
                         older_ok: bool = False, info: dict[str, Any] | None = None) -> SqlStore:
    """Open a session on the SQLite or PostgreSQL store ``url``.

    ``create``: make the schema in an empty store (idempotent on a lanemon
    store of this version). Refused with :class:`StoreError` (one line, no
    password): an unreachable server, a refused login, a read-only or foreign
    file, a store of another schema version -- except, with ``older_ok`` (for
    ``reset`` only), an older one: that session can only ``reset`` and ``close``.
    ``info``: the session's ``info`` from its first row on (see ``set_info``).
    """
    if url.engine == "sqlite":
        from lanemon.store.sql.sqlite import SqliteBackend
        backend: Any = SqliteBackend(url.path, lease=url.lease, name=name, info=info)
    elif url.engine == "postgresql":
        try:
            from lanemon.store.sql.postgres import PostgresBackend
        except ImportError as exc:  # psycopg missing
            raise StoreError(f"PostgreSQL stores need psycopg 3: {exc}") from None
        backend = PostgresBackend(url, lease=url.lease, name=name, info=info)
    else:
        raise StoreError(f"{url.redacted()!r} is not a SQL store")
    await backend.open(create=create, older_ok=older_ok)
    return SqlStore(url, backend)
