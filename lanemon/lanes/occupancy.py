"""Outside occupancy: a workspace can be busy for reasons outside the queues.

A program or notebook open, a task running, a result not yet confirmed: the
app (or the user) marks a workspace busy with a *reason*; the workspace is
available to the queues only when it has no reason left.

Guarantees
----------
* ``mark_busy(ws, reason)`` adds a reason (idempotent per reason);
  ``clear(ws, reason)`` removes one, ``clear(ws)`` removes all.  Workspaces
  with no reason leave no entry.
* A change calls ``on_change(ws, busy)`` synchronously; the scheduler uses it
  to start a waiting job as soon as the workspace becomes available.
* Marking a workspace busy never stops or pre-empts a running job: it only
  keeps new jobs of that workspace from starting.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Occupancy"]


class Occupancy:
    def __init__(self, on_change: Callable[[str, bool], None] | None = None) -> None:
        self._reasons: dict[str, dict[str, None]] = {}
        self.on_change = on_change
        self._views: dict[str, tuple[str, ...]] | None = None  # cached views() (None: changed)

    def mark_busy(self, workspace: str, reason: str = "outside") -> None:
        reasons = self._reasons.setdefault(workspace, {})
        if reason in reasons:
            return
        reasons[reason] = None
        self._views = None
        if self.on_change is not None:
            self.on_change(workspace, True)

    def clear(self, workspace: str, reason: str | None = None) -> None:
        reasons = self._reasons.get(workspace)
        if reasons is None:
            return
        self._views = None
        if reason is None:
            reasons.clear()
        else:
            reasons.pop(reason, None)
        if not reasons:
            del self._reasons[workspace]
            if self.on_change is not None:
                self.on_change(workspace, False)

    def is_busy(self, workspace: str) -> bool:
        return workspace in self._reasons

    def reasons(self, workspace: str) -> tuple[str, ...]:
        return tuple(self._reasons.get(workspace, ()))

    def views(self) -> dict[str, tuple[str, ...]]:
        """workspace -> reasons, sorted by workspace (a new dict; its tuples are
        reused while nothing changed, so a UI can compare them by identity)."""
        views = self._views
        if views is None:
            views = self._views = {ws: tuple(r) for ws, r in sorted(self._reasons.items())}
        return dict(views)

    def __len__(self) -> int:
        return len(self._reasons)
