"""``lanemon.heap.trim``: glibc's free heap back to the system after a Reset; a no-op that
never raises where there is no glibc."""

from __future__ import annotations

import platform
import sys

import pytest

from lanemon import heap


def test_trim_calls_malloc_trim_on_glibc():
    if not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"):
        pytest.skip("glibc only")
    assert heap.trim() is True
    assert heap.trim() is True          # (looked up once, called again)


def test_trim_does_nothing_without_glibc(monkeypatch):
    monkeypatch.setattr(heap, "_looked", False)
    monkeypatch.setattr(heap, "_trim", None)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert heap.trim() is False


def test_drop_caches_empties_linecache():
    """PySide6's import hook reads every module imported after it into ``linecache``
    (``inspect.getsource``): ``drop_caches`` lets that text go (before: no such function)."""
    import linecache

    import lanemon.lanes.queues as q

    assert linecache.getline(q.__file__, 1)      # (read into the cache)
    assert q.__file__ in linecache.cache
    assert heap.drop_caches() >= 1
    assert linecache.cache == {}
    assert linecache.getline(q.__file__, 1)      # read again when asked
