"""The lanes' state in a recording: ``Scheduler.snapshot(limit=LANES_LIMIT)`` after every
lanes event, written as the immutable objects that are new since the previous event.

A lanes ``Snapshot`` is a tree of immutable values (frozen dataclasses, ``NamedTuple``s,
tuples, mappings, enums, plain values), and the scheduler reuses the view of every job,
lane and workspace that did not change. The recorder numbers every distinct value it
writes (a **node**: ``[tag, child, ...]`` where a child is a plain JSON value or ``[id]``,
a reference to an earlier node); a value seen before -- the same object, or an equal
node -- is referred to, not written again. An event's delta is ``{"n": [[id, node], ...],
"r": id}``: the new nodes and the snapshot's own node. The replay builds each node once,
so the rebuilt ``Snapshot`` is equal to the live one, field by field (and shares the
unchanged parts between positions, as the live snapshots do). Node numbers start again
at every keyframe.

Tags: ``t`` tuple, ``m`` read-only mapping (``MappingProxyType``), ``d`` dict,
``e`` enum (``[e, "module:Class", value]``), else the name of one of ``TYPES``.
A value of any other type is written as its ``repr`` text (tag ``?``), which the
replay cannot rebuild equal: none occurs in the scheduler's snapshots.
"""

from __future__ import annotations

import enum
import importlib
import operator
from types import MappingProxyType

from lanemon.lanes.snapshot import Counts, JobView, LaneHolder, LaneView, QueueView, RunSpan, Snapshot

LANES_LIMIT = 40  # jobs per list (waiting, running, recent) of each queue in a recorded snapshot: more
                  # than the Lanes tab shows on a 1080p screen; each job more costs every lanes event
TYPES = {cls.__name__: cls for cls in (Snapshot, QueueView, JobView, LaneView, RunSpan, LaneHolder, Counts)}
_FIELDS = {cls: tuple(getattr(cls, "_fields", None) or cls.__dataclass_fields__) for cls in TYPES.values()}
_GETTERS = {cls: operator.attrgetter(*fields) for cls, fields in _FIELDS.items()}  # every type has 2+ fields
_PLAIN = (str, int, float, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN)


def take_snapshot(scheduler) -> Snapshot:
    """The snapshot a recording holds for ``scheduler`` (the one to compare with)."""
    return scheduler.snapshot(limit=LANES_LIMIT)


class LanesModel:
    """The lanes' state at one recorded event (see the module docstring)."""

    def __init__(self) -> None:
        self._objs: list = []  # node id -> the value (the live object on the recorder's side)
        self._by_identity: dict[int, int] = {}  # recorder: id(object) -> node id
        self._by_value: dict[str, int] = {}  # recorder: node text -> node id
        self._by_items: dict[tuple, int] = {}  # recorder: a tuple's items' ids -> node id
        self._alive: list = []  # recorder: every object whose id is in the two tables above
        self._root = None

    def snapshot(self) -> Snapshot | None:
        return self._root

    # -- the replay side -------------------------------------------------
    def apply(self, delta: dict, event=None) -> None:
        """Build the new nodes of ``delta`` and take its snapshot (``event`` is unused:
        a lanes delta states the whole change)."""
        objs = self._objs
        for nid, node in delta.get("n", ()):
            if nid != len(objs):
                raise ValueError(f"node {nid} out of order (expected {len(objs)})")
            objs.append(self._build(node))
        if "r" in delta:
            self._root = objs[delta["r"]]

    def _build(self, node: list):
        tag = node[0]
        args = [self._objs[c[0]] if isinstance(c, list) else c for c in node[1:]]
        if tag == "t":
            return tuple(args)
        if tag == "m" or tag == "d":
            pairs = dict(zip(args[0::2], args[1::2], strict=True))
            return MappingProxyType(pairs) if tag == "m" else pairs
        if tag == "e":
            module, _, name = args[0].partition(":")
            if not module.startswith("lanemon."):
                raise ValueError(f"an enum outside lanemon: {args[0]}")
            return getattr(importlib.import_module(module), name)(args[1])
        if tag == "?":
            return args[0]
        return TYPES[tag](*args)

    # -- the recorder side -----------------------------------------------
    def encode(self, snap: Snapshot, event=None) -> dict:
        new: list = []
        root = self._ref(snap, new)
        self._root = snap
        return {"n": new, "r": root[0]} if new else {"r": root[0]}

    def _ref(self, value, new: list):
        if type(value) in _PLAIN_TYPES:
            return value
        if isinstance(value, _PLAIN) and not isinstance(value, enum.Enum):
            return value  # a subclass of a plain type (not an enum)
        # Every object looked up by identity is kept alive (``_alive``) until the next
        # keyframe's fresh model: an id in these tables always names the object it was taken from.
        nid = self._by_identity.get(id(value))
        if nid is not None:
            return [nid]
        cls = type(value)
        if cls is tuple:  # a snapshot's lists are new tuples of the same job views: one look-up
            items = tuple(map(id, value))
            nid = self._by_items.get(items)
            if nid is not None:
                return [nid]
        if isinstance(value, enum.Enum):
            node = ["e", f"{cls.__module__}:{cls.__qualname__}", value.value]
        elif cls in _GETTERS:
            plain = _PLAIN_TYPES
            node = [cls.__name__]
            for v in _GETTERS[cls](value):
                node.append(v if type(v) in plain else self._ref(v, new))
        elif cls is tuple:
            known = self._by_identity
            got = [known.get(i) for i in items]  # a list of job views: most were written before
            if None in got:
                node = ["t", *(self._ref(v, new) for v in value)]
            else:
                node = ["t", *([n] for n in got)]
        elif cls is MappingProxyType or cls is dict:
            node = ["m" if cls is MappingProxyType else "d"]
            for k, v in value.items():
                node += (self._ref(k, new), self._ref(v, new))
        else:
            node = ["?", repr(value)]
        text = repr(node)  # 1, 1.0 and True differ here, as they must
        nid = self._by_value.get(text)
        if nid is None:
            nid = len(self._objs)
            self._by_value[text] = nid
            self._objs.append(value)
            new.append([nid, node])
        if cls is not dict:  # a dict may change later: always looked at again
            self._alive.append(value)
            self._by_identity[id(value)] = nid
            if cls is tuple:
                self._by_items[tuple(map(id, value))] = nid  # its items are alive through it
        return [nid]
