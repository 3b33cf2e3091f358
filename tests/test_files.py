"""lanemon.files: atomic writes end with the mode a plain open() would give (issue 19, finding 13)."""

from __future__ import annotations

import os
import stat

import pytest

from lanemon import files


@pytest.fixture
def umask():
    """Run with a chosen umask; the old one comes back afterwards."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_a_new_export_gets_the_mode_plain_open_gives(tmp_path, umask, mask):
    umask(mask)
    plain = tmp_path / "plain.txt"
    with open(plain, "w") as fh:
        fh.write("x")
    files.write_json(str(tmp_path / "r.json"), {"a": 1})
    files.atomic_write(str(tmp_path / "h.csv"), ".csv", lambda fh: fh.write("t_s,lag_ms\n"))
    files.atomic_replace(str(tmp_path / "c.png"), ".png", lambda tmp: open(tmp, "wb").close())
    assert _mode(plain) == 0o666 & ~mask
    for name in ("r.json", "h.csv", "c.png"):
        assert _mode(tmp_path / name) == 0o666 & ~mask, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png", "h.csv", "plain.txt", "r.json"]


def test_an_existing_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "r.json"
    target.write_text("{}")
    os.chmod(target, 0o640)
    files.write_json(str(target), {"b": 2})
    assert _mode(target) == 0o640
    assert target.read_text() == '{\n  "b": 2\n}\n'


def test_current_umask_reads_without_changing_it(umask):
    umask(0o027)
    assert files.current_umask() == 0o027
    assert files.current_umask() == 0o027


def test_the_window_exports_get_the_plain_mode(tmp_path, umask, qtbot):
    """The PNG of a widget and the heartbeat CSV, as the window writes them."""
    from PySide6.QtWidgets import QLabel

    from lanemon.ui.shell import exports

    umask(0o022)
    w = QLabel("x")
    qtbot.addWidget(w)
    exports.save_png(w, str(tmp_path / "shot.png"))
    exports.write_report(str(tmp_path / "report.json"), {"runs": {}})
    assert _mode(tmp_path / "shot.png") == 0o644
    assert _mode(tmp_path / "report.json") == 0o644
