"""The CPU job: whole, sliced, or in a worker; and where it belongs.

Qt-free and numpy-free. Public API:

- ``chunks``, ``hash_range``                     (``_kernel``)
- ``run_sliced``, ``run_sliced_budget``, ``SlicedResult``, ``SliceStopped``,
  ``calibrate``, ``calibrate_async``, ``iterations_for_ms``  (``slicing``)
- ``run_in_worker``, ``spawn_cost_ms``, ``warm_roundtrip_ms``, ``warm_pool``,
  ``shutdown_workers``, ``WorkerError``, ``WorkerDied``, ``KINDS``,
  ``worker_processes``, ``WorkerProcess``, ``kill_worker``  (``workers``)
- ``place``, ``decide``, ``Placement``, ``threshold_from_startup``  (``placement``)
- ``LagRecorder``, ``LagStats``, ``summarize``   (``lag``)
- ``run_job``, ``RunSpec``, ``RunResult``, ``RunTimedOut``, ``family``, ``RUN_KINDS``,
  ``FAMILIES``, ``DEFAULT_TOTAL``, ``WINDOW_TOTAL``, ``MAX_TOTAL``, ``DEFAULT_SLICE_MS``
  (``runs``: the one dispatch of a run by kind, and the defaults of a run)
- ``measure``, ``build_report``, ``summary``     (``report``, imported on its own)
"""

from lanemon.work._kernel import Chunk, chunks, hash_range
from lanemon.work.lag import LagRecorder, LagStats, percentile, summarize
from lanemon.work.placement import (
    DEFAULT_THRESHOLD_MS,
    LOOP_LIMIT_MS,
    Placement,
    decide,
    place,
    threshold_from_startup,
)
from lanemon.work.runs import (
    DEFAULT_SLICE_MS,
    DEFAULT_TOTAL,
    FAMILIES,
    MAX_TOTAL,
    RUN_KINDS,
    WINDOW_TOTAL,
    RunResult,
    RunSpec,
    RunTimedOut,
    family,
    run_job,
)
from lanemon.work.slicing import (
    SlicedResult,
    SliceStopped,
    calibrate,
    calibrate_async,
    iterations_for_ms,
    iterations_per_ms,
    run_sliced,
    run_sliced_budget,
)
from lanemon.work.workers import (
    KINDS,
    WorkerDied,
    WorkerError,
    WorkerProcess,
    kill_worker,
    live_worker_pids,
    run_in_worker,
    shutdown_workers,
    spawn_cost_ms,
    start_method,
    warm_pool,
    warm_roundtrip_ms,
    worker_processes,
)

__all__ = [
    "Chunk", "chunks", "hash_range",
    "LagRecorder", "LagStats", "percentile", "summarize",
    "DEFAULT_THRESHOLD_MS", "LOOP_LIMIT_MS", "Placement", "decide", "place", "threshold_from_startup",
    "SlicedResult", "SliceStopped", "calibrate", "calibrate_async", "iterations_for_ms",
    "iterations_per_ms", "run_sliced", "run_sliced_budget",
    "KINDS", "WorkerDied", "WorkerError", "WorkerProcess", "kill_worker", "live_worker_pids",
    "run_in_worker", "shutdown_workers", "spawn_cost_ms", "start_method", "warm_pool", "warm_roundtrip_ms",
    "worker_processes",
    "DEFAULT_SLICE_MS", "DEFAULT_TOTAL", "FAMILIES", "MAX_TOTAL", "RUN_KINDS", "WINDOW_TOTAL",
    "RunResult", "RunSpec", "RunTimedOut", "family", "run_job",
]
