"""The machine's own stalls, seen from outside the measured process, at the same moment.

A floor measured for two seconds before a bench (``lanemon.bench.floor``) says
what the machine does then; a run of a minute meets stalls that two seconds
rarely do. The machine these benches run on is a 2-vCPU KVM guest: a process
that does nothing but sleep 1 ms at a time, pinned to one CPU at a real-time
priority (nothing in the guest can keep it from running), sees its sleep
stretched to 20-40 ms a few times a minute, on both CPUs at once, plus 5-8 ms
gaps on CPU 0 (2026-12-02, load 0.3: 4 and 15 gaps over 4 ms in 40 s). ``perf``
then shows no sample of the measured process on its CPU: the host did not run
that vCPU. Such a pause lands on a heartbeat tick as a lag the window did not
cause.

``MachineStalls(cpu)`` starts a child process (``python -m lanemon.bench.machine
CPU``) pinned to ``cpu`` at ``SCHED_FIFO`` priority 1 that sleeps ``TICK_S`` at a
time and notes every wake-up later than ``GAP_MS`` after the one before: the
span ``[t_prev + TICK_S, t_now]`` in which nothing on that CPU ran (at that
priority it preempts any normal thread at once: a busy measured thread cannot
delay it). The bench pins its loop's thread to the same CPU for the run, so a
pause of that vCPU stops both. Times are ``time.perf_counter`` (Linux:
``CLOCK_MONOTONIC``, one clock for every process). ``stop()`` ends it and
returns the spans. It costs ~1,000 wake-ups a second on that CPU.

``unexplained_ms(t, lag, stalls)``: each heartbeat tick's lag minus the part of
its late span ``[t - lag, t]`` during which the machine stalled: the lag the
measured process is answerable for. A bench prints the raw figure beside it.

Guaranteed: a stall shorter than ``GAP_MS`` is not noted (it is within what the
floor measures); spans are in time order and do not overlap. ``available`` is
False (and a bench judges the raw figure) where the child could not take a
real-time priority (no privilege: a normal sleeper can be delayed by the
measured thread itself, so its gaps would excuse the window's own work) or the
machine is not Linux (no pinning, no shared clock). Refused: ``stop`` twice
(``RuntimeError``); a child that died says its last words (``RuntimeError``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

TICK_S = 0.001
GAP_MS = 4.0


class MachineStalls:
    """The child noting the machine's stalls (see the module)."""

    def __init__(self, cpu: int) -> None:
        self.cpu = cpu
        self._proc = subprocess.Popen([sys.executable, "-m", "lanemon.bench.machine", str(cpu)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        line = self._proc.stdout.readline()
        if not line.startswith("ready"):
            raise self._ended(line)
        #: the spans can be held against a thread pinned to ``cpu`` (see the module)
        self.available = line.split()[1:] == ["pinned", "realtime"]
        self._stopped = False

    def _ended(self, said: str) -> RuntimeError:
        self._proc.kill()
        self._proc.wait(10)
        err = self._proc.stderr.read().strip()[-400:]
        return RuntimeError(f"the machine-stall process said {said.strip()[:200]!r} "
                            f"(exit {self._proc.returncode}): {err}")

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> list[tuple[float, float]]:
        """End the child; the spans ``(start, end)`` (seconds, ``perf_counter``) it could not run."""
        if self._stopped:
            raise RuntimeError("the machine-stall process was stopped already")
        self._stopped = True
        try:
            self._proc.stdin.write("stop\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise self._ended("") from None
        line = self._proc.stdout.readline()
        if not line.startswith("["):
            raise self._ended(line)
        self._proc.wait(10)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            stream.close()
        return [(float(a), float(b)) for a, b in json.loads(line)]

    def __enter__(self) -> MachineStalls:
        return self

    def __exit__(self, *exc) -> None:
        if not self._stopped:
            self.stop()


def unexplained_ms(t: np.ndarray, lag_ms: np.ndarray, stalls: list[tuple[float, float]]) -> np.ndarray:
    """Each tick's lag (ms) minus its overlap with the machine's stalls (``t`` in seconds, the
    ticks' firing times; a tick was due at ``t - lag``); never below 0."""
    out = np.asarray(lag_ms, dtype=float).copy()
    if not stalls or out.size == 0:
        return out
    starts = np.array([a for a, _ in stalls])
    ends = np.array([b for _, b in stalls])
    due = np.asarray(t, dtype=float) - out / 1000.0
    for k in np.nonzero(out > 0)[0]:
        lo, hi = due[k], t[k]
        overlap = np.clip(np.minimum(ends, hi) - np.maximum(starts, lo), 0.0, None).sum()
        out[k] = max(0.0, out[k] - overlap * 1000.0)
    return out


def pin_this_thread(cpus: set[int]) -> set[int] | None:
    """Pin the calling thread (only it: Linux ``sched_setaffinity`` of 0) to ``cpus``; the CPUs
    it had (give them back to undo). None, and nothing done, where there is no pinning."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    had = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    return had


def _serve(cpu: int) -> None:
    """The child: pinned to ``cpu`` at a real-time priority where it may, sleep ``TICK_S`` at a
    time until ``stop`` on stdin; print the stalls (JSON)."""
    import selectors
    import time

    said = []
    if sys.platform.startswith("linux"):
        try:
            os.sched_setaffinity(0, {cpu})
            said.append("pinned")
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            said.append("realtime")
        except OSError:
            pass
    clock = time.perf_counter
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ)
    gap_s = GAP_MS / 1000.0
    stalls: list[tuple[float, float]] = []
    print("ready", *said, flush=True)
    last = clock()
    while True:
        ready = sel.select(TICK_S)
        now = clock()
        if now - last > gap_s:
            stalls.append((last + TICK_S, now))
        last = now
        if ready:
            sys.stdin.readline()
            break
    print(json.dumps(stalls), flush=True)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
