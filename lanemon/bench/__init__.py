"""``lanemon bench``: measured figures, printed with how they were measured.

Each benchmark is a module ``lanemon.bench.<name>`` with one function::

    def run(out: Callable[[str], None]) -> dict

``run`` prints human-readable lines through ``out`` (each figure with how it
was measured) and returns the figures as a JSON-ready dict. Benchmarks never
assert timings; they print figures and, where a goal exists, the goal beside
the figure. A benchmark that checks invariants (e.g. ``sched``) raises
``AssertionError`` when they do not hold.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Callable

# name -> module; the order is the order of ``lanemon bench all``.
BENCHES: dict[str, str] = {
    "startup": "lanemon.bench.startup",
    "lag": "lanemon.bench.lag",
    "slice": "lanemon.bench.slice",
    "worker": "lanemon.bench.worker",
    "sched": "lanemon.bench.sched",
    "counters": "lanemon.bench.counters",
    "ui": "lanemon.bench.ui",
    "history": "lanemon.bench.history",
}


def available() -> list[str]:
    """Names of the benchmarks whose module exists in this install."""
    names = []
    for name, module in BENCHES.items():
        if importlib.util.find_spec(module) is not None:
            names.append(name)
    return names


def run(name: str, out: Callable[[str], None] = print) -> dict:
    """Run one benchmark by name and return its figures."""
    if name not in BENCHES:
        raise ValueError(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
    module = importlib.import_module(BENCHES[name])
    return module.run(out)
