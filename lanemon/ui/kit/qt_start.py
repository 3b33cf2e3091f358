"""pyqtgraph as the window takes it (``pg``), with PySide6's import scan made cheap.

- **PySide6 reads the source of every module imported after it.** Its
  ``__feature__`` import hook asks, of each new module, whether it uses
  PySide6 (``shibokensupport.feature._mod_uses_pyside``: the string
  ``"PySide6"`` in ``inspect.getsource(module)``): ~380 modules, 70-100 ms of
  CPU of the window's start-up, mostly ``inspect``'s and ``linecache``'s
  machinery around the file's read. :func:`cheap_source_scan` answers the
  same question from the file's bytes for a module loaded from a ``.py`` file
  (``"PySide6"`` is ASCII: in the bytes exactly when in the decoded text of a
  file in an ASCII-compatible encoding), and asks the original for any other
  module.
- **pyqtgraph's own walk is kept on purpose.** On import pyqtgraph copies
  every name of ``PySide6.QtCore``, ``QtGui`` and ``QtWidgets`` into its mirror
  modules, which makes PySide6 build every one of those classes (~100 ms;
  PySide6 otherwise builds a class the first time Python needs it). Built
  lazily, a class first needed inside an event filter can crash the process:
  shiboken's lazy type creation re-enters itself there and erases from the
  map it is iterating (a null dereference; reported with ``QProxyStyle``,
  which ``setStyleSheet`` installs, handed to an application-wide filter).
  A version of this module that gave pyqtgraph lazy mirrors instead (first
  paint ~70 ms sooner) segfaulted once in a full test run, inside Qt's event
  loop, in a test with an event filter on the window: every class is built
  at import again, before any filter exists.

Guaranteed: ``pg`` is pyqtgraph, imported after PySide6's scan was made
cheap, and every class of the three modules is built when this returns;
PySide6's scan gives every module the answer its own would. Refused: the scan
is left as it is when it is not the private function this expects.
"""

from __future__ import annotations

import sys

import PySide6.QtCore  # noqa: F401  (loads PySide6's __feature__ support: the scan to replace)


def _pyside_feature():
    """PySide6's ``__feature__`` support module (loaded with ``PySide6.QtCore``), or ``None``."""
    return sys.modules.get("shibokensupport.feature") or sys.modules.get("PySide6.support.feature")


def cheap_source_scan() -> bool:
    """Make PySide6's per-module "does it use PySide6?" scan read a ``.py`` module's bytes
    instead of its source through ``inspect`` (same answer, see the module docstring).
    Idempotent. False if PySide6's scan is not there to replace (nothing changed)."""
    feature = _pyside_feature()
    scan = getattr(feature, "_mod_uses_pyside", None)
    if scan is None or not callable(scan):
        return False
    if getattr(scan, "_lanemon_original", None) is not None:
        return True

    def uses_pyside(module) -> bool:
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            try:
                with open(path, "rb") as f:
                    return b"PySide6" in f.read()
            except OSError:
                pass
        return scan(module)

    uses_pyside._lanemon_original = scan
    feature._mod_uses_pyside = uses_pyside
    return True


def _import_pyqtgraph():
    cheap_source_scan()
    import pyqtgraph

    return pyqtgraph


pg = _import_pyqtgraph()

__all__ = ["cheap_source_scan", "pg"]
