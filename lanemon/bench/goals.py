"""Goals judged against what was measured alongside, and the alternations behind them.

A benchmark's goal is one ``Goal`` record: its ``name``, the measured
``figure``, the ``floor`` measured in the same run that the figure is judged
against (``None`` when the goal is an absolute bound, e.g. jobs per second),
the ``goal`` (the bound that ``figure - floor`` -- or ``figure`` alone, without
a floor -- must stay under, or reach when ``at_least``), the ``unit`` and, where
the figure comes from alternations, how many of them ``agreed`` with the goal on
their own. ``met`` follows from those fields alone; a benchmark never states it.

Alternations: a figure and its floor are measured in short segments taken in
turn (figure, floor, figure, floor, ...), so that a shared machine's slow drift
falls on both alike. ``alternate`` pools each side's samples for the figure
(p99 of all the figure's ticks minus p99 of all the floor's ticks) and also
gives each alternation's own difference, and how many of them were within the
goal: a figure met by the pool but by few alternations is luck, not a result.

``lanemon bench all`` gathers every benchmark's ``goals`` (each benchmark
returns them as dicts under that key) into one table at the end
(``summary_lines``) and one list in the JSON.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from lanemon.work.lag import LagStats, summarize


class Goal(NamedTuple):
    """One goal, judged: ``figure - floor`` (or ``figure``) against ``goal``."""

    name: str
    figure: float
    goal: float
    unit: str = "ms"
    floor: float | None = None
    at_least: bool = False
    agreed: int | None = None       # alternations within the goal on their own ...
    alternations: int | None = None  # ... out of this many

    @property
    def judged(self) -> float:
        """What is compared with ``goal``: the figure over its floor, or the figure."""
        return self.figure if self.floor is None else self.figure - self.floor

    @property
    def met(self) -> bool:
        """True when ``judged`` is within the goal (a NaN figure never meets it)."""
        value = self.judged
        if math.isnan(value):
            return False
        return value >= self.goal if self.at_least else value <= self.goal

    def bound_text(self) -> str:
        """The goal in words: ``<= floor + 0.3 ms``, ``<= 3 ms``, ``>= 15,000 jobs/s``."""
        sign = ">=" if self.at_least else "<="
        if self.floor is None:
            return f"{sign} {_num(self.goal)} {self.unit}"
        return f"{sign} floor {'+' if self.goal >= 0 else '-'} {_num(abs(self.goal))} {self.unit}"

    def line(self) -> str:
        """``goal: NAME: FIGURE (floor F, +D) GOAL -> met / MISSED (A/N alternations agreed)``."""
        text = f"goal: {self.name}: {_num(self.figure)} {self.unit}"
        if self.floor is not None:
            text += f" (floor {_num(self.floor)} {self.unit}, {self.judged:+.2f})"
        text += f" {self.bound_text()} -> {'met' if self.met else 'MISSED'}"
        if self.alternations:
            text += f" ({self.agreed}/{self.alternations} alternations agreed)"
        return text

    def as_dict(self) -> dict:
        """The uniform JSON record: name, figure, floor, goal, met (and unit, judged, agreed)."""
        d = {"name": self.name, "figure": _round(self.figure), "floor": _round(self.floor),
             "goal": self.goal, "atLeast": self.at_least, "unit": self.unit,
             "judged": _round(self.judged), "met": self.met}
        if self.alternations:
            d["agreed"] = self.agreed
            d["alternations"] = self.alternations
        return d


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _num(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.2f}"


class Alternations(NamedTuple):
    """A figure and its floor over alternating segments (see the module docstring)."""

    figure: LagStats              # the figure's segments pooled
    floor: LagStats               # the floor's segments pooled
    differences: tuple[float, ...]  # each alternation's p99 minus its floor's p99, in order

    @property
    def over(self) -> float:
        """Pooled p99 of the figure minus pooled p99 of the floor."""
        return self.figure.p99 - self.floor.p99

    def within(self, margin: float) -> int:
        """How many alternations on their own had a p99 difference of at most ``margin``."""
        return sum(1 for d in self.differences if d <= margin)

    def goal(self, name: str, margin: float) -> Goal:
        """The goal ``figure p99 <= floor p99 + margin``, with the alternations that agreed."""
        return Goal(name, self.figure.p99, margin, floor=self.floor.p99,
                    agreed=self.within(margin), alternations=len(self.differences))

    def differences_text(self) -> str:
        return " ".join(f"{d:+.2f}" for d in self.differences)


def alternate(segments: Sequence[tuple[Iterable[float], Iterable[float]]]) -> Alternations:
    """``segments``: ``(figure lags, floor lags)`` of each alternation, in ms.

    Refused (``ValueError``): no alternation, or an alternation with no sample on a side
    (a p99 of nothing would be 0 and make any figure look good)."""
    if not segments:
        raise ValueError("no alternation to judge")
    figure_all: list[float] = []
    floor_all: list[float] = []
    differences = []
    for i, (figure, floor) in enumerate(segments):
        figure, floor = [float(v) for v in figure], [float(v) for v in floor]
        if not figure or not floor:
            side = "figure" if not figure else "floor"
            raise ValueError(f"alternation {i + 1} has no {side} sample")
        differences.append(summarize(figure).p99 - summarize(floor).p99)
        figure_all += figure
        floor_all += floor
    return Alternations(summarize(figure_all), summarize(floor_all), tuple(differences))


def goals_of(figures: dict) -> list[dict]:
    """The goal records a benchmark returned (``figures["goals"]``), or none."""
    goals = figures.get("goals") if isinstance(figures, dict) else None
    return list(goals) if isinstance(goals, list) else []


def summary_lines(by_bench: dict[str, dict]) -> list[str]:
    """The table ``bench all`` prints at the end: one row per goal of every benchmark run."""
    rows = [(bench, g) for bench, figures in by_bench.items() for g in goals_of(figures)]
    if not rows:
        return []
    lines = [f"{'bench':<9}{'goal':<62}{'figure':>11}{'floor':>11}{'judged':>10}  {'goal':<22}{'agreed':>7}  result"]
    for bench, g in rows:
        floor = "" if g["floor"] is None else _num(g["floor"])
        judged = f"{g['judged']:+.2f}" if g["floor"] is not None else ""
        sign = ">=" if g["atLeast"] else "<="
        bound = f"{sign} {'floor + ' if g['floor'] is not None else ''}{_num(g['goal'])} {g['unit']}"
        agreed = f"{g['agreed']}/{g['alternations']}" if g.get("alternations") else ""
        lines.append(f"{bench:<9}{g['name'][:61]:<62}{_num(g['figure']):>11}{floor:>11}{judged:>10}  "
                     f"{bound:<22}{agreed:>7}  {'met' if g['met'] else 'MISSED'}")
    met = sum(1 for _, g in rows if g["met"])
    lines.append(f"{met} of {len(rows)} goals met")
    return lines
