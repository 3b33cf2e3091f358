"""Where a stall's time went, from its folded stacks (Qt-free: plain functions on the wire's data).

A probe (``lanemon.probe``) samples the stalled loop thread's stack every few
ms and folds the samples: ``folded`` is ``((frames, count), ...)``, each frame
a string ``"file:line function"``, innermost first. Here:

- ``parse_frame(frame)`` splits a frame into ``Frame(file, line, function)``;
  a string not of that form is kept whole as the function (never raises).
- ``is_library(frame)``: the frame is the interpreter's or an installed
  package's (the standard library, ``site-packages``, ``<frozen ...>``,
  PySide's embedded ``shibokensupport``), not the program's own code
  (``<string>``, ``python -c``, is the program's). A frame under a ``lanemon``
  package folder is never a library frame (the window's own stalls are
  blamed on lanemon's code even when lanemon is installed).
- ``ranked(folded)``: one row per innermost frame (where the samples were
  taken), most samples first: its function, ``file:line``, samples, share of
  all samples, and the innermost non-library frame of those stacks
  (``caller``: who called into the library, or the frame itself).
- ``culprit(folded)``: the function to name for the stall, the innermost
  non-library frame of each stack, the one with the most samples summed
  (ties: the first seen, i.e. the larger stack); the innermost frame's
  function when every frame is a library's, or when an event loop's run
  frame (``LOOP_RUNNERS``) comes before any of the program's: the loop was
  busy in its own code or in C (Qt painting under qasync shows as
  ``QEventLoop.run_forever``, not as whatever started the loop);
  ``None`` for no samples.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

Folded = Iterable[tuple[Sequence[str], int]]

_LIBRARY = re.compile(r"(^<frozen |[/\\](site|dist)-packages[/\\]|[/\\]lib[/\\]python3[^/\\]*[/\\]"
                      r"|(^|[/\\])shibokensupport[/\\])")   # PySide's modules embedded in its library
_OWN = re.compile(r"[/\\]lanemon[/\\]")
LOOP_RUNNERS = frozenset({"run_forever", "_run_once", "run_until_complete"})   # an event loop's run frames


class Frame(NamedTuple):
    file: str
    line: int | None
    function: str

    @property
    def where(self) -> str:
        """``file:line`` (just the file when the line is unknown)."""
        return self.file if self.line is None else f"{self.file}:{self.line}"


class Share(NamedTuple):
    """One row of ``ranked``: where samples were taken and how many."""

    function: str
    where: str          # file:line of the innermost frame
    samples: int
    share: float        # of all the stall's samples, 0..1
    caller: str         # the innermost non-library frame's function of those stacks ("" if none)


def parse_frame(frame: str) -> Frame:
    """``"file:line function"`` -> ``Frame``; anything else is kept whole as the function."""
    where, sep, function = str(frame).rpartition(" ")
    if not sep:
        return Frame("", None, str(frame))
    file, colon, line = where.rpartition(":")
    if colon and line.isdigit():
        return Frame(file, int(line), function)
    return Frame(where, None, function)


def is_library(frame: str) -> bool:
    """Is this frame the interpreter's or an installed package's (not the program's own)?"""
    file = parse_frame(frame).file
    if _OWN.search(file):
        return False
    return bool(_LIBRARY.search(file))


def _own_frame(frames: Sequence[str]) -> str | None:
    """The innermost non-library frame, unless the event loop's own run frame comes first
    (the loop was busy in its own or C code, e.g. Qt painting: no caller of the program's)."""
    for frame in frames:
        if not is_library(frame):
            return frame
        if parse_frame(frame).function.rpartition(".")[2] in LOOP_RUNNERS:
            return None
    return None


def ranked(folded: Folded) -> tuple[Share, ...]:
    """Samples per innermost frame, most first (ties: first seen); shares of the total."""
    rows: dict[str, list] = {}
    total = 0
    for frames, count in folded:
        count = int(count)
        if count <= 0 or not frames:
            continue
        total += count
        inner = frames[0]
        row = rows.setdefault(inner, [0, {}])
        row[0] += count
        own = _own_frame(frames)
        if own is not None:
            row[1][own] = row[1].get(own, 0) + count
    out = []
    for inner, (samples, owners) in rows.items():
        f = parse_frame(inner)
        caller = parse_frame(max(owners, key=owners.get)).function if owners else ""
        out.append(Share(f.function, f.where, samples, samples / total, caller))
    out.sort(key=lambda s: -s.samples)   # stable: ties keep the order seen
    return tuple(out)


def culprit(folded: Folded) -> str | None:
    """The function the stall's time went to (see the module docstring); ``None`` without samples."""
    votes: dict[str, int] = {}
    for frames, count in folded:
        count = int(count)
        if count <= 0 or not frames:
            continue
        own = _own_frame(frames)
        name = parse_frame(own if own is not None else frames[0]).function
        votes[name] = votes.get(name, 0) + count
    if not votes:
        return None
    return max(votes, key=votes.get)


__all__ = ["Frame", "Share", "culprit", "is_library", "parse_frame", "ranked"]
