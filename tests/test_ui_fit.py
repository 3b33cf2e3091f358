"""The window fits every screen from 1024x768 up, in normal and presenter mode.

Offscreen there is one fake screen whatever its size, so each screen is
simulated: the window takes the geometry it would open with on a screen whose
available area is that size (``opening_geometry``), then the whole area (as a
maximised window), and every visible control
must then lie within that area, or be reachable by scrolling its tab page
vertically (never sideways). No main table and no tab page shows a horizontal
scroll bar. Device pixel ratio 2 runs the same check in a child process
(``QT_SCALE_FACTOR`` is read once, when the application starts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QScrollArea,
    QWidget,
)

from lanemon.ui.shell.main_window import DEFAULT_SIZE, MainWindow, opening_geometry

SCREENS = ((1024, 768), (1280, 720), (1366, 768), (1920, 1080))
CONTROLS = (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QLabel, QAbstractItemView)


def _settle() -> None:
    app = QApplication.instance()
    for _ in range(3):               # layouts that reflow post their second pass
        app.processEvents()


def _tab_page(win: MainWindow, w: QWidget) -> QScrollArea | None:
    """The tab page (a scroll area) ``w`` sits in, if any."""
    pages = {win.tabs.widget(i) for i in range(win.tabs.count())}
    p = w.parentWidget()
    while p is not None and p not in pages:
        p = p.parentWidget()
    return p


def _on_screen(w: QWidget, screen: QRect, win: MainWindow) -> QRect:
    return QRect(w.mapTo(win, QPoint(0, 0)) + win.geometry().topLeft(), w.size())


def misfits(win: MainWindow, screen: QRect) -> list[str]:
    """What a user on ``screen`` could not reach or read whole (empty: everything fits)."""
    out = []
    if not screen.contains(win.geometry()):
        out.append(f"window {win.geometry().getRect()} outside the screen {screen.getRect()}")
    for w in win.findChildren(QAbstractScrollArea):
        if w.isVisibleTo(win) and w.horizontalScrollBar().isVisible():
            out.append(f"horizontal scroll bar on {type(w).__name__} in {type(w.parentWidget()).__name__}")
    for w in win.findChildren(QWidget):
        if not isinstance(w, CONTROLS) or not w.isVisibleTo(win) or w.width() <= 0:
            continue
        r = _on_screen(w, screen, win)
        page = _tab_page(win, w)
        if page is not None:
            view = _on_screen(page.viewport(), screen, win)
            if not screen.contains(view) and f"tab page {view.getRect()} outside the screen" not in out:
                out.append(f"tab page {view.getRect()} outside the screen")
            across = view.left() <= r.left() and r.right() <= view.right()
            if across and (view.contains(r) or page.verticalScrollBar().isVisible()):
                continue     # in view, or reachable by scrolling the page down
        if not screen.contains(r):
            text = w.text() if isinstance(w, (QAbstractButton, QLabel)) else ""
            out.append(f"{type(w).__name__} {text[:30]!r} at {r.getRect()} outside {screen.getRect()}")
    live = win.chart.live
    if not (live.isVisibleTo(win) and screen.contains(_on_screen(live, screen, win))
            and live.width() >= live.fontMetrics().horizontalAdvance("p50 0.0   p99 0.0   max 0.0")):
        out.append("the chart's p50 / p99 / max line is not shown whole")
    if not screen.contains(_on_screen(win.statusBar(), screen, win)):
        out.append("the status bar (messages) is off the screen")
    return out


def maximise(win: MainWindow, screen: QRect) -> None:
    """The window with its frame (offscreen: a 2 px one) fills ``screen``."""
    f, g = win.frameGeometry(), win.geometry()
    win.setGeometry(screen.adjusted(g.left() - f.left(), g.top() - f.top(),
                                    g.right() - f.right(), g.bottom() - f.bottom()))


def check_all(win: MainWindow, screens=SCREENS, content=None) -> dict[str, list[str]]:
    """Every screen, both modes, every tab: {where: misfits} for the places that do not fit.
    ``content(win)``: called once laid out at each size, to change what the views show."""
    found = {}
    for presenter in (False, True):
        win.talk.set_presenter(presenter)
        for w, h in screens:
            screen = QRect(0, 0, w, h)
            for how in ("opened", "maximised"):
                if how == "opened":
                    win.fit_to_screen(screen)
                else:
                    maximise(win, screen)
                for i in range(win.tabs.count()):
                    win.tabs.setCurrentIndex(i)
                    _settle()
                    if content is not None:
                        content(win)
                        _settle()
                    bad = misfits(win, screen)
                    if bad:
                        found[f"{w}x{h} {how} presenter={presenter} tab={win.tabs.tabText(i)}"] = bad
    win.talk.set_presenter(False)
    return found


@pytest.fixture
def window(qapp):
    from lanemon.ui.shell.app import application

    application()
    win = MainWindow()
    win.show()
    yield win
    win.hide()
    win.deleteLater()


@pytest.mark.parametrize(("w", "h"), [*SCREENS, (800, 600), (2560, 1440)])
def test_opening_geometry_lies_within_the_available_area(w, h):
    for origin in (QPoint(0, 0), QPoint(64, 27)):       # a panel on the left / at the top
        available = QRect(origin, QPoint(origin.x() + w - 1, origin.y() + h - 1))
        g = opening_geometry(available)
        assert available.contains(g), (available.getRect(), g.getRect())
        assert g.width() <= DEFAULT_SIZE[0] and g.height() <= DEFAULT_SIZE[1]
        if w >= DEFAULT_SIZE[0] + 16 and h >= DEFAULT_SIZE[1] + 40:
            assert g.size().toTuple() == DEFAULT_SIZE
        else:              # room for a title bar on a small screen: the status bar stays on it
            assert g.height() <= h - 40


def test_the_window_opens_within_its_screen(window):
    assert window.screen().availableGeometry().contains(window.geometry())


# what the Runs tab's figures line says after a whole, a sliced and a worker run
FIGURES = ("<table cellspacing=0 cellpadding=1><tr><td>slicing&nbsp;&nbsp;</td><td>"
           "<span>costRatio</span>&nbsp;<b>1.431</b>&nbsp;&nbsp;&nbsp;<span>tailRatio</span>&nbsp;<b>21.61</b>"
           "&nbsp;&nbsp;&nbsp;<span>sliceMs</span>&nbsp;<b>8.0</b></td></tr><tr><td>worker&nbsp;&nbsp;</td><td>"
           "<span>cold start-up</span>&nbsp;<b>27.9 ms</b>&nbsp;&nbsp;&nbsp;<span>warm round trip</span>"
           "&nbsp;<b>0.25 ms</b></td></tr></table>")


def test_every_control_fits_every_screen_in_both_modes(window):
    def longer_figures(win):       # (the window is not started: nothing repaints them)
        win.runs_panel.figures.setText("")
        _settle()
        win.runs_panel.figures.setText(FIGURES)   # after the layout was decided

    assert check_all(window, content=longer_figures) == {}


def test_tables_drop_low_priority_columns_then_elide_instead_of_scrolling(window):
    from lanemon.ui.kit.tables import column_fit

    table = window.views["lanes"].lanes_table
    fit = column_fit(table)
    assert fit is not None
    busy = table.model().COLUMNS.index("busy outside")
    maximise(window, QRect(0, 0, 1920, 1080))      # maximised on a large screen
    window.show_view("lanes")
    _settle()
    assert fit.dropped == frozenset() and not table.isColumnHidden(busy)
    window.talk.set_presenter(True)
    window.fit_to_screen(QRect(0, 0, 1024, 768))
    _settle()
    shown = [c for c in range(table.model().columnCount()) if not table.isColumnHidden(c)]
    assert fit.dropped, "a narrow table keeps every column"
    assert busy in shown                       # what a user toggles is never dropped
    assert sum(table.columnWidth(c) for c in shown) <= table.viewport().width()
    assert not table.horizontalScrollBar().isVisible()
    window.talk.set_presenter(False)
    maximise(window, QRect(0, 0, 1920, 1080))
    _settle()
    assert fit.dropped == frozenset()          # room again: the columns come back


def test_queue_tables_keep_a_jobs_number_workspace_and_state_whole(window):
    """At 1024x768 in presenter mode a queue's "state" column was cut ("save h…",
    "succee…"): the queues keep #, ws and state at the widths they asked for (the
    timeline beside them gives way) on every screen, in both modes."""
    from lanemon.ui.kit.tables import column_fit

    window.show_view("lanes")
    cut = {}
    for presenter in (False, True):
        window.talk.set_presenter(presenter)
        for w, h in SCREENS:
            for how in ("opened", "maximised"):
                screen = QRect(0, 0, w, h)
                if how == "opened":
                    window.fit_to_screen(screen)
                else:
                    maximise(window, screen)
                _settle()
                for name, table in window.views["lanes"].queue_tables.items():
                    fit = column_fit(table)
                    short = [c for c in range(3) if table.columnWidth(c) < fit.natural(c)]
                    if short:
                        cut[f"{w}x{h} {how} presenter={presenter} {name}"] = short
    window.talk.set_presenter(False)
    assert cut == {}


def test_runs_messages_also_go_to_the_status_bar(window, tmp_path):
    window.show_view("lanes")                  # not the Runs tab, where the banner is
    path = str(tmp_path / "chart.png")
    assert window.export_chart_to(path)
    assert window.statusBar().currentMessage() == f"Chart written to {path}"
    bad = str(tmp_path / "missing" / "chart.png")
    assert not window.export_chart_to(bad)
    assert window.statusBar().currentMessage().startswith("Chart not written")
    csv = str(tmp_path / "beat.csv")
    assert window.runs_panel.export_csv_to(csv)
    assert window.statusBar().currentMessage().endswith(f"heartbeat ticks written to {csv}")
    before = window.statusBar().currentMessage()
    assert not window.runs_panel.export_report_to(str(tmp_path / "report.json"))   # no runs yet
    assert window.statusBar().currentMessage() not in ("", before)
    assert not window.runs_panel.export_report_to(str(tmp_path / "missing" / "report.json"), {"a": 1})
    assert window.statusBar().currentMessage().startswith("Report not written")


_CHILD = """
import json, sys
from PySide6.QtWidgets import QApplication
sys.path.insert(0, {tests!r})
from lanemon.ui.shell.app import application
from lanemon.ui.shell.main_window import MainWindow
from test_ui_fit import check_all
app = application()
win = MainWindow()
win.show()
found = check_all(win, ((1024, 768), (1280, 720)))
print(json.dumps({{"dpr": app.primaryScreen().devicePixelRatio(), "found": found}}))
win.hide()
"""


def test_every_control_fits_at_device_pixel_ratio_2(tmp_path):
    env = dict(os.environ, QT_SCALE_FACTOR="2", QT_QPA_PLATFORM="offscreen", LANEMON_NO_SETTINGS="1")
    out = subprocess.run([sys.executable, "-c", _CHILD.format(tests=os.path.dirname(__file__))],
                         env=env, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    assert answer["dpr"] == 2
    assert answer["found"] == {}


def test_busy_outside_button_says_on_and_off(qapp):
    from lanemon.ui.tools.testing import run_window, wait_until

    async def scenario(win):
        view = win.views["lanes"]
        c = view.controls
        win.show_view("lanes")
        c.set_workspace("ws-04")
        texts = [c.busy_button.text()]
        c.busy_button.click()
        await wait_until(lambda: view.scheduler.occupancy.is_busy("ws-04"), 10)
        texts.append(c.busy_button.text())
        c.busy_button.click()
        await wait_until(lambda: not view.scheduler.occupancy.is_busy("ws-04"), 10)
        texts.append(c.busy_button.text())
        return texts

    rc, texts, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert [t.replace("&", "").endswith(": on") for t in texts] == [False, True, False]
    assert [t.replace("&", "").endswith(": off") for t in texts] == [True, False, True]


def test_a_narrow_table_elides_its_cells_and_keeps_its_headers_whole(qapp):
    from PySide6.QtGui import QStandardItem, QStandardItemModel
    from PySide6.QtWidgets import QTableView

    from lanemon.ui.kit.tables import fit_columns, keep_within_width

    model = QStandardItemModel(2, 3)
    model.setHorizontalHeaderLabels(["run", "place() · cold threshold", "ms"])
    for row in range(2):
        model.setItem(row, 0, QStandardItem("#3 worker · warm, a long name " * 3))
        model.setItem(row, 1, QStandardItem("worker"))
        model.setItem(row, 2, QStandardItem("1.0"))
    view = QTableView()
    view.setModel(model)
    fit = keep_within_width(view)
    header = view.horizontalHeader()
    wide_head = header.sectionSizeHint(1)
    view.resize(int(wide_head * 1.6), 200)       # too narrow for the cells, room for the headers
    view.show()
    _settle()
    fit_columns(view)
    _settle()
    widths = [view.columnWidth(c) for c in range(3)]
    assert sum(widths) <= view.viewport().width()
    assert not view.horizontalScrollBar().isVisible()
    assert widths[1] >= wide_head and widths[2] >= header.sectionSizeHint(2)   # headers whole
    assert widths[0] < fit.natural(0)                                          # the long cells elide
    view.hide()
