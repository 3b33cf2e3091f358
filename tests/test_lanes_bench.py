"""lanemon.lanes stays Qt-free and numpy-free; the sched bench's contract."""

from __future__ import annotations

import subprocess
import sys


def test_lanes_imports_neither_qt_nor_numpy():
    code = ("import sys, lanemon.lanes; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'numpy', 'qasync', 'pyqtgraph', 'shiboken6')]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_sched_bench_small_run_reports_figure_and_invariants():
    from lanemon.bench import sched

    lines: list[str] = []
    result = sched.run(lines.append, jobs=2000, workspaces=200, repeats=1)
    assert "invariants held" in lines
    assert any("jobs/s" in line and "goal" in line for line in lines)
    assert result["invariants_held"] is True and result["jobs"] == 2000
    assert result["workspaces"] == 200 and result["jobs_per_s"] > 0
