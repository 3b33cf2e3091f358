"""The in-memory engine: today's lanes and records behind the store seam.

A :class:`~lanemon.lanes.Scheduler` given no ``lanes`` factory and no
``store`` uses this engine: :func:`memory_lanes` (a
:class:`~lanemon.store.lanes.LanesFactory`) makes its
:class:`~lanemon.store.lanes.LaneStore` objects and :class:`MemoryRecords`
(a :class:`~lanemon.store.records.RecordsFactory`) its
:class:`~lanemon.store.records.ReservationStore`.

The classes stay where the lanes domain defines them
(:class:`lanemon.lanes.lanes.ProjectLanes`,
:class:`lanemon.lanes.records.RecordStore`), next to the domain types every
engine shares (``LaneToken``, ``Reservation``, ``State``, the refusals); this
module names them as the memory engine, so a second engine
(``lanemon.store.sqlite``, ``lanemon.store.postgres``) sits beside it.
Everything completes without suspending (see the seam modules), and state
lives in the process: nothing survives it.
"""

from __future__ import annotations

from collections.abc import Callable

from lanemon.lanes.lanes import ProjectLanes as MemoryLanes
from lanemon.lanes.records import RecordStore as MemoryRecords

__all__ = ["MemoryLanes", "MemoryRecords", "memory_lanes"]


def memory_lanes(name: str, *, clock: Callable[[], float],
                 emit: Callable[..., None] | None) -> MemoryLanes:
    """A :class:`~lanemon.store.lanes.LanesFactory`: in-memory lanes ``name``."""
    return MemoryLanes(name, clock=clock, emit=emit)
