"""Faults the user meets are said in the window, and nothing is half-written.

Exports (report JSON, heartbeat CSV, chart PNG) to a missing folder, to a
path under a file (a folder that cannot exist: refused even for root), and
to a full disk (the write raises ENOSPC): the Runs banner says which file and
why, no temporary file is left, and an older file of that name is unchanged.
Settings that cannot be written: the window says so in its status bar at
start, and the save at close says so on stderr instead of failing silently.
"""

from __future__ import annotations

import errno
import os

import pytest

from lanemon.ui.shell import settings
from lanemon.ui.tools.testing import run_window


def _banner(win) -> str:
    return win.runs_panel.banner.text()


def _exports(win, folder):
    panel = win.runs_panel
    return {
        "report": lambda name: panel.export_report_to(str(folder / f"{name}.json"), {"python": "3"}),
        "csv": lambda name: panel.export_csv_to(str(folder / f"{name}.csv")),
        "png": lambda name: win.export_chart_to(str(folder / f"{name}.png")),
    }


@pytest.mark.parametrize("what", ["report", "csv", "png"])
def test_an_export_that_cannot_be_written_is_said_in_the_banner(tmp_path, monkeypatch, what):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    old = tmp_path / f"old.{ {'report': 'json', 'csv': 'csv', 'png': 'png'}[what]}"
    old.write_bytes(b"the old export")

    def full_disk(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    async def scenario(win):
        said = {}
        export = _exports(win, tmp_path)[what]
        missing = _exports(win, tmp_path / "no-such-folder")[what]
        under_a_file = _exports(win, blocker)[what]
        said["missing"] = (missing("x"), _banner(win))
        said["under a file"] = (under_a_file("x"), _banner(win))
        with monkeypatch.context() as m:       # the disk fills up as the file is written
            m.setattr(os, "replace", full_disk)
            said["full"] = (export("old"), _banner(win))
        said["fine"] = (export("new"), _banner(win))
        return said

    rc, said, errors = run_window(scenario)
    assert rc == 0 and errors == []
    for case in ("missing", "under a file", "full"):
        ok, banner = said[case]
        assert ok is False, case
        assert "not written" in banner and "cannot write" in banner, (case, banner)
    assert "No such file or directory" in said["missing"][1]
    assert "Not a directory" in said["under a file"][1]
    assert os.strerror(errno.ENOSPC) in said["full"][1]
    assert old.read_bytes() == b"the old export"                 # untouched by the failed write
    assert said["fine"][0] is True and "written to" in said["fine"][1]
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".") or "tmp" in p.name]
    assert leftovers == [], leftovers


def test_settings_that_cannot_be_kept_are_said_at_start_and_at_close(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    path = blocker / "lanemon" / "lanemon.conf"                  # its folder cannot be created
    monkeypatch.setattr(settings, "open_store", lambda path_=None: settings.QSettings(
        str(path), settings.QSettings.Format.IniFormat))

    async def scenario(win):
        return win.warning.isVisible(), win.warning.text()

    rc, (visible, text), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert visible and "Settings will not be kept" in text and str(path) in text
    assert "settings not saved" in capsys.readouterr().err


def test_a_writable_settings_file_says_nothing(tmp_path, monkeypatch):
    path = tmp_path / "conf" / "lanemon.conf"
    monkeypatch.setattr(settings, "open_store", lambda path_=None: settings.QSettings(
        str(path), settings.QSettings.Format.IniFormat))

    async def scenario(win):
        return win.warning.isVisible()

    rc, visible, errors = run_window(scenario)
    assert rc == 0 and errors == [] and visible is False
    assert path.exists()                                         # saved at close
