"""Running the CPU job in another process (cold, warm) or in a thread.

Worker kinds:

- ``"cold"``: a new process per run, started from a ``forkserver`` (Linux) or
  by ``spawn`` (elsewhere), never by forking this possibly threaded Qt process.
  Its cost includes the process start-up (see ``spawn_cost_ms``).
- ``"warm"``: a pool of processes started ahead of time and reused: the reason
  real services pre-start workers. ``warm_roundtrip_ms`` measures a round trip.
- ``"thread"``: a thread of this process. It shares memory, but in CPython a
  pure-Python loop holds the GIL, so the event loop still stalls: the
  heartbeat shows what that costs.

Guarantees:

- ``run_in_worker(total, kind)`` returns ``hash_range(0, total)``. Arguments go
  in by copy (pickled through a pipe) and the result comes back by copy; no
  shared memory. Concurrent calls all complete; a warm pool hands each call
  its own worker and queues callers when all are busy (first come, first
  served).
- A worker process that dies (killed, crashed) makes the caller raise
  ``WorkerDied`` with the pid and exit code; it never hangs. The warm pool
  replaces the dead worker, so the next call works.
- Cancelling the awaiting task stops the work: a cold process or the busy warm
  worker is terminated (and replaced in the pool); a thread run stops at its
  next checkpoint (every ``THREAD_CHECK_EVERY`` iterations).
- ``shutdown_workers()`` leaves no worker process behind.

Processes import only ``lanemon.work._kernel`` (no Qt, no numpy).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from lanemon.work import _kernel

KINDS = ("cold", "warm", "thread")
THREAD_CHECK_EVERY = 250_000


class WorkerError(RuntimeError):
    """The job could not be completed in a worker."""


class WorkerDied(WorkerError):
    """The worker process ended before it answered."""


def start_method() -> str:
    """The multiprocessing start method lanemon uses on this platform."""
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


_ctx = None


def context():
    """The explicit multiprocessing context (forkserver on Linux, else spawn)."""
    global _ctx
    if _ctx is None:
        _ctx = multiprocessing.get_context(start_method())
        if start_method() == "forkserver":
            # The server imports only the kernel; children fork from it.
            _ctx.set_forkserver_preload(["lanemon.work._kernel"])
    return _ctx


# Threads that wait on pipes (they hold no GIL while waiting).
_waiters = ThreadPoolExecutor(max_workers=16, thread_name_prefix="lanemon-wait")


def _wait_answer(conn, sentinel) -> tuple[str, object] | None:
    """Block until the worker answers (its reply) or dies (``None``)."""
    ready = multiprocessing.connection.wait([conn, sentinel])
    if conn in ready:
        try:
            return conn.recv()
        except (EOFError, OSError):
            return None
    return None


def _unwrap(reply, proc, what: str):
    if reply is None:
        proc.join(timeout=1.0)
        raise WorkerDied(f"worker process {proc.pid} died (exit code {proc.exitcode}) during {what}")
    status, value = reply
    if status != "ok":
        raise WorkerError(f"worker process {proc.pid} failed during {what}: {value}")
    return value


def _stop_process(proc, grace: float = 0.5) -> None:
    if proc.is_alive():
        proc.terminate()
        proc.join(grace)
    if proc.is_alive():
        proc.kill()
        proc.join(grace)


# --- cold -------------------------------------------------------------------

_cold_running: set = set()


async def _run_cold(op: str, arg: object, what: str):
    ctx = context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_kernel.run_once, args=(child, op, arg), daemon=True, name="lanemon-cold")
    proc.start()
    child.close()
    _cold_running.add(proc)
    try:
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(_waiters, _wait_answer, parent, proc.sentinel)
        value = _unwrap(reply, proc, what)
        proc.join(1.0)
        return value
    finally:
        _stop_process(proc)
        parent.close()
        _cold_running.discard(proc)


# --- warm pool --------------------------------------------------------------

@dataclass(eq=False)
class _Worker:
    proc: object
    conn: object
    jobs: int = 0


@dataclass(eq=False)
class WarmPool:
    """Processes started ahead and reused; see the module docstring."""

    size: int = field(default_factory=lambda: max(2, os.cpu_count() or 2))
    _idle: list = field(default_factory=list)
    _all: list = field(default_factory=list)
    _waiting: list = field(default_factory=list)
    _closed: bool = False

    def _spawn(self) -> _Worker:
        ctx = context()
        parent, child = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_kernel.serve, args=(child,), daemon=True, name="lanemon-warm")
        proc.start()
        child.close()
        worker = _Worker(proc, parent)
        self._all.append(worker)
        return worker

    def start(self) -> "WarmPool":
        """Start the missing workers now (idempotent)."""
        if self._closed:
            raise WorkerError("the warm pool is closed")
        while len(self._all) < self.size:
            self._idle.append(self._spawn())
        return self

    def pids(self) -> list[int]:
        """Pids of the pool's live processes."""
        return [w.proc.pid for w in self._all if w.proc.is_alive()]

    def busy_pids(self) -> list[int]:
        """Pids of the workers currently running a job."""
        return [w.proc.pid for w in self._all if w not in self._idle and w.proc.is_alive()]

    def _retire(self, worker: _Worker) -> None:
        _stop_process(worker.proc)
        worker.conn.close()
        if worker in self._all:
            self._all.remove(worker)
        if worker in self._idle:
            self._idle.remove(worker)

    async def _acquire(self) -> _Worker:
        self.start()
        while True:
            if self._idle:
                worker = self._idle.pop()
                if worker.proc.is_alive():
                    return worker
                self._retire(worker)  # died while idle: replace it
                self._idle.append(self._spawn())
                continue
            fut = asyncio.get_running_loop().create_future()
            self._waiting.append(fut)
            try:
                return await fut
            finally:
                if fut in self._waiting:
                    self._waiting.remove(fut)

    def _release(self, worker: _Worker) -> None:
        if self._closed:
            self._retire(worker)
            return
        while self._waiting:
            fut = self._waiting.pop(0)
            if not fut.done():
                fut.set_result(worker)
                return
        self._idle.append(worker)

    async def call(self, op: str, arg: object, what: str):
        worker = await self._acquire()
        healthy = False
        try:
            try:
                worker.conn.send((op, arg))
            except (BrokenPipeError, OSError):
                reply = None
            else:
                loop = asyncio.get_running_loop()
                reply = await loop.run_in_executor(_waiters, _wait_answer, worker.conn, worker.proc.sentinel)
            value = _unwrap(reply, worker.proc, what)
            worker.jobs += 1
            healthy = True
            return value
        finally:
            if healthy:
                self._release(worker)
            else:  # died, failed to talk, or cancelled mid-job: replace it
                self._retire(worker)
                if not self._closed:
                    self._release(self._spawn())

    def close(self) -> None:
        """Stop every worker; the pool refuses further calls."""
        self._closed = True
        for worker in list(self._all):
            try:
                worker.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 1.0
        for worker in list(self._all):
            worker.proc.join(max(0.0, deadline - time.monotonic()))
            self._retire(worker)
        for fut in self._waiting:
            if not fut.done():
                fut.set_exception(WorkerError("the warm pool was closed"))
        self._waiting.clear()


_pool: WarmPool | None = None


def warm_pool() -> WarmPool:
    """The process-wide warm pool (created and started on first use)."""
    global _pool
    if _pool is None or _pool._closed:
        _pool = WarmPool()
    return _pool.start()


# --- thread -----------------------------------------------------------------

async def _run_thread(total: int) -> int:
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def body() -> None:
        h = 0
        try:
            for start, end in _kernel.chunks(total, THREAD_CHECK_EVERY):
                if stop.is_set():
                    return
                h = _kernel.hash_range(start, end, h)
        except BaseException as exc:  # delivered to the caller
            loop.call_soon_threadsafe(_settle, fut, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, fut, h, None)

    thread = threading.Thread(target=body, name="lanemon-thread-job", daemon=True)
    thread.start()
    try:
        return await fut
    finally:
        stop.set()


def _settle(fut, value, exc) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


# --- public -----------------------------------------------------------------

async def run_in_worker(total: int, kind: str = "warm") -> int:
    """``hash_range(0, total)`` computed off the event loop by ``kind``."""
    _kernel.check_total(total)
    what = f"hash_range(0, {total})"
    if kind == "cold":
        return await _run_cold("hash", total, what)
    if kind == "warm":
        return await warm_pool().call("hash", total, what)
    if kind == "thread":
        return await _run_thread(total)
    raise ValueError(f"unknown worker kind {kind!r}; choose from {', '.join(KINDS)}")


async def worker_call(op: str, kind: str = "warm"):
    """Ask a worker a diagnostic question (``"pid"`` or ``"modules"``)."""
    if kind == "cold":
        return await _run_cold(op, None, op)
    if kind == "warm":
        return await warm_pool().call(op, None, op)
    raise ValueError(f"worker_call supports cold and warm, not {kind!r}")


async def spawn_cost_ms(repeat: int = 3) -> float:
    """Start-up cost alone: a cold worker started for an empty job, in ms.

    The median of ``repeat`` starts. On Linux the first cold start ever also
    starts the forkserver (a one-time cost, paid here untimed), so the figure
    is what every later cold run pays.
    """
    if start_method() == "forkserver":
        await _run_cold("hash", 0, "an empty job")
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        await _run_cold("hash", 0, "an empty job")
        times.append((time.perf_counter() - t0) * 1000.0)
    return sorted(times)[len(times) // 2]


async def warm_roundtrip_ms(repeat: int = 5) -> float:
    """Best round trip of an empty job through the warm pool, in ms."""
    pool = warm_pool()
    await pool.call("hash", 0, "an empty job")  # make sure a worker is up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        await pool.call("hash", 0, "an empty job")
        best = min(best, (time.perf_counter() - t0) * 1000.0)
    return best


def live_worker_pids() -> list[int]:
    """Pids of every lanemon worker process still alive (cold and warm)."""
    pids = [p.pid for p in _cold_running if p.is_alive()]
    if _pool is not None:
        pids += _pool.pids()
    return pids


def shutdown_workers(stop_server: bool = True) -> None:
    """Stop the warm pool and any cold worker; optionally the forkserver too."""
    global _pool
    if _pool is not None:
        _pool.close()
        _pool = None
    for proc in list(_cold_running):
        _stop_process(proc)
    if stop_server and start_method() == "forkserver":
        from multiprocessing import forkserver

        stop = getattr(forkserver._forkserver, "_stop", None)
        if stop is not None:
            try:
                stop()
            except Exception:
                pass
