"""``lanemon bench``: measured figures, printed with how they were measured.

Each benchmark is a module ``lanemon.bench.<name>`` with one function::

    def run(out: Callable[[str], None]) -> dict

``run`` prints human-readable lines through ``out`` (each figure with how it
was measured) and returns the figures as a JSON-ready dict. A benchmark may
take keyword options (``soak``: ``minutes``; ``store``: ``store``); ``run(name, out, **options)``
passes them on. Benchmarks never
assert timings; they print figures and, where a goal exists, the goal beside
the figure. A benchmark that checks invariants (e.g. ``sched``) raises
``AssertionError`` when they do not hold.

``lanemon bench all`` runs every benchmark but those in ``OPT_IN`` (``soak``
drives the window for minutes; ``replay`` records a simulated hour, 2-4 minutes):
those run by name only.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
from collections.abc import Callable

# name -> module; the order is the order of ``lanemon bench all``.
BENCHES: dict[str, str] = {
    "startup": "lanemon.bench.startup",
    "lag": "lanemon.bench.lag",
    "slice": "lanemon.bench.slice",
    "worker": "lanemon.bench.worker",
    "sched": "lanemon.bench.sched",
    "counters": "lanemon.bench.counters",
    "ui": "lanemon.bench.ui",
    "stalls": "lanemon.bench.stalls",
    "history": "lanemon.bench.history",
    "burst": "lanemon.bench.burst",
    "store": "lanemon.bench.store",
    "agents": "lanemon.bench.agents",
    "probe": "lanemon.bench.probe",
    "replay": "lanemon.bench.replay",
    "soak": "lanemon.bench.soak",
}
OPT_IN = frozenset({"soak", "replay"})    # by name only, never in ``all`` (minutes each)
MAX_MINUTES = 24 * 60


def available() -> list[str]:
    """Names of the benchmarks whose module exists in this install."""
    names = []
    for name, module in BENCHES.items():
        if importlib.util.find_spec(module) is not None:
            names.append(name)
    return names


def in_all() -> list[str]:
    """The benchmarks ``lanemon bench all`` runs: the available ones but ``OPT_IN``."""
    return [name for name in available() if name not in OPT_IN]


def parse_minutes(text: str) -> float:
    """``--minutes``: a finite number of minutes, more than 0, at most a day
    (``argparse.ArgumentTypeError`` saying what is wrong)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of minutes") from None
    if not math.isfinite(value) or not 0 < value <= MAX_MINUTES:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0 and at most {MAX_MINUTES} minutes")
    return value


def run(name: str, out: Callable[[str], None] = print, **options) -> dict:
    """Run one benchmark by name (``options`` passed to its ``run``) and return its figures."""
    if name not in BENCHES:
        raise ValueError(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
    module = importlib.import_module(BENCHES[name])
    return module.run(out, **options)
