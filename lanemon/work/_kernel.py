"""The CPU job itself: the only module a worker process needs.

This module imports nothing but the standard library's ``os`` and ``sys``
(and ``multiprocessing``'s own modules and ``threading`` inside
``end_with_owner``): no Qt, no numpy, no asyncio. Worker processes (cold, warm) import it and
nothing heavier, so starting one costs a bare interpreter, not a GUI toolkit.

Guarantees:

- ``chunks(total, size)`` returns the half-open pieces ``[start, stop)`` that
  cover ``0..total`` with no gap and no overlap: ``ceil(total / size)`` pieces,
  the last possibly shorter. ``total == 0`` gives no pieces.
- ``hash_range(start, stop, seed)``: ``h = seed``; for each ``i`` in
  ``[start, stop)``: ``h = (h * 31 + i) mod 2**32``. The value depends on
  order, so slicing must pass each slice's result as the next slice's seed;
  done that way, slicing never changes the answer.

Refused (``ValueError`` / ``TypeError``): a ``size`` that is not a positive
integer (a loop over it would never end), a negative ``total``, a bool
anywhere an integer is expected.
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

MASK32 = 0xFFFFFFFF


class Chunk(NamedTuple):
    """A half-open piece ``[start, stop)`` of the range ``0..total``."""

    start: int
    stop: int


def _require_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return value


def check_total(total: object) -> int:
    """``total`` as a non-negative integer, or ``TypeError`` / ``ValueError``."""
    _require_int("total", total)
    if total < 0:  # type: ignore[operator]
        raise ValueError(f"total must not be negative, got {total}")
    return total  # type: ignore[return-value]


def check_size(size: object) -> int:
    """``size`` as a positive integer, or ``TypeError`` / ``ValueError``."""
    _require_int("size", size)
    if size <= 0:  # type: ignore[operator]
        raise ValueError(f"size must be positive, got {size} (a loop over it would never end)")
    return size  # type: ignore[return-value]


def chunks(total: int, size: int) -> list[Chunk]:
    """Split ``0..total`` into ``ceil(total/size)`` half-open pieces.

    Raises ``ValueError`` when ``size <= 0`` or ``total < 0`` and ``TypeError``
    when either is not an integer.
    """
    check_total(total)
    check_size(size)
    return [Chunk(start, min(start + size, total)) for start in range(0, total, size)]


def hash_range(start: int, stop: int, seed: int = 0) -> int:
    """``h = seed``; for ``i`` in ``[start, stop)``: ``h = (h*31 + i) mod 2**32``.

    An empty range (``stop <= start``) returns ``seed mod 2**32``.
    """
    _require_int("start", start)
    _require_int("stop", stop)
    _require_int("seed", seed)
    h = seed & MASK32
    for i in range(start, stop):
        h = (h * 31 + i) & MASK32
    return h


def heavy_modules_loaded() -> list[str]:
    """Names of Qt or numpy modules loaded in this process (should be none)."""
    return sorted(
        name for name in sys.modules if name.split(".")[0] in ("PySide6", "shiboken6", "numpy", "pyqtgraph")
    )


# --- worker process entry points -------------------------------------------
#
# Messages on the pipe: the parent sends ``(op, arg)``; the worker answers
# ``("ok", value)`` or ``("err", "Type: message")``. ``None`` asks a warm
# worker to exit.

def _answer(op: str, arg: object) -> tuple[str, object]:
    try:
        if op == "hash":
            return ("ok", hash_range(0, arg))  # type: ignore[arg-type]
        if op == "modules":
            return ("ok", heavy_modules_loaded())
        if op == "pid":
            return ("ok", os.getpid())
        if op == "priority":
            return ("ok", os.getpriority(os.PRIO_PROCESS, 0))
        return ("err", f"ValueError: unknown op {op!r}")
    except Exception as exc:  # sent back to the caller, raised there
        return ("err", f"{type(exc).__name__}: {exc}")


#: how much lower than its parent a worker process runs (``os.nice``): on a machine whose cores
#: are all busy, the window's loop (and the agent's) wins a core from the CPU work it handed
#: off, not the other way round. Measured 2026-12-02 on this 2-core machine with two other
#: busy processes beside it (``bench lag``, three runs each): a warm run's heartbeat p99 over
#: the alternating idle +3.9 to +6.1 ms at the parent's priority, +2.5 to +3.0 ms at +10.
#: An idle machine gives the worker the same CPU either way.
WORKER_NICE = 10


def lower_priority() -> None:
    """Run this (worker) process ``WORKER_NICE`` lower than it was started at (capped by the OS at
    the lowest priority); nothing where the platform has no ``os.nice``."""
    if hasattr(os, "nice"):
        os.nice(WORKER_NICE)


def end_with_owner() -> None:
    """This (worker) process exits as soon as the process that started it (its owner: a window,
    an agent, ``lanemon measure``) has ended, however it ended (SIGKILL included, which runs no
    clean-up): a daemon thread waits on multiprocessing's parent sentinel (a pipe whose write
    end only the owner holds) and calls ``os._exit`` at its end of file. A worker never goes on
    computing for nobody. (Its direct parent is no guide: the forkserver lives on while any
    worker does.) Nothing for a process not started by ``multiprocessing``."""
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    owner = multiprocessing.parent_process()
    sentinel = getattr(owner, "sentinel", None)
    if sentinel is None:
        return

    def watch() -> None:
        try:
            wait([sentinel])
        except (OSError, ValueError):
            return              # (the sentinel closed under us: this process is ending anyway)
        os._exit(1)

    threading.Thread(target=watch, name="lanemon-owner-watch", daemon=True).start()


def serve(conn) -> None:
    """Warm worker: answer requests until told to stop or the pipe closes (at ``WORKER_NICE``;
    ends with its owner: ``end_with_owner``)."""
    end_with_owner()
    lower_priority()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        conn.send(_answer(*msg))


def run_once(conn, op: str, arg: object) -> None:
    """Cold worker: answer one request, then exit (at ``WORKER_NICE``; ends with its owner:
    ``end_with_owner``)."""
    end_with_owner()
    lower_priority()
    conn.send(_answer(op, arg))
    conn.close()
