"""Bulk work kept out of the garbage collector's full passes (Qt-free).

A burst of 99,999 jobs over 9,999 workspaces makes some 100,000-200,000
long-lived objects in a few seconds (records, lanes, history spans). Each full
pass of CPython's collector walks every tracked object with the loop stopped,
and the growth itself triggers several: 130-190 ms of CPU each were measured
inside such a burst (a 2-core machine), far over a frame.

``bulk()`` is the way out, for work done in chunks on the loop:

- on entry, one collection of what is not frozen (the window's own objects
  were frozen after start-up, so this is the recent ones only), then the
  collector's automatic passes are held;
- ``chunk_done()`` after each chunk: one young pass (it walks only what the
  chunk made, and collects the cycles among it), then ``gc.freeze()``: what
  survived moves out of every later pass;
- on exit, the last chunk is done the same way and the automatic passes come
  back (if they were on).

Guaranteed: an object that dies later is freed at once by its reference
count, frozen or not, and its memory returns; bulks nest (only the outermost
holds and restores the passes). Refused: collecting a reference cycle that
includes a frozen object. The lanes' job lifecycle makes no cycle at all
(``tests/test_lanes_gc.py`` checks it under seeded failures, holds, cancels
and stops), so what a burst freezes is freed by reference counts when its
jobs end; ``lanemon.ui.shell.app`` unfreezes everything when the window
closes.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_depth = 0          # bulks open now (nested ones share the outermost's hold)
_was_enabled = True


class Bulk:
    """One open bulk: ``chunk_done()`` after each chunk; ``frozen`` counts its freezes."""

    def __init__(self) -> None:
        self.frozen = 0

    def chunk_done(self) -> None:
        """The chunk's survivors out of every later pass (a young pass first: its cycles go)."""
        gc.collect(0)
        gc.freeze()
        self.frozen += 1


@contextlib.contextmanager
def bulk() -> Iterator[Bulk]:
    """Hold the collector's automatic passes for a bulk of long-lived objects made in
    chunks; see the module docstring."""
    global _depth, _was_enabled
    if _depth == 0:
        _was_enabled = gc.isenabled()
        gc.collect()             # the recent objects' garbage, before anything is frozen
        gc.disable()
    _depth += 1
    b = Bulk()
    try:
        yield b
    finally:
        b.chunk_done()
        _depth -= 1
        if _depth == 0 and _was_enabled:
            gc.enable()


__all__ = ["Bulk", "bulk"]
