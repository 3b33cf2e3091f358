"""The seeded workload: a stream of customers, the same for every strategy.

Guaranteed: ``workload(seed, ...)`` yields the same customers (names,
arrival times, guide and service times, fault flags) for the same arguments,
whatever strategy consumes them, on any machine (``random.Random`` with an
integer seed). Customers come in arrival order; arrivals are a Poisson
stream of ``arrival_rate`` per second (``arrival_rate=None``: everyone is
there at t=0). Guide and service times are drawn uniformly in
``[0.5, 1.5] x`` their mean. ``abandons`` marks the customers whose guide
is abandoned mid-way by the staff member (with probability
``abandon_rate``; only their first guide is abandoned). ``count=None``
makes the stream endless (for a live run).

Refused: negative counts, rates or times; an ``abandon_rate`` outside [0, 1].
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Customer:
    name: str
    arrival: float = 0.0
    guide: float = 0.2  # seconds the staff member spends guiding to the counter
    service: float = 1.0  # seconds the customer then occupies the counter
    abandons: bool = False  # the staff member walks away mid-guide (fault)

    def __str__(self) -> str:
        return self.name


def workload(
    seed: int,
    count: int | None,
    *,
    arrival_rate: float | None,
    guide_time: float,
    service_time: float,
    abandon_rate: float = 0.0,
) -> Iterator[Customer]:
    """The customers (see the module docstring); the refusals (``ValueError``) come from
    this call, not from the first ``next``."""
    if count is not None and (not isinstance(count, int) or count < 0):
        raise ValueError(f"customer count must be an integer >= 0 or None, not {count!r}")
    if arrival_rate is not None and not arrival_rate > 0:
        raise ValueError(f"arrival rate must be > 0 (or None), not {arrival_rate!r}")
    if not guide_time >= 0 or not service_time >= 0:
        raise ValueError("guide and service times must be >= 0")
    if not 0.0 <= abandon_rate <= 1.0:
        raise ValueError(f"abandon rate must be in [0, 1], not {abandon_rate!r}")
    return _customers(seed, count, arrival_rate, guide_time, service_time, abandon_rate)


def _customers(seed: int, count: int | None, arrival_rate: float | None, guide_time: float,
               service_time: float, abandon_rate: float) -> Iterator[Customer]:
    rng = random.Random(seed)
    t = 0.0
    for i in itertools.count(1) if count is None else range(1, count + 1):
        if arrival_rate is not None:
            t += rng.expovariate(arrival_rate)
        guide = guide_time * rng.uniform(0.5, 1.5)
        service = service_time * rng.uniform(0.5, 1.5)
        abandons = rng.random() < abandon_rate
        yield Customer(f"C{i}", t, guide, service, abandons)
