"""Processes by pid (Qt-free): alive or not, and a process's children.

On Linux both read ``/proc``; elsewhere ``alive`` asks ``os.kill(pid, 0)``
and ``children`` finds none. A zombie has exited (its parent has yet to reap
it): it is neither alive nor a child here.
"""

from __future__ import annotations

import os

__all__ = ["alive", "children"]


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
