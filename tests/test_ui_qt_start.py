"""``lanemon.ui.kit.qt_start``: pyqtgraph imported without copying every Qt name, and
PySide6's per-module source scan answered from the file's bytes, with the same
answers as before."""

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


def test_pyqtgraph_imports_without_copying_every_qt_name_and_reads_the_pyside6_ones():
    got = _fresh("""
import json, PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets
dirs = [vars(m).get("__dir__") for m in (PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets)]
from lanemon.ui.kit.qt_start import pg
dirs_after = [vars(m).get("__dir__") for m in (PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets)]
same_dirs = all(a is b for a, b in zip(dirs, dirs_after)) and None not in dirs
gui = pg.Qt.QtGui
kept_before = len(vars(gui))
same = gui.QColor is PySide6.QtGui.QColor and pg.Qt.QtCore.QRectF is PySide6.QtCore.QRectF
kept = "QColor" in vars(gui)
from PySide6.QtWidgets import QApplication
app = QApplication([])
w = pg.PlotWidget(); w.resize(200, 120); w.plot([0, 1, 2], [2, 0, 1]); w.setTitle("t")
img = w.grab().toImage()
print(json.dumps({"names_copied": kept_before,
                  "same": same, "kept": kept, "same_dirs": same_dirs, "names_listed": len(dir(PySide6.QtGui)),
                  "grabbed": [img.width(), img.height()], "gui_version": pg.Qt.VERSION_INFO}))
""")
    assert got["names_copied"] < got["names_listed"] // 4   # (the walk copied every one)
    assert got["same"] and got["kept"]
    assert got["same_dirs"]                     # PySide6's own module __dir__ put back
    assert got["grabbed"] == [200, 120]
    assert got["gui_version"].startswith("PySide6 ")


def test_pyqtgraph_imported_first_is_the_one_used():
    got = _fresh("""
import json, pyqtgraph, PySide6.QtGui
from lanemon.ui.kit.qt_start import pg
print(json.dumps({"same": pg is pyqtgraph, "copied": "QAbstractTextDocumentLayout" in vars(pg.Qt.QtGui)}))
""")
    assert got == {"same": True, "copied": True}


def test_the_mirrors_replaced_only_while_they_are_empty_files(tmp_path, monkeypatch):
    root = tmp_path / "pyqtgraph"
    for name in ("QtCore", "QtGui", "QtWidgets"):
        (root / "Qt" / name).mkdir(parents=True)
        (root / "Qt" / name / "__init__.py").write_text("")
    spec = types.SimpleNamespace(submodule_search_locations=[str(root)])
    monkeypatch.setattr(qt_start.importlib.util, "find_spec", lambda name: spec)
    assert qt_start._mirrors_are_empty()
    (root / "Qt" / "QtGui" / "__init__.py").write_text("from PySide6.QtGui import *\n")
    assert not qt_start._mirrors_are_empty()
    (root / "Qt" / "QtGui" / "__init__.py").unlink()
    assert not qt_start._mirrors_are_empty()


def test_the_source_scan_answers_as_pysides_own_for_every_module_loaded(tmp_path):
    assert qt_start.cheap_source_scan()
    feature = qt_start._pyside_feature()
    scan = feature._mod_uses_pyside
    original = scan._lanemon_original
    assert qt_start.cheap_source_scan() and feature._mod_uses_pyside is scan   # idempotent
    (tmp_path / "uses_it.py").write_text("# café\nimport PySide6\n", encoding="utf-8")
    (tmp_path / "not_it.py").write_text("# -*- coding: latin-1 -*-\nX = 'PySide2'\n", encoding="latin-1")
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
    """(An ``import pyqtgraph`` of its own, imported first, would walk every Qt name again.)"""
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
