"""``lanemon.ui.kit.qt_start``: PySide6's per-module source scan answered from the
file's bytes, with the same answers as before; pyqtgraph imported with every Qt
class built (its own walk, kept: a class built lazily inside an event filter can
crash PySide6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

from lanemon.ui.kit import qt_start

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter (offscreen); it prints one JSON object."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_qt_class_is_built_once_pyqtgraph_is_imported():
    got = _fresh("""
import json, PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets
names = ("QProxyStyle", "QCommonStyle", "QStyle")
before = [n in vars(PySide6.QtWidgets) for n in names]
from lanemon.ui.kit.qt_start import pg, cheap_source_scan
after = [n in vars(PySide6.QtWidgets) for n in names]
print(json.dumps({"before": before, "after": after, "pg": pg.__name__,
                  "listed_built": all(n in vars(PySide6.QtGui) for n in dir(PySide6.QtGui) if n.startswith("Q")),
                  "scan": cheap_source_scan()}))
""")
    assert got["before"] == [False, False, False]       # (PySide6 builds classes lazily)
    assert got["after"] == [True, True, True] and got["listed_built"]
    assert got["pg"] == "pyqtgraph" and got["scan"]


def test_the_source_scan_answers_as_pysides_own_for_every_module_loaded(tmp_path):
    assert qt_start.cheap_source_scan()
    feature = qt_start._pyside_feature()
    scan = feature._mod_uses_pyside
    original = scan._lanemon_original
    assert qt_start.cheap_source_scan() and feature._mod_uses_pyside is scan   # idempotent
    (tmp_path / "uses_it.py").write_text("# café\nimport PySide6\n", encoding="utf-8")
    (tmp_path / "not_it.py").write_text("# -*- coding: latin-1 -*-\nX = 'PySide2 é'\n", encoding="latin-1")
    extra = []
    for name in ("uses_it", "not_it"):
        module = types.ModuleType(name)
        module.__file__ = str(tmp_path / f"{name}.py")
        extra.append(module)
    gone = types.ModuleType("gone")
    gone.__file__ = str(tmp_path / "gone.py")     # no such file: the original answers
    modules = [m for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)] + extra + [gone]
    answers = {m.__name__: (scan(m), original(m)) for m in modules}
    differ = {name: a for name, a in answers.items() if a[0] != a[1]}
    assert differ == {}
    assert answers["uses_it"] == (True, True) and answers["not_it"] == (False, False)
    assert sum(a[0] for a in answers.values()) >= 5       # the window's own modules among them


def test_the_window_takes_pyqtgraph_only_from_qt_start():
    """(One place says why pyqtgraph's walk over every Qt class is kept.)"""
    found = []
    for folder, _dirs, files in os.walk(os.path.join(ROOT, "lanemon")):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and name != "qt_start.py":
                with open(path, encoding="utf-8") as f:
                    for line in f:
                        words = line.split()
                        if words[:2] in (["import", "pyqtgraph"], ["from", "pyqtgraph"]) or \
                                (words[:1] == ["from"] and words[1:2] and words[1].startswith("pyqtgraph.")):
                            found.append(os.path.relpath(path, ROOT))
    assert found == []
