"""The results table model announces only what changed (no reset per refresh)."""

from lanemon.ui.runs.model import COLUMNS, RunRecord, RunsTableModel
from lanemon.work.lag import LagStats


def _spy(model):
    seen = []
    model.modelReset.connect(lambda: seen.append(("reset",)))
    model.rowsInserted.connect(lambda _p, a, b: seen.append(("inserted", a, b)))
    model.rowsRemoved.connect(lambda _p, a, b: seen.append(("removed", a, b)))
    model.dataChanged.connect(lambda tl, br, *_: seen.append(("changed", tl.row(), br.row())))
    return seen


def test_refresh_inserts_new_runs_on_top_and_announces_changed_rows_only(qapp):
    records = [RunRecord(1, "whole", 1000, 0.0)]
    model = RunsTableModel(records)
    seen = _spy(model)
    model.refresh()
    assert seen == [("inserted", 0, 0)] and model.rowCount() == 1

    seen.clear()
    model.refresh()                                   # nothing changed: nothing said
    assert seen == []

    records.append(RunRecord(2, "sliced", 2000, 1.0))
    records[1].progress = 0.25
    seen.clear()
    model.refresh()                                   # the new run on top, the old one unchanged
    assert seen == [("inserted", 0, 0)]
    assert model.data(model.index(0, COLUMNS.index("workMs"))) == "25%"

    records[1].progress = 0.5                         # the sliced run (row 0) moves on
    records[0].status, records[0].work_ms, records[0].result = "done", 12.5, 7   # the whole run (row 1) ends
    records[0].stats = LagStats(samples=3, p50=1.0, p99=2.0, max=2.0, late_ms=0.0)
    seen.clear()
    model.refresh()
    assert sorted(seen) == [("changed", 0, 0), ("changed", 1, 1)]
    assert model.data(model.index(1, COLUMNS.index("result"))) == "7"

    records.pop(0)                                    # the oldest dropped (a bounded history): its row goes
    seen.clear()
    model.refresh()
    assert seen == [("removed", 1, 1)] and model.rowCount() == 1
    assert model.record(0) is records[0]

    records.append(RunRecord(3, "warm", 3000, 2.0))   # dropped from the middle, and a new run on top
    records.append(RunRecord(4, "cold", 3000, 3.0))
    model.refresh()
    del records[1]
    seen.clear()
    model.refresh()
    assert seen == [("removed", 1, 1)]
    assert [model.record(i).id for i in range(model.rowCount())] == [4, 2]

    records.reverse()                                 # reordered: start again
    seen.clear()
    model.refresh()
    assert seen == [("reset",)] and [model.record(i).id for i in range(model.rowCount())] == [2, 4]


def test_a_theme_change_redraws_every_row(qapp):
    records = [RunRecord(1, "whole", 1000, 0.0), RunRecord(2, "warm", 1000, 0.0)]
    model = RunsTableModel(records)
    model.refresh()
    seen = _spy(model)
    model.colours_changed()
    assert seen == [("changed", 0, 1)]
