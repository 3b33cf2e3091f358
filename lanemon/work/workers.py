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
- A warm worker that dies while idle is noticed when it dies (a helper thread
  per worker waits on its process sentinel and tells the pool's loop), not at
  the next call: the pool retires it and starts a replacement off the loop.
- Cancelling the awaiting task stops the work: a cold process or the busy warm
  worker is stopped, even a stopped (SIGSTOP) one, and the pool starts a
  replacement at once; a thread run stops at its next checkpoint (every
  ``THREAD_CHECK_EVERY`` iterations). No timeout is applied here: callers
  that want one cancel (``asyncio.timeout``), which stops the worker the same
  way.
- ``shutdown_workers()`` leaves no worker process behind.
- ``worker_processes()`` lists the live worker processes (warm or cold, busy
  or idle); ``kill_worker(pid)`` SIGKILLs one of them and nothing else (the
  window's Processes tab): its run fails with ``WorkerDied`` (as for any
  death) and a warm worker is replaced, busy or idle.
- Process starts (and the first forkserver start) happen in a helper thread,
  never on the event loop, so starting a worker does not stall the loop.

- Worker processes run ``_kernel.WORKER_NICE`` lower than the process that
  started them: with every core busy, the event loop wins a core from the
  work it handed off.

Processes import only ``lanemon.work._kernel`` (no Qt, no numpy).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import signal
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


# Threads that start processes and wait on pipes, so that neither blocks the
# event loop (a process start can take tens of ms; the first forkserver start,
# hundreds). Waiting threads hold no GIL.
_waiters = ThreadPoolExecutor(max_workers=16, thread_name_prefix="lanemon-wait")

# Every worker process lanemon started and has not yet reaped.
_live: set = set()


def prestart_server() -> None:
    """Start the forkserver now (blocking: call it off the event loop)."""
    context()  # sets the forkserver preload before the server starts
    if start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def _wait_answer(conn, sentinel) -> tuple[str, object] | None:
    """Block until the worker answers (its reply) or dies (``None``)."""
    ready = multiprocessing.connection.wait([conn, sentinel])
    if conn in ready:
        try:
            return conn.recv()
        except (EOFError, OSError):
            return None
    return None


async def _await_answer(conn, proc):
    """The worker's reply (``None`` if it died), waited for in a helper thread.

    If the caller is cancelled, the process is stopped (so the thread returns)
    and the pipe is closed only after the thread has let go of it: closing it
    earlier would free its file descriptor for reuse by the next pipe while
    the thread still selects on it.
    """
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(_waiters, _wait_answer, conn, proc.sentinel)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        _stop_process(proc)
        fut.add_done_callback(lambda _f: conn.close())
        raise


def _unwrap(reply, proc, what: str):
    if reply is None:
        proc.join(timeout=1.0)
        raise WorkerDied(f"worker process {proc.pid} died (exit code {proc.exitcode}) during {what}")
    status, value = reply
    if status != "ok":
        raise WorkerError(f"worker process {proc.pid} failed during {what}: {value}")
    return value


def _stop_process(proc, grace: float = 0.5) -> None:
    """Terminate ``proc`` (then kill it after ``grace`` s) and wait for it.

    A stopped process (SIGSTOP) gets SIGCONT after SIGTERM, so the SIGTERM is
    delivered now instead of pending (which cost the whole grace period).
    """
    if proc.is_alive():
        proc.terminate()
        if hasattr(signal, "SIGCONT"):
            try:
                os.kill(proc.pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        proc.join(grace)
    if proc.is_alive():
        proc.kill()
        proc.join(grace)
    _live.discard(proc)


# Starts and ``shutdown_workers`` exclude each other; a start asked for before
# a shutdown (an older generation) is refused, so no process (and no new
# forkserver) appears after a shutdown from work that was already under way.
_spawn_lock = threading.Lock()
_generation = 0


def _new_process(target, args: tuple, name: str, duplex: bool, generation: int | None = None):
    """A started worker process and our end of its pipe (blocking)."""
    with _spawn_lock:
        if generation is not None and generation != _generation:
            raise WorkerError("the workers were shut down")
        prestart_server()
        ctx = context()
        parent, child = ctx.Pipe(duplex=duplex)
        proc = ctx.Process(target=target, args=(child, *args), daemon=True, name=name)
        _live.add(proc)
        proc.start()
        child.close()
        return proc, parent


async def _start_off_loop(target, args: tuple, name: str, duplex: bool, generation: int | None = None):
    """``_new_process`` in a thread; a cancelled caller never leaks the process.

    ``generation`` is the shutdown generation the start belongs to (default:
    the current one when this coroutine first runs); a start of an older
    generation is refused."""
    loop = asyncio.get_running_loop()
    gen = _generation if generation is None else generation
    fut = loop.run_in_executor(_waiters, _new_process, target, args, name, duplex, gen)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        def cleanup(f):
            if not f.cancelled() and f.exception() is None:
                proc, conn = f.result()
                _stop_process(proc)
                conn.close()
        fut.add_done_callback(cleanup)
        raise


# --- cold -------------------------------------------------------------------

async def _run_cold(op: str, arg: object, what: str):
    proc, parent = await _start_off_loop(_kernel.run_once, (op, arg), "lanemon-cold", duplex=False)
    cancelled = False
    try:
        try:
            reply = await _await_answer(parent, proc)
        except asyncio.CancelledError:
            cancelled = True  # the pipe closes once the waiting thread lets go
            raise
        value = _unwrap(reply, proc, what)
        proc.join(1.0)
        return value
    finally:
        _stop_process(proc)
        if not cancelled:
            parent.close()


# --- warm pool --------------------------------------------------------------

@dataclass(eq=False)
class _Worker:
    proc: object
    conn: object
    jobs: int = 0


@dataclass(eq=False)
class WarmPool:
    """Processes started ahead and reused; see the module docstring.

    The pool keeps ``size`` workers. A worker that died (busy or idle) or was
    stopped mid-job (cancelled) is retired and a replacement is started off
    the event loop right away; callers waiting for a worker are served first
    come, first served.

    An idle worker's death is noticed by a watcher thread (one per worker,
    blocked on the process sentinel until the process ends), which hands the
    news to the loop the pool was last used on; the loop retires the worker
    and starts the replacement. A replacement that cannot be started is kept
    in ``last_error`` (the next call tries again).
    """

    size: int = field(default_factory=lambda: max(2, os.cpu_count() or 2))
    _idle: list = field(default_factory=list)
    _all: list = field(default_factory=list)
    _waiting: list = field(default_factory=list)
    _topup: object = None
    _replacing: object = None
    _closed: bool = False
    _loop: object = None
    # the shutdown generation this pool belongs to: its starts are refused after a shutdown, even
    # those whose coroutine first runs after it (a gather schedules them a loop turn later)
    _generation: int = field(default_factory=lambda: _generation)
    last_error: str | None = None

    def _adopt(self, proc, conn) -> None:
        worker = _Worker(proc, conn)
        if self._closed:
            self._retire(worker)
            return
        self._all.append(worker)
        threading.Thread(target=self._watch, args=(worker,), name="lanemon-warm-watch",
                         daemon=True).start()
        self._release(worker)

    def _watch(self, worker: _Worker) -> None:
        """Watcher thread: wait for the process to end, then tell the loop.

        The thread keeps ``worker`` (so its sentinel stays open) until the
        process has ended; it only waits, never reads, so the loop's own
        ``is_alive``/``join`` see the exit status as before."""
        try:
            multiprocessing.connection.wait([worker.proc.sentinel])
        except (OSError, ValueError):
            return
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._ended, worker)
        except RuntimeError:  # that loop is closed: the next call finds the dead worker
            pass

    def _ended(self, worker: _Worker) -> None:
        """On the loop: ``worker``'s process ended. Idle: retire and replace it
        (a busy worker's call sees the death itself; a retired one is done)."""
        if self._closed or worker not in self._idle:
            return
        self._retire(worker)
        self._replace()

    def _note_loop(self) -> None:
        self._loop = asyncio.get_running_loop()

    def _replace(self) -> None:
        """Start the missing workers in the background (on the running loop)."""
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self.astart())
        task.add_done_callback(self._replaced)
        self._replacing = task

    def _replaced(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not self._closed:
            self.last_error = f"{type(exc).__name__}: {exc}"
        elif exc is None:
            self.last_error = None

    def start(self) -> WarmPool:
        """Start the missing workers now, blocking (call it off the loop or
        before the loop runs). Idempotent."""
        if self._closed:
            raise WorkerError("the warm pool is closed")
        while len(self._all) < self.size:
            self._adopt(*_new_process(_kernel.serve, (), "lanemon-warm", True, self._generation))
        return self

    async def astart(self) -> WarmPool:
        """Start the missing workers without blocking the event loop."""
        if self._closed:
            raise WorkerError("the warm pool is closed")
        self._note_loop()
        loop = asyncio.get_running_loop()
        task = self._topup
        if task is None or task.done() or task.get_loop() is not loop:
            task = self._topup = loop.create_task(self._fill())
        await asyncio.shield(task)
        return self

    async def _fill(self) -> None:
        while not self._closed and len(self._all) < self.size:
            missing = self.size - len(self._all)
            started = await asyncio.gather(
                *(_start_off_loop(_kernel.serve, (), "lanemon-warm", True, self._generation)
                  for _ in range(missing)))
            for proc, conn in started:
                self._adopt(proc, conn)

    def pids(self) -> list[int]:
        """Pids of the pool's live processes."""
        return [w.proc.pid for w in self._all if w.proc.is_alive()]

    def busy_pids(self) -> list[int]:
        """Pids of the workers currently running a job."""
        return [w.proc.pid for w in self._all if w not in self._idle and w.proc.is_alive()]

    def _retire(self, worker: _Worker, close_conn: bool = True) -> None:
        _stop_process(worker.proc)
        if close_conn:
            worker.conn.close()
        if worker in self._all:
            self._all.remove(worker)
        if worker in self._idle:
            self._idle.remove(worker)

    async def _acquire(self) -> _Worker:
        self._note_loop()
        while True:
            if self._closed:
                raise WorkerError("the warm pool is closed")
            if self._idle:
                worker = self._idle.pop()
                if worker.proc.is_alive():
                    return worker
                self._retire(worker)  # died while idle, its watcher's news not in yet
                continue
            if len(self._all) < self.size:
                await self.astart()
                continue
            fut = asyncio.get_running_loop().create_future()
            self._waiting.append(fut)
            try:
                return await fut
            finally:
                if fut in self._waiting:
                    self._waiting.remove(fut)

    def _release(self, worker: _Worker) -> None:
        while self._waiting:
            fut = self._waiting.pop(0)
            if not fut.done():
                fut.set_result(worker)
                return
        self._idle.append(worker)

    async def call(self, op: str, arg: object, what: str):
        worker = await self._acquire()
        healthy = False
        cancelled = False
        try:
            try:
                worker.conn.send((op, arg))
            except (BrokenPipeError, OSError):
                reply = None
            else:
                try:
                    reply = await _await_answer(worker.conn, worker.proc)
                except asyncio.CancelledError:
                    cancelled = True  # the pipe closes once the waiting thread lets go
                    raise
            value = _unwrap(reply, worker.proc, what)
            worker.jobs += 1
            healthy = True
            return value
        finally:
            if healthy and not self._closed:
                self._release(worker)
            else:  # died, failed to talk, cancelled mid-job, or closed: retire it
                self._retire(worker, close_conn=not cancelled)
                self._replace()  # the replacement starts now, not at the next call

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
    """The process-wide warm pool (created on first use; workers start on the
    first call, or ahead with ``start()`` off the loop / ``await astart()``)."""
    global _pool
    if _pool is None or _pool._closed:
        _pool = WarmPool()
    return _pool


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

async def _process_call(kind: str, op: str, arg: object, what: str):
    """Send ``(op, arg)`` to a cold or warm worker process; its answer."""
    if kind == "cold":
        return await _run_cold(op, arg, what)
    if kind == "warm":
        return await warm_pool().call(op, arg, what)
    raise ValueError(f"unknown worker kind {kind!r}; choose from {', '.join(KINDS)}")


async def run_in_worker(total: int, kind: str = "warm") -> int:
    """``hash_range(0, total)`` computed off the event loop by ``kind``."""
    _kernel.check_total(total)
    if kind == "thread":
        return await _run_thread(total)
    return await _process_call(kind, "hash", total, f"hash_range(0, {total})")


async def worker_call(op: str, kind: str = "warm"):
    """Ask a worker process a diagnostic question (``"pid"``, ``"modules"`` or ``"priority"``:
    its nice value, ``_kernel.WORKER_NICE`` above this process's)."""
    if kind == "thread":
        raise ValueError("worker_call asks a worker process: cold or warm, not thread")
    return await _process_call(kind, op, None, op)


async def spawn_cost_ms(repeat: int = 3) -> float:
    """Start-up cost alone: a cold worker started for an empty job, in ms.

    The median of ``repeat`` starts. On Linux the first cold start ever also
    starts the forkserver (a one-time cost, paid here untimed), so the figure
    is what every later cold run pays.
    """
    await asyncio.get_running_loop().run_in_executor(_waiters, prestart_server)
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        await _run_cold("hash", 0, "an empty job")
        times.append((time.perf_counter() - t0) * 1000.0)
    return sorted(times)[len(times) // 2]


async def warm_roundtrip_ms(repeat: int = 5) -> float:
    """Best round trip of an empty job through the warm pool, in ms."""
    pool = await warm_pool().astart()
    await pool.call("hash", 0, "an empty job")  # make sure a worker is up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        await pool.call("hash", 0, "an empty job")
        best = min(best, (time.perf_counter() - t0) * 1000.0)
    return best


@dataclass(frozen=True)
class WorkerProcess:
    """A live worker process of this process: ``kind`` is "warm" (the pool's, or starting for
    it) or "cold" (one run's); ``busy``: running a job (a cold worker always is)."""

    pid: int
    kind: str
    busy: bool


def worker_processes() -> list[WorkerProcess]:
    """Every live worker process lanemon started here, by pid (a read: starts nothing)."""
    pool = _pool
    busy = set(pool.busy_pids()) if pool is not None else set()
    found = []
    for proc in list(_live):
        if not proc.is_alive():
            continue
        cold = proc.name == "lanemon-cold"
        found.append(WorkerProcess(proc.pid, "cold" if cold else "warm", cold or proc.pid in busy))
    return sorted(found, key=lambda w: w.pid)


def kill_worker(pid: int) -> bool:
    """SIGKILL the live worker process ``pid``; ``False`` (nothing sent) when no live lanemon
    worker of this process has that pid (it ended already, or ``pid`` is something else).

    The worker's run in flight, if any, fails with ``WorkerDied`` (its pid and exit code -9);
    the warm pool retires a killed worker and starts its replacement at once, busy or idle
    (see the module docstring)."""
    for proc in list(_live):
        if proc.pid == pid and proc.is_alive():
            proc.kill()
            return True
    return False


def live_worker_pids() -> list[int]:
    """Pids of every lanemon worker process still alive (cold and warm)."""
    return sorted(p.pid for p in list(_live) if p.is_alive())


def shutdown_workers(stop_server: bool = True) -> None:
    """Stop the warm pool and any cold worker; optionally the forkserver too.

    Starts already under way finish first and are then stopped; starts asked
    for before this call but not yet begun are refused. Later calls start
    afresh.
    """
    global _generation
    with _spawn_lock:
        _generation += 1
        _shutdown_unlocked(stop_server)


def _shutdown_unlocked(stop_server: bool) -> None:
    global _pool
    if _pool is not None:
        _pool.close()
        _pool = None
    for proc in list(_live):
        _stop_process(proc)
    if stop_server and start_method() == "forkserver":
        from multiprocessing import forkserver

        stop = getattr(forkserver._forkserver, "_stop", None)
        if stop is not None:
            try:
                stop()
            except Exception:
                pass
