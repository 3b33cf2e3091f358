"""The one naming of a lane's owner: ``"<queue>#<job id>"``.

The scheduler claims a job's lanes for the owner ``owner_name(queue, id)``;
a UI (or a test) that reads a :class:`~lanemon.lanes.lanes.LaneView` turns
the ``owner`` string back into its queue and job with :func:`parse_owner`.
Nothing else builds or splits owner strings.

Guarantees
----------
* ``parse_owner(owner_name(q, i)) == Owner(q, i)`` for every queue name ``q``
  and int ``i >= 0`` (a queue name may itself contain ``#``: the job ID is
  what follows the last one).
* ``parse_owner`` never raises for a string: an owner not built by
  ``owner_name`` (``"someone"``, ``"cafe#x"``) parses to
  ``Owner(<the text before the last '#', or all of it>, None)``.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Owner", "owner_name", "parse_owner"]


class Owner(NamedTuple):
    """A lane owner, parsed: its queue and its job (``None`` when unknown)."""

    queue: str
    job_id: int | None


def owner_name(queue: str, job_id: int) -> str:
    """The owner string of job ``job_id`` of ``queue``: ``"cafe#12"``."""
    return f"{queue}#{job_id}"


def parse_owner(owner: str) -> Owner:
    """``"cafe#12"`` -> ``Owner("cafe", 12)``; see the module docstring."""
    queue, sep, num = owner.rpartition("#")
    if not sep:
        return Owner(owner, None)
    return Owner(queue, int(num) if num.isdigit() else None)
