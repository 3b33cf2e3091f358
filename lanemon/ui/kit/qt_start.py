"""Qt for Python and pyqtgraph imported without two start-up walks (``pg``).

Both cost the window's start-up before its first paint, on every start
(``python -X importtime -m lanemon``; ``lanemon bench startup``):

- **PySide6 reads the source of every module imported after it.** Its
  ``__feature__`` import hook asks, of each new module, whether it uses
  PySide6 (``shibokensupport.feature._mod_uses_pyside``: the string
  ``"PySide6"`` in ``inspect.getsource(module)``): ~380 modules, 70-100 ms of
  CPU here, mostly ``inspect``'s and ``linecache``'s machinery around the
  file's read. :func:`cheap_source_scan` answers the same question from the
  file's bytes for a module loaded from a ``.py`` file (``"PySide6"`` is
  ASCII: in the bytes exactly when in the decoded text of a file in an
  ASCII-compatible encoding), and asks the original for any other module.
- **pyqtgraph (0.13, 0.14) copies every name of ``PySide6.QtCore``, ``QtGui``
  and ``QtWidgets``** into mirror modules of its own (``pyqtgraph.Qt.QtCore``
  …: empty files it fills with ``_copy_attrs``). Reading each name makes
  PySide6 build that class and its enums, which it otherwise does only for a
  class used: ~600 enums, ~100 ms (``pyqtgraph.Qt``: 122 ms of the import).
  So the mirrors are put in place first, each a module that answers a name it
  lacks from the PySide6 module it mirrors (and keeps it: a second read is a
  plain attribute), and while pyqtgraph imports, the three PySide6 modules
  list no names (their module ``__dir__``, PySide6's own put back after):
  its copy loop copies nothing.
  What pyqtgraph sets on its mirrors afterwards (its Qt 5 names) is set on
  these; the PySide6 modules are left as they were.

Guaranteed: ``pg`` is pyqtgraph; every name pyqtgraph reads from its mirrors
is the PySide6 one; PySide6's scan gives every module the answer its own
would. Refused: nothing is changed when pyqtgraph was imported already (that
import is used) or its mirror modules are not the empty files this expects
(another version: the plain import), nor when PySide6's scan is not the
private function this expects (then it is left as it is).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types

_MIRRORED = ("QtCore", "QtGui", "QtWidgets")
_OWN = frozenset({"__path__", "__file__", "__spec__", "__loader__", "__package__"})   # a module's own


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


def _mirrors_are_empty() -> bool:
    """Are pyqtgraph's Qt mirror modules the empty packages this module replaces?"""
    spec = importlib.util.find_spec("pyqtgraph")
    if spec is None or not spec.submodule_search_locations:
        return False
    root = list(spec.submodule_search_locations)[0]
    for name in _MIRRORED:
        try:
            if os.path.getsize(os.path.join(root, "Qt", name, "__init__.py")) != 0:
                return False
        except OSError:
            return False
    return True


def _mirror(name: str, source: types.ModuleType) -> types.ModuleType:
    """A module named ``name`` answering what it lacks from ``source`` (then keeping it)."""
    mirror = types.ModuleType(name)

    def __getattr__(attr: str):
        if attr in _OWN:
            raise AttributeError(attr)
        value = getattr(source, attr)
        setattr(mirror, attr, value)
        return value

    mirror.__getattr__ = __getattr__
    return mirror


def _import_pyqtgraph():
    cheap_source_scan()
    if "pyqtgraph" in sys.modules or not _mirrors_are_empty():
        import pyqtgraph

        return pyqtgraph
    import PySide6.QtGui
    import PySide6.QtWidgets

    sources = (PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets)
    for name, source in zip(_MIRRORED, sources, strict=True):
        sys.modules[f"pyqtgraph.Qt.{name}"] = _mirror(f"pyqtgraph.Qt.{name}", source)
    own_dirs = [vars(source).get("__dir__") for source in sources]   # (PySide6's lazy modules have one)
    for source in sources:
        source.__dir__ = list          # dir(source): [] while pyqtgraph imports
    try:
        import pyqtgraph
    except BaseException:
        for name in _MIRRORED:
            sys.modules.pop(f"pyqtgraph.Qt.{name}", None)
        raise
    finally:
        for source, own in zip(sources, own_dirs, strict=True):
            if own is None:
                del source.__dir__
            else:
                source.__dir__ = own
    return pyqtgraph


pg = _import_pyqtgraph()

__all__ = ["cheap_source_scan", "pg"]
