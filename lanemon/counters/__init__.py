"""Counter claims versus locks (seed 001), Qt-free.

A lock protects code while it runs; a claim is a stored state -- "counter 3
is being assigned to customer A", with owner, token and TTL -- that takes the
counter out of the candidates. This package shows the difference with
numbers:

- ``Board``: counters, their customers and claims; ``claim`` / ``finalize`` /
  ``release`` with fencing tokens; TTL on an injected clock; double
  assignments counted by the board itself. It is the state machine of the
  in-memory claim store: the strategies and the simulation reach claims only
  through ``lanemon.store.claims.ClaimStore`` (``MemoryClaims`` today;
  ``Simulation(config, claims=factory)`` takes another engine).
- ``short_lock`` / ``long_lock`` / ``claim_finalize``: the three strategies,
  written as the seed writes them, over a ``Desk``.
- ``Simulation`` / ``SimConfig``: S staff, a seeded stream of customers,
  faults; ``run_virtual`` and ``compare`` run on virtual time (instant,
  deterministic; cancellable from another thread), ``compare_async`` runs a
  compare in a worker thread that a cancel stops, and
  ``Simulation(config, speed=...).start()`` runs live on the current loop.
  Memory stays bounded however long a run is: a full queue turns arrivals
  away (counted), waits keep exact totals plus a recent window for the p99.
  ``snapshot()`` and ``subscribe()`` feed the window.
"""

from lanemon.counters.board import Board, Claim, ClaimToken, CounterState, CounterView, Outcome
from lanemon.counters.clock import ManualClock, ScaledClock, VirtualTimeLoop, run_in_virtual_time
from lanemon.counters.events import Event, EventHub
from lanemon.counters.simulation import (
    AWAY,
    CHOOSING,
    DEFAULT_QUEUE_LIMIT,
    DONE,
    FINISHED,
    FLOORS,
    GUIDING,
    IDLE,
    READY,
    RUNNING,
    STOPPED,
    WAIT_WINDOW,
    WAITING_COUNTER,
    WAITING_LOCK,
    Floor,
    SimConfig,
    Simulation,
    Snapshot,
    StaffView,
    Tallies,
    compare,
    compare_async,
    run_virtual,
)
from lanemon.counters.strategies import (
    LABELS,
    STRATEGIES,
    Attempt,
    Desk,
    claim_finalize,
    long_lock,
    short_lock,
)
from lanemon.counters.workload import Customer, workload
from lanemon.stats import percentile

__all__ = [
    "AWAY", "CHOOSING", "DEFAULT_QUEUE_LIMIT", "DONE", "FINISHED", "FLOORS", "Floor", "GUIDING", "IDLE", "READY",
    "RUNNING", "STOPPED", "WAITING_COUNTER", "WAITING_LOCK", "WAIT_WINDOW",
    "Attempt", "Board", "Claim", "ClaimToken", "CounterState", "CounterView", "Customer", "Desk",
    "Event", "EventHub", "LABELS", "ManualClock", "Outcome", "STRATEGIES", "ScaledClock",
    "SimConfig", "Simulation", "Snapshot", "StaffView", "Tallies", "VirtualTimeLoop",
    "claim_finalize", "compare", "compare_async", "long_lock", "percentile", "run_in_virtual_time",
    "run_virtual", "short_lock", "workload",
]
