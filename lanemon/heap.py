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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["trim"]

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
