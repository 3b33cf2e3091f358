"""One run of the CPU job, by kind: the one dispatch of lanemon.

``lanemon measure`` (``report.measure``), the window (``ui.runs.controller``)
and the lanes' CPU works (``lanes.work.CpuWork``) all run the job through
``run_job``; no other code chooses between the three ways of running it.

Kinds (``RUN_KINDS``) and their family (``family``, the report's three runs):

- ``"whole"``  (family whole): ``hash_range(0, total)`` called on the caller's
  thread, in one piece. On an event loop it blocks the loop for the whole run,
  deliberately: nothing else runs until it returns.
- ``"sliced"`` (family sliced): ``run_sliced(total, slice_size)`` if
  ``slice_size`` is given, else ``run_sliced_budget(total, slice_ms)``
  (``slice_ms`` defaults to ``DEFAULT_SLICE_MS``): yields to the loop between
  slices.
- ``"cold"``, ``"warm"``, ``"thread"`` (family worker):
  ``run_in_worker(total, kind)``.

Guarantees of ``run_job(spec)``:

- It returns a ``RunResult``: ``result`` equals ``hash_range(0, total)`` for
  every kind; ``slices`` is the number of slices of a sliced run and ``None``
  for the others; ``t_start`` is ``time.perf_counter()`` just before the work
  began (``on_start`` is called with it then) and ``t_end`` just after it
  ended; ``work_ms`` is the time between them.
- A whole run runs without suspending: calling and awaiting ``run_job`` for
  it computes ``hash_range`` in the awaiting task's current step, so an
  exception raised inside ``hash_range`` (``CancelledError`` from a signal
  handler, see ``ui.shell.app.SignalDoor``) propagates unchanged.
- Cancelling the awaiting task cancels the run as the underlying call does: a
  sliced run stops between slices, a process worker is stopped, a thread run
  stops at its next check. ``CancelledError`` propagates unchanged.
- ``should_stop`` (sliced runs) is asked before each slice: a stop raises
  ``SliceStopped``. ``on_slice(done, total)`` reports a sliced run's progress.
- ``timeout_s`` (sliced and worker runs): the run is cancelled after that
  many seconds (its worker stopped) and ``RunTimedOut`` is raised, with the
  limit in ``seconds``.
- Errors of the work itself (``WorkerDied``, ``WorkerError``, a bad
  ``total``) propagate unchanged.

Refused (``ValueError`` when the ``RunSpec`` is made): an unknown kind; both
``slice_size`` and ``slice_ms``; slice settings for a run that is not sliced.
``run_job`` refuses a ``timeout_s`` for a whole run (it holds the loop:
nothing could stop it). Sizes themselves are checked when the run runs
(``hash_range``, ``run_sliced``, ``run_in_worker`` refuse a bad one), so a
caller that records runs records a bad size as a failed run.

The defaults of a run have one name each, here: ``DEFAULT_TOTAL`` (``lanemon
measure``), ``WINDOW_TOTAL`` (the window's job size at start), ``MAX_TOTAL``
(the largest job both accept) and ``DEFAULT_SLICE_MS`` (``slicing``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from lanemon.work._kernel import hash_range
from lanemon.work.slicing import DEFAULT_SLICE_MS, run_sliced, run_sliced_budget
from lanemon.work.workers import KINDS, run_in_worker

__all__ = [
    "DEFAULT_TOTAL", "WINDOW_TOTAL", "MAX_TOTAL", "DEFAULT_SLICE_MS",
    "FAMILIES", "RUN_KINDS", "family", "RunSpec", "RunResult", "RunTimedOut", "run_job",
]

# ``lanemon measure``'s job size: whole, sliced and worker runs of it take seconds each.
DEFAULT_TOTAL = 40_000_000
# The window's job size at start: a tenth of measure's, so a whole run blocks the window for
# a fraction of a second on a shared 2-core machine.
WINDOW_TOTAL = 4_000_000
# The largest job ``lanemon measure`` and the window's job size accept. The job runs at about
# 10 million iterations a second on a shared 2-core Xeon (CPython 3.11): a whole run of
# MAX_TOTAL blocks for ~50 s there and ``measure`` (whole, sliced, worker) takes ~2.5 min; a
# machine three times slower takes ~2.5 min per run, ~7.5 min for ``measure``.
MAX_TOTAL = 500_000_000

FAMILIES = ("whole", "sliced", "worker")
RUN_KINDS = ("whole", "sliced", *KINDS)


def family(kind: str) -> str:
    """The family of a run kind: ``whole``, ``sliced`` or ``worker`` (cold, warm, thread)."""
    if kind not in RUN_KINDS:
        raise ValueError(f"unknown run kind {kind!r}; one of {', '.join(RUN_KINDS)}")
    return kind if kind in ("whole", "sliced") else "worker"


class RunTimedOut(Exception):
    """A run took longer than its ``timeout_s``; it was cancelled (its worker stopped).

    ``seconds`` is the limit that was reached."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer after {seconds:g} s")
        self.seconds = seconds


@dataclass(frozen=True)
class RunSpec:
    """What to run: ``kind`` (one of ``RUN_KINDS``) over ``total`` iterations.

    A sliced run slices by ``slice_size`` iterations if given, else by a
    ``slice_ms`` budget (``None``: ``DEFAULT_SLICE_MS``). See the module
    docstring for what is refused."""

    kind: str
    total: int
    slice_size: int | None = None
    slice_ms: float | None = None

    def __post_init__(self) -> None:
        fam = family(self.kind)
        if fam != "sliced" and (self.slice_size is not None or self.slice_ms is not None):
            raise ValueError(f"a {self.kind} run is not sliced: no slice_size or slice_ms")
        if self.slice_size is not None and self.slice_ms is not None:
            raise ValueError("give at most one of slice_size and slice_ms")

    @property
    def family(self) -> str:
        """``whole``, ``sliced`` or ``worker``: the report's three runs."""
        return family(self.kind)

    @property
    def budget_ms(self) -> float | None:
        """A sliced run's time budget per slice (``None``: it slices by size, or is not sliced)."""
        if self.kind != "sliced" or self.slice_size is not None:
            return None
        return DEFAULT_SLICE_MS if self.slice_ms is None else self.slice_ms

    @property
    def how(self) -> str:
        """How it runs, in words: "one piece, on the loop", "slices of 10,000",
        "slices of at most ~8 ms", "warm worker"."""
        if self.kind == "whole":
            return "one piece, on the loop"
        if self.kind == "sliced":
            if self.slice_size is not None:
                return f"slices of {self.slice_size:,}"
            return f"slices of at most ~{self.budget_ms:g} ms"
        return f"{self.kind} worker"


@dataclass(frozen=True)
class RunResult:
    """One finished run: what ran (``spec``), its ``result`` and its times.

    ``slices`` is the number of slices of a sliced run, ``None`` otherwise;
    ``t_start``/``t_end`` are ``time.perf_counter()`` just before and after
    the work."""

    spec: RunSpec
    result: int
    slices: int | None
    t_start: float
    t_end: float

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def total(self) -> int:
        return self.spec.total

    @property
    def work_ms(self) -> float:
        """The run's duration in ms, from ``t_start`` to ``t_end``."""
        return (self.t_end - self.t_start) * 1000.0


async def run_job(
    spec: RunSpec,
    *,
    on_slice: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_start: Callable[[float], None] | None = None,
    timeout_s: float | None = None,
) -> RunResult:
    """Run ``spec`` and return its ``RunResult`` (see the module docstring)."""
    kind, total = spec.kind, spec.total
    if timeout_s is not None and kind == "whole":
        raise ValueError("a whole run holds the loop: it cannot time out")
    t_start = time.perf_counter()
    if on_start is not None:
        on_start(t_start)
    slices = None
    if kind == "whole":
        result = hash_range(0, total)
    else:
        if kind == "sliced":
            if spec.slice_size is not None:
                work = run_sliced(total, spec.slice_size, on_slice=on_slice, should_stop=should_stop)
            else:
                work = run_sliced_budget(total, spec.budget_ms, on_slice=on_slice, should_stop=should_stop)
        else:
            work = run_in_worker(total, kind)
        if timeout_s is None:
            done = await work
        else:
            try:
                async with asyncio.timeout(timeout_s):
                    done = await work
            except TimeoutError:
                raise RunTimedOut(timeout_s) from None
        if kind == "sliced":
            result, slices = done.result, done.slices
        else:
            result = done
    return RunResult(spec, result, slices, t_start, time.perf_counter())
