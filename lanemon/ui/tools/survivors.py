"""What keeps a burst's arenas after the Reset: ``python -m lanemon.ui.tools.survivors``.

A diagnostic for ``lanemon bench burst``'s memory goal (issue 19, Deliver 6). It drives
the same steps as the bench (the window offscreen, the Counters flood, then two bursts of
``JOBS`` jobs over ``WORKSPACES`` workspaces from the Lanes controls, each drained and
Reset), without timing anything, and then names what is still allocated in memory the
bursts took:

- before the first burst it notes which 1 MiB address bins (``address >> 20``) hold a
  block of an object reachable from the collector's lists (objects, dict key/value
  tables, list item arrays, set tables; pymalloc's blocks only: at most 512 bytes);
- after the last Reset it lists the blocks in bins that held none before, grouped by
  what keeps them (a short chain of referrers: ``float @ list#2048 < ColumnMax <
  [_columns] < HeartbeatChart``), each with the number of bins it sits in and blocks,
  and the groups that are the only thing in some bin ("sole").

``--trace`` answers the same question by allocation site instead: ``tracemalloc``
traces every allocation from the first burst on, and after the last Reset the
blocks still alive are grouped by where they were allocated (the last frames of
the stack), C code's allocations made under a Python call included. Tracing
makes the loop several times slower: ``--jobs`` / ``--workspaces`` make the
bursts smaller. Seen 2026-12-02, two bursts of 20,000 jobs over 2,000 workspaces:
24,753 blocks (2.1 MB) alive after the Reset, 15,666 of them tuples the lanes' run
history made, which CPython's tuple free lists keep (a full collection empties them;
in ``bench burst`` that gave back no arena), then the watchdog's stack texts, laid-out
texts and Qt's paint wrappers, a few hundred each: spread over every arena.

pymalloc's arenas are 1 MiB but not aligned to 1 MiB: a bin is a stand-in for an arena
(an arena spans two bins). Objects only C code refers to are not found. Slow (a walk of
every object, ~1 s); a throw-away measurement, not a benchmark.

Guaranteed: it changes nothing in the window but the garbage collector's freezing (it
unfreezes, walks, freezes again). Refused: nothing; prints its findings.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ctypes
import gc
import sys

SMALL = 512        # pymalloc's largest block: bigger objects come from malloc
BIN_SHIFT = 20     # 1 MiB bins (pymalloc's arena size on 3.10+)


def _blocks() -> tuple[dict[int, tuple[str, object]], list]:
    """{address: (kind, object)} for every object the collector lists and those they refer
    to, plus the dict, list and set tables behind them (CPython 3.11's layouts)."""
    objs = gc.get_objects()
    seen: dict[int, object] = {}
    for o in objs:
        seen[id(o)] = o
        for r in gc.get_referents(o):
            seen.setdefault(id(r), r)
    out: dict[int, tuple[str, object]] = {}
    ptr = ctypes.c_void_p
    for a, o in seen.items():
        if type(o).__name__ == "frame":
            continue
        out[a - (16 if gc.is_tracked(o) else 0)] = ("obj", o)     # (the GC header before it)
        if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
            continue
        if isinstance(o, dict):
            for off, kind in ((32, "dict keys"), (40, "dict values")):
                p = ptr.from_address(a + off).value
                if p:
                    out[p] = (kind, o)
        elif isinstance(o, list):
            p = ptr.from_address(a + 24).value
            if p:
                out[p] = ("list items", o)
    return out, objs


def _small(kind: str, o: object) -> bool:
    return kind != "obj" or sys.getsizeof(o) <= SMALL


def bins_in_use() -> set[int]:
    """The 1 MiB bins holding a small block of a reachable object now."""
    blocks, objs = _blocks()
    del objs
    return {a >> BIN_SHIFT for a, (kind, o) in blocks.items() if _small(kind, o)}


def _label(parent: object, child: object) -> str:
    t = type(parent)
    if isinstance(parent, dict):
        key = next((k for k, v in parent.items() if v is child), None)
        return "dict(key)" if key is None else f"[{str(key)[:28]}]"
    if isinstance(parent, (list, tuple, set, frozenset)) or t.__name__ == "deque":
        return f"{t.__name__}#{len(parent)}"
    return f"{t.__module__.rsplit('.', 1)[-1]}.{t.__qualname__}"


def _chain(o: object, parents: dict[int, list], depth: int = 5) -> str:
    out, cur, seen = [], o, {id(o)}
    for _ in range(depth):
        ps = [p for p in parents.get(id(cur), ()) if id(p) not in seen and type(p).__name__ != "frame"]
        if not ps:
            out.append("?")
            break
        p = ps[0]
        seen.add(id(p))
        out.append(_label(p, cur))
        if isinstance(p, type) or type(p).__name__ == "module":
            break
        cur = p
    return " < ".join(out)


def census(before: set[int], top: int = 40) -> list[str]:
    """The lines of the report: the small blocks in bins not in ``before``, grouped by
    what keeps them (see the module docstring)."""
    blocks, objs = _blocks()
    parents: dict[int, list] = {}
    for p in objs:
        for c in gc.get_referents(p):
            got = parents.setdefault(id(c), [])
            if len(got) < 4:
                got.append(p)
    bins: dict[str, set[int]] = collections.defaultdict(set)
    count: collections.Counter = collections.Counter()
    for a, (kind, o) in blocks.items():
        b = a >> BIN_SHIFT
        if b in before or not _small(kind, o):
            continue
        key = ("" if kind == "obj" else kind + " of ") + type(o).__name__ + " @ " + _chain(o, parents)
        bins[key].add(b)
        count[key] += 1
    by_bin: dict[int, set[str]] = collections.defaultdict(set)
    for key, bs in bins.items():
        for b in bs:
            by_bin[b].add(key)
    sole = collections.Counter(next(iter(ks)) for ks in by_bin.values() if len(ks) == 1)
    lines = [f"new 1 MiB bins holding a small block: {len(by_bin)}; blocks in them: {sum(count.values()):,}"]
    for key, bs in sorted(bins.items(), key=lambda kv: -len(kv[1]))[:top]:
        lines.append(f"{len(bs):4d} bins (sole in {sole[key]:3d}) {count[key]:6,} blocks  {key[:160]}")
    return lines


def traced(snapshot, top: int = 25, frames: int = 3) -> list[str]:
    """The report of ``--trace``: the blocks a ``tracemalloc`` snapshot holds, grouped by
    their allocation site's last ``frames`` frames, most blocks first."""
    groups: collections.Counter = collections.Counter()
    sizes: collections.Counter = collections.Counter()
    for stat in snapshot.statistics("traceback"):
        key = " < ".join(f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in reversed(stat.traceback[-frames:]))
        groups[key] += stat.count
        sizes[key] += stat.size
    lines = [f"blocks allocated since the first burst and alive now: {sum(groups.values()):,} "
             f"({sum(sizes.values()) / 1e6:.1f} MB)"]
    lines += [f"{n:7,} blocks {sizes[key] / 1e3:8.0f} kB  {key}" for key, n in groups.most_common(top)]
    return lines


async def _scenario(win, out, trace: bool = False, jobs: int | None = None,
                    workspaces: int | None = None) -> None:
    import tracemalloc

    from lanemon.bench import burst as B
    from lanemon.bench._window import settled

    await settled(win)
    await B._flood(win)
    win.show_view("lanes")
    view = win.views["lanes"]
    c = view.controls
    c.kind_box.setCurrentText("simulated")
    c.length.setValue(B.JOB_S)
    c.burst_jobs.setValue(jobs or B.JOBS)
    c.burst_ws.setValue(workspaces or B.WORKSPACES)
    await asyncio.sleep(1.0)
    gc.collect()
    before: set[int] = set()
    if not trace:                 # (the bins walk, ~1 s: only the census reads it)
        gc.unfreeze()
        before = bins_in_use()
        gc.freeze()
    rss0, arenas0 = B._rss_mb(), B._arenas()
    s = view.scheduler
    if trace:
        tracemalloc.start(8)
    for i in range(1, B.BURSTS + 1):
        await view.add_burst()
        await asyncio.wait_for(s.join(), B.DRAIN_TIMEOUT_S)
        await asyncio.sleep(0.5)
        await view.reset()
        await asyncio.sleep(0.5)
        arenas = B._arenas()      # (None while tracing: tracemalloc's hooks hide pymalloc's stats)
        out(f"burst {i} drained and Reset: RSS {B._rss_mb() - rss0:+.1f} MB, arenas {arenas0} -> "
            + (f"{arenas}" if arenas is not None else "(not counted while tracing)"))
    if trace:
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        for line in traced(snapshot):
            out(line)
        return
    gc.unfreeze()
    try:
        for line in census(before):
            out(line)
    finally:
        gc.freeze()


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="store_true", help="group the survivors by allocation site (tracemalloc)")
    ap.add_argument("--jobs", type=_positive, help="jobs per burst (default: the bench's)")
    ap.add_argument("--workspaces", type=_positive, help="workspaces per burst (default: the bench's)")
    args = ap.parse_args(argv)
    from lanemon.bench._window import run_window

    run_window(lambda win: _scenario(win, print, args.trace, args.jobs, args.workspaces))
    return 0


if __name__ == "__main__":
    sys.exit(main())
