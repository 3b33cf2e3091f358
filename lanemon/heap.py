"""Give freed heap memory back to the system (Qt-free, numpy-free).

CPython frees an object's memory to its own allocator at once (reference counts), but
the process's resident size comes down only when the allocator gives pages back:
pymalloc returns an arena once it is wholly empty, glibc's ``malloc`` keeps the free
chunks of its heaps (the larger objects: dicts, lists, deques of a 99,999-job burst)
until ``malloc_trim``. ``trim()`` asks glibc for that, after a bulk of objects died
(the Lanes tab's Reset).

Guaranteed: on Linux with glibc, ``malloc_trim(0)`` is called (it frees nothing that is
in use; it costs a walk of the heap's free chunks, a few ms) and ``True`` is returned.
Elsewhere (musl, macOS, Windows, no ``ctypes``) nothing is done and ``False`` is
returned: it never raises.

``drop_caches()`` empties the process's cache of source lines (``linecache``). PySide6's
import hook (``shibokensupport.feature.feature_imported``) reads the whole source of every
module imported after PySide6 (``inspect.getsource``, to look for "PySide6" in it), and
``linecache`` keeps it: the window held ~400 files, ~200,000 lines, ~18 MB of text it never
reads (measured 2026-12-02). Guaranteed: only that cache goes (a traceback or ``inspect``
reads a file again when it needs it); returns how many files were dropped; never raises.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import linecache
import sys

__all__ = ["drop_caches", "trim"]

_trim = None        # the C function, once looked up
_looked = False


def _malloc_trim():
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                fn = libc.malloc_trim          # glibc only (AttributeError on musl)
                fn.argtypes = [ctypes.c_size_t]
                fn.restype = ctypes.c_int
                _trim = fn
            except (OSError, AttributeError):
                _trim = None
    return _trim


def trim() -> bool:
    """Give glibc's free heap memory back to the system; see the module docstring."""
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)
    return True


def drop_caches() -> int:
    """Empty ``linecache`` (the source text PySide6's import hook made it keep); how many
    files it held. See the module docstring."""
    n = len(linecache.cache)
    linecache.clearcache()
    return n
