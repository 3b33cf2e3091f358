"""Where a job belongs: on the loop, sliced, or in a worker.

The rule (seed 003), from the job's measured CPU time ``cpu_ms`` and whether
it touches shared state:

1. ``cpu_ms <= 1``                      -> ``"loop"``   (too short to matter)
2. otherwise, ``shared_state``          -> ``"slice"``  (a worker cannot see it)
3. otherwise, ``cpu_ms >= threshold``   -> ``"worker"`` (worth the start-up)
4. otherwise                            -> ``"slice"``

The default threshold is 50 ms. It stands for the worker start-up cost, which
belongs to the machine: ``threshold_from_startup`` derives it from a
measurement (a worker pays for itself once the job takes at least as long as
starting one).

Refused (``ValueError``/``TypeError``): a missing ``cpu_ms`` or ``None`` ("not
measured" is not "light"), a non-number (a bool, a string), NaN, an infinity,
a negative time; a threshold that is not a positive finite number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

LOOP_LIMIT_MS = 1.0
DEFAULT_THRESHOLD_MS = 50.0
PLACES = ("loop", "slice", "worker")


@dataclass(frozen=True)
class Placement:
    """The word ``where`` and the rule branch that chose it."""

    where: str
    rule: str


def _field(job: object, name: str, default: object = ...) -> object:
    if isinstance(job, Mapping):
        if name in job:
            return job[name]
    elif hasattr(job, name):
        return getattr(job, name)
    if default is ...:
        raise ValueError(f"job has no {name}: measure the job first (not measured is not light)")
    return default


def _check_ms(name: str, value: object, *, positive: bool) -> float:
    if value is None:
        raise ValueError(f"{name} is None: measure the job first (not measured is not light)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of milliseconds, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'positive' if positive else 'zero or more'}, got {value!r}")
    return float(value)


def decide(job: object, threshold_ms: float = DEFAULT_THRESHOLD_MS) -> Placement:
    """Apply the rule to ``job`` (a mapping or object with ``cpu_ms`` and
    optionally ``shared_state``) and say which branch chose the answer."""
    threshold = _check_ms("threshold_ms", threshold_ms, positive=True)
    cpu_ms = _check_ms("cpu_ms", _field(job, "cpu_ms"), positive=False)
    shared = bool(_field(job, "shared_state", False))
    if cpu_ms <= LOOP_LIMIT_MS:
        return Placement("loop", f"cpu_ms {cpu_ms:g} <= {LOOP_LIMIT_MS:g} ms: too short to move")
    if shared:
        return Placement("slice", f"cpu_ms {cpu_ms:g} > {LOOP_LIMIT_MS:g} ms and it touches shared state: "
                                  "a worker cannot see it")
    if cpu_ms >= threshold:
        return Placement("worker", f"cpu_ms {cpu_ms:g} >= threshold {threshold:g} ms and no shared state: "
                                   "worth a worker's start-up")
    return Placement("slice", f"cpu_ms {cpu_ms:g} < threshold {threshold:g} ms: "
                              "a worker's start-up would cost more than it saves")


def place(job: object, threshold_ms: float = DEFAULT_THRESHOLD_MS) -> str:
    """The word alone: ``"loop"``, ``"slice"`` or ``"worker"``."""
    return decide(job, threshold_ms).where


def threshold_from_startup(startup_ms: float) -> float:
    """The worker threshold that follows from a measured start-up cost.

    A worker pays for itself once the job takes at least as long as starting
    it; below ``LOOP_LIMIT_MS`` the loop branch decides first anyway.
    """
    ms = _check_ms("startup_ms", startup_ms, positive=False)
    return round(max(LOOP_LIMIT_MS, ms), 1)
