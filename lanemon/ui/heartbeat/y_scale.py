"""The heartbeat chart's y scale: linear (ms) or logarithmic (log10 of ms).

Chart items live in *view* coordinates; ``YScale`` maps lag in ms to them and
says where the axis starts, where its ticks and grid lines go, and how they
read. Linear: view = ms, the axis starts at 0. Logarithmic: view =
log10(max(ms, ``LOG_FLOOR_MS``)), the axis starts at ``LOG_FLOOR_MS`` (lags
below it, a fraction of a tick period late, sit on the floor): a 3,000 ms
whole run and a 5 ms sliced run both keep a readable height, and 16.7 and 50 ms
stay apart. Tick labels always read in ms.
"""

from __future__ import annotations

import math

import numpy as np

LOG_FLOOR_MS = 0.1
# per decade, a grid line and a tick label at each of these, by the pixels a decade has:
# 1-2-5 when there is room for three labels, else the decades only
_LOG_STEPS = ((60.0, (1.0, 2.0, 5.0)), (0.0, (1.0,)))


def _ms_text(ms: float) -> str:
    return f"{ms:,.0f}" if ms >= 1 else f"{ms:g}"


class YScale:
    """Maps lag (ms) to view coordinates; ``log`` picks the logarithmic scale."""

    def __init__(self, log: bool = False) -> None:
        self.log = bool(log)

    def to_view(self, ms):
        """``ms`` (a number or a numpy array) in view coordinates (the same shape)."""
        if not self.log:
            return ms if isinstance(ms, np.ndarray) else float(ms)
        if isinstance(ms, np.ndarray):
            return np.log10(np.maximum(ms, LOG_FLOOR_MS))
        return math.log10(max(float(ms), LOG_FLOOR_MS))

    def to_view_list(self, ms: list[float]) -> list[float]:
        """``ms`` (a list of numbers) in view coordinates, with ``math`` (the same numbers
        whatever part of the curve is asked for: numpy's ``log10`` may differ from it in the
        last bit)."""
        if not self.log:
            return ms
        log10, floor = math.log10, LOG_FLOOR_MS
        return [log10(v if v > floor else floor) for v in ms]

    @property
    def bottom(self) -> float:
        """The axis's lower end in view coordinates (0 ms, or ``LOG_FLOOR_MS``)."""
        return math.log10(LOG_FLOOR_MS) if self.log else 0.0

    def lines(self, top_ms: float, px_per_decade: float = 100.0) -> list[float]:
        """The grid's horizontal lines below ``top_ms``, in ms: about five evenly spaced ones
        (linear), or 1-2-5 of each decade above the floor (logarithmic; the decades only when
        a decade is less than 60 pixels tall, so that labels do not overlap)."""
        if not self.log:
            raw = top_ms / 5.0
            mag = 10 ** math.floor(math.log10(raw))
            step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
            return [float(v) for v in np.arange(step, top_ms, step)]
        steps = next(st for room, st in _LOG_STEPS if px_per_decade >= room)
        out = []
        decade = LOG_FLOOR_MS
        while decade < top_ms:
            out.extend(m * decade for m in steps if LOG_FLOOR_MS < m * decade < top_ms * (1 - 1e-9))
            decade *= 10
        return out

    def ticks(self, top_ms: float, px_per_decade: float = 100.0) -> list[tuple[float, str]] | None:
        """The axis ticks (view coordinate, label in ms) below ``top_ms``, where ``lines`` puts
        the grid; ``None`` when the axis may choose its own (linear)."""
        if not self.log:
            return None
        values = [LOG_FLOOR_MS, *self.lines(top_ms, px_per_decade)]
        return [(math.log10(v), _ms_text(v)) for v in values]


__all__ = ["LOG_FLOOR_MS", "YScale"]
