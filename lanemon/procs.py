"""Processes by pid (Qt-free): alive or not, stopped or not, and a process's children.

On Linux these read ``/proc``; elsewhere ``alive`` asks ``os.kill(pid, 0)``,
``children`` finds none and ``state``/``started`` know nothing (``None``). A
zombie has exited (its parent has yet to reap it): it is neither alive nor a
child here.
"""

from __future__ import annotations

import os

__all__ = ["alive", "children", "cmdline", "started", "state"]


def alive(pid: int) -> bool:
    """The process exists and has not exited."""
    if os.path.isdir("/proc/self"):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (``[0]`` is the state), or ``None``."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def state(pid: int) -> str | None:
    """The process's state letter as ``/proc`` has it ("R" running, "S" sleeping, "T"
    stopped by a signal such as SIGSTOP, "t" stopped by a tracer, "Z" exited and not yet
    reaped, ...), or ``None``: no such process, or no ``/proc`` to ask."""
    fields = _stat(pid)
    return fields[0] if fields else None


def started(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (``/proc``'s ``starttime``):
    with the pid, it names one process (a pid is reused, a pid and its start time are
    not). ``None``: no such process, or no ``/proc``."""
    fields = _stat(pid)
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def cmdline(pid: int) -> str | None:
    """The process's command line, arguments joined by spaces (``None``: no such process,
    not readable, or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def children(pid: int | None = None) -> list[tuple[int, str]]:
    """(pid, command line) of the live children of ``pid`` (default: this process)."""
    parent = os.getpid() if pid is None else pid
    kids: list[tuple[int, str]] = []
    if not os.path.isdir("/proc"):
        return kids
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != parent or fields[0] == "Z":
                continue
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        kids.append((int(name), cmd))
    return kids
