"""Helpers for the tests that start lanemon in its own process (real window, ways out)."""

from __future__ import annotations

import os
import queue
import re
import signal
import threading
import time


def marked_processes(name: str, marker: str) -> list[tuple[int, str]]:
    """Live processes whose environment holds ``name=marker`` (those we may read)."""
    needle = f"{name}={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":          # a zombie has exited; its parent has yet to reap it
            found.append((int(name), cmd))
    return found


class Lines:
    """Lines of a pipe, read on a thread; ``wait_for(pattern)`` with a timeout."""

    def __init__(self, pipe) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe) -> None:
        for line in pipe:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, pattern: str, timeout_s: float) -> re.Match:
        rx = re.compile(pattern)
        for line in self.lines:
            if m := rx.search(line):
                return m
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout_s} s; got {self.lines}") from None
            if line is None:
                raise AssertionError(f"output ended without {pattern!r}; got {self.lines}")
            self.lines.append(line)
            if m := rx.search(line):
                return m

    def rest(self, timeout_s: float = 10) -> list[str]:
        self._thread.join(timeout_s)
        while not self._queue.empty():
            line = self._queue.get()
            if line is not None:
                self.lines.append(line)
        return self.lines


def until(predicate, what: str, timeout_s: float):
    """Poll ``predicate`` until it returns something true (returned), or raise
    ``AssertionError`` naming ``what`` once ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {what}")
        time.sleep(0.02)


def wait_until_none_left(name: str, marker: str, timeout_s: float) -> list[tuple[int, str]]:
    """Poll until no process carries ``name=marker`` (or ``timeout_s`` passed); those left."""
    deadline = time.monotonic() + timeout_s
    left = marked_processes(name, marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = marked_processes(name, marker)
    return left


def gone(pid: int) -> bool:
    """The process ``pid`` no longer exists (reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def release(pid: int) -> None:
    """Leave nothing behind: a stopped test victim is resumed and killed."""
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class LoggedProcesses:
    """Worker processes of one test, each logging to ``folder/<name>.log`` and writing its
    counts to ``folder/<name>.json`` when it ends; subclasses start them into ``procs``."""

    what = "process"

    def __init__(self, folder) -> None:
        from pathlib import Path

        self.folder = Path(folder)
        self.procs: dict = {}      # name -> subprocess.Popen

    def stats(self, name: str) -> dict:
        import json

        return json.loads((self.folder / f"{name}.json").read_text())

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text()

    async def wait(self, name: str, timeout_s: float = 60.0) -> int:
        """Its exit status, once it exited (AssertionError with its log after ``timeout_s``)."""
        import asyncio

        proc = self.procs[name]
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.what} {name} still running after {timeout_s} s:\n{self.log(name)}")
            await asyncio.sleep(0.05)
        return proc.returncode

    def kill_all(self) -> None:
        """Every one still running is resumed (a paused one too) and killed, then reaped."""
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGCONT)
                    proc.kill()
                except ProcessLookupError:
                    pass
            proc.wait(timeout=30)
